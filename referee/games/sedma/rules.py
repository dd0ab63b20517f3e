"""The Sedma rules object, its validator and the named presets (docs/RULES.md part 2).

A variant is a preset, not a subclass: ``sedma`` (SD-1..SD-16), ``sedma-2`` (SD-17),
``sedma-3`` (SD-18) and ``mariash-sedma`` (SD-19) differ only in field values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, get_args

from referee.games.cards import GERMAN_RANKS, Card, Rank, Suit
from referee.games.errors import InvalidRulesError

CUSTOM = "custom"

# Options that take one of a few values: declared once as Literal types, which type the
# fields and give the validator its tables.
Session = Literal["target", "running"]
SedmaDeck = Literal["german32", "sedma24"]
SESSIONS: tuple[Session, ...] = get_args(Session)
SEDMA_DECKS: tuple[SedmaDeck, ...] = get_args(SedmaDeck)

DECK_RANKS: dict[SedmaDeck, tuple[Rank, ...]] = {
    # SD-2: 7 8 9 10 U(J) O(Q) K A in four suits.
    "german32": GERMAN_RANKS,
    # SD-18: the 8s and 9s removed; the 7s stay wild and every point card stays.
    "sedma24": tuple(rank for rank in GERMAN_RANKS if rank not in (Rank.EIGHT, Rank.NINE)),
}


_DECKS: dict[str, tuple[Card, ...]] = {
    kind: tuple(sorted(Card(suit, rank) for suit in Suit for rank in ranks))
    for kind, ranks in DECK_RANKS.items()
}


def deck_cards(kind: str) -> list[Card]:
    """The cards of a Sedma deck kind, in canonical (suit, rank) order (a new list)."""
    return list(_DECKS[kind])


@dataclass(frozen=True, slots=True)
class SedmaRules:
    """A validated Sedma rules object; every field has the default of the ``sedma`` preset.

    * ``players``: table size (2, 3 or 4); ``partnerships``: seats 0+2 against 1+3 (SD-1,
      only with 4 players), otherwise each seat is its own side (SD-17, SD-18).
    * ``deck``: ``german32`` (SD-2) or ``sedma24`` (SD-18); ``hand_size`` cards dealt to
      each seat (SD-6); the rest is the talon, which must split evenly among the seats so
      every seat draws one card after every trick (SD-11).
    * ``last_trick_bonus`` (SD-4); ``win_points``, ``bald_points``, ``naked_points``: match
      points for a hand won plainly, with all card points, with every trick (SD-14).
    * ``session``: ``target`` plays hands until a side has ``target`` match points (SD-15);
      ``running`` plays exactly ``running_hands`` hands and ranks by the running total.
    * ``marriages``/``marriage_points``: a queen-king pair shown when leading (SD-19).
    * ``max_redeals``: consecutive void hands (SD-16) redealt for one slot before the slot
      is scored as void, a bound so that no match can loop forever.
    """

    name: str = "sedma"
    players: int = 4
    partnerships: bool = True
    deck: SedmaDeck = "german32"
    hand_size: int = 4
    last_trick_bonus: int = 10
    win_points: int = 1
    bald_points: int = 2
    naked_points: int = 3
    session: Session = "target"
    target: int = 4
    running_hands: int = 4
    marriages: bool = False
    marriage_points: int = 20
    max_redeals: int = 20

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise InvalidRulesError(f"invalid Sedma rules {self.name!r}: " + "; ".join(problems))

    # Derived values -------------------------------------------------------------------

    @property
    def num_sides(self) -> int:
        return 2 if self.partnerships else self.players

    @property
    def deck_size(self) -> int:
        return 4 * len(DECK_RANKS[self.deck])

    @property
    def talon_size(self) -> int:
        return self.deck_size - self.players * self.hand_size

    @property
    def num_tricks(self) -> int:
        return self.deck_size // self.players

    @property
    def card_point_total(self) -> int:
        """Points of all aces and tens in the deck (80 in both decks, SD-4)."""
        return 10 * sum(1 for rank in DECK_RANKS[self.deck] if rank in (Rank.TEN, Rank.ACE)) * 4

    def sides(self) -> tuple[tuple[int, ...], ...]:
        """Seats of each side: ((0, 2), (1, 3)) for partnerships, one seat per side else."""
        if self.partnerships:
            return ((0, 2), (1, 3))
        return tuple((seat,) for seat in range(self.players))

    def side_of(self, seat: int) -> int:
        return seat % 2 if self.partnerships else seat

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELD_NAMES}


_FIELD_NAMES = tuple(f.name for f in fields(SedmaRules))
_BASE_TYPES: dict[str, type] = {
    "str": str,
    "int": int,
    "bool": bool,
    "SedmaDeck": str,
    "Session": str,
}


def _problems(rules: SedmaRules) -> list[str]:
    out: list[str] = []
    for f in fields(SedmaRules):
        value = getattr(rules, f.name)
        wanted = _BASE_TYPES[str(f.type)]
        if type(value) is not wanted:
            out.append(f"{f.name} must be {f.type!s}, got {value!r}")
    if out:
        return out
    if rules.players not in (2, 3, 4):
        out.append(f"players must be 2, 3 or 4 (SD-1, SD-17, SD-18), got {rules.players}")
    if rules.partnerships and rules.players != 4:
        out.append("partnerships need players = 4 (SD-1); set partnerships = false")
    if rules.deck not in SEDMA_DECKS:
        out.append(f"deck must be one of {', '.join(SEDMA_DECKS)}, got {rules.deck!r}")
    elif rules.players in (2, 3, 4):
        if rules.hand_size < 1 or rules.players * rules.hand_size > rules.deck_size:
            out.append(
                f"hand_size must be between 1 and {rules.deck_size // rules.players} "
                f"for {rules.players} players and a {rules.deck_size}-card deck"
            )
        elif rules.talon_size % rules.players:
            out.append(
                f"the talon ({rules.talon_size} cards) must split evenly among "
                f"{rules.players} players so every seat draws after each trick (SD-11); "
                "change hand_size or deck (sedma24 for 3 players)"
            )
    if rules.last_trick_bonus < 0 or rules.last_trick_bonus % 10:
        out.append("last_trick_bonus must be a non-negative multiple of 10 (SD-4: 10)")
    if not 1 <= rules.win_points <= rules.bald_points <= rules.naked_points:
        out.append("match points must satisfy 1 <= win_points <= bald_points <= naked_points")
    if rules.session not in SESSIONS:
        out.append(f"session must be 'target' or 'running' (SD-15), got {rules.session!r}")
    if rules.target < 1:
        out.append(f"target must be at least 1 match point (SD-15: 4), got {rules.target}")
    if rules.running_hands < 1:
        out.append(f"running_hands must be at least 1, got {rules.running_hands}")
    if rules.marriage_points < 0 or rules.marriage_points % 10:
        out.append("marriage_points must be a non-negative multiple of 10 (SD-19: 20 or 40)")
    if rules.max_redeals < 0:
        out.append(f"max_redeals must be >= 0, got {rules.max_redeals}")
    if not rules.name:
        out.append("name must not be empty (use 'custom')")
    return out


PRESETS: dict[str, SedmaRules] = {
    "sedma": SedmaRules(),
    "sedma-2": SedmaRules(name="sedma-2", players=2, partnerships=False),
    "sedma-3": SedmaRules(name="sedma-3", players=3, partnerships=False, deck="sedma24"),
    "mariash-sedma": SedmaRules(name="mariash-sedma", marriages=True, marriage_points=20),
}


def preset(name: str) -> SedmaRules:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidRulesError(
            f"unknown Sedma preset {name!r}: use one of {', '.join(PRESETS)}"
        ) from None


def rules_from_dict(data: Mapping[str, Any]) -> SedmaRules:
    """Build and validate rules from a dict.

    Missing fields come from the preset named by ``name`` when it is one (else from the
    ``sedma`` defaults). When the result differs from that preset, its name becomes
    ``custom`` so a modified preset never passes for the real one.
    """
    if not isinstance(data, Mapping):
        raise InvalidRulesError(f"Sedma rules must be a mapping, got {type(data).__name__}")
    known = {f.name for f in fields(SedmaRules)}
    unknown = sorted(str(key) for key in set(data) - known)
    if unknown:
        raise InvalidRulesError(
            f"unknown Sedma rules option(s) {', '.join(unknown)}: "
            f"known are {', '.join(sorted(known))}"
        )
    name = data.get("name", CUSTOM)
    base = PRESETS.get(name) if isinstance(name, str) else None
    overrides = {k: v for k, v in data.items() if k != "name"}
    if base is None:
        return SedmaRules(**{**asdict(SedmaRules()), **overrides, "name": name})
    built = replace(base, **overrides)
    return built if built == base else replace(built, name=CUSTOM)
