"""Load the dashboards and turn their panels into PromQL the way Grafana would."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD_DIR = ROOT / "dashboards"
GRAFANA_DIR = DASHBOARD_DIR / "grafana"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("arena_dashboards", DASHBOARD_DIR / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(GRAFANA_DIR.glob("*.json"))}


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, including those nested in collapsed rows."""
    out = []
    for p in dashboard.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))
    return [p for p in out if p.get("type") != "row"]


@dataclass(frozen=True)
class Query:
    dashboard: str
    panel: str
    ref: str
    expr: str
    instant: bool


def queries(dashboards: dict[str, dict[str, Any]]) -> list[Query]:
    return [
        Query(
            dashboard["title"],
            p["title"],
            t["refId"],
            t["expr"],
            bool(t.get("instant")) and not t.get("range", False),
        )
        for dashboard in dashboards.values()
        for p in panels(dashboard)
        for t in p.get("targets", [])
    ]


def seconds_text(seconds: float) -> str:
    return f"{max(1, round(seconds))}s"


def substitute(
    expr: str,
    variables: dict[str, str],
    *,
    interval_s: float,
    rate_interval_s: float,
    range_s: float,
) -> str:
    """Replace Grafana's macros and template variables (what Grafana's import dialog would fill)."""
    out = (
        expr.replace("$__rate_interval", seconds_text(rate_interval_s))
        .replace("$__interval_ms", str(int(interval_s * 1000)))
        .replace("$__interval", seconds_text(interval_s))
        .replace("$__range_s", str(max(1, round(range_s))))
        .replace("$__range_ms", str(int(range_s * 1000)))
        .replace("$__range", seconds_text(range_s))
    )
    for name, value in variables.items():
        out = re.sub(rf"\$\{{{name}(?::\w+)?\}}|\[\[{name}\]\]|\${name}\b", value, out)
    assert "$" not in out, f"unsubstituted variable or macro left in {out!r}"
    return out
