"""Schema sanity of the Grafana dashboards and the provisioning files (docs/metrics.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import redis
from prometheus_client import generate_latest

from referee.metrics import make_registry
from tests.metrics import league_data
from tests.metrics.dashboards import (
    DASHBOARD_DIR,
    generator,
    load_dashboards,
    panels,
    queries,
    substitute,
)

UID = "arena-prometheus"


def test_committed_dashboards_are_what_the_generator_makes() -> None:
    assert generator().main(["--check"]) == 0, "run: .venv/bin/python dashboards/generate.py"


def test_both_dashboards_exist_with_fixed_uids() -> None:
    dashboards = load_dashboards()
    titles = {d["title"] for d in dashboards.values()}
    assert titles == {"League standings", "Operations"}
    uids = [d["uid"] for d in dashboards.values()]
    assert all(uids) and len(set(uids)) == len(uids)
    assert generator().DATASOURCE_UID == UID


def test_no_import_only_inputs_anywhere() -> None:
    for path in (DASHBOARD_DIR / "grafana").glob("*.json"):
        text = path.read_text()
        assert "__inputs" not in text and "${DS_" not in text, path


def test_every_panel_and_target_uses_the_fixed_datasource() -> None:
    for name, dashboard in load_dashboards().items():
        ids = set()
        assert dashboard["schemaVersion"] >= 36 and "panels" in dashboard, name
        for p in panels(dashboard):
            where = f"{name}: panel {p.get('title')!r}"
            assert p["type"] in {"timeseries", "stat", "table", "bargauge", "gauge"}, where
            assert p["title"] and "defaults" in p["fieldConfig"], where
            for step in p.get("transformations", []):
                assert step["id"] in {"merge", "organize"}, where
            assert p["datasource"] == {"type": "prometheus", "uid": UID}, where
            assert p["id"] not in ids, where
            ids.add(p["id"])
            grid = p["gridPos"]
            assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= 24, where
            assert p["targets"], f"{where} has no query"
            refs = [t["refId"] for t in p["targets"]]
            assert len(refs) == len(set(refs)), f"{where}: duplicate refIds {refs}"
            for t in p["targets"]:
                assert t["datasource"]["uid"] == UID, where
                assert t["expr"].strip(), f"{where}: empty expr"
        for variable in dashboard["templating"]["list"]:
            assert variable["datasource"]["uid"] == UID
            assert variable["query"]["query"].startswith("label_values(")


def test_variables_used_are_defined() -> None:
    for dashboard in load_dashboards().values():
        defined = {v["name"] for v in dashboard["templating"]["list"]}
        for q in queries({"d": dashboard}):
            used = set(re.findall(r"\$(?!__)(\w+)", q.expr))
            assert used <= defined, f"{q.panel}: uses {used - defined}"


def test_substitution_replaces_macros_and_variables() -> None:
    expr = 'rate(x{season="$season"}[$__rate_interval]) + increase(y[$__range]) + z[${season}]'
    out = substitute(expr, {"season": "s1"}, interval_s=1, rate_interval_s=4.2, range_s=125.6)
    assert out == 'rate(x{season="s1"}[4s]) + increase(y[126s]) + z[s1]'
    with pytest.raises(AssertionError):
        substitute("x{a=$bot}", {}, interval_s=1, rate_interval_s=4, range_s=60)


def test_every_metric_a_panel_names_is_exported(redis_url: str) -> None:
    conn = redis.Redis.from_url(redis_url)
    league_data.write_league(conn)
    league_data.write_season(conn, "pp", unit="penalty_points")
    league_data.write_season(conn, "sd", unit="match_points", game="sedma")
    exposition = generate_latest(make_registry(conn)).decode()
    conn.close()
    exported = set(re.findall(r"^(arena_[a-z0-9_]+)", exposition, re.M))
    for q in queries(load_dashboards()):
        for metric in re.findall(r"\barena_[a-z0-9_]+", q.expr):
            assert metric in exported, f"{q.dashboard}/{q.panel}: {metric} is not exported"


def test_provisioning_files_name_the_same_uid() -> None:
    datasource = (DASHBOARD_DIR / "provisioning/datasources/arena.yaml").read_text()
    assert re.search(rf"^\s+uid: {UID}$", datasource, re.M)
    assert re.search(r"^\s+type: prometheus$", datasource, re.M)
    assert re.search(r"^apiVersion: 1$", datasource, re.M)
    provider = (DASHBOARD_DIR / "provisioning/dashboards/arena.yaml").read_text()
    assert re.search(r"^\s+type: file$", provider, re.M)
    assert re.search(r"^\s+path: /\S+$", provider, re.M)
    interval = re.search(r"timeInterval: (\S+)", datasource)
    scrape = re.search(
        r"scrape_interval: (\S+)", (DASHBOARD_DIR / "prometheus/prometheus.yml").read_text()
    )
    assert interval and scrape and interval.group(1) == scrape.group(1)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_prometheus_config_is_valid() -> None:
    done = subprocess.run(
        ["promtool", "check", "config", str(DASHBOARD_DIR / "prometheus/prometheus.yml")],
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_alert_rules_are_valid_and_fire_as_specified() -> None:
    rules = DASHBOARD_DIR / "prometheus/alerts.yml"
    checked = subprocess.run(
        ["promtool", "check", "rules", str(rules)], capture_output=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    tested = subprocess.run(
        ["promtool", "test", "rules", str(Path(__file__).parent / "alerts_test.yml")],
        capture_output=True,
        timeout=60,
    )
    assert tested.returncode == 0, tested.stdout.decode() + tested.stderr.decode()
