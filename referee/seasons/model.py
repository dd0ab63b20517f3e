"""The season spec: what a season plays, who plays it, and how it is scheduled.

A season is created from CLI flags, a TOML file (``arena season create season.toml``, see
``examples/season.toml`` and docs/seasons.md) or the League API, validated here, and stored
in Redis by :mod:`referee.seasons.store`. The seed is secret until the season ends: the
spec stored for everyone to read carries ``seed = null`` and only its SHA-256.

Every random choice of a season derives from the season seed through SHA-256
(:func:`referee.games.base.derive_seed`, re-exported here), so anyone holding the revealed
seed can rebuild the schedule and re-deal every hand (``arena season verify``).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from referee.errors import ConfigError
from referee.games.base import derive_seed as derive_seed
from referee.match.spec import CLOCK_KINDS, FallbackMode, TimeControl

FORMAT_AUTO = "auto"
FORMAT_FREE_FOR_ALL = "free_for_all"
FORMAT_HEAD_TO_HEAD = "head_to_head"
FORMATS = (FORMAT_AUTO, FORMAT_FREE_FOR_ALL, FORMAT_HEAD_TO_HEAD)

DUPLICATE_FIELD = "field"
DUPLICATE_OFF = "off"
DUPLICATE_SAME_TABLE = "same_table_leaks_hands"
DUPLICATE_MODES = (DUPLICATE_FIELD, DUPLICATE_OFF, DUPLICATE_SAME_TABLE)
FALLBACK_COUNT = str(FallbackMode.COUNT)
FALLBACK_MODES = tuple(str(mode) for mode in FallbackMode)
"""``options.duplicate``: ``field`` (true): each shuffle is played at several tables by
different bots, never twice by one bot (docs/seasons.md); ``off`` (false): every deal a
new shuffle; ``same_table_leaks_hands``: the same bots replay each shuffle with the hands
rotated at one table, so a bot that remembers its hand knows what its neighbour holds on
the next rotation; only for trusted bots."""

RANK_BY = ("elo", "score", "place")
"""``options.rank_by``: what orders the standings. ``elo``: the Bradley-Terry Elo of every
deal's finishing order; ``score``: the game's own score (chips, penalty points, match
points, deals won) per match played; ``place``: average finishing place."""

DEFAULT_RANK_BY = {"sevens": "score", "sedma": "elo"}
"""The ranking a new season takes when it names none: Sevens is scored in chips or
penalty points seat by seat, the game's own verdict; in Sedma a seat's match points are
shared with its partner, so the finishing-order Elo (side against side) is the fairer
default. A stored season without ``rank_by`` (created before it existed) ranks by Elo."""


def default_rank_by(game: str) -> str:
    return DEFAULT_RANK_BY.get(game, "elo")


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SEED_MAX = 2**63 - 1

Words = Mapping[str, str]
"""How a problem names what to change: by default the TOML field (``deals_per_match``,
``options.duplicate = false``); ``arena season create`` maps them to its flags
(``--deals``, ``--no-duplicate``) when the user gave flags, so every message speaks the
interface the user used."""

TIME_CONTROL_RANGE: Final[dict[str, tuple[int, int]]] = {
    "move_ms": (1, 600_000),
    "bank_ms": (0, 3_600_000),
    "grace_ms": (0, 60_000),
    "queue_ms": (1, 3_600_000),
    "absent_ms": (0, 600_000),
}
"""The ``[time_control]`` fields and their allowed values (milliseconds, both ends in):
a clock longer than these holds a slot for hours and overflows the API's 32-bit fields."""
TIME_CONTROL_MIN = {key: low for key, (low, _high) in TIME_CONTROL_RANGE.items()}
"""The ``[time_control]`` fields and their smallest allowed values."""
SPEC_RANGE: Final[dict[str, tuple[int, int]]] = {
    "table_size": (2, 16),
    "deals_per_match": (0, 100),
    "strikes": (1, 100),
    "max_subsets": (0, 1000),
    "rounds": (1, 100),
    "window": (1, 1000),
}
"""Allowed values of a season's sizes (both ends in), checked wherever a spec is made (the
TOML, ``arena season create``, the League API): a season's schedule and every match's
deal list are built in the referee, so their sizes are bounded (docs/seasons.md)."""
MAX_SEASON_MATCHES: Final = 5000
"""At most this many matches in a season (its tables x ``rounds``): seating a schedule
costs the square of its length."""
MAX_SEASON_BOTS: Final = 500
"""At most this many bots in one season."""


def out_of_range(name: str, value: int, low: int, high: int, unit: str = "") -> str | None:
    """The one-line problem of ``name = value`` outside ``low..high``, or None."""
    if value < low:
        return f"{name} = {value}: use {low} or more (at most {high}{unit})"
    if value > high:
        return f"{name} = {value}: use at most {high}{unit} (the range is {low} .. {high})"
    return None


def _w(words: Words | None, key: str) -> str:
    return (words or {}).get(key, key)


def problems_error(problems: list[str]) -> ConfigError:
    """One ConfigError that lists every problem (one line when there is one)."""
    if len(problems) == 1:
        return ConfigError(problems[0])
    listed = "\n".join(f"  - {p}" for p in problems)
    return ConfigError(f"{len(problems)} problems with this season:\n{listed}")


def time_control_from_dict(
    data: Mapping[str, Any], words: Words | None = None, *, bounded: bool = True
) -> TimeControl:
    """``[time_control]``, checked: known fields only, whole numbers within
    :data:`TIME_CONTROL_RANGE` (a ``move_ms = "fast"``, ``-5`` or ``5000000000`` is
    refused, with every problem at once). ``bounded=False`` reads a stored season: only
    the minimums hold (a season stored before the maximums existed still lists)."""
    problems = []
    unknown = sorted(set(data) - set(TIME_CONTROL_MIN) - {"clock"})
    if unknown:
        problems.append(
            f"unknown time_control field(s) {', '.join(unknown)}: the fields are "
            f"{', '.join(TIME_CONTROL_MIN)}, clock"
        )
    clock = data.get("clock", "wall")
    if clock not in CLOCK_KINDS:
        problems.append(
            f'{_w(words, "time_control.clock")} = {clock!r}: use "wall" (the referee\'s '
            'stamps) or "cpu" (a hosted bot\'s CPU time, the wall as a backstop)'
        )
    default = TimeControl().to_dict()
    values: dict[str, int] = {}
    for key in TIME_CONTROL_RANGE:
        value = data.get(key, default[key])
        name = _w(words, f"time_control.{key}")
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{name} must be a whole number of milliseconds, not {value!r}")
            continue
        low, high = TIME_CONTROL_RANGE[key]
        bad = out_of_range(name, value, low, high if bounded else max(high, value), " ms")
        if bad is not None:
            problems.append(bad)
        else:
            values[key] = value
    if problems:
        raise problems_error(problems)
    return TimeControl(**values, clock="cpu" if clock == "cpu" else "wall")


def seed_sha256(seed: int) -> str:
    """The published commitment of a season seed: SHA-256 (hex) of its decimal text."""
    return hashlib.sha256(str(seed).encode()).hexdigest()


def random_seed() -> int:
    return secrets.randbits(63)


STORED_DEFAULTS: Final[Mapping[str, Any]] = {"separate_owners": False}
"""Options whose default changed since records were first stored, with the old default: a
stored season without the field was created (and scheduled) with it."""


@dataclass(frozen=True, slots=True)
class SeasonOptions:
    """Format options of a season.

    * ``duplicate``: ``field`` (default; ``true``): every shuffle is played at several
      tables at once, hand ``i`` held by a different bot at each, no bot ever sees a
      shuffle twice, results compared across tables; ``off`` (``false``);
      ``same_table_leaks_hands``: the old same-table rotation, which hands a memorising bot
      its opponents' cards (only for trusted bots). See :data:`DUPLICATE_MODES`.
    * ``strikes``: consecutive failures before the autopilot takes a seat (docs/workers.md).
    * ``autoplay_forced``: play single-option decisions without asking the bot.
    * ``separate_owners`` (default on): never seat two bots of one owner at one table,
      nor at two tables of one flight (they could pool what they hold of a board). Off
      only when asked (``arena season create`` warns); seasons stored without the field
      read it as off, its default when they were created (:data:`STORED_DEFAULTS`).
    * ``max_subsets``: play every k-subset of the bots when there are at most this many,
      otherwise a balanced design (every pair shares a table equally often, +-1).
    * ``rounds``: how many times the whole schedule is played.
    * ``format``: ``free_for_all``, ``head_to_head`` (Sedma for four: one bot holds both
      seats of a partnership) or ``auto`` (head-to-head for four-seat Sedma, else free).
    * ``window``: matches of this season in flight at once.
    * ``fallback``: what a fallback answer is (the bot's SDK or bridge answered for it
      because its code failed: ``Action.fallback``): ``count`` (default: applied as the
      bot's move and counted as a fallback) or ``invalid`` (refused as an invalid action,
      with the rules' consequence and a strike). See :data:`FALLBACK_MODES`.
    * ``rank_by``: what orders the standings, one of :data:`RANK_BY`; empty: the game's
      default (:data:`DEFAULT_RANK_BY`), filled in when the season is created.
    """

    duplicate: str | bool = DUPLICATE_FIELD
    """One of :data:`DUPLICATE_MODES` (``True``/``False`` are read as field/off)."""
    strikes: int = 3
    autoplay_forced: bool = False
    separate_owners: bool = True
    max_subsets: int = 200
    rounds: int = 1
    format: str = FORMAT_AUTO
    window: int = 8
    fallback: str = FALLBACK_COUNT
    rank_by: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "duplicate", _duplicate(self.duplicate))

    def to_dict(self) -> dict[str, Any]:
        return {
            "duplicate": self.duplicate,
            "strikes": self.strikes,
            "autoplay_forced": self.autoplay_forced,
            "separate_owners": self.separate_owners,
            "max_subsets": self.max_subsets,
            "rounds": self.rounds,
            "format": self.format,
            "window": self.window,
            "fallback": self.fallback,
            "rank_by": self.rank_by,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, stored: bool = False) -> SeasonOptions:
        """Options from TOML-shaped data; ``stored``: a season's record, whose missing
        fields take the defaults of when it was written (:data:`STORED_DEFAULTS`) and whose
        values need only the minimums of :data:`SPEC_RANGE` (what was stored before the
        maximums existed still reads)."""
        if stored:
            data = {**STORED_DEFAULTS, **data}
        known = set(cls().to_dict())
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"unknown season option(s) {', '.join(unknown)}: the options are "
                f"{', '.join(sorted(known))}"
            )
        default = cls()
        options = cls(
            duplicate=_duplicate(data.get("duplicate", default.duplicate)),
            strikes=_int(data, "strikes", default.strikes),
            autoplay_forced=_bool(data, "autoplay_forced", default.autoplay_forced),
            separate_owners=_bool(data, "separate_owners", default.separate_owners),
            max_subsets=_int(data, "max_subsets", default.max_subsets),
            rounds=_int(data, "rounds", default.rounds),
            format=str(data.get("format", default.format)),
            window=_int(data, "window", default.window),
            fallback=str(data.get("fallback", default.fallback)),
            rank_by=str(data.get("rank_by", default.rank_by)),
        )
        options.validate(bounded=not stored)
        return options

    def owners_warning(self) -> str:
        """What an operator is told on creating a season with owners not kept apart."""
        if self.separate_owners:
            return ""
        return (
            "separate_owners = false: two bots of one owner may sit at one table or play "
            "one board at two tables of a flight, and pool what they hold; keep it on "
            "(the default) for a competition"
        )

    def validate(self, *, bounded: bool = True) -> None:
        """Every option within :data:`SPEC_RANGE` (``bounded=False``: its minimum only)."""
        for key in ("strikes", "max_subsets", "rounds", "window"):
            value = getattr(self, key)
            low, high = SPEC_RANGE[key]
            bad = out_of_range(key, value, low, high if bounded else max(high, value))
            if bad is not None:
                raise ConfigError(bad)
        if self.format not in FORMATS:
            raise ConfigError(f"format = {self.format!r}: use one of {', '.join(FORMATS)}")
        if self.fallback not in FALLBACK_MODES:
            raise ConfigError(
                f"fallback = {self.fallback!r}: use one of {', '.join(FALLBACK_MODES)} "
                "(count: a fallback answer is played and counted; invalid: it is refused "
                "as an invalid action)"
            )
        if self.rank_by and self.rank_by not in RANK_BY:
            raise ConfigError(
                f"rank_by = {self.rank_by!r}: use one of {', '.join(RANK_BY)} (Elo, the "
                "game's score per match, average place)"
            )


@dataclass(frozen=True, slots=True)
class SeasonSpec:
    """A whole season. ``seed=None`` means "draw one at creation"; ``rules`` (a full rules
    object) overrides ``preset``; ``deals_per_match = 0`` lets the rules decide the match
    length (only without duplicate deals)."""

    name: str
    game: str
    bots: tuple[str, ...]
    table_size: int
    preset: str = ""
    rules: Mapping[str, Any] | None = None
    deals_per_match: int = 0
    time_control: TimeControl = field(default_factory=TimeControl)
    seed: int | None = None
    options: SeasonOptions = field(default_factory=SeasonOptions)

    @property
    def head_to_head(self) -> bool:
        """Sedma for four with one bot on both seats of a partnership (SD-1)."""
        fmt = self.options.format
        if fmt == FORMAT_AUTO:
            return self.game == "sedma" and self.table_size == 4
        return fmt == FORMAT_HEAD_TO_HEAD

    @property
    def players_per_match(self) -> int:
        """Distinct bots at one table (two in head-to-head)."""
        return 2 if self.head_to_head else self.table_size

    def with_seed(self, seed: int) -> SeasonSpec:
        return replace(self, seed=seed)

    def public(self) -> SeasonSpec:
        """The spec without its seed (what is stored for everyone to read)."""
        return replace(self, seed=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "game": self.game,
            "preset": self.preset,
            "rules": None if self.rules is None else dict(self.rules),
            "bots": list(self.bots),
            "table_size": self.table_size,
            "deals_per_match": self.deals_per_match,
            "time_control": self.time_control.to_dict(),
            "seed": self.seed,
            "options": self.options.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SeasonSpec:
        """A stored season's spec (its record, ``to_json``)."""
        return cls.from_dict(json.loads(text), stored=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, stored: bool = False) -> SeasonSpec:
        """Build a spec from TOML-shaped data; the error says which field is wrong.
        ``stored``: a season's record (see :meth:`SeasonOptions.from_dict`): it skips the
        maximums of :data:`SPEC_RANGE` and :data:`TIME_CONTROL_RANGE`."""
        known = {
            "name",
            "game",
            "preset",
            "rules",
            "bots",
            "table_size",
            "deals_per_match",
            "time_control",
            "seed",
            "options",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"unknown season field(s) {', '.join(unknown)}: the fields are "
                f"{', '.join(sorted(known))}"
            )
        if "game" not in data:
            raise ConfigError('a season needs a game: game = "sevens" or game = "sedma"')
        bots = data.get("bots", [])
        if not isinstance(bots, list | tuple) or not all(isinstance(b, str) for b in bots):
            raise ConfigError('bots must be a list of bot names, e.g. bots = ["alice", "bob"]')
        rules = data.get("rules")
        if rules is not None and not isinstance(rules, Mapping):
            raise ConfigError("rules must be a table of rules fields ([rules] in TOML)")
        seed = data.get("seed")
        if seed is not None:
            seed = _int(data, "seed", 0)
            if seed == 0:
                seed = None
            elif not 0 < seed <= _SEED_MAX:
                raise ConfigError(f"seed = {seed}: use 1 .. 2**63-1, or 0 for a random seed")
        tc = data.get("time_control", {})
        if not isinstance(tc, Mapping):
            raise ConfigError("time_control must be a table: [time_control] move_ms = 1000 ...")
        time_control = time_control_from_dict(tc, bounded=not stored)
        options = data.get("options", {})
        if not isinstance(options, Mapping):
            raise ConfigError("options must be a table: [options] duplicate = true ...")
        game = str(data["game"])
        return cls(
            name=str(data.get("name", "")),
            game=game,
            preset=str(data.get("preset", "") or ""),
            rules=None if rules is None else dict(rules),
            bots=tuple(bots),
            table_size=_int(data, "table_size", 4),
            deals_per_match=_int(data, "deals_per_match", 0),
            time_control=time_control,
            seed=seed,
            options=SeasonOptions.from_dict(options, stored=stored),
        )

    @classmethod
    def from_toml(cls, text: str) -> SeasonSpec:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"season TOML does not parse: {exc}") from None
        return cls.from_dict(data)

    def validate(self, words: Words | None = None) -> None:
        """Check what can be checked without the game engine or Redis (every problem)."""
        problems = self.problems(words)
        if problems:
            raise problems_error(problems)

    def problems(self, words: Words | None = None) -> list[str]:
        """Everything wrong with the spec that can be told without the engine or Redis."""
        out: list[str] = []
        if not _NAME_RE.match(self.name):
            out.append(
                f"season name {self.name!r} ({_w(words, 'name')}): use 1-64 letters, digits, "
                "'-', '_' or '.', starting with a letter or digit"
            )
        if len(self.bots) > MAX_SEASON_BOTS:
            out.append(
                f"{len(self.bots)} bots in {_w(words, 'bots')} is out of range: use 2 .. "
                f"{MAX_SEASON_BOTS}"
            )
        if len(set(self.bots)) != len(self.bots):
            dupes = sorted({b for b in self.bots if self.bots.count(b) > 1})
            out.append(f"bots listed twice in {_w(words, 'bots')}: {', '.join(dupes)}")
        for key in ("table_size", "deals_per_match"):
            bad = out_of_range(_w(words, key), getattr(self, key), *SPEC_RANGE[key])
            if bad is not None:
                out.append(bad)
        if len(self.bots) < self.players_per_match:
            out.append(
                f"{len(self.bots)} bot(s) in {_w(words, 'bots')} for tables of "
                f"{self.players_per_match} distinct bots: list at least "
                f"{self.players_per_match} bots"
            )
        if self.head_to_head and self.table_size != 4:
            out.append(f"head-to-head needs tables of 4 (two partnerships), not {self.table_size}")
        deals = _w(words, "deals_per_match")
        no_duplicate = _w(words, "options.duplicate = false")
        if self.deals_per_match < 0:
            pass  # out of range, said above
        elif self.options.duplicate != DUPLICATE_OFF:
            step = self.duplicate_rotations
            if self.deals_per_match == 0:
                out.append(
                    f"duplicate deals need a fixed number of deals: set {deals} (1 or more), "
                    f"or turn them off with {no_duplicate}"
                )
            elif self.options.duplicate == DUPLICATE_SAME_TABLE and self.deals_per_match % step:
                lower = max(step, self.deals_per_match // step * step)
                out.append(
                    f"{deals} = {self.deals_per_match} with same-table duplicate deals at "
                    f"this table must be a multiple of {step} (e.g. {lower} or "
                    f"{lower + step}), or use field duplicate (options.duplicate = true)"
                )
        try:
            self.options.validate()
        except ConfigError as exc:
            out.append(str(exc))
        return out

    @property
    def duplicate_rotations(self) -> int:
        """The rotations of one shuffle (the table size; 2 in head-to-head, where rotation
        1 swaps the sides): at most this many tables play a shuffle in field duplicate."""
        return 2 if self.head_to_head else self.table_size

    def validate_with_engine(self, words: Words | None = None) -> dict[str, Any]:
        """Validate against the engine (game, preset, table size); return the rules.
        Every problem is reported at once (:meth:`check_with_engine`)."""
        rules, problems = self.check_with_engine(words)
        if problems or rules is None:
            raise problems_error(problems)
        return rules

    def check_with_engine(
        self, words: Words | None = None
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """The rules (``None`` when they cannot be built) and every problem of the spec:
        :meth:`problems` plus the game, the preset or rules, and the table size."""
        from referee.games.errors import InvalidRulesError
        from referee.games.registry import GAMES, get_game

        problems = self.problems(words)
        if self.game not in GAMES:
            problems.append(
                f"{_w(words, 'game')} = {self.game!r} is not a game here: use one of "
                f"{', '.join(sorted(GAMES))}"
            )
            return None, problems
        game = get_game(self.game)
        try:
            rules_obj = (
                game.rules_from_dict(self.rules)
                if self.rules is not None
                else game.preset(self.preset or self.game)
            )
        except InvalidRulesError as exc:
            where = _w(words, "rules") if self.rules is not None else _w(words, "preset")
            problems.append(f"{where}: {exc}")
            return None, problems
        counts = list(game.player_counts(rules_obj))
        if self.table_size not in counts:
            problems.append(
                f"{_w(words, 'table_size')} = {self.table_size} is not allowed by "
                f"{rules_obj.name!r}: use one of {', '.join(map(str, counts))}"
            )
        return dict(rules_obj.to_dict()), problems


def _int(data: Mapping[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key} must be a whole number, not {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key} must be a whole number, not {value!r}") from None


def _duplicate(value: Any) -> str:
    if value is True:
        return DUPLICATE_FIELD
    if value is False:
        return DUPLICATE_OFF
    if isinstance(value, str) and value in DUPLICATE_MODES:
        return value
    raise ConfigError(
        f"duplicate must be true or false (or one of {', '.join(DUPLICATE_MODES)}), not {value!r}"
    )


def _bool(data: Mapping[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, not {value!r}")
    return value
