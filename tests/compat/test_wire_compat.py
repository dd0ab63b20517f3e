"""Every message, field and enum value of the frozen v1 code (tests/compat/old_v1) is still
in the current proto with the same number, type and cardinality: changes are additions
only, so bots built from the old code still parse everything the referee sends (the
runtime side of this is tests/compat/test_season_e2e.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from google.protobuf.descriptor import Descriptor, FileDescriptor

from arena.v1 import bot_pb2, game_pb2

OLD = Path(__file__).resolve().parent / "old_v1"

DUMP = """
import json, sys
sys.path.insert(0, sys.argv[1])
from arena.v1 import bot_pb2, game_pb2
assert not hasattr(bot_pb2, "ActionInfo")

def message(d):
    out = {"fields": {f.name: [f.number, f.type, f.is_repeated] for f in d.fields},
           "enums": {e.name: {v.name: v.number for v in e.values} for e in d.enum_types}}
    for nested in d.nested_types:
        out["nested:" + nested.name] = message(nested)
    return out

print(json.dumps({f.name: {n: message(d) for n, d in f.message_types_by_name.items()}
                  for f in (bot_pb2.DESCRIPTOR, game_pb2.DESCRIPTOR)}))
"""


def message(d: Descriptor) -> dict[str, Any]:
    out: dict[str, Any] = {
        "fields": {f.name: [f.number, f.type, f.is_repeated] for f in d.fields},
        "enums": {e.name: {v.name: v.number for v in e.values} for e in d.enum_types},
    }
    for nested in d.nested_types:
        out["nested:" + nested.name] = message(nested)
    return out


def contained(old: Any, new: Any, where: str) -> list[str]:
    """What of ``old`` is missing or different in ``new``."""
    if not isinstance(old, dict):
        return [] if old == new else [f"{where}: {old} became {new}"]
    if not isinstance(new, dict):
        return [f"{where}: no longer a message"]
    problems = []
    for key, value in old.items():
        if key not in new:
            problems.append(f"{where}.{key} was removed")
        else:
            problems += contained(value, new[key], f"{where}.{key}")
    return problems


def test_the_current_proto_only_adds_to_the_frozen_v1() -> None:
    done = subprocess.run(
        [sys.executable, "-c", DUMP, str(OLD)], capture_output=True, text=True, check=True
    )
    old = json.loads(done.stdout)
    files: tuple[FileDescriptor, ...] = (bot_pb2.DESCRIPTOR, game_pb2.DESCRIPTOR)
    new = {f.name: {n: message(d) for n, d in f.message_types_by_name.items()} for f in files}
    assert old["arena/v1/bot.proto"]["TurnRequest"]["fields"]["seq"] == [3, 13, False]
    assert contained(old, new, "v1") == []
    assert "ActionInfo" in new["arena/v1/bot.proto"]  # the check sees the current code
