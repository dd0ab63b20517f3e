"""Observation conversion both ways, the SDK's behaviour, the registry and its commands."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Mapping
from typing import Any, cast

import pytest
import redis

from arena.v1 import internal_pb2
from arena_sdk.observation import Observation
from referee import bots, keys
from referee.cli.main import main as arena
from referee.errors import AuthError, ConfigError, ConflictError, NotFoundError
from referee.gateway import server
from referee.protocol import convert
from sample_bots import sdk
from sample_bots.random_bot import RandomBot
from tests.gateway.helpers import (
    FakeHost,
    LeakChecker,
    deal_hands,
    register,
    running_referee,
    sevens_observation,
)

ANSWER = internal_pb2.Reply.ANSWER

SEDMA_OBSERVATION: dict[str, Any] = {
    "game": "sedma",
    "preset": "sedma",
    "rules": {"name": "sedma", "target": 3},
    "seat": 1,
    "num_players": 4,
    "deal_index": 2,
    "num_deals": 0,
    "dealer": 0,
    "to_act": 1,
    "hand": ["7S", "AH", "KH", "QH"],
    "hand_sizes": [4, 4, 3, 3],
    "totals": [1, 0, 1, 0],
    "unit": "match_points",
    "history": [{"seat": 0, "kind": "play", "action": "TH"}, {"seat": 2, "kind": "trick"}],
    "sides": [[0, 2], [1, 3]],
    "leader": 0,
    "trick": [{"seat": 0, "card": "TH"}],
    "talon_size": 12,
    "tricks_won": [1, 0],
    "card_points": [10, 0],
    "match_points": [1, 0],
    "target": 3,
    "marriages": [["QC", "KC"]],
}


@pytest.mark.parametrize(
    "observation", [sevens_observation(2, deal_hands(4, 1)), SEDMA_OBSERVATION], ids=str
)
def test_observation_round_trip(observation: dict[str, Any]) -> None:
    proto = convert.observation_to_proto(cast(Observation, observation))
    assert sdk.observation_to_dict(proto) == observation


def test_only_documented_fields_are_relayed() -> None:
    """A worker bug that put every hand or the seed into an observation leaks nothing."""
    hands = deal_hands(4, 2)
    observation = {**sevens_observation(0, hands), "hands": hands, "seed": 12345}
    proto = convert.observation_to_proto(cast(Observation, observation))
    text = str(proto)
    assert "12345" not in text
    for card in hands[1] + hands[2] + hands[3]:
        assert f'"{card}"' not in text
    with pytest.raises(ValueError, match="unknown game"):
        convert.observation_to_proto(cast(Observation, {**observation, "game": "poker"}))


def test_keepalive_settings_agree() -> None:
    """docs/PROTOCOL.md section 7: the SDK never pings more often than the referee accepts."""
    assert sdk.KEEPALIVE_TIME_MS == server.CLIENT_KEEPALIVE_TIME_MS
    assert sdk.MIN_KEEPALIVE_TIME_MS >= server.MIN_CLIENT_PING_INTERVAL_MS
    assert sdk.MAX_MESSAGE_BYTES == server.MAX_MESSAGE_BYTES
    options = dict(server.server_options())
    assert options["grpc.http2.min_ping_interval_without_data_ms"] <= sdk.KEEPALIVE_TIME_MS


class _SlowThenFast(sdk.Bot):
    """``choose`` for m1 blocks until m2 was answered: proves turns are served concurrently."""

    name = "slowpoke"

    def __init__(self) -> None:
        self.m2_done = threading.Event()
        self.results: list[sdk.ActionOutcome] = []
        self.starts: list[dict[str, Any]] = []
        self.turns: list[sdk.Turn] = []

    def choose(self, turn: sdk.Turn) -> str:
        self.turns.append(turn)
        if turn.match_id == "m1":
            assert self.m2_done.wait(10), "m2 was not served while m1 was thinking"
            raise RuntimeError("boom")  # the SDK sends the first legal action instead
        return turn.legal_actions[-1]

    def on_result(self, result: sdk.ActionOutcome) -> None:
        self.results.append(result)

    def on_match_start(self, msg: dict[str, Any]) -> None:
        self.starts.append(msg)


def test_sdk_serves_matches_concurrently_and_survives_choose_errors(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "slowpoke")
    leaks = LeakChecker()
    bot = _SlowThenFast()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            stop = asyncio.Event()
            task = asyncio.ensure_future(bot.run_async(f"127.0.0.1:{ref.port}", token, stop=stop))
            host = FakeHost(redis_url)
            try:
                m1 = leaks.turn("slowpoke", "m1", 1)
                m2 = leaks.turn("slowpoke", "m2", 1)
                pending1 = await host.send(m1, route_s=10)
                pending2 = await host.send(m2)
                answer2 = await asyncio.wait_for(pending2, 10)
                bot.m2_done.set()
                answer1 = await asyncio.wait_for(pending1, 10)
                await host.notify(
                    {
                        "type": "action_result",
                        "bot": "slowpoke",
                        "match_id": "m1",
                        "attempt": 1,
                        "seq": 1,
                        "status": "refused",
                        "reason": "not_legal",
                        "message": "7C is not playable",
                        "penalty": 0,
                        "applied_action": "pass",
                        "think_ms": 3.2,
                        "autopilot": False,
                    },
                )
                await host.notify(
                    {
                        "type": "match_start",
                        "bot": "slowpoke",
                        "match_id": "m3",
                        "attempt": 1,
                        "game": "sevens",
                        "preset": "fan-tan",
                        "rules": {"name": "fan-tan"},
                        "seats": [1],
                        "players": ["a", "slowpoke"],
                        "num_deals": 3,
                        "season": "",
                    },
                )
                deadline = time.monotonic() + 10
                while not (bot.results and bot.starts) and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
            finally:
                stop.set()
                await asyncio.wait_for(task, 10)
                await host.close()
        assert answer2.kind == ANSWER and answer2.action == m2["legal_actions"][-1]
        assert answer1.kind == ANSWER and answer1.action == m1["legal_actions"][0]
        assert bot.results[0].status == "refused" and bot.results[0].reason == "not_legal"
        assert bot.starts[0]["rules"] == {"name": "fan-tan"} and bot.starts[0]["seats"] == [1]
        for turn in bot.turns:  # the SDK's dicts carry the pushed observation, nothing more
            seat, hands = leaks.pushed[(turn.match_id, turn.attempt, turn.seq)]
            assert turn.observation == sevens_observation(seat, hands)
            assert turn.game == "sevens" and turn.clock == sdk.Clock(5000, 1000, 50)

    asyncio.run(scenario())


def test_random_bot_is_seeded() -> None:
    turn = sdk.Turn(
        "m",
        1,
        1,
        0,
        "sevens",
        cast(sdk.Observation, {}),
        [f"{r}C" for r in "23456789"],
        sdk.Clock(1, 1, 1),
        "",
    )
    picks = [RandomBot(seed=5).choose(turn) for _ in range(3)]
    assert len(set(picks)) == 1
    many = RandomBot(seed=5)
    assert len({many.choose(turn) for _ in range(40)}) > 1


def test_registry_functions(redis_client: redis.Redis) -> None:
    token = bots.register(redis_client, "alice", "team-a", "first bot")
    assert bots.authenticate(redis_client, token) == "alice"
    stored = redis_client.hgetall(keys.bot("alice"))
    assert token not in json.dumps(stored)  # only the hash is kept
    assert stored["token_sha256"] == bots.hash_token(token)
    with pytest.raises(ConflictError, match="already registered"):
        bots.register(redis_client, "alice")
    with pytest.raises(ConfigError, match="bad bot name"):
        bots.register(redis_client, "x" * 41)
    with pytest.raises(NotFoundError, match="no bot named"):
        bots.revoke(redis_client, "nobody")
    now = time.time() * 1000
    redis_client.hset(
        keys.bot_streams("alice"),
        mapping={
            "live": json.dumps({"seen_ms": now}),
            "dead": json.dumps({"seen_ms": now - 10 * bots.STREAM_STALE_MS}),
        },
    )
    (record,) = bots.list_bots(redis_client)
    assert (record.owner, record.description, record.connected_streams) == (
        "team-a",
        "first bot",
        1,
    )
    bots.revoke(redis_client, "alice")
    with pytest.raises(AuthError):
        bots.authenticate(redis_client, token)
    assert bots.list_bots(redis_client)[0].revoked
    fresh = bots.rotate_token(redis_client, "alice")
    assert bots.authenticate(redis_client, fresh) == "alice"
    assert not bots.list_bots(redis_client)[0].revoked


def test_bot_commands(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert arena(["bot", "register", "alice", "--owner", "me", "--redis-url", redis_url]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("arena_")
    assert arena(["bot", "register", "alice", "--redis-url", redis_url]) == 1
    assert "already registered" in capsys.readouterr().err
    assert arena(["bot", "list", "--redis-url", redis_url]) == 0
    listing = capsys.readouterr().out
    assert "alice" in listing and "me" in listing and "active" in listing
    assert arena(["bot", "rotate-token", "alice", "--redis-url", redis_url]) == 0
    new = capsys.readouterr().out.strip()
    assert new.startswith("arena_") and new != token
    assert arena(["bot", "revoke", "alice", "--redis-url", redis_url]) == 0
    capsys.readouterr()
    assert arena(["bot", "list", "--redis-url", redis_url]) == 0
    assert "revoked" in capsys.readouterr().out
    assert arena(["bot", "revoke", "nobody", "--redis-url", redis_url]) == 1


@pytest.mark.parametrize("game_name", ["sevens", "sedma"])
def test_real_engine_observations_round_trip(game_name: str) -> None:
    """Every observation the engines produce in random play survives dict -> proto -> dict,
    and the proto never holds a card of another seat's hand."""
    import random

    from referee.games.registry import get_game

    game = get_game(game_name)
    checked = 0
    for preset_name in sorted(game.presets()):
        rules = game.preset(preset_name)
        for num_players in game.player_counts(rules):
            rng = random.Random(f"{preset_name}/{num_players}")
            match = game.new_match(rules, num_players, seed=rng.randrange(2**32))
            steps = 0
            while not match.is_over() and steps < 30:
                seat = match.to_act()
                observation = match.observation(seat)
                proto = convert.observation_to_proto(observation)
                assert sdk.observation_to_dict(proto) == json.loads(json.dumps(observation))
                others = {
                    card
                    for other in range(num_players)
                    if other != seat
                    for card in match.observation(other)["hand"]
                }
                private = others - _public_cards(observation)
                assert not private & set(CARD_TOKENS.findall(str(proto)))
                match.apply(rng.choice(match.legal_actions()))
                steps += 1
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("game_name", ["sevens", "sedma"])
def test_turn_parser_reuses_what_repeats_and_parses_the_same(game_name: str) -> None:
    """One parser over whole matches of several deals (seats interleaved, as on a stream)
    gives every turn the observation a fresh parse gives, and a turn whose ``choose``
    changes its observation changes nothing of the next turn's."""
    import random

    from referee.games.base import DealSpec
    from referee.games.registry import get_game

    game = get_game(game_name)
    parser = sdk.TurnParser()
    checked = 0
    for seed in range(2):
        rng = random.Random(seed)
        deals = [DealSpec(seed * 10 + d) for d in range(3)]
        match = game.new_match(game.preset(game_name), 4, seed, deals)
        seq = 0
        while not match.is_over():
            seat = match.to_act()
            seq += 1
            turn = {
                "type": "turn",
                "bot": "b",
                "match_id": f"m{seed}",
                "attempt": 1,
                "seq": seq,
                "seat": seat,
                "season": "",
                "observation": match.observation(seat),
                "legal_actions": match.legal_actions(),
                "clock": {"move_ms": 1000, "bank_ms": 0, "grace_ms": 0},
            }
            request = convert.turn_to_proto(turn).turn  # type: ignore[arg-type]
            parsed = parser.turn(request)
            assert parsed.observation == sdk.observation_to_dict(request.observation)
            assert parsed == sdk.turn_from_proto(request)
            parsed.observation["history"].append({"seat": 9, "kind": "mine"})
            parsed.observation["rules"]["name"] = "changed"
            if parsed.observation["history"][:-1]:
                parsed.observation["history"][0]["kind"] = "changed"
            match.apply(rng.choice(match.legal_actions()))
            checked += 1
        parser.forget(f"m{seed}")
    assert checked > 100


CARD_TOKENS = re.compile(r"(?<![0-9A-Za-z])[2-9TJQKA][CDHS](?![0-9A-Za-z])")


def _public_cards(observation: Mapping[str, Any]) -> set[str]:
    """Cards any seat may know: on the table, in the trick, in history, in marriages."""
    text = json.dumps({k: v for k, v in observation.items() if k not in ("hand",)}, sort_keys=True)
    return set(CARD_TOKENS.findall(text))


def test_commands_without_redis_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    from referee.embedded_redis import free_port

    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    assert arena(["bot", "list", "--redis-url", nowhere]) == 1
    assert "cannot talk to the Redis at redis://127.0.0.1" in capsys.readouterr().err
    assert arena(["referee", "--redis-url", nowhere, "--port", "0", "--http-port", "0"]) == 1
    assert "cannot talk to the Redis at redis://127.0.0.1" in capsys.readouterr().err


@pytest.mark.parametrize("game_name", ["sevens", "sedma"])
def test_the_match_hosts_turn_bytes_parse_equal_the_plain_encoding(game_name: str) -> None:
    """``convert.TurnEncoder`` (the match host's TurnRequest bytes, written field by field
    with what repeats encoded once per match) parses to the same ``RefereeMessage`` as
    ``turn_to_proto`` of the same observation, for the decisions of whole random matches of
    three deals, at the smallest and largest table of every preset: refused actions in the
    history, a clock override now and then, and about a third of the decisions not encoded
    at all (as the host skips autopilot and forced steps: the history it kept must catch up
    over several entries and across deals). Being equal to the plain encoding of the seat's own
    observation, a request holds nothing that seat may not see."""
    import random

    from arena.v1 import bot_pb2
    from referee.games.base import DealSpec
    from referee.games.registry import get_game

    game = get_game(game_name)
    checked = 0
    for preset_name in sorted(game.presets()):
        rules = game.preset(preset_name)
        counts = game.player_counts(rules)
        for num_players in sorted({min(counts), max(counts)}):
            rng = random.Random(f"bytes/{preset_name}/{num_players}")
            deals = [DealSpec(seed=rng.randrange(2**32), rotation=d) for d in range(3)]
            match = game.new_match(rules, num_players, rng.randrange(2**32), deals)
            encoder: convert.TurnEncoder | None = None
            seq = 0
            while not match.is_over() and seq < 600:
                seq += 1
                seat = match.to_act()
                if rng.random() < 0.7:
                    observation = match.observation(seat)
                    rules_text = convert.rules_json(observation)
                    encoder = encoder or convert.TurnEncoder("m-1", 2, "s", rules_text)
                    turn: Any = {
                        "type": "turn",
                        "bot": "b",
                        "match_id": "m-1",
                        "attempt": 2,
                        "seq": seq,
                        "seat": seat,
                        "season": "s",
                        "observation": observation,
                        "legal_actions": match.legal_actions(),
                        "clock": {"move_ms": 900, "bank_ms": 300 - seq % 3, "grace_ms": 50},
                    }
                    clock = {"move_ms": 10, "bank_ms": 0, "grace_ms": 50} if seq % 7 == 0 else None
                    plain = convert.turn_to_proto(turn, clock, rules_text)
                    encoded = bot_pb2.RefereeMessage.FromString(encoder.encode(turn, clock))
                    assert encoded == plain, (preset_name, num_players, seq)
                    assert len(encoded.turn.observation.history) == len(observation["history"])
                    checked += 1
                if seq % 9 == 0:
                    match.apply("not-a-card")  # a refused action enters the history
                else:
                    match.apply(rng.choice(match.legal_actions()))
    assert checked > 200


def test_the_turn_encoder_refuses_what_protobuf_refuses() -> None:
    """A malformed observation fails as ``turn_to_proto`` fails (the host logs and drops)."""
    from referee.games.registry import get_game

    match = get_game("sevens").new_match(get_game("sevens").preset("fan-tan"), 4, 3)
    observation = match.observation(0)
    turn: Any = {
        "type": "turn",
        "bot": "b",
        "match_id": "m",
        "attempt": 1,
        "seq": 1,
        "seat": 0,
        "season": "",
        "observation": observation,
        "legal_actions": match.legal_actions(),
        "clock": {"move_ms": 900, "bank_ms": 300, "grace_ms": 50},
    }
    encoder = convert.TurnEncoder("m", 1, "", convert.rules_json(observation))
    bad_turns: list[tuple[Any, type[Exception]]] = [
        ({**turn, "observation": {**observation, "hand": [7]}}, TypeError),
        ({**turn, "observation": {**observation, "game": "poker"}}, ValueError),
        ({**turn, "observation": {**observation, "pot": 2**40}}, ValueError),
        ({**turn, "observation": {**observation, "seat": "x"}}, ValueError),
        ({**turn, "seq": -1}, ValueError),
    ]
    for bad, error in bad_turns:
        with pytest.raises(error):
            encoder.encode(bad)
        with pytest.raises(error):
            convert.turn_to_proto(bad)


def test_the_match_hosts_result_bytes_parse_equal_the_plain_encoding() -> None:
    """``convert.ResultEncoder`` (each distinct outcome encoded once per match) parses to the
    same ``RefereeMessage`` as ``action_result_to_proto`` for every combination of status,
    reason, message, penalty (negative too), applied action, think time (rounded as the
    plain path rounds it) and autopilot, and refuses an unknown status the same way."""
    import itertools

    from arena.v1 import bot_pb2

    encoder = convert.ResultEncoder("m-7", 3)
    checked = 0
    for status, reason, message, penalty, applied, think, autopilot, seq in itertools.product(
        ("accepted", "refused", "timed_out"),
        ("", "illegal_pass"),
        ("", "'zz' refused: é"),
        (0, 3, -2),
        ("", "7D", "pass"),
        (0.0, 0.4, 12.5, 3e6),
        (False, True),
        (1, 200),
    ):
        result: Any = {
            "type": "action_result",
            "bot": "b",
            "match_id": "m-7",
            "attempt": 3,
            "seq": seq,
            "status": status,
            "reason": reason,
            "message": message,
            "penalty": penalty,
            "applied_action": applied,
            "think_ms": think,
            "autopilot": autopilot,
        }
        encoded = bot_pb2.RefereeMessage.FromString(encoder.encode(result))
        assert encoded == convert.action_result_to_proto(result), result
        checked += 1
    assert checked == 1728
    unknown: Any = {**result, "status": "maybe"}
    with pytest.raises(ValueError, match="unknown action_result status"):
        encoder.encode(unknown)


def test_the_encoders_take_field_numbers_from_the_descriptors() -> None:
    """No field number is typed by hand in convert.py: every key and length-delimited field
    the byte encoders write is named by message and field and read from the generated
    descriptors, so a renumbered field in the .proto changes the bytes with it."""
    import ast
    from pathlib import Path

    source = Path(convert.__file__).read_text()
    typed = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("_key", "_ld", "_Strings")
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]
    assert not typed, "\n".join(typed)
    from arena.v1 import bot_pb2, game_pb2

    number = game_pb2.Observation.DESCRIPTOR.fields_by_name["history"].number
    assert number == convert._HISTORY_FIELD
    assert (
        convert._key(bot_pb2.RefereeMessage.DESCRIPTOR.fields_by_name["turn"].number, 2)
        == convert._K_TURN
    )
