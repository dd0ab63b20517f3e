"""The standings table of ``arena standings``, ``season watch`` and ``arena demo``: every
value whole at 80 and 120 columns, the ranking it uses named,
and ``dup_score`` shown in a duplicate season. Real standings: seasons played
in-process with the platform's schedule, engine and policies."""

from __future__ import annotations

import re
from functools import cache

import pytest
from rich.console import Console

from referee.cli.demo import DEMO_BOTS, demo_spec
from referee.cli.seasons import standings_table
from referee.games.policies import POLICIES
from referee.match.season_row import Standings
from referee.seasons.inprocess import play_season
from referee.seasons.model import SeasonSpec
from referee.seasons.schedule import build_schedule
from referee.seasons.standings import compute_standings

DUP_BOTS = (*DEMO_BOTS, ("random-3", "random"), ("first-legal-3", "first-legal"))


@cache
def demo_standings(rank_by: str) -> Standings:
    """The standings of the demo's season (six bots, fan-tan), played in-process."""
    spec = demo_spec("sevens", "demo-sevens-151236", 20261203)
    results = play_season(spec, 20261203, {n: POLICIES[k] for n, k in DEMO_BOTS})
    return compute_standings(
        spec.name, spec.game, spec.bots, results, matches_total=len(results), rank_by=rank_by
    )


@cache
def duplicate_standings() -> Standings:
    """A field-duplicate season of eight bots at tables of 4 (each shuffle at 2 tables)."""
    spec = SeasonSpec.from_dict(
        {
            "name": "dup-fan-tan-151236",
            "game": "sevens",
            "preset": "fan-tan",
            "bots": [n for n, _ in DUP_BOTS],
            "table_size": 4,
            "deals_per_match": 2,
            "options": {"max_subsets": 10},
        }
    )
    schedule = build_schedule(spec, 11)
    results = play_season(spec, 11, {n: POLICIES[k] for n, k in DUP_BOTS}, matches=schedule)
    boards = {
        m.match_id: [(b, d.rotation) for b, d in zip(m.boards, m.deals, strict=True)]
        for m in schedule
        if m.boards and m.deals
    }
    return compute_standings(
        spec.name, spec.game, spec.bots, results, matches_total=len(results), boards=boards
    )


def render(standings: Standings, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(standings_table(standings))
    return console.export_text()


def row_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("│").split("│")]


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("rank_by", ["elo", "score"])
def test_every_value_is_whole_at_80_and_120_columns(width: int, rank_by: str) -> None:
    standings = demo_standings(rank_by)
    text = render(standings, width)
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= width
    lines = row_lines(text)
    assert len(lines) == len(standings["rows"]) == 6, text
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    titles = [c.strip() for c in header.strip("┃").split("┃")]
    for line, row in zip(lines, standings["rows"], strict=True):
        shown = dict(zip(titles, cells(line), strict=True))
        assert shown["#"] == str(row["rank"])
        assert shown["bot"] == row["bot"]
        assert shown["Elo"] == f"{row['elo']:.0f}" and re.fullmatch(r"1\d{3}", shown["Elo"])
        assert shown["chips"] == str(row["score"])  # the game's score beside Elo
        assert shown["place"] == f"{row['avg_place']:.2f}"
        assert shown["faults"] == f"{row['invalid_actions']}/{row['timeouts']}/{row['fallbacks']}"
    assert titles.index("chips") == titles.index("Elo") + 1
    if width >= 120:  # room for everything
        assert {"95% CI", "live", "OSk", "deals", "IP", "AP"} <= set(titles)
    ranking = {"elo": "ranked by Elo", "score": "ranked by chips per match"}[rank_by]
    assert ranking in " ".join(text.split()), text


def test_bot_names_fold_rather_than_lose_a_needed_column_in_a_narrow_terminal() -> None:
    standings = demo_standings("elo")
    text = render(standings, 50)
    assert "…" not in text, text
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    titles = [c.strip() for c in header.strip("┃").split("┃")]
    assert titles == ["#", "bot", "Elo", "chips", "M", "place", "faults"]
    folded = "".join(cells(line)[1] for line in row_lines(text))
    assert folded == "".join(r["bot"] for r in standings["rows"]), text


@pytest.mark.parametrize("width", [80, 120])
def test_a_duplicate_season_shows_dup_score(width: int) -> None:
    standings = duplicate_standings()
    assert any(r["dup_hands"] for r in standings["rows"])
    text = render(standings, width)
    assert "…" not in text, text
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    titles = [c.strip() for c in header.strip("┃").split("┃")]
    assert "dup" in titles
    for line, row in zip(row_lines(text), standings["rows"], strict=True):
        shown = dict(zip(titles, cells(line), strict=True))
        assert shown["dup"] == f"{row['dup_score']:+.1f}"
        assert shown["bot"] == row["bot"]
