"""A real season with one colluding pair among honest bots; the operator's report
(``arena season collusion``) names that pair and no other.

Real stack: ``arena referee`` and ``arena worker`` processes on the embedded Redis, eight SDK
bots over gRPC. Six are honest: the reference heuristic with some noise, each turn seeded
from the bot, the match and the turn, so the season is the same every run. Two collude as
two bots of one person would: they run in one process and tell each other what they hold
(a side channel the platform cannot see), and whenever one has a choice it plays the card
that lets out the most of its partner's cards.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping

import grpc  # type: ignore[import-untyped]
import pytest

from arena.v1 import league_pb2, league_pb2_grpc
from referee.games.cards import Card
from referee.games.ladder import heuristic_policy
from referee.games.sevens import SevensRules
from referee.games.sevens.tables import ROW_BITS, tables_for
from referee.procs import arena_command
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from sample_bots.sdk import Bot, Turn
from tests.platform_fixtures import bots_in_threads, running_platform

pytestmark = pytest.mark.slow

HONEST = [f"fair-{i}" for i in range(6)]
PAIR = ("pal-a", "pal-b")


class Honest(Bot):
    choose_inline = True

    def __init__(self, noise: float) -> None:
        self.noise = noise

    def choose(self, turn: Turn) -> str:
        rng = random.Random(f"{self.name}|{turn.match_id}|{turn.seq}")
        if rng.random() < self.noise:
            return rng.choice(turn.legal_actions)
        return heuristic_policy(turn.observation, turn.legal_actions, rng)


class SideChannel:
    """What each colluder last held, per match and deal."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: dict[tuple[str, str, int], set[str]] = {}


class Colluder(Honest):
    def __init__(self, partner: str, channel: SideChannel) -> None:
        super().__init__(noise=0.1)
        self.partner = partner
        self.channel = channel

    def choose(self, turn: Turn) -> str:
        obs = turn.observation
        deal = int(obs["deal_index"])
        with self.channel.lock:
            partner = set(self.channel.held.get((self.partner, turn.match_id, deal), ()))
        legal = turn.legal_actions
        action = super().choose(turn)
        if partner and len(legal) > 1:
            opened = {a: len(_opens(obs, a) & partner) for a in legal}
            best = max(opened.values())
            if best > opened[action]:
                action = next(a for a in legal if opened[a] == best)
        with self.channel.lock:
            self.channel.held[self.name, turn.match_id, deal] = set(obs["hand"]) - {action}
        return action


def _opens(obs: Mapping[str, object], action: str) -> set[str]:
    """The cards ``action`` makes playable (none for a pass)."""
    if action == "pass":
        return set()
    t = tables_for(SevensRules.from_dict(obs["rules"]))  # type: ignore[arg-type]
    table = 0
    for cards in obs["table"].values():  # type: ignore[attr-defined]
        for text in cards:
            table |= 1 << Card.parse(text).index
    after = table
    for text in action.split("+"):
        after |= 1 << Card.parse(text).index
    opened = 0
    for s in range(4):
        row_before = t.row_playable((table >> 13 * s) & ROW_BITS)
        row_after = t.row_playable((after >> 13 * s) & ROW_BITS)
        opened |= (row_after & ~row_before) << 13 * s
    return {str(Card.from_index(i)) for i in range(52) if (opened >> i) & 1}


ADMIN = "collusion-admin-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_report_names_the_colluding_pair_and_no_other(
    embedded_redis: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = embedded_redis.url  # type: ignore[attr-defined]
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", ADMIN)
    channel = SideChannel()
    named: dict[str, Bot] = {name: Honest(noise=0.05 + 0.05 * i) for i, name in enumerate(HONEST)}
    named[PAIR[0]] = Colluder(PAIR[1], channel)
    named[PAIR[1]] = Colluder(PAIR[0], channel)
    with contextlib.ExitStack() as stack:
        http_port = _free_port()
        platform = stack.enter_context(
            running_platform(url, referee_args=("--http-port", str(http_port)))
        )
        stack.enter_context(bots_in_threads(platform, named))
        spec = SeasonSpec(
            name="pals",
            game="sevens",
            preset="sevens",
            bots=(*HONEST, *PAIR),
            table_size=4,
            deals_per_match=3,
            seed=33,
            options=SeasonOptions(window=8),
        )
        season = store.create_season(platform.conn, spec).season
        store.start_season(platform.conn, season)
        deadline = time.monotonic() + 240
        while store.get_season(platform.conn, season)["state"] != store.FINISHED:
            assert time.monotonic() < deadline, store.get_season(platform.conn, season)
            time.sleep(0.5)
        out = subprocess.run(
            arena_command("season", "collusion", season, "--json", "--redis-url", url),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        text = subprocess.run(
            arena_command("season", "collusion", season, "--redis-url", url),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        with grpc.insecure_channel(platform.server) as channel:
            stub = league_pb2_grpc.LeagueStub(channel)
            ask = league_pb2.CollusionRequest(season=season)
            with pytest.raises(grpc.RpcError) as anonymous:
                stub.GetCollusion(ask)
            assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
            answer = stub.GetCollusion(ask, metadata=[("authorization", f"Bearer {ADMIN}")])
        page = f"http://127.0.0.1:{http_port}/admin/collusion/{season}"
        for headers, code in (({}, 401), ({"Authorization": "Bearer wrong"}, 403)):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(page, headers=headers), timeout=60)
            assert refused.value.code == code
        request = urllib.request.Request(page, headers={"Authorization": f"Bearer {ADMIN}"})
        with urllib.request.urlopen(request, timeout=120) as response:
            html = response.read().decode()
    report = json.loads(out.stdout)
    assert {(p.helper, p.helped) for p in answer.pairs} == {
        (p["helper"], p["helped"]) for p in report["flagged"]
    }
    assert answer.pairs_tested == report["pairs_tested"] == 56
    assert report["matches"] == 70 and not report["problems"], report
    flagged = {(p["helper"], p["helped"]) for p in report["flagged"]}
    assert flagged, [p for p in report["pairs"][:4]]
    assert flagged <= {PAIR, PAIR[::-1]}, report["flagged"]
    top = report["flagged"][0]
    assert top["evidence"] and top["evidence"][0]["match"].startswith(season)
    assert f"{top['helper']} -> {top['helped']}" in text and "pal" in text
    assert not any(name in text for name in HONEST), text
    assert all(name in html for name in PAIR) and ("act on this" in html or "screen" in html)
    assert not any(name in html for name in HONEST), html
