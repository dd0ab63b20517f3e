"""The Sevens-family rules object (docs/RULES.md part 1) and its named presets.

Rules are data: every option of docs/RULES.md part 1 is a field with a documented default,
the object is frozen and validated on construction, and a preset is just a named
instance. Interpretations where docs/RULES.md leaves room are in ``docs/SEVENS_DECISIONS.md``.

>>> preset("fan-tan").ante
1
>>> SevensRules.from_dict({"must_play": False})
Traceback (most recent call last):
...
referee.games.errors.InvalidRulesError: must_play=false lets a seat pass forever (SV-24): \
set max_voluntary_passes or pass_elimination to a number above 0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from referee.games.cards import DECK_RANKS, Rank
from referee.games.errors import InvalidRulesError

# Options that take one of a few values: declared once as Literal types, which type the
# fields and give the validator its tables (``get_args``).
Deck = Literal["french52", "german32", "spanish40"]
Ace = Literal["low", "high"]
Starters = Literal["in_hand", "removed_before_deal", "placed_from_hands"]
Opening = Literal["seven_of_diamonds", "left_of_dealer_diamond", "any_seven", "seven_of_hearts"]
IllegalPassPenalty = Literal["lose_turn", "chips", "forfeit_deal"]
Payee = Literal["pot", "winner"]
ShortHandAnte = Literal["none", "minus_one", "plus_one"]
CardPenalty = Literal["none", "per_card", "pips", "face_ten"]
Scoring = Literal["winner_only", "chips", "penalty_points"]
Tiebreak = Literal["none", "extra_deal", "fewest_cards_last_deal", "showdown"]
AcePips = Literal[1, 15]

DECKS: tuple[Deck, ...] = get_args(Deck)
ACES: tuple[Ace, ...] = get_args(Ace)
STARTERS: tuple[Starters, ...] = get_args(Starters)
OPENINGS: tuple[Opening, ...] = get_args(Opening)
ILLEGAL_PASS_PENALTIES: tuple[IllegalPassPenalty, ...] = get_args(IllegalPassPenalty)
PAYEES: tuple[Payee, ...] = get_args(Payee)
SHORT_HAND_ANTES: tuple[ShortHandAnte, ...] = get_args(ShortHandAnte)
CARD_PENALTIES: tuple[CardPenalty, ...] = get_args(CardPenalty)
SCORINGS: tuple[Scoring, ...] = get_args(Scoring)
TIEBREAKS: tuple[Tiebreak, ...] = get_args(Tiebreak)
ACE_PIPS: tuple[AcePips, ...] = get_args(AcePips)

UNTIL_BROKE_DEFAULT_CAP = 100
"""With ``until_broke`` and ``deals == 0`` the match stops after this many deals at most."""


@dataclass(frozen=True, slots=True)
class SevensRules:
    """One complete, validated Sevens-family rules object.

    Field defaults are the base game (the ``sevens`` preset). Constructing an
    inconsistent object raises :class:`InvalidRulesError` naming the option to set.
    """

    name: str = "custom"
    # Deck and layout (SV-2, SV-3, SV-7).
    deck: Deck = "french52"
    starter_rank: str = "7"  # the rank that opens each row: 7, J or Q (domino), 5 (cinquillo)
    ace: Ace = "low"  # (SV-3) german32 needs high, spanish40 needs low
    starters: Starters = "in_hand"  # (SV-7)
    # Plays (SV-11, SV-12).
    multi_card_turn: bool = False
    eights_before_sixes: bool = False  # the card above the starter before the one below
    # Who opens (SV-13..SV-16); "seven" means the starter rank.
    opening: Opening = "seven_of_diamonds"
    # Passing (SV-17..SV-24).
    must_play: bool = True
    pass_chips: int = 0  # paid into the pot by a forced pass (chip/points games)
    illegal_pass_penalty: IllegalPassPenalty = "lose_turn"
    illegal_pass_chips: int = 0  # with illegal_pass_penalty = chips
    illegal_pass_payee: Payee = "pot"
    # An illegal pass is a pass too: it also pays pass_chips (SV-17 + SV-19, D-44); false:
    # only the illegal-pass penalty.
    illegal_pass_also_pays_pass: bool = True
    voluntary_pass_chips: int = 0  # cost of a voluntary pass when must_play is false
    free_passes: int = 0  # per seat per deal, no cost even when able to play (SV-22)
    pass_elimination: int = 0  # out of the deal after more than N passes; 0 = off (SV-23)
    max_voluntary_passes: int = 0  # per seat per deal when must_play is false; 0 = no cap
    # Chips and penalties (SV-27..SV-30).
    ante: int = 0
    short_hand_ante: ShortHandAnte = "none"  # (SV-28)
    card_penalty: CardPenalty = "none"  # (SV-29)
    ace_pips: AcePips = 1  # for card_penalty = pips
    seven_penalty: int = 0  # per starter-rank card a loser still holds (SV-30)
    scoring: Scoring = "winner_only"
    # The match (SV-32..SV-34).
    deals: int = 0  # deals per match; 0 = one per player (each seat deals once)
    until_broke: bool = False  # play until a seat has no chips left (deals = cap)
    starting_chips: int = 0
    match_tiebreak: Tiebreak = "none"

    def __post_init__(self) -> None:
        _validate(self)

    # -- derived facts used by the engine ---------------------------------------------

    @property
    def rank_order(self) -> tuple[Rank, ...]:
        """The ranks of one row from its low end to its high end (SV-3)."""
        ranks = sorted(DECK_RANKS[self.deck])
        if self.ace == "high" and Rank.ACE in ranks:
            ranks.remove(Rank.ACE)
            ranks.append(Rank.ACE)
        return tuple(ranks)

    @property
    def starter(self) -> Rank:
        return Rank.parse(self.starter_rank)

    @property
    def unit(self) -> str:
        """The native unit of match totals."""
        return {
            "winner_only": "deals_won",
            "chips": "chips",
            "penalty_points": "penalty_points",
        }[self.scoring]

    @property
    def prices_illegal_pass(self) -> bool:
        """Whether a pass while able to play is applied at a price short of the deal: an
        illegal pass (SV-18) that costs a lost turn or chips (SV-19), not ``forfeit_deal``.
        A bot may then choose it (the ladder's ``priced-pass`` does)."""
        return self.must_play and self.illegal_pass_penalty != "forfeit_deal"

    @property
    def higher_is_better(self) -> bool:
        return self.scoring != "penalty_points"

    # -- (de)serialization -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SevensRules:
        """Build from a (possibly partial) dict; missing options take their defaults."""
        if not isinstance(data, Mapping):
            raise InvalidRulesError(f"sevens rules must be an object, not {type(data).__name__}")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(str(key) for key in set(data) - set(known))
        if unknown:
            raise InvalidRulesError(
                f"unknown sevens option(s) {', '.join(unknown)}: the options are {', '.join(known)}"
            )
        for key, value in data.items():
            want = _FIELD_TYPES[key]
            ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
            if not ok:
                raise InvalidRulesError(f"option {key} must be {want.__name__}, not {value!r}")
        return cls(**dict(data))

    def replace(self, **changes: Any) -> SevensRules:
        """A copy with some options changed (validated); the name becomes ``custom``
        unless given."""
        changes.setdefault("name", "custom")
        return SevensRules.from_dict({**self.to_dict(), **changes})


_FIELD_TYPES: dict[str, type] = {
    "name": str,
    "deck": str,
    "starter_rank": str,
    "ace": str,
    "starters": str,
    "multi_card_turn": bool,
    "eights_before_sixes": bool,
    "opening": str,
    "must_play": bool,
    "pass_chips": int,
    "illegal_pass_penalty": str,
    "illegal_pass_chips": int,
    "illegal_pass_payee": str,
    "illegal_pass_also_pays_pass": bool,
    "voluntary_pass_chips": int,
    "free_passes": int,
    "pass_elimination": int,
    "max_voluntary_passes": int,
    "ante": int,
    "short_hand_ante": str,
    "card_penalty": str,
    "ace_pips": int,
    "seven_penalty": int,
    "scoring": str,
    "deals": int,
    "until_broke": bool,
    "starting_chips": int,
    "match_tiebreak": str,
}


def _choice(rules: SevensRules, option: str, allowed: tuple[Any, ...]) -> None:
    value = getattr(rules, option)
    if value not in allowed:
        raise InvalidRulesError(
            f"{option}={value!r} is not allowed: use one of {', '.join(map(str, allowed))}"
        )


def _validate(r: SevensRules) -> None:
    for name, want in _FIELD_TYPES.items():
        value = getattr(r, name)
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise InvalidRulesError(f"option {name} must be {want.__name__}, not {value!r}")
        if isinstance(value, int) and value < 0:
            raise InvalidRulesError(f"option {name} must be 0 or more, not {value}")
    if not r.name:
        raise InvalidRulesError("name must not be empty (use 'custom')")
    _choice(r, "deck", DECKS)
    _choice(r, "ace", ACES)
    _choice(r, "starters", STARTERS)
    _choice(r, "opening", OPENINGS)
    _choice(r, "illegal_pass_penalty", ILLEGAL_PASS_PENALTIES)
    _choice(r, "illegal_pass_payee", PAYEES)
    _choice(r, "short_hand_ante", SHORT_HAND_ANTES)
    _choice(r, "card_penalty", CARD_PENALTIES)
    _choice(r, "scoring", SCORINGS)
    _choice(r, "match_tiebreak", TIEBREAKS)
    _choice(r, "ace_pips", ACE_PIPS)
    # Deck and ace (SV-3): the German deck ranks the ace above the king, the Spanish below 2.
    if r.deck == "german32" and r.ace != "high":
        raise InvalidRulesError(
            "deck german32 runs 7 8 9 T J Q K A (the ace above the king): set ace='high'"
        )
    if r.deck == "spanish40" and r.ace != "low":
        raise InvalidRulesError("deck spanish40 runs A 2 … 7 J Q K (the ace is 1): set ace='low'")
    try:
        starter = Rank.parse(r.starter_rank)
    except ValueError:
        starter = None
    deck_ranks = DECK_RANKS[r.deck]
    if starter is None or starter not in deck_ranks or r.starter_rank != starter.letter:
        letters = " ".join(rank.letter for rank in sorted(deck_ranks))
        raise InvalidRulesError(
            f"starter_rank={r.starter_rank!r} is not a rank of deck {r.deck}: use one of {letters}"
        )
    if r.starters != "in_hand" and r.opening != "any_seven":
        raise InvalidRulesError(
            f"starters={r.starters!r} puts every starter on the table before play, so "
            f"opening={r.opening!r} cannot apply: set opening='any_seven' "
            "(the player left of the dealer acts first)"
        )
    # SV-24: every way of passing while able to play must be bounded.
    if not r.must_play and r.pass_elimination == 0 and r.max_voluntary_passes == 0:
        raise InvalidRulesError(
            "must_play=false lets a seat pass forever (SV-24): "
            "set max_voluntary_passes or pass_elimination to a number above 0"
        )
    if r.illegal_pass_penalty == "chips" and r.illegal_pass_chips == 0:
        raise InvalidRulesError(
            "illegal_pass_penalty='chips' needs illegal_pass_chips above 0 (pt: 3, it nl: 5)"
        )
    # Scoring consistency.
    if r.scoring == "winner_only":
        chip_options = {
            "ante": r.ante,
            "pass_chips": r.pass_chips,
            "voluntary_pass_chips": r.voluntary_pass_chips,
            "seven_penalty": r.seven_penalty,
        }
        for option, value in chip_options.items():
            if value:
                raise InvalidRulesError(
                    f"{option}={value} moves chips, but scoring='winner_only' keeps none: "
                    f"set scoring='chips' (or 'penalty_points'), or {option}=0"
                )
        if r.card_penalty != "none":
            raise InvalidRulesError(
                f"card_penalty={r.card_penalty!r} needs scoring='chips' or 'penalty_points' "
                "(scoring='winner_only' keeps no score but deals won)"
            )
        if r.illegal_pass_penalty == "chips":
            raise InvalidRulesError(
                "illegal_pass_penalty='chips' needs scoring='chips' or 'penalty_points': "
                "or use 'lose_turn' / 'forfeit_deal'"
            )
    if r.scoring == "penalty_points" and r.ante:
        raise InvalidRulesError(
            "ante needs a pot, and scoring='penalty_points' has none: set ante=0 or scoring='chips'"
        )
    if r.short_hand_ante != "none" and (r.scoring != "chips" or r.ante == 0):
        raise InvalidRulesError(
            f"short_hand_ante={r.short_hand_ante!r} adjusts the ante: "
            "set scoring='chips' and ante to 1 or more"
        )
    if r.until_broke:
        if r.scoring != "chips" or r.starting_chips == 0:
            raise InvalidRulesError(
                "until_broke plays until a seat runs out of chips (SV-32): "
                "set scoring='chips' and starting_chips above 0"
            )
        if r.ante == 0 and r.card_penalty == "none" and r.pass_chips == 0:
            raise InvalidRulesError(
                "until_broke with no ante, no pass chips and no card penalty moves no chips, "
                "so nobody can go broke: set ante, pass_chips or card_penalty"
            )
    elif r.starting_chips and r.scoring != "chips":
        raise InvalidRulesError("starting_chips needs scoring='chips'")
    if r.match_tiebreak == "showdown" and r.scoring != "penalty_points":
        raise InvalidRulesError(
            "match_tiebreak='showdown' scores a remaining-card penalty round: "
            "set scoring='penalty_points' or pick another match_tiebreak"
        )


_SEVENS = SevensRules(name="sevens")

_FAN_TAN = SevensRules(
    name="fan-tan",
    opening="any_seven",
    ante=1,
    pass_chips=1,
    illegal_pass_penalty="chips",
    illegal_pass_chips=5,
    illegal_pass_payee="pot",
    card_penalty="per_card",
    scoring="chips",
)

PRESETS: dict[str, SevensRules] = {
    "sevens": _SEVENS,
    "parliament": _SEVENS.replace(name="parliament"),  # the same game by another name
    "fan-tan": _FAN_TAN,
    # docs/RULES.md presets: pt's Fan Tan and the pip-penalty Fan Tan are `fan-tan` with changes.
    "fan-tan-pt": _FAN_TAN.replace(
        name="fan-tan-pt",
        opening="left_of_dealer_diamond",
        illegal_pass_chips=3,
        short_hand_ante="minus_one",
        match_tiebreak="fewest_cards_last_deal",
    ),
    "fan-tan-pips": _FAN_TAN.replace(
        name="fan-tan-pips",
        ante=0,
        card_penalty="pips",
        ace_pips=1,
        scoring="penalty_points",
        match_tiebreak="showdown",
    ),
    "sjuan": SevensRules(name="sjuan", opening="seven_of_hearts"),
    "shichi-narabe": SevensRules(
        name="shichi-narabe",
        starters="removed_before_deal",
        opening="any_seven",
        free_passes=3,
        pass_elimination=3,
    ),
    "domino": SevensRules(name="domino", deck="german32", ace="high", starter_rank="J"),
    "cinquillo": SevensRules(
        name="cinquillo",
        deck="spanish40",
        starter_rank="5",
        starters="placed_from_hands",
        opening="any_seven",
    ),
    "fwend": SevensRules(
        name="fwend",
        opening="seven_of_hearts",
        eights_before_sixes=True,
        card_penalty="face_ten",
        scoring="penalty_points",
    ),
}
"""The ten named presets of docs/RULES.md, by name."""


_PARSED: dict[tuple[tuple[str, Any], ...], SevensRules] = {}


def cached_rules(data: Mapping[str, Any]) -> SevensRules:
    """:meth:`SevensRules.from_dict`, memoized on the dict's items: a bot reads the same
    rules from every observation of a match, and validating them each time costs more
    than the heuristic's whole decision."""
    try:
        key = tuple(sorted(data.items()))
        found = _PARSED.get(key)
    except (AttributeError, TypeError):  # not a mapping of hashable values: let it explain
        return SevensRules.from_dict(data)
    if found is None:
        found = SevensRules.from_dict(data)
        if len(_PARSED) < 256:
            _PARSED[key] = found
    return found


def preset(name: str) -> SevensRules:
    """The preset called ``name``; the error lists the presets there are."""
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidRulesError(
            f"unknown sevens preset {name!r}: use one of {', '.join(PRESETS)}"
        ) from None
