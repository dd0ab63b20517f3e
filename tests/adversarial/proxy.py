"""A loopback TCP proxy that can freeze: it stops forwarding in both directions while
keeping both sockets open, as a transport does whose peer vanished without a FIN (a host
that lost power, a cable cut, a SIGKILL racing the kernel's close)."""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class FreezableProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.frozen = threading.Event()
        self.stopped = threading.Event()
        self.sockets: list[socket.socket] = [self.listener]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            self.sockets += [client, upstream]
            thread = threading.Thread(target=self._pump, args=(client, upstream), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        while not self.stopped.is_set():
            if self.frozen.is_set():
                self.stopped.wait(0.1)  # hold both sockets open, forward nothing
                continue
            try:
                readable, _, _ = select.select([a, b], [], [], 0.1)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peer[sock].sendall(data)
            except OSError:
                return

    def freeze(self) -> None:
        self.frozen.set()

    def close(self) -> None:
        self.stopped.set()
        for thread in self._threads:
            thread.join(2)
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()
