"""docs/OBSERVATIONS.md, proto/arena/v1/game.proto and the engines' observation dicts agree.

The page's tables list, per message, every JSON key, proto field and proto type. This test
reads them and fails when a field is added to (or removed from) the proto, the engine's
dict or the page without the others, or when a documented type is not the proto's. The
round trip engine dict -> proto (referee.protocol.convert) -> dict (the SDK) shows that the
mapping the page describes is the one the code does.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from arena.v1 import game_pb2
from arena_sdk.observation import Observation
from referee.games.registry import GAMES, get_game
from referee.protocol.convert import observation_to_proto
from sample_bots.sdk import observation_to_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "OBSERVATIONS.md"
SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_BOOL: "bool",
}
VIEWS = {"sevens": "SevensView", "sedma": "SedmaView"}


def doc_tables() -> dict[str, list[dict[str, str]]]:
    """Message name -> rows of its table ({"json", "json_type", "field", "type"})."""
    tables: dict[str, list[dict[str, str]]] = {}
    current = ""
    for line in DOC.read_text().splitlines():
        named = re.search(r"[Mm]essage `(\w+)`", line)
        if named and not line.startswith("|"):
            current = named.group(1)
            continue
        if not line.startswith("| ") or line.startswith("| JSON key") or not current:
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        tables.setdefault(current, []).append(
            {
                "json": cells[0].strip("`"),
                "json_type": cells[1],
                "field": cells[2].strip("`"),
                "type": cells[3],
            }
        )
    return tables


def proto_type(field: FieldDescriptor) -> str:
    message = field.message_type
    base = message.name if message is not None else SCALARS[field.type]
    repeated = field.is_repeated
    return f"repeated {base}" if repeated else base


def descriptor(name: str) -> Descriptor:
    return game_pb2.DESCRIPTOR.message_types_by_name[name]


def test_every_proto_field_is_documented_with_its_type() -> None:
    tables = doc_tables()
    expected = {"Observation", *VIEWS.values(), "HistoryEntry", "Row", "TrickCard", "Side"}
    assert expected | {"Marriage"} == set(tables), sorted(tables)
    for name, rows in tables.items():
        fields = {f.name: f for f in descriptor(name).fields}
        if name == "Observation":  # the oneof view is described in words
            assert {f.name for f in fields.values() if f.containing_oneof} == set(VIEWS)
            fields = {k: f for k, f in fields.items() if not f.containing_oneof}
        documented = [row["field"] for row in rows]
        assert documented == [f.name for f in sorted(fields.values(), key=lambda f: f.number)], (
            f"docs/OBSERVATIONS.md message {name}: fields {documented} != proto {list(fields)}"
        )
        for row in rows:
            assert row["type"] == proto_type(fields[row["field"]]), (name, row)


def observations(game: str) -> list[Observation]:
    """Real observations under every preset of ``game``, a few moves into a match."""
    engine = get_game(game)
    out = []
    for index, (name, rules) in enumerate(sorted(engine.presets().items())):
        players = 4 if 4 in engine.player_counts(rules) else min(engine.player_counts(rules))
        match = engine.new_match(rules, players, index)
        rng = random.Random(index)
        for step in range(40):
            if match.is_over():
                break
            if step % 7 == 0:
                out.append(match.observation(match.to_act()))
            match.apply(rng.choice(match.legal_actions()))
        assert out, name
    return out


@pytest.mark.parametrize("game", sorted(GAMES))
def test_json_keys_are_the_engines_and_round_trip_through_the_proto(game: str) -> None:
    tables = doc_tables()
    documented = [r["json"] for r in tables["Observation"] + tables[VIEWS[game]]]
    for obs in observations(game):
        assert list(obs) == documented, f"engine keys {list(obs)} != doc {documented}"
        history_keys = {key for entry in obs["history"] for key in entry}
        assert history_keys <= {r["json"] for r in tables["HistoryEntry"]}
        proto = observation_to_proto(obs)
        assert proto.WhichOneof("view") == game
        assert observation_to_dict(proto) == obs
