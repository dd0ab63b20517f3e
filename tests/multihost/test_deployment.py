"""Seasons across hosts (docs/DEPLOY.md "What the harness proved"): Redis, two referees,
two worker hosts and a bots host, each in its own network namespace, with TLS and a
password everywhere; the committed results equal the single-host run's byte for byte."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
import redis

from referee import keys, queue
from referee.bots import STREAM_STALE_MS
from referee.gateway.hub import HOUSEKEEPING_S, SWEEP_S
from referee.procs import arena_command
from referee.seasons import store
from referee.seasons.model import TIME_CONTROL_MIN
from referee.seasons.platform import Platform
from tests.metrics.dashboards import load_dashboards, queries, substitute
from tests.metrics.prom_server import PROMETHEUS, PromClient
from tests.multihost.deployment import (
    BOT_KEEPALIVE_MS,
    BOT_KEEPALIVE_TIMEOUT_MS,
    GRPC_PORT,
    HEALTH_PORT,
    HTTP_PORT,
    LINK_PORT,
    REPO,
    Deployment,
    tls_redis_server,
)
from tests.multihost.netns import Network
from tests.redeal import redealt_as_revealed, wait_revealed

pytestmark = pytest.mark.slow

BOTS = [
    ("mh-fl", "first-legal"),
    ("mh-rnd-1", "det-random"),
    ("mh-rnd-2", "det-random"),
    ("mh-hs-1", "det-hold-sevens"),
    ("mh-hs-2", "det-hold-sevens"),
]
SEED = 1717


def season_toml(name: str, queue_ms: int = 30_000, absent_ms: int | None = None) -> str:
    bots = ", ".join(f'"{n}"' for n, _ in BOTS)
    return f"""
name = "{name}"
game = "sevens"
preset = "fan-tan"
bots = [{bots}]
table_size = 3
deals_per_match = 3
seed = {SEED}

[time_control]
move_ms = 3000
bank_ms = 10000
queue_ms = {queue_ms}
""" + (f"absent_ms = {absent_ms}\n" if absent_ms is not None else "")


def fingerprint(conn: redis.Redis, season: str) -> dict[str, bytes]:
    """Per match index, the committed result's bytes less what depends on when and where
    it ran (attempt, finish time, think times): canonical JSON of seats, result and the
    per-seat counters."""
    out = {}
    for r in store.committed_results(conn, season):
        stats = [{k: v for k, v in s.items() if k != "think_ms_total"} for s in r["stats"]]
        kept = {"seats": r["seats"], "game": r["game"], "result": r["result"], "stats": stats}
        out[r["match_id"].rsplit("-", 1)[-1]] = json.dumps(kept, sort_keys=True).encode()
    return out


def redealt(conn: redis.Redis, season: str) -> set[str]:
    """Indexes of the season's matches whose re-run was re-dealt: those after an attempt
    that showed the bots its deals (docs/workers.md "A retry is re-dealt"); checked
    against each match's record."""
    out = set()
    for r in store.committed_results(conn, season):
        record = queue.get_record(conn, r["match_id"])
        assert record is not None
        if redealt_as_revealed(conn, r["match_id"], record):
            out.add(r["match_id"].rsplit("-", 1)[-1])
    return out


def wait_finished(conn: redis.Redis, season: str, timeout: float = 120.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = store.get_season(conn, season)
        if info["state"] in store.ENDED:
            return info
        time.sleep(0.2)
    raise AssertionError(f"season {season} not finished: {store.get_season(conn, season)}")


@pytest.fixture(scope="module")
def single_host(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The reference: the same season on one machine (loopback, embedded Redis)."""
    folder = tmp_path_factory.mktemp("single-host")
    with Platform(folder) as p:
        p.start_redis()
        p.start_referee()
        p.register_bots([n for n, _ in BOTS])
        for i, (name, kind) in enumerate(BOTS):
            p.start_bot(name, kind, seed=100 + i)
        p.wait_bots_connected()
        p.start_workers(processes=2, per_process=1)
        toml = folder / "s.toml"
        toml.write_text(season_toml("ref"))
        created = subprocess.run(
            arena_command("season", "create", str(toml), "--start", "--redis-url", p.redis_url),
            capture_output=True,
            text=True,
        )
        assert created.returncode == 0, created.stdout + created.stderr
        with p.client() as conn:
            info = wait_finished(conn, "ref")
            assert info["state"] == "finished", info
            return fingerprint(conn, "ref")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    if tls_redis_server() is None:
        pytest.skip("no redis-server built with TLS here (apt-get install redis-tools)")
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make the test certificates (apt-get install openssl)")
    folder = tmp_path_factory.mktemp("multihost")
    with Network() as net:
        d = Deployment(net, folder)
        try:
            d.start_redis()
            d.start_referee("referee-a")
            d.start_referee("referee-b")
            d.register_bots([n for n, _ in BOTS])
            for i, (name, kind) in enumerate(BOTS):
                # half the bots try referee A first, half B: both referees hold bots
                order = ["referee-a", "referee-b"][:: 1 if i % 2 == 0 else -1]
                # mh-fl thinks 20 ms a turn (same moves): it holds open decisions on A
                d.start_bot(name, "thinking" if name == "mh-fl" else kind, order, seed=100 + i)
            d.wait_bots_connected()
            d.start_workers("worker-a")
            d.start_workers("worker-b")
            yield d
        finally:
            d.close()


def test_a_season_across_hosts_equals_the_single_host_run(
    deployment: Deployment, single_host: dict[str, bytes]
) -> None:
    d = deployment
    start_season(d, "across")
    # meanwhile the match hosts hold their links on the referees' link port (a host dials
    # a referee when a match of its own needs it, and lets an idle link go)
    workers = {d.host(w).address for w in d.workers}
    linked: dict[str, set[str]] = {r: set() for r in d.referees}
    while not all(linked.values()):
        if d.query(lambda c: store.get_season(c, "across")["state"]) in store.ENDED:
            break
        for referee in d.referees:
            linked[referee] |= established_peers(d, referee, LINK_PORT) & workers
    info = d.query(lambda c: wait_finished(c, "across"))
    assert info["state"] == "finished" and info["matches_failed"] == "0", info
    assert all(linked.values()), linked
    across = deployment.query(lambda c: fingerprint(c, "across"))
    differing = sorted(i for i in across if across[i] != single_host.get(i))
    # A re-run match is re-dealt from fresh seeds, so it cannot equal the reference: say so
    # (a host judged dead on a starved machine) rather than only that the bytes differ.
    rerun = deployment.query(lambda c: redealt(c, "across"))
    assert not differing, (
        f"matches {differing} differ from the single-host run; re-run (re-dealt) ones: "
        f"{sorted(rerun)}; logs in {d.logs}"
    )
    assert across == single_host
    # both referees held bots (and links from the worker hosts), both worker hosts ran
    # matches
    holders = {r for n, _ in BOTS for r in referees_of(d, n)}
    assert holders == {"referee-a", "referee-b"}
    assert set(ran_on(d, "across").values()) == {"worker-a", "worker-b"}
    # every part listens only where it was told: the referee's gRPC, link and HTTP ports
    # and the workers' health port on the host's own address, not on its loopback
    listening = {"referee-a": (GRPC_PORT, LINK_PORT, HTTP_PORT), "worker-a": (HEALTH_PORT,)}
    for host, ports in listening.items():
        for port in ports:
            assert deployment.reachable("ops", deployment.host(host).address, port)
            assert not deployment.reachable(host, "127.0.0.1", port)


def test_the_internal_stream_is_tls_and_takes_only_the_cluster_secret(
    deployment: Deployment,
) -> None:
    """Each referee's internal port (``--link-tls``) speaks TLS with the harness's
    certificate and nothing else; over TLS, ``Link`` takes the cluster secret and refuses
    another; the directory gives hosts the advertised address."""
    d = deployment
    for referee in d.referees:
        target = d.address(referee, LINK_PORT)
        probe = d.host("worker-a").run(
            [sys.executable, "-m", "tests.multihost.link_probe", target, "--ca", d.ca],
            env=d.env(PROBE_SECRET=d.cluster_secret),
            cwd=str(REPO),
            timeout=90,
        )
        assert probe.returncode == 0, probe.stdout + probe.stderr
        got = json.loads(probe.stdout.strip().splitlines()[-1])
        assert got["tls"].startswith("ok TLSv1."), got  # the CA's certificate, for the IP
        assert got["plaintext"] == "UNAVAILABLE", got  # a plaintext client gets no stream
        assert got["tls_right"] == "OPEN", got
        assert got["tls_wrong"] == "UNAUTHENTICATED", got
    links = {json.loads(e)["link"] for n, _ in BOTS for e in d.streams(n).values()}
    assert links and links <= {d.address(r, LINK_PORT) for r in d.referees}, links
    # (that the worker hosts' own links are connections to this port, so TLS too, is
    # checked during the season of test_a_season_across_hosts_equals_the_single_host_run)


def established_peers(d: Deployment, host: str, port: int) -> set[str]:
    """Addresses with an established TCP connection to ``host``'s local ``port`` (gRPC's
    sockets are IPv6 ones: ``[::ffff:198.18.17.21]:36906`` is 198.18.17.21)."""
    done = d.host(host).run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"])
    assert done.returncode == 0, done.stderr
    peers = (line.split()[-1].rsplit(":", 1)[0] for line in done.stdout.splitlines() if line)
    return {p.strip("[]").removeprefix("::ffff:") for p in peers}


def test_a_worker_host_cut_off_its_matches_rerun_elsewhere_and_commit_once(
    deployment: Deployment, single_host: dict[str, bytes]
) -> None:
    d = deployment
    start_season(d, "wcut")
    victim = d.query(lambda c: running_on(c, d, "wcut", "worker-a"))
    # cut once it has shown the bots its deals (within a millisecond of its start), so its
    # re-run is re-dealt (docs/workers.md "A retry is re-dealt")
    d.query(lambda c: wait_revealed(c, victim))
    with d.net.cut_off(d.host("worker-a")):
        # worker-b's janitor sees the heartbeat go stale and re-runs the match there
        d.query(lambda c: wait_state(c, victim, "done", timeout=60))
        state = d.match_state(victim)
        assert int(state["attempt"]) >= 2 and int(state["retries"]) >= 1, state
        assert host_of(d, state["worker"]) == "worker-b", state
    # back on the network: the stale attempt sees the newer one and commits nothing
    stale = re.compile(rf"match {victim} attempt 1 (stopped: .*)?;? ?commits nothing")
    d.wait_for(
        "the cut-off worker's stale attempt to stop",
        lambda: stale.search(d.log_tail("worker-a", 1_000_000)) is not None,
        60,
        "worker-a",
    )
    info = d.query(lambda c: wait_finished(c, "wcut"))
    assert info["state"] == "finished" and info["matches_failed"] == "0", info
    # A re-run match is re-dealt (docs/workers.md "Exactly once": the cut-off attempt showed
    # the bots part of its deals): every other match equals the single-host run, the victim
    # was re-dealt from its recorded seeds and replays to its result (season verify).
    got = d.query(lambda c: fingerprint(c, "wcut"))
    rerun = d.query(lambda c: redealt(c, "wcut"))
    assert victim.rsplit("-", 1)[-1] in rerun
    assert {k: v for k, v in got.items() if k not in rerun} == {
        k: v for k, v in single_host.items() if k not in rerun
    }
    verified = d.arena("season", "verify", "wcut")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert_committed_once(d, "wcut")


def test_redis_unreachable_for_10_s_everything_waits_and_resumes(
    deployment: Deployment, single_host: dict[str, bytes]
) -> None:
    d = deployment
    start_season(d, "rcut")
    d.query(lambda c: running_on(c, d, "rcut", None))
    with d.net.cut_off(d.host("redis")):
        cut = time.monotonic()
        # the health endpoints say so, and answer quickly
        d.wait_for(
            "workers to say they are not ready",
            lambda: all(d.http_get(w, "/readyz", port=HEALTH_PORT)[0] == 503 for w in d.workers),
            9,
            "worker-a",
        )
        d.wait_for(
            "referees to say Redis is unreachable",
            lambda: all(d.http_get(r, "/healthz", timeout=5)[0] == 503 for r in d.referees),
            9,
            "referee-a",
        )
        # not ready either, and /readyz says it is Redis (its ports still serve)
        for referee in d.referees:
            status, body = d.http_get(referee, "/readyz", timeout=5)
            assert status == 503, (referee, status, body)
            checks = json.loads(body)["checks"]
            assert checks["redis"] != "ok" and checks["grpc"] == checks["link"] == "ok", checks
        time.sleep(max(0.0, 10 - (time.monotonic() - cut)))
        # every part is still there, waiting
        for proc in [*d.referees.values(), *d.workers.values(), *d.bots.values()]:
            assert proc.poll() is None, proc.args
    info = d.query(lambda c: wait_finished(c, "rcut"))
    assert info["state"] == "finished" and info["matches_failed"] == "0", info
    got = d.query(lambda c: fingerprint(c, "rcut"))
    differing = sorted(i for i in got if got[i] != single_host.get(i))
    # nothing is re-run for a 10 s outage (the janitors wait), and a match whose attempt
    # was begun but showed nothing (an INCR reply lost in the cut) is not re-dealt
    assert not differing, (
        f"matches {differing} differ from the single-host run; re-dealt ones: "
        f"{sorted(d.query(lambda c: redealt(c, 'rcut')))}; logs in {d.logs}"
    )
    assert_committed_once(d, "rcut")
    for referee in d.referees:
        assert d.http_get(referee, "/healthz")[0] == 200
        status, body = d.http_get(referee, "/readyz")
        assert status == 200 and json.loads(body)["status"] == "ready", body
    for worker in d.workers:
        assert d.http_get(worker, "/readyz", port=HEALTH_PORT)[0] == 200


MAILBOX_PATH = (REPO / "referee" / "mailbox.py").exists()
"""Decisions still go through Redis inboxes (before the match hosts' direct stream)."""
ABSENT_MS = "absent_ms" in TIME_CONTROL_MIN
"""A season can say how long a bot with no stream is waited for (the match hosts' path)."""


@pytest.mark.skipif(
    not MAILBOX_PATH and not ABSENT_MS,
    reason="a season's [time_control] has no absent_ms: a bot with no stream is charged "
    "'disconnected' soon after its clock, before its bots can notice a cut-off referee by "
    "keepalive, so the season cannot ride out the cut",
)
@pytest.mark.skipif(
    MAILBOX_PATH,
    reason="on the Redis mailbox decision path a cut-off referee loses requests: its popper's "
    "BLPOP, blocked in Redis when the link went down, is served a new request that goes into "
    "the dead link, unstamped, so the match host waits out queue_ms and charges a timeout "
    "(seen here: fcut-m0002 seq 60, 'disconnected'). The direct match-host stream replaces "
    "that path; this test runs once referee.mailbox is gone",
)
def test_a_referee_host_cut_off_its_bots_fail_over_and_open_decisions_are_resent(
    deployment: Deployment, single_host: dict[str, bytes]
) -> None:
    d = deployment
    on_a = [n for n, _ in BOTS if referees_of(d, n) == {"referee-a"}]
    assert "mh-fl" in on_a, on_a
    # Bots notice a silent referee by keepalive (docs/PROTOCOL.md section 7): a ping every
    # BOT_KEEPALIVE_MS, BOT_KEEPALIVE_TIMEOUT_MS for its ack; then they connect to B. Their
    # turns wait meanwhile, uncharged: queue_ms and absent_ms are longer (docs/DEPLOY.md).
    start_season(d, "fcut", queue_ms=90_000, absent_ms=60_000)
    d.query(lambda c: running_on(c, d, "fcut", None))
    time.sleep(1.0)  # mh-fl is thinking on a turn that referee A sent
    # the bound: keepalive interval + timeout, times 3 for a loaded machine, plus 5 s to
    # reconnect and register (SDK keepalive before issue 17: 30 s + 10 s, about 41 s seen)
    bound_s = 3 * (BOT_KEEPALIVE_MS + BOT_KEEPALIVE_TIMEOUT_MS) / 1000 + 5
    with d.net.cut_off(d.host("referee-a")):
        cut = time.monotonic()
        # (A's entries stay in the directory until they go stale, 30 s: A cannot reach
        # Redis to remove them; hosts prefer the newest entry, B's)
        d.wait_for(
            "referee A's bots to fail over to B",
            lambda: all("referee-b" in referees_of(d, n) for n in on_a),
            bound_s,
            "bot-mh-fl",
        )
        failover_s = time.monotonic() - cut
        print(f"referee A cut off: its bots were on B after {failover_s:.1f} s")
        # A's own keepalive (30 + 10 s) has not given up on those connections yet: when
        # the link is back, they end (the bots closed them) and A relays nothing into them
        time.sleep(3.0)
    info = d.query(lambda c: wait_finished(c, "fcut"))
    assert info["state"] == "finished" and info["matches_failed"] == "0", info
    # no timeouts (the counters are in the fingerprint): the same results
    assert d.query(lambda c: fingerprint(c, "fcut")) == single_host
    assert_committed_once(d, "fcut")
    # referee A is back and reaches Redis again (the link's first seconds may still answer
    # "No route to host" while the neighbour entry recovers: seen for ~25 s)
    d.wait_for(
        "referee A to reach Redis again",
        lambda: d.http_get("referee-a", "/healthz")[0] == 200,
        60,
        "referee-a",
    )


def only_live_stream_records(client: redis.Redis) -> bool:
    """Every bot's ``bot_streams`` records were refreshed lately (each live stream refreshes
    its own every HOUSEKEEPING_S): none is a dead stream's, waiting for the sweep."""
    recent_ms = time.time() * 1000 - 2.5 * HOUSEKEEPING_S * 1000
    for name, _ in BOTS:
        records = client.hvals(keys.bot_streams(name))
        if any(json.loads(r)["seen_ms"] < recent_ms for r in records):
            return False
    return True


PER_INSTANCE = ("arena_redis_up", "arena_collector_duration_seconds")
"""Facts about one referee process, not the league: one series per referee is right."""


def values(result: list[dict[str, Any]]) -> dict[str, float]:
    out = {}
    for series in result:
        labels = {k: v for k, v in series["metric"].items() if k != "instance"}
        key = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        value = float(series["value"][1])
        if math.isfinite(value):
            out[key] = value
    return out


def close(a: float, b: float) -> bool:
    # the two servers scrape at different moments: rates may differ a little, never 2x
    return abs(a - b) <= 0.2 * max(abs(a), abs(b)) + 1e-9


@pytest.mark.prometheus
@pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus binary (apt-get install prometheus)")
def test_dashboard_queries_aggregate_across_referees(deployment: Deployment) -> None:
    """Prometheus scraping both referees: every dashboard query gives what it gives with
    one referee scraped (each referee serves the league's numbers from the one Redis, so a
    query that does not collapse the ``instance`` label counts the league twice)."""
    d = deployment
    both = PromClient(
        d.start_prometheus("prometheus-both", ["referee-a", "referee-b"]),
        d.logs / "prometheus-both.log",
    )
    one = PromClient(
        d.start_prometheus("prometheus-one", ["referee-a"]), d.logs / "prometheus-one.log"
    )
    d.on_ops(lambda: both.wait_for_scrapes(2))
    d.on_ops(lambda: one.wait_for_scrapes(2))
    # Both Prometheus must hold the season's per-bot counters (at zero) before its first
    # decision: a counter first scraped mid-season loses the increase before its first
    # sample, and the two servers would first scrape it at different points.
    start_season(d, "prom", start=False)
    for prom, referees in ((both, 2), (one, 1)):
        zero = partial(prom.query, 'count(arena_decisions_total{season="prom"} == 0)')
        series = len(BOTS) * referees  # each bot's series from each referee scraped
        deadline = time.monotonic() + 60
        while not (found := values(d.on_ops(zero))) or next(iter(found.values())) < series:
            assert time.monotonic() < deadline, f"no zero series of the season's bots: {found}"
            time.sleep(0.5)
    started = time.time()
    begun = d.arena("season", "start", "prom")
    assert begun.returncode == 0, begun.stdout + begun.stderr
    info = d.query(lambda c: wait_finished(c, "prom"))
    assert info["state"] == "finished", info
    # The open-streams gauge moves when a sweep purges the record of a stream that an earlier
    # test's cut-off referee left (STREAM_STALE_MS after its last refresh): the two servers
    # would sample it on either side of that moment. Wait until only live records remain.
    deadline = time.monotonic() + (STREAM_STALE_MS / 1000 + SWEEP_S) * 2
    while not d.query(only_live_stream_records):
        assert time.monotonic() < deadline, "stream records of dead streams were never swept"
        time.sleep(0.5)
    time.sleep(2.5)  # both have scraped the final numbers: gauges hold still from here
    end = time.time()
    # rates over the whole season: not zero at its end, and comparable between the two
    window = end - started + 1.0

    compared = 0
    differ = []
    for dashboard in load_dashboards().values():
        variables = {v["name"]: "prom" for v in dashboard["templating"]["list"]}
        for q in queries({"d": dashboard}):
            if any(m in q.expr for m in PER_INSTANCE):
                continue
            expr = substitute(
                q.expr, variables, interval_s=1.0, rate_interval_s=window, range_s=window
            )
            raw = d.on_ops(partial(both.query, expr, end))
            a = values(raw)
            b = values(d.on_ops(partial(one.query, expr, end)))
            compared += 1
            per_referee = len({s["metric"].get("instance") for s in raw} - {None}) > 1
            if per_referee or a.keys() != b.keys() or not all(close(a[k], b[k]) for k in a):
                differ.append(f"{q.dashboard} / {q.panel}: {expr}\n  both: {a}\n  one:  {b}")
            assert b, f"{q.dashboard} / {q.panel}: {expr} has no data"
    assert compared >= 40
    assert not differ, "queries that count the league once per referee:\n" + "\n".join(differ)
    # and the two referees really were both scraped
    targets = d.on_ops(lambda: both.get("/api/v1/targets")["activeTargets"])
    assert sorted(t["health"] for t in targets) == ["up", "up"], targets


def test_no_output_or_log_holds_the_redis_password(deployment: Deployment) -> None:
    """Every part was given the password (in its environment); none printed it."""
    logs = sorted(deployment.logs.glob("*.log"))
    assert len(logs) >= 9
    leaked = [p.name for p in logs if deployment.password in p.read_text(errors="replace")]
    assert not leaked


# --- helpers ------------------------------------------------------------------------------


def referees_of(d: Deployment, bot: str) -> set[str]:
    return {json.loads(entry)["referee"] for entry in d.streams(bot).values()}


def start_season(
    d: Deployment,
    name: str,
    queue_ms: int = 30_000,
    absent_ms: int | None = None,
    *,
    start: bool = True,
) -> None:
    """Create the season ``name`` (and start it, unless ``start`` is false)."""
    toml = d.folder / f"{name}.toml"
    toml.write_text(season_toml(name, queue_ms, absent_ms))
    done = d.arena("season", "create", str(toml), *(["--start"] if start else []))
    assert done.returncode == 0, done.stdout + done.stderr


def host_of(d: Deployment, worker: str) -> str:
    """The worker host whose ``arena worker`` process runs the RQ worker ``worker``."""
    for host, proc in d.workers.items():
        if f"-{proc.pid}-w" in worker:
            return host
    raise AssertionError(f"worker {worker!r} is on no worker host")


def ran_on(d: Deployment, season: str) -> dict[str, str]:
    def workers(c: redis.Redis) -> dict[str, str]:
        return {
            m: str(c.hget(keys.match_state(m), "worker")) for m in store.match_states(c, season)
        }

    return {m: host_of(d, w) for m, w in d.query(workers).items()}


def running_on(c: redis.Redis, d: Deployment, season: str, host: str | None) -> str:
    """Wait for a match of ``season`` running on ``host`` (any host: None); its id."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for match_id, state in store.match_states(c, season).items():
            if state != "running":
                continue
            worker = str(c.hget(keys.match_state(match_id), "worker") or "")
            if host is None or host_of(d, worker) == host:
                return match_id
        time.sleep(0.02)
    raise AssertionError(f"no match of {season} ran on {host or 'any host'}")


def wait_state(c: redis.Redis, match_id: str, state: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while c.hget(keys.match_state(match_id), "state") != state:
        assert time.monotonic() < deadline, c.hgetall(keys.match_state(match_id))
        time.sleep(0.1)


def assert_committed_once(d: Deployment, season: str) -> None:
    """One entry per match in the results stream, and each match counted once."""

    def check(c: redis.Redis) -> None:
        entries: list[tuple[str, dict[str, str]]] = c.xrange(keys.RESULTS_STREAM)  # type: ignore[assignment]
        ids = [f["match_id"] for _, f in entries if f["season"] == season]
        total = int(store.get_season(c, season)["matches_total"])
        assert len(ids) == len(set(ids)) == total, sorted(ids)
        assert c.scard(store.counted_key(season)) == total

    d.query(check)
