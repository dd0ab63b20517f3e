"""The internal (host link) port never serves plaintext on a non-loopback address unless
asked: match hosts send the cluster secret on it.

Started as docs/SECURITY.md's deployment step 2 (``--host 0.0.0.0 --tls-cert --tls-key``
without ``--link-tls``), the referee served the bots TLS and the internal port plaintext on
the same address, so anyone on the path read the cluster secret. Real ``arena referee``
processes on the session's Redis.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.procs import RefereeStartError, start_referee, stop_process
from tests.gateway.test_server import make_certificate

pytestmark = pytest.mark.slow


def _starts(redis_url: str, *args: str) -> list[str]:
    """The referee's output lines once it listens (then stopped)."""
    lines: list[str] = []
    proc, _address = start_referee(redis_url, *args, on_line=lines.append, timeout=60.0)
    stop_process(proc)
    return lines


def test_the_security_docs_step_2_refuses_a_plaintext_internal_port(
    redis_url: str, tmp_path: Path
) -> None:
    key, cert = make_certificate(tmp_path)
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    with pytest.raises(RefereeStartError) as refused:
        _starts(redis_url, "--host", "0.0.0.0", *tls)
    text = str(refused.value)
    assert "plaintext" in text and "--link-tls" in text and "--link-insecure" in text
    assert "Traceback" not in text  # one clear line, not a crash
    # what the error offers each works: TLS on the link, the link on loopback, or asked
    _starts(redis_url, "--host", "0.0.0.0", *tls, "--link-tls")
    _starts(redis_url, "--host", "0.0.0.0", *tls, "--link-host", "127.0.0.1")
    lines = _starts(redis_url, "--host", "0.0.0.0", *tls, "--link-insecure")
    assert any("--link-insecure" in line and "plaintext" in line for line in lines)


def test_a_loopback_referee_needs_no_flag(redis_url: str) -> None:
    _starts(redis_url)  # --host 127.0.0.1: the link stays on this machine
