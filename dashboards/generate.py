"""Write the Grafana dashboards of Sevens Arena (``dashboards/grafana/*.json``).

Run ``.venv/bin/python dashboards/generate.py`` after changing a panel; ``--check`` exits 1
when the committed JSON differs from what this script makes (a test runs it).

Every panel and target names the datasource by its FIXED uid (``arena-prometheus``, set in
``provisioning/datasources/arena.yaml``): provisioning does not fill ``${DS_...}`` inputs
(only the import dialog does; docs/metrics.md), so there are none.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

DATASOURCE_UID = "arena-prometheus"
DATASOURCE = {"type": "prometheus", "uid": DATASOURCE_UID}
OUT_DIR = Path(__file__).resolve().parent / "grafana"
SCHEMA_VERSION = 39

JSON = dict[str, Any]


PER_INSTANCE = frozenset({"arena_redis_up", "arena_collector_duration_seconds"})
"""Metrics about one referee process; every other ``arena_*`` metric is the league's, read
from the one Redis by whichever referee is scraped."""
_RANGE_CALL = re.compile(r"\b(?:rate|increase)\((arena_\w+)(?:\{[^}]*\})?\[[^\]]*\]\)")
_SELECTOR = re.compile(r"\b(arena_\w+)(?:\{[^}]*\})?(?![\w{\[])")


def across_referees(expr: str) -> str:
    """``expr`` with each league metric taken once however many referees are scraped.

    Every referee serves the same league numbers (docs/DEPLOY.md): Prometheus scraping
    several keeps one copy per ``instance``, and a plain ``sum`` counts the league once per
    referee. Each selector (or its ``rate``/``increase``) becomes ``max without
    (instance) (...)``, which is the series itself when one referee is scraped."""
    kept: list[str] = []

    def wrap(found: re.Match[str]) -> str:
        if found.group(1) in PER_INSTANCE:
            return found.group(0)
        return f"max without (instance) ({found.group(0)})"

    def hold(found: re.Match[str]) -> str:
        kept.append(wrap(found))
        return f"\0{len(kept) - 1}\0"

    out = _SELECTOR.sub(wrap, _RANGE_CALL.sub(hold, expr))
    return re.sub("\0(\\d+)\0", lambda m: kept[int(m.group(1))], out)


def target(expr: str, legend: str = "", ref: str = "A", *, instant: bool = False) -> JSON:
    t: JSON = {
        "datasource": DATASOURCE,
        "expr": across_referees(expr),
        "legendFormat": legend or "__auto",
        "refId": ref,
        "range": not instant,
        "instant": instant,
    }
    if instant:
        t["format"] = "table"
    return t


class Layout:
    """Places panels left to right on Grafana's 24-column grid."""

    def __init__(self) -> None:
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1

    def place(self, panel: JSON, w: int, h: int) -> JSON:
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        panel["id"] = self.next_id
        self.next_id += 1
        self.x += w
        self.row_h = max(self.row_h, h)
        return panel


def panel(
    kind: str,
    title: str,
    targets: list[JSON],
    *,
    unit: str = "none",
    description: str = "",
    options: JSON | None = None,
    custom: JSON | None = None,
    overrides: list[JSON] | None = None,
    transformations: list[JSON] | None = None,
    decimals: int | None = None,
    extra_defaults: JSON | None = None,
) -> JSON:
    defaults: JSON = {"unit": unit}
    if decimals is not None:
        defaults["decimals"] = decimals
    if custom:
        defaults["custom"] = custom
    if extra_defaults:
        defaults.update(extra_defaults)
    p: JSON = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": options or {},
    }
    if transformations:
        p["transformations"] = transformations
    return p


def timeseries(title: str, targets: list[JSON], **kw: Any) -> JSON:
    kw.setdefault(
        "options",
        {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    )
    kw.setdefault("custom", {"lineWidth": 2, "fillOpacity": 0, "showPoints": "never"})
    return panel("timeseries", title, targets, **kw)


def stat(title: str, expr: str, **kw: Any) -> JSON:
    kw.setdefault(
        "options",
        {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value",
            "graphMode": "area",
            "textMode": "auto",
        },
    )
    return panel("stat", title, [target(expr, ref="A")], **kw)


def bargauge(title: str, targets: list[JSON], **kw: Any) -> JSON:
    kw.setdefault(
        "options",
        {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "horizontal",
            "displayMode": "gradient",
            "showUnfilled": True,
        },
    )
    return panel("bargauge", title, targets, **kw)


def dashboard(uid: str, title: str, description: str, panels: list[JSON], **kw: Any) -> JSON:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["sevens-arena"],
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "refresh": "10s",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "links": [],
        "annotations": {"list": []},
        "templating": {"list": kw.get("variables", [])},
        "panels": panels,
    }


def query_variable(name: str, label: str, metric: str, **kw: Any) -> JSON:
    definition = f"label_values({metric}, {name})"
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": definition,
        "query": {"query": definition, "refId": f"{name}-variable"},
        "refresh": 2,  # on time range change: new seasons appear
        "sort": kw.get("sort", 4),  # alphabetical, descending: later seasons first
        "includeAll": kw.get("include_all", False),
        "multi": kw.get("multi", False),
        "current": {},
        "options": [],
        "hide": 0,
    }


# --- League standings ---------------------------------------------------------------------

S = '{season="$season"}'
# The season's score in its unit. Set operators match label sets without the metric name,
# so this picks the one score metric a season has; a "deals_won" season's score is its
# arena_standings_deals_won.
SCORE_UNITS = ("chips", "penalty_points", "match_points", "deals_won")
SCORE = " or ".join(f"arena_standings_{unit}{S}" for unit in SCORE_UNITS)


def league_standings() -> JSON:
    lay = Layout()
    interval_style = {
        "matcher": {"id": "byRegexp", "options": ".*(low|high)$"},
        "properties": [
            {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [6, 4]}},
            {"id": "custom.lineWidth", "value": 1},
            {"id": "custom.hideFrom", "value": {"legend": True, "tooltip": False, "viz": False}},
        ],
    }
    table_targets = [
        target(f"arena_standings_rank{S}", ref="A", instant=True),
        target(f"arena_standings_elo{S}", ref="B", instant=True),
        target(f"arena_standings_elo_lower{S}", ref="C", instant=True),
        target(f"arena_standings_elo_upper{S}", ref="D", instant=True),
        target(SCORE, ref="E", instant=True),
        target(f"arena_standings_deals_won{S}", ref="F", instant=True),
        target(f"arena_standings_average_place{S}", ref="G", instant=True),
        target(f"arena_standings_matches{S}", ref="H", instant=True),
        target(f"sum by (season, bot) (arena_standings_penalties{S})", ref="I", instant=True),
    ]
    names = {
        "Value #A": "rank",
        "Value #B": "Elo",
        "Value #C": "Elo low (95%)",
        "Value #D": "Elo high (95%)",
        "Value #E": "score (season unit)",
        "Value #F": "deals won",
        "Value #G": "avg place",
        "Value #H": "matches",
        "Value #I": "penalties",
    }
    panels = [
        lay.place(
            stat(
                "Season progress",
                f"arena_season_progress_ratio{S}",
                unit="percentunit",
                description="Share of the season's scheduled matches that are done.",
            ),
            6,
            4,
        ),
        lay.place(
            stat(
                "Matches scheduled",
                f"arena_season_matches_scheduled{S}",
                description="Matches in the season's round-robin schedule.",
            ),
            6,
            4,
        ),
        lay.place(
            stat("Bots in the season", f"count(arena_standings_elo{S})"),
            6,
            4,
        ),
        lay.place(
            stat(
                "Top Elo",
                f"max(arena_standings_elo{S})",
                decimals=0,
                description="Highest Elo rating of the season (mean 1500).",
            ),
            6,
            4,
        ),
        lay.place(
            panel(
                "table",
                "Standings of $season",
                table_targets,
                description="Current standings, read from Redis at the last scrape.",
                options={"showHeader": True, "sortBy": [{"displayName": "rank", "desc": False}]},
                transformations=[
                    {"id": "merge", "options": {}},
                    {
                        "id": "organize",
                        "options": {
                            "excludeByName": {"Time": True, "season": True},
                            "indexByName": {"bot": 1, **{v: i + 2 for i, v in enumerate(names)}},
                            "renameByName": names,
                        },
                    },
                ],
                decimals=1,
            ),
            24,
            9,
        ),
        lay.place(
            timeseries(
                "Elo with 95% interval",
                [
                    target(f"arena_standings_elo{S}", "{{bot}}", "A"),
                    target(f"arena_standings_elo_lower{S}", "{{bot}} low", "B"),
                    target(f"arena_standings_elo_upper{S}", "{{bot}} high", "C"),
                ],
                description=(
                    "Maximum-likelihood Elo of each bot from deal finishing orders; dashed: the"
                    " bounds of its 95% confidence interval."
                ),
                decimals=0,
                overrides=[interval_style],
            ),
            12,
            9,
        ),
        lay.place(
            timeseries(
                "Score: chips, penalty points, match points or deals won",
                [target(SCORE, "{{bot}}")],
                description="The season's score in its unit: net chips, penalty points "
                "(lower is better), Sedma match points, or deals won (winner-only scoring).",
            ),
            12,
            9,
        ),
        lay.place(
            bargauge(
                "Deals won",
                [target(f"arena_standings_deals_won{S}", "{{bot}}", instant=True)],
                decimals=0,
            ),
            8,
            8,
        ),
        lay.place(
            bargauge(
                "Penalties by kind",
                [
                    target(
                        f"arena_standings_penalties{S}",
                        "{{bot}} {{kind}}",
                        instant=True,
                    )
                ],
                description="Illegal passes (SV-18, SV-19), invalid actions (SV-21), timeouts "
                "and autopilot seats per bot in this season.",
                decimals=0,
            ),
            8,
            8,
        ),
        lay.place(
            bargauge(
                "Average finishing place",
                [target(f"arena_standings_average_place{S}", "{{bot}}", instant=True)],
                decimals=2,
                description="Average place per deal; 1 is best.",
            ),
            8,
            8,
        ),
        lay.place(
            timeseries(
                "Live Elo",
                [target(f"arena_standings_live_elo{S}", "{{bot}}")],
                description="Incremental Elo in the order results arrived (the fitted Elo "
                "above does not depend on that order).",
                decimals=0,
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "OpenSkill ordinal",
                [target(f"arena_standings_openskill_ordinal{S}", "{{bot}}")],
                description="Plackett-Luce rating: mu - 3 sigma.",
                decimals=1,
            ),
            12,
            8,
        ),
    ]
    return dashboard(
        "arena-league-standings",
        "League standings",
        "Sevens Arena: standings of one season (pick it above).",
        panels,
        variables=[query_variable("season", "Season", "arena_standings_elo")],
    )


# --- Operations ---------------------------------------------------------------------------

RATE = "[$__rate_interval]"


def quantiles(metric: str) -> list[JSON]:
    return [
        target(
            f"histogram_quantile({q}, sum by (le, game) (rate({metric}_bucket{RATE})))",
            f"{{{{game}}}} p{int(q * 100)}",
            ref,
        )
        for q, ref in ((0.5, "A"), (0.9, "B"), (0.99, "C"))
    ]


def operations() -> JSON:
    lay = Layout()
    panels = [
        lay.place(stat("Connected bots", "arena_bots_connected", decimals=0), 4, 4),
        lay.place(stat("Workers alive", "arena_workers_alive", decimals=0), 4, 4),
        lay.place(stat("Queue depth", 'arena_queue_jobs{kind="queued"}', decimals=0), 4, 4),
        lay.place(
            stat(
                "Decisions per second",
                f"sum(rate(arena_decisions_total{RATE}))",
                unit="ops",
                decimals=1,
            ),
            4,
            4,
        ),
        lay.place(
            stat(
                "Matches done",
                'sum(arena_match_states{kind="done"})',
                decimals=0,
            ),
            4,
            4,
        ),
        lay.place(
            stat(
                "Redis up",
                "min(arena_redis_up)",
                decimals=0,
                description="1 when the referee's collector could read Redis at the scrape.",
            ),
            4,
            4,
        ),
        lay.place(
            timeseries(
                "Matches by state",
                [target("sum by (kind) (arena_match_states)", "{{kind}}")],
                decimals=0,
                custom={"lineWidth": 1, "fillOpacity": 30, "stacking": {"mode": "normal"}},
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Queue",
                [target("arena_queue_jobs", "{{kind}}")],
                description="RQ jobs of the match queue by kind.",
                decimals=0,
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Decisions per second by bot",
                [target(f"sum by (bot) (rate(arena_decisions_total{RATE}))", "{{bot}}")],
                unit="ops",
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Match jobs ended per second",
                [
                    target(
                        f"sum by (game, kind) (rate(arena_matches_total{RATE}))",
                        "{{game}} {{kind}}",
                    )
                ],
                unit="ops",
                description="Committed, failed and retried match jobs.",
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Bot think time",
                quantiles("arena_bot_think_seconds"),
                unit="s",
                description="Time a request spent in the bot's hands (p50, p90, p99).",
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Platform overhead per decision",
                quantiles("arena_platform_overhead_seconds"),
                unit="s",
                description="Everything but the bot's own think time (p50, p90, p99).",
            ),
            12,
            8,
        ),
        lay.place(
            bargauge(
                "Timeouts by bot",
                [
                    target(
                        "sum by (bot) (increase(arena_timeouts_total[$__range]))",
                        "{{bot}}",
                        instant=True,
                    )
                ],
                decimals=0,
                description="In the dashboard's time range.",
            ),
            8,
            8,
        ),
        lay.place(
            bargauge(
                "Invalid actions by bot",
                [
                    target(
                        "sum by (bot) (increase(arena_invalid_actions_total[$__range]))",
                        "{{bot}}",
                        instant=True,
                    )
                ],
                decimals=0,
                description="Refused actions (SV-21) in the dashboard's time range.",
            ),
            8,
            8,
        ),
        lay.place(
            bargauge(
                "Illegal passes by bot",
                [
                    target(
                        "sum by (bot) (increase(arena_illegal_passes_total[$__range]))",
                        "{{bot}}",
                        instant=True,
                    )
                ],
                decimals=0,
                description="Passes while able to play (SV-18, SV-19) in the time range.",
            ),
            8,
            8,
        ),
        lay.place(
            timeseries(
                "Penalties per second by bot",
                [
                    target(
                        f"sum by (bot) (rate(arena_timeouts_total{RATE}))", "{{bot}} timeouts", "A"
                    ),
                    target(
                        f"sum by (bot) (rate(arena_invalid_actions_total{RATE}))",
                        "{{bot}} invalid",
                        "B",
                    ),
                    target(
                        f"sum by (bot) (rate(arena_illegal_passes_total{RATE}))",
                        "{{bot}} illegal passes",
                        "C",
                    ),
                    target(
                        f"sum by (bot) (rate(arena_autopilot_seats_total{RATE}))",
                        "{{bot}} autopilot",
                        "D",
                    ),
                ],
                unit="ops",
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Season progress",
                [target("arena_season_progress_ratio", "{{season}}")],
                unit="percentunit",
                extra_defaults={"min": 0, "max": 1},
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Open bot streams",
                [target("arena_bot_streams", "{{bot}}")],
                decimals=0,
            ),
            12,
            8,
        ),
        lay.place(
            timeseries(
                "Scrape cost",
                [target("arena_collector_duration_seconds", "collector")],
                unit="s",
                description="Time the referee's collector spent reading Redis per scrape.",
            ),
            12,
            8,
        ),
    ]
    return dashboard(
        "arena-operations",
        "Operations",
        "Sevens Arena: bots, workers, queue, matches, decisions, clocks and penalties.",
        panels,
    )


DASHBOARDS = {"league-standings.json": league_standings, "operations.json": operations}


def render() -> dict[str, str]:
    return {
        name: json.dumps(build(), indent=2, sort_keys=True) + "\n"
        for name, build in DASHBOARDS.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the JSON is stale")
    args = parser.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT_DIR / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(
            f"stale dashboards: {', '.join(stale)}; run python dashboards/generate.py",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
