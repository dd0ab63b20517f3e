"""The harness itself: hosts reach each other on the test subnet and nothing else, a cut
cable cuts, and nothing is left behind, even by a run that crashed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

from tests.multihost import netns


def connects(host: netns.Host, address: str, port: int) -> bool:
    def attempt() -> bool:
        try:
            with socket.create_connection((address, port), timeout=1.0):
                return True
        except OSError:
            return False

    return host.call(attempt)


def test_hosts_reach_each_other_only_on_the_test_subnet() -> None:
    with netns.Network() as net:
        a = net.add_host("a", 2)
        b = net.add_host("b", 3)
        listener = b.popen(
            [
                sys.executable,
                "-c",
                "import socket,time\n"
                "s=socket.socket();s.bind(('0.0.0.0',7000));s.listen();print('up',flush=True)\n"
                "time.sleep(60)",
            ],
            stdout=subprocess.PIPE,
        )
        assert listener.stdout is not None and listener.stdout.readline() == b"up\n"
        assert connects(a, b.address, 7000)
        # no default route anywhere: the machine's own network is unreachable
        for host in (a, b):
            routes = host.run(["ip", "route", "show"]).stdout
            assert "default" not in routes, routes
            assert routes.split()[0] == f"{netns.SUBNET}.0/24", routes
            assert "Network is unreachable" in host.run(["ip", "route", "get", "1.1.1.1"]).stderr
        # the test subnet is not visible from the machine's own namespace
        assert (
            netns.SUBNET
            not in subprocess.run(
                ["ip", "-4", "addr"], capture_output=True, text=True, check=True
            ).stdout
        )
        with net.cut_off(b):
            assert not connects(a, b.address, 7000)
        assert connects(a, b.address, 7000)
        made = set(netns.namespaces())
        assert {a.netns, b.netns, net.switch} <= made
    assert listener.poll() is not None  # stopped by close
    assert not {a.netns, b.netns, net.switch} & set(netns.namespaces())


def test_a_failing_test_leaves_nothing_behind() -> None:
    names: list[str] = []
    procs = []
    with pytest.raises(ZeroDivisionError), netns.Network() as net:
        host = net.add_host("x", 9)
        procs.append(host.popen(["sleep", "60"]))
        names += [host.netns, net.switch]
        1 / 0  # noqa: B018 - the failure under test
    assert procs[0].poll() is not None
    assert not set(names) & set(netns.namespaces())


def test_sweep_removes_what_a_crashed_run_left() -> None:
    # a run that died without cleaning up: its namespace (named after its pid) and a
    # process inside it
    dead_pid = 999_999_999  # above pid_max: no such process
    leftover = f"{netns.PREFIX}{dead_pid}-0-redis"
    netns.ip("netns", "add", leftover)
    orphan = subprocess.Popen(["ip", "netns", "exec", leftover, "sleep", "60"])
    try:
        with netns.Network() as net:  # a new network sweeps first
            mine = net.switch
            assert leftover not in netns.namespaces()
            assert orphan.wait(10) == -9
            # a live run's namespaces are not swept
            assert mine not in netns.sweep()
            assert mine in netns.namespaces()
    finally:
        orphan.kill()
        orphan.wait()
        netns.ip("netns", "del", leftover, check=False)


def test_unavailable_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the harness can't run, the tests skip with this reason (the autouse fixture in
    conftest.py); as root with iproute2, as here, it is None."""
    assert netns.unavailable() is None
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "need root" in str(netns.unavailable())
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    assert "`ip` is not installed" in str(netns.unavailable())
