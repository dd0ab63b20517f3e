"""The observation's declared type: what a seat may see, as the dict of docs/OBSERVATIONS.md.

One declaration for every side of the protocol: the rules engines build it
(``Match.observation(seat)`` in ``referee/games``), the match host encodes it
(``referee/protocol/convert.py``, field numbers from the generated descriptors), the SDK
parses it back (``Turn.observation``), and the stdio bridge writes it as JSON. It lives here,
in the SDK package, because a bot needs it without the platform: this module imports only
``typing`` (``tests/test_layering.py``). ``tests/docs_contract/`` checks these keys against
docs/OBSERVATIONS.md and the proto.

At run time an observation is a plain ``dict`` (JSON-able); the types are for readers and
type checkers. The game's own fields are ``NotRequired``: a Sevens observation has the
:class:`SevensFields`, a Sedma one the :class:`SedmaFields`, according to ``game``.
"""

from typing import Any, NotRequired, TypedDict

__all__ = [
    "COMMON_KEYS",
    "SEDMA_KEYS",
    "SEVENS_KEYS",
    "HistoryItem",
    "Observation",
    "SedmaFields",
    "SevensFields",
    "TrickCard",
]


class HistoryItem(TypedDict):
    """One public event of the current deal, as a seat sees it."""

    seat: int
    kind: str
    action: NotRequired[str]
    reason: NotRequired[str]


class TrickCard(TypedDict):
    """A card of the current Sedma trick and the seat that played it."""

    seat: int
    card: str


class SevensFields(TypedDict):
    """The Sevens family's own fields (``game == "sevens"``; message ``SevensView``)."""

    table: dict[str, list[str]]
    pot: int
    passes: list[int]
    free_passes_left: list[int]
    eliminated: list[bool]
    skip_next: list[bool]


class SedmaFields(TypedDict):
    """Sedma's own fields (``game == "sedma"``; message ``SedmaView``)."""

    sides: list[list[int]]
    leader: int
    trick: list[TrickCard]
    talon_size: int
    tricks_won: list[int]
    card_points: list[int]
    match_points: list[int]
    target: int
    marriages: list[list[str]]


class Observation(TypedDict):
    """Everything a seat may know now (docs/OBSERVATIONS.md): the common fields, and the
    game's own (:class:`SevensFields` or :class:`SedmaFields`, by ``game``)."""

    game: str
    preset: str
    rules: dict[str, Any]
    seat: int
    num_players: int
    deal_index: int
    num_deals: int
    dealer: int
    to_act: int
    hand: list[str]
    hand_sizes: list[int]
    totals: list[int]
    unit: str
    history: list[HistoryItem]
    # Sevens (SevensFields)
    table: NotRequired[dict[str, list[str]]]
    pot: NotRequired[int]
    passes: NotRequired[list[int]]
    free_passes_left: NotRequired[list[int]]
    eliminated: NotRequired[list[bool]]
    skip_next: NotRequired[list[bool]]
    # Sedma (SedmaFields)
    sides: NotRequired[list[list[int]]]
    leader: NotRequired[int]
    trick: NotRequired[list[TrickCard]]
    talon_size: NotRequired[int]
    tricks_won: NotRequired[list[int]]
    card_points: NotRequired[list[int]]
    match_points: NotRequired[list[int]]
    target: NotRequired[int]
    marriages: NotRequired[list[list[str]]]


SEVENS_KEYS = frozenset(SevensFields.__annotations__)
SEDMA_KEYS = frozenset(SedmaFields.__annotations__)
COMMON_KEYS = frozenset(Observation.__required_keys__)
"""The keys every observation has; a game's observation has these and its own."""
