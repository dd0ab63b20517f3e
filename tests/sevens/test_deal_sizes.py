"""SV-4 (and through it SV-28): the seats left of the dealer get the extra cards, whoever
made the deal specs: the match itself, ``arena selfplay --deals``, ``arena match run
--deals`` or a season schedule (plain and duplicate deals)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from referee.cli.games import deal_seed as selfplay_deal_seed
from referee.cli.main import build_parser
from referee.cli.workers_cmd import build_spec
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS, SevensRules
from referee.seasons.model import SeasonOptions, SeasonSpec
from referee.seasons.schedule import deal_specs

GAME = get_game("sevens")
DEALS = 3

SpecSource = Callable[[str, int], Sequence[DealSpec] | None]


def _engine(_preset: str, _n: int) -> None:
    return None


def _selfplay(_preset: str, _n: int) -> list[DealSpec]:
    # what referee.cli.games.play_match builds for --deals
    return [DealSpec(selfplay_deal_seed(2, d)) for d in range(DEALS)]


def _match_run(preset: str, n: int) -> Sequence[DealSpec]:
    # through the real parser, so the test keeps up with the command's flags
    args = build_parser().parse_args(
        [
            "match",
            "run",
            "--game=sevens",
            f"--preset={preset}",
            "--bots=" + ",".join(f"b{i}" for i in range(n)),
            "--seed=2",
            f"--deals={DEALS}",
            "--match-id=m",
        ]
    )
    deals = build_spec(args).deals
    assert deals is not None
    return deals


def _season(duplicate: bool) -> SpecSource:
    def source(preset: str, n: int) -> Sequence[DealSpec]:
        spec = SeasonSpec(
            name="s1",
            game="sevens",
            preset=preset,
            bots=tuple(f"bot{i}" for i in range(n)),
            table_size=n,
            deals_per_match=2 * n if duplicate else DEALS,
            options=SeasonOptions.from_dict({"duplicate": duplicate}),
        )
        specs = deal_specs(spec, seed=2, index=1, seats=n)
        assert specs is not None
        return specs

    return source


SOURCES: dict[str, SpecSource] = {
    "engine": _engine,
    "selfplay --deals": _selfplay,
    "match run --deals": _match_run,
    "season": _season(duplicate=False),
    "season duplicate": _season(duplicate=True),
}

CASES = [
    (preset, n) for preset, rules in sorted(PRESETS.items()) for n in GAME.player_counts(rules)
]


def _play_out(match: SevensMatch) -> None:
    rng = random.Random(0)
    while not match.is_over():
        legal = match.legal_actions()
        match.apply(legal[0] if rng.random() < 0.5 else rng.choice(legal))


def _dealers(match: SevensMatch) -> list[int]:
    return [int(e.detail["dealer"]) for e in match.events() if e.kind == "deal_start"]


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize(("preset", "n"), CASES)
def test_extra_cards_go_to_the_seats_left_of_the_dealer(preset: str, n: int, source: str) -> None:
    """SV-4: hand sizes relative to the dealer are [big]*extra + [small]*(n - extra)."""
    rules = PRESETS[preset]
    assert isinstance(rules, SevensRules)
    specs = SOURCES[source](preset, n)
    match = GAME.new_match(rules, n, seed=2, deals=specs)
    assert isinstance(match, SevensMatch)
    _play_out(match)
    hands = match.initial_hands()
    dealers = _dealers(match)
    assert len(hands) == len(dealers) >= 1
    for d, (dealt, dealer) in enumerate(zip(hands, dealers, strict=True)):
        sizes = [len(hand) for hand in dealt]
        total = sum(sizes)
        small, extra = divmod(total, n)
        relative = [sizes[(dealer + 1 + j) % n] for j in range(n)]
        expected = [small + 1] * extra + [small] * (n - extra)
        assert relative == expected, (source, preset, n, d, dealer, sizes)


def test_fan_tan_pt_five_players_deals_the_extra_cards_left_of_the_dealer() -> None:
    """The issue's example (SV-4, SV-28): selfplay --deals 1 --seed 2 with 5 players."""
    rules = PRESETS["fan-tan-pt"]
    match = GAME.new_match(rules, 5, seed=2, deals=[DealSpec(selfplay_deal_seed(2, 0))])
    sizes = [len(hand) for hand in match.initial_hands()[0]]
    assert sizes == [10, 11, 11, 10, 10]
    antes = {
        e.seat: e.detail["chips"] for e in match.events() if e.kind == "ante" and e.seat is not None
    }
    # fan-tan-pt: the short hands put one chip less (minus_one with ante 1: nothing)
    assert sorted(antes) == [1, 2]
