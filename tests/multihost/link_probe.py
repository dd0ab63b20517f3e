"""Probe a referee's internal port (``MatchRelay.Link``) from a host of the harness, as a
stranger would: prints one JSON object of what each attempt got.

``python -m tests.multihost.link_probe HOST:PORT --ca CA.pem`` (the secret to try in
``$PROBE_SECRET``; run in a host's namespace with ``Host.run``):

* ``tls``: the TLS handshake with ``--ca`` and the address as the name to verify
  (``"ok <TLS version>"`` or the error);
* ``plaintext``: the status code of ``Link`` over a plaintext channel (a TLS port cannot
  answer it: ``UNAVAILABLE``);
* ``tls_right``: the same over TLS with ``$PROBE_SECRET`` as the cluster secret: ``OPEN``
  when the stream was accepted (still open after ``--wait-s``, or a batch came);
* ``tls_wrong``: the same over TLS with another random secret
  (``UNAUTHENTICATED``).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import ssl
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc  # type: ignore[import-untyped]

from arena.v1 import internal_pb2
from referee import cluster

LINK_METHOD = "/arena.v1.MatchRelay/Link"


def tls_handshake(host: str, port: int, ca: str) -> str:
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host, port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            return f"ok {tls.version()}"
    except (OSError, ssl.SSLError) as exc:
        return f"error {exc}"


def link_status(channel: grpc.Channel, secret: str, wait_s: float) -> str:
    """Open ``Link`` and wait for its first answer: the status code's name, or ``OPEN``."""
    link = channel.stream_stream(
        LINK_METHOD,
        request_serializer=internal_pb2.HostBatch.SerializeToString,
        response_deserializer=internal_pb2.RelayBatch.FromString,
    )

    def requests() -> Iterator[internal_pb2.HostBatch]:
        # keep the request side open (an ended one would end a valid stream too)
        time.sleep(wait_s + 1)
        return
        yield  # pragma: no cover - a generator

    call = link(requests(), metadata=cluster.bearer(secret), timeout=wait_s)
    try:
        for _ in call:
            return "OPEN"  # a batch from the referee: the stream was accepted
    except grpc.RpcError as exc:
        code = exc.code()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return "OPEN"  # accepted, nothing to say, until our own deadline
        return str(code.name)
    return "OK"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("target", help="HOST:PORT of a referee's internal port")
    parser.add_argument("--ca", required=True, help="the CA certificate the referee's is from")
    parser.add_argument("--wait-s", type=float, default=2.0)
    args = parser.parse_args(argv)
    host, _, port = str(args.target).rpartition(":")
    secret = os.environ.get("PROBE_SECRET", "")
    options = cluster.link_channel_options()
    out: dict[str, str] = {"tls": tls_handshake(host, int(port), args.ca)}
    with grpc.insecure_channel(args.target, options=options) as plain:
        out["plaintext"] = link_status(plain, secret, args.wait_s)
    credentials = grpc.ssl_channel_credentials(root_certificates=Path(args.ca).read_bytes())
    with grpc.secure_channel(args.target, credentials, options=options) as secure:
        out["tls_right"] = link_status(secure, secret, args.wait_s)
        out["tls_wrong"] = link_status(secure, secrets.token_urlsafe(len(secret)), args.wait_s)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
