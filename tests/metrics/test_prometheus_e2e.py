"""End to end: a real season on the real platform, scraped by a real Prometheus.

Redis (embedded), ``arena referee`` (which serves ``/metrics`` and runs the season driver),
``arena worker`` and three sample bots run as real processes; a season is created and run
to the end while Prometheus scrapes the referee every second. Then every query of every
dashboard panel, with Grafana's macros and template variables substituted, must return
data from Prometheus's HTTP API, and the standings page must show the season's bots and
their Elo.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from referee import bots, keys
from referee.embedded_redis import free_port
from referee.procs import arena_command, listening_address, stop_process
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from tests.metrics.dashboards import ROOT, load_dashboards, queries, substitute
from tests.metrics.http_helpers import get
from tests.metrics.prom_server import PROMETHEUS, SKIP_REASON, PromClient, prometheus, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.prometheus,
    pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON),
]

SCRAPE_S = 1.0
BOT_NAMES = ("ada", "bix", "cyd", "dov")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


@contextlib.contextmanager
def process(args: list[str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A child process with its output in ``log_path``; terminated (then killed) on exit."""
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_env(),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
        )
    try:
        yield proc
    finally:
        stop_process(proc, 20)


def log_text(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"


def finite_values(result: list[dict[str, Any]]) -> list[float]:
    values: list[float] = []
    for series in result:
        points = series.get("values") or ([series["value"]] if "value" in series else [])
        values.extend(float(v) for _t, v in points if math.isfinite(float(v)))
    return values


def resolve_variables(prom: PromClient, dashboard: dict[str, Any]) -> dict[str, str]:
    """Pick each template variable's value the way Grafana would: from its label_values."""
    chosen = {}
    for variable in dashboard["templating"]["list"]:
        definition = variable["query"]["query"]
        inner = definition.removeprefix("label_values(").removesuffix(")")
        metric, label = (part.strip() for part in inner.split(","))
        values = sorted(prom.label_values(label, metric), reverse=True)
        assert values, f"variable {variable['name']}: {definition} has no values"
        chosen[variable["name"]] = values[0]
    return chosen


def test_every_dashboard_query_returns_data_from_a_real_season(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    tokens = {name: bots.register(redis_client, name) for name in BOT_NAMES}
    http_port = free_port()
    referee_log = tmp_path / "referee.log"
    worker_log = tmp_path / "worker.log"
    with contextlib.ExitStack() as stack:
        referee = stack.enter_context(
            process(
                arena_command(
                    "referee",
                    "--redis-url",
                    redis_url,
                    "--port",
                    "0",
                    "--http-port",
                    str(http_port),
                ),
                referee_log,
            )
        )

        def listening() -> str | None:
            address = listening_address(log_text(referee_log))
            if address is None and referee.poll() is not None:
                raise AssertionError(f"the referee exited: {log_text(referee_log)}")
            return address

        address = wait_until(
            listening, 60, lambda: f"the referee did not start: {log_text(referee_log)}"
        )
        wait_until(
            lambda: _http_ok(http_port),
            30,
            lambda: f"the referee's HTTP server did not answer: {log_text(referee_log)}",
        )
        prom = stack.enter_context(
            prometheus(
                tmp_path / "prometheus",
                f"127.0.0.1:{http_port}",
                f"{SCRAPE_S:g}s",
                rule_files=(ROOT / "dashboards/prometheus/alerts.yml",),
            )
        )
        prom.wait_for_scrapes(0)
        started = time.time()
        stack.enter_context(
            process(
                arena_command(
                    "worker", "--redis-url", redis_url, "-n", "1", "--log-level", "WARNING"
                ),
                worker_log,
            )
        )
        for i, name in enumerate(BOT_NAMES):
            stack.enter_context(
                process(
                    [
                        sys.executable,
                        "-m",
                        "sample_bots.random_bot",
                        "--server",
                        str(address),
                        "--token",
                        tokens[name],
                        "--seed",
                        str(i + 1),
                    ],
                    tmp_path / f"bot-{name}.log",
                )
            )
        spec = SeasonSpec(
            name="e2e",
            game="sevens",
            preset="sevens",
            bots=BOT_NAMES,
            table_size=3,
            # long enough to span several scrapes: a histogram's rate over the panels'
            # 4 s window needs two scrapes that saw it grow (a season over within one
            # scrape interval left the quantile panels without data)
            deals_per_match=6,
            seed=20261129,
            options=SeasonOptions(rounds=2, window=2),
        )
        store.create_season(redis_client, spec)
        store.start_season(redis_client, "e2e")
        wait_until(
            lambda: (
                redis_client.hget(keys.season("e2e"), "state") in (store.FINISHED, store.CANCELLED)
            ),
            180,
            lambda: (
                f"season did not finish: {redis_client.hgetall(keys.season('e2e'))}\n"
                f"referee: {log_text(referee_log)}\nworker: {log_text(worker_log)}"
            ),
        )
        assert redis_client.hget(keys.season("e2e"), "state") == store.FINISHED
        # Two scrapes after the end, so the final standings are stored too.
        prom.wait_for_scrapes(prom.scrapes() + 1)
        end = time.time()

        # --- every query of every panel returns data ------------------------------------
        range_s = max(end - started, 10.0)
        interval_s = max(SCRAPE_S, range_s / 1000)
        rate_interval_s = max(interval_s + SCRAPE_S, 4 * SCRAPE_S)
        failures = []
        checked = 0
        dashboards = load_dashboards()
        for dashboard in dashboards.values():
            variables = resolve_variables(prom, dashboard)
            if "season" in variables:
                assert variables["season"] == "e2e"
            for q in queries({"d": dashboard}):
                expr = substitute(
                    q.expr,
                    variables,
                    interval_s=interval_s,
                    rate_interval_s=rate_interval_s,
                    range_s=range_s,
                )
                if q.instant:
                    result = prom.query(expr, at=end)
                else:
                    result = prom.query_range(expr, started, end, interval_s)
                checked += 1
                if not finite_values(result):
                    failures.append(f"{q.dashboard} / {q.panel} [{q.ref}]: {expr} -> {result}")
        assert not failures, "queries without data:\n" + "\n".join(failures)
        assert checked >= 40  # 48 at the time of writing: a lost panel shows up here

        # The alert rules load and evaluate against the live series without errors.
        groups = prom.get("/api/v1/rules")["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        assert len(rules) == 5
        assert all(rule["health"] == "ok" for rule in rules), rules

        # --- the standings page shows the season's bots and their Elo --------------------
        page = get(http_port, "/?season=e2e").text
        standings = store.get_standings(redis_client, "e2e")
        assert standings is not None and len(standings["rows"]) == len(BOT_NAMES)
        for row in standings["rows"]:
            assert f'<a href="/bot/{row["bot"]}">{row["bot"]}</a>' in page
            assert f">{row['elo']:.0f}<" in page
        recent = redis_client.zrevrange(keys.MATCHES_RECENT, 0, 0)
        assert recent, "no recent matches"
        last = str(recent[0])
        assert f'href="/replay/{last}"' in page
        replay = get(http_port, f"/replay/{last}")
        assert replay.status == 200 and not replay.text.startswith("# could not render")
        assert "e2e" in replay.text

        # The live exposition, after a real season, is lint-clean.
        exposition = get(http_port, "/metrics").body
        promtool = shutil.which("promtool")
        if promtool is not None:
            lint = subprocess.run(
                [promtool, "check", "metrics"], input=exposition, capture_output=True, timeout=30
            )
            assert lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(), (
                lint.stdout + lint.stderr
            ).decode()

        # Prometheus holds the Elo of every bot, the same as the standings.
        elo = {
            s["metric"]["bot"]: float(s["value"][1])
            for s in prom.query('arena_standings_elo{season="e2e"}', at=end)
        }
        assert elo == pytest.approx({r["bot"]: r["elo"] for r in standings["rows"]})


def _http_ok(port: int) -> bool:
    try:
        return get(port, "/healthz").status == 200
    except OSError:
        return False
