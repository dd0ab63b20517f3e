"""A raw HTTP/2 bot client (the ``h2`` library over a plain socket) for adversarial tests.

It speaks just enough gRPC to open ``arena.v1.BotGateway/Play`` and send ``Hello``, then
behaves as a hostile reader would: it announces a tiny flow-control window and never opens
it again (no WINDOW_UPDATE), while it keeps answering the referee's pings (``h2`` acks
them), so keepalive alone never ends its connection.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

from arena.v1 import bot_pb2


def grpc_frame(message: bot_pb2.BotMessage) -> bytes:
    """One length-prefixed gRPC message (not compressed)."""
    body = message.SerializeToString()
    return struct.pack(">BI", 0, len(body)) + body


class SlowReader:
    """One ``Play`` stream that reads at most ``window`` bytes and then stalls."""

    def __init__(self, host: str, port: int, token: str, *, window: int = 600) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.settimeout(0.2)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window,
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
            },
        )
        self.conn.initiate_connection()
        self.stream_id = self.conn.get_next_available_stream_id()
        self.conn.send_headers(
            self.stream_id,
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", "/arena.v1.BotGateway/Play"),
                (":authority", f"{host}:{port}"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("authorization", f"Bearer {token}"),
            ],
        )
        hello = bot_pb2.BotMessage(
            hello=bot_pb2.Hello(
                protocol_version=1,
                bot_version="slow-reader",
                games=["sevens"],
                max_concurrent_matches=1,
            )
        )
        self.conn.send_data(self.stream_id, grpc_frame(hello))
        self.lock = threading.Lock()
        self.received = 0
        self.pings = 0
        self.ended = threading.Event()  # the referee ended the stream (trailers or reset)
        self.closed = threading.Event()  # the connection is gone
        self.grpc_status: str | None = None
        self.goaway: h2.events.ConnectionTerminated | None = None  # the referee's GOAWAY
        self._stop = threading.Event()
        self._buffer = b""  # the start of a frame not wholly received yet
        self._pending: list[h2.events.Event] = []
        self._flush()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _flush(self) -> None:
        with self.lock:
            data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def _frames(self, data: bytes) -> list[h2.events.Event]:
        """The events of every whole frame received so far, fed to ``h2`` one frame at a
        time: a GOAWAY followed in the same read by a stream's trailers (gRPC sends both)
        is a ProtocolError in ``h2`` after the GOAWAY, whose event must not be lost."""
        self._buffer += data
        events: list[h2.events.Event] = []
        while len(self._buffer) >= 9:
            size = 9 + int.from_bytes(self._buffer[:3], "big")
            if len(self._buffer) < size:
                break
            frame, self._buffer = self._buffer[:size], self._buffer[size:]
            try:
                with self.lock:
                    events += self.conn.receive_data(frame)
            except h2.exceptions.ProtocolError:
                self._pending = events
                raise
        return events

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    data = self.sock.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    break
                try:
                    events = self._frames(data)
                except h2.exceptions.ProtocolError:
                    events = self._pending  # what came before the frame h2 refused
                    self._stop.set()
                for event in events:
                    if isinstance(event, h2.events.DataReceived):
                        self.received += event.flow_controlled_length  # never acknowledged
                    elif isinstance(event, h2.events.PingReceived):
                        self.pings += 1  # h2 queues the ACK itself
                    elif isinstance(event, h2.events.TrailersReceived):
                        for name, value in event.headers or ():
                            if name in ("grpc-status", b"grpc-status"):
                                self.grpc_status = str(value)
                        self.ended.set()
                    elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                        self.ended.set()
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        self.goaway = event
                        self.ended.set()
                        return
                self._flush()
        except (OSError, h2.exceptions.ProtocolError):
            pass  # the referee closed the connection
        finally:
            self.closed.set()

    def ping(self) -> None:
        """Send an HTTP/2 PING now (``h2`` sends whatever the peer asks, however often)."""
        with self.lock:
            self.conn.ping(time.monotonic_ns().to_bytes(8, "big"))
        self._flush()

    def send(self, message: bot_pb2.BotMessage) -> None:
        """Send one message on the stream."""
        with self.lock:
            self.conn.send_data(self.stream_id, grpc_frame(message))
        self._flush()

    def grant(self, size: int) -> None:
        """Open the stream's and the connection's windows by ``size`` bytes (a trickle
        reader grants just enough for every write to complete, never stalling one)."""
        with self.lock:
            self.conn.increment_flow_control_window(size, stream_id=self.stream_id)
            self.conn.increment_flow_control_window(size)
        self._flush()

    def wait_stalled(self, window: int, timeout: float) -> bool:
        """True once the referee filled the whole window (its next write must wait)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.received >= window:
                return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        self._stop.set()
        self.thread.join(5)
        with contextlib.suppress(OSError):
            self.sock.close()
