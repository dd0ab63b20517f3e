"""The checks ``arena bot check`` runs, in order, each giving a :class:`CheckResult`.

Every question is a real decision taken from an engine state (``states``), sent to the
bot by the :class:`~referee.botcheck.probe.Probe`. An answer passes when it arrives
within the request's clock and is one of the request's legal actions, or ``pass`` while
able to play where the rules price that illegal pass short of the deal (SV-18, SV-19: a
strategic move, the ladder's ``priced-pass`` makes it; reported, and failed when a seat
makes it ``STRIKES_IN_A_ROW`` times in a row). When the bot runs
behind the stdio bridge, incidents the bridge reports (the program crashed, hung, was too
slow or unreadable so the bridge answered for it, or wrote lines no turn asked for) fail the
scenario too.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from referee.botcheck.probe import Probe, Reply
from referee.botcheck.report import CheckResult, Report
from referee.botcheck.states import (
    Decision,
    deal_decisions,
    default_rules,
    find_decision,
    has_choice,
    is_forced_pass,
    multi_card_rules,
    offers_run,
)
from referee.games.action_info import action_info
from referee.games.base import PASS, RUN_SEPARATOR, Match
from referee.games.registry import get_game
from referee.games.sevens.rules import cached_rules
from referee.match.messages import ActionResultMessage, ClockInfo, DealEndMessage

RELAXED_CLOCK: ClockInfo = {"move_ms": 3000, "bank_ms": 0, "grace_ms": 100}
"""The clock of ordinary questions: generous, so only the clock scenario tests speed."""

TIGHT_CLOCK: ClockInfo = {"move_ms": 700, "bank_ms": 0, "grace_ms": 50}
"""The clock of the "clock near its limit" scenario: short, yet wide enough that a shell bot
forking sed per turn passes on a loaded two-core machine, where timing is noisy."""

MAX_INCIDENT_LINES = 4
"""Bridge incidents quoted per scenario at most."""

NOTICE_SETTLE_S = 0.3
"""Pause after the season notices before the next question (they travel by pub/sub)."""

COSTLY_PASS_RULES: dict[str, Any] = {
    "name": "custom",
    "opening": "any_seven",
    "ante": 1,
    "pass_chips": 1,
    "scoring": "chips",
    "must_play": False,
    "voluntary_pass_chips": 2,
    "max_voluntary_passes": 2,
}
"""Fan Tan with voluntary passes that cost 2 chips (SV-20): a pass listed beside cards."""

STRIKES_IN_A_ROW = 3
"""A season's default strike limit: this many failed decisions in a row (an illegal pass is
one) hand the seat to the autopilot."""

MAX_DEAL_DECISIONS = 80
"""Questions per "plays a deal" scenario at most (a 4-player Sevens deal needs about 60)."""


@dataclass
class CheckContext:
    """What the scenarios need: the probe, the games to check, and the harness's hooks."""

    probe: Probe
    games: list[str]
    incidents: Callable[[], list[dict[str, Any]]] = list
    restart_referee: Callable[[], None] | None = None
    reconnect_timeout_s: float = 30.0
    skip_reconnect_reason: str = (
        "needs a referee the checker controls: run `arena bot check -- COMMAND`"
    )
    clock: ClockInfo = field(default_factory=lambda: ClockInfo(**RELAXED_CLOCK))
    seen: list[dict[str, Any]] = field(default_factory=list)
    only: list[str] = field(default_factory=list)  # run only scenarios whose name has one

    def collect(self) -> bool:
        """Take in the bridge's new incidents; True when one of them fails the scenario."""
        self.seen.extend(self.incidents())
        return bool(_incident_lines(self.seen))

    def take_incidents(self) -> list[dict[str, Any]]:
        self.collect()
        taken, self.seen = self.seen, []
        return taken

    def match_id(self, scenario: str) -> str:
        return f"check-{scenario}-{uuid.uuid4().hex[:8]}"


def priced_pass(decision: Decision, action: str | None) -> bool:
    """Whether ``action`` is a pass while able to play that the decision's rules price short
    of the deal (SV-19; ``SevensRules.prices_illegal_pass``)."""
    if decision.game != "sevens" or action != PASS or PASS in decision.legal_actions:
        return False
    return cached_rules(decision.observation["rules"]).prices_illegal_pass


def _problem(decision: Decision, reply: Reply, clock: ClockInfo) -> str:
    """'' when the reply is a legal (or priced, :func:`priced_pass`), timely answer to
    ``decision``; else what is wrong."""
    if not reply.sent or reply.action is None or reply.fallback:
        return reply.describe(clock)
    if reply.action not in decision.legal_actions and not priced_pass(decision, reply.action):
        return (
            f"answered {reply.action!r}, which is not legal here; legal actions were "
            f"{', '.join(decision.legal_actions)}"
        )
    limit = clock["move_ms"] + clock["bank_ms"] + clock["grace_ms"]
    if reply.think_ms is not None and reply.think_ms > limit:
        return f"answered after {reply.think_ms:.0f} ms, over the clock's {limit} ms"
    return ""


def _ask(
    ctx: CheckContext,
    decision: Decision,
    match_id: str,
    *,
    attempt: int = 1,
    seq: int = 1,
    clock: ClockInfo | None = None,
) -> tuple[Reply, str]:
    clock = clock or ctx.clock
    _turn, reply = ctx.probe.ask(
        match_id=match_id,
        attempt=attempt,
        seq=seq,
        seat=decision.seat,
        observation=decision.observation,
        legal_actions=decision.legal_actions,
        clock=clock,
    )
    return reply, _problem(decision, reply, clock)


def _incident_lines(incidents: list[dict[str, Any]]) -> tuple[str, ...]:
    """The bridge incidents that fail a scenario, in words.

    Left out: ``not_legal`` (the scenarios judge every answer themselves), and ``exited``
    when a rescue quotes it already (the rescue names the exit code and the last stderr
    line); an exit between questions, which no rescue mentions, is reported on its own.
    """
    lines: list[str] = []
    rescued_exits = sum(
        1 for e in incidents if e.get("event") == "rescue" and e.get("problem") == "exited"
    )
    for event in incidents:
        kind = event.get("event")
        if kind == "rescue":
            lines.append(
                f"bridge answered {event.get('action')} for the program at {event.get('turn')}: "
                f"{event.get('detail')}"
            )
        elif kind == "extra_line":
            lines.append(
                f"the program wrote a line no turn asked for: {event.get('line')!r} "
                "(answer each turn with one line; write logs to stderr)"
            )
        elif kind == "hung":
            lines.append(f"the program owed {event.get('owed')} answers and was restarted")
        elif kind == "exited":
            if rescued_exits:
                rescued_exits -= 1
                continue
            tail = event.get("stderr_tail") or []
            last = f"; its last stderr line: {tail[-1]}" if tail else ""
            lines.append(
                f"the program exited with code {event.get('exit_code')} between questions{last}"
            )
    if len(lines) > MAX_INCIDENT_LINES:
        more = len(lines) - MAX_INCIDENT_LINES + 1
        lines = [*lines[: MAX_INCIDENT_LINES - 1], f"... and {more} more like these"]
    return tuple(lines)


def _with_incidents(ctx: CheckContext, result: CheckResult) -> CheckResult:
    """Fail a scenario during which the bridge had to step in for the program."""
    lines = _incident_lines(ctx.take_incidents())
    if not lines:
        return result
    if result.failed:
        return CheckResult.fail(result.name, result.reason, result.details + lines)
    return CheckResult.fail(result.name, lines[0], lines[1:])


# --- the scenarios -----------------------------------------------------------------------
def check_deal(ctx: CheckContext, game: str) -> CheckResult:
    """The bot plays every seat of a whole deal of the game's main preset."""
    rules = default_rules(game)
    name = f"{game}: plays a deal ({rules.name})"
    match, next_decision = deal_decisions(game, rules)
    match_id = ctx.match_id(game)
    asked = 0
    priced = 0
    in_a_row: dict[int, int] = {}  # per seat, its priced passes since its last other answer
    decision = next_decision()
    while decision is not None and asked < MAX_DEAL_DECISIONS:
        asked += 1
        reply, problem = _ask(ctx, decision, match_id, seq=asked)
        if problem:
            return CheckResult.fail(name, f"decision {asked} (seat {decision.seat}): {problem}")
        assert reply.action is not None
        if priced_pass(decision, reply.action):
            priced += 1
            in_a_row[decision.seat] = in_a_row.get(decision.seat, 0) + 1
            if in_a_row[decision.seat] >= STRIKES_IN_A_ROW:
                return CheckResult.fail(
                    name,
                    f"decision {asked} (seat {decision.seat}): passed while able to play "
                    f"{STRIKES_IN_A_ROW} times in a row; each illegal pass is a failed "
                    "decision, and that many in a row hand the seat to the autopilot (play "
                    f"a legal action in between); legal actions were "
                    f"{', '.join(decision.legal_actions)}",
                )
        else:
            in_a_row[decision.seat] = 0
        if ctx.collect():  # the bridge had to step in: no need to play on
            where = f"decision {asked} (seat {decision.seat})"
            return CheckResult.fail(name, f"{where}: the bridge reported trouble (below)")
        match.apply(reply.action)
        decision = next_decision()
    if priced:
        return CheckResult.ok(
            name,
            f"{asked} answers, {priced} of them a pass while able: an illegal pass, priced "
            "by these rules (SV-19) and a strike each on the platform",
        )
    return CheckResult.ok(name, f"{asked} legal answers")


def check_presets(ctx: CheckContext, game: str) -> CheckResult:
    """One decision with a real choice under every preset of the game."""
    name = f"{game}: every preset"
    presets = get_game(game).presets()
    for index, (preset, rules) in enumerate(sorted(presets.items()), start=1):
        decision = find_decision(game, rules, has_choice)
        if decision is None:
            continue
        _reply, problem = _ask(ctx, decision, ctx.match_id(f"{game}-preset"), seq=index)
        if problem:
            return CheckResult.fail(name, f"preset {preset}: {problem}")
    return CheckResult.ok(name, f"{len(presets)} presets: {', '.join(sorted(presets))}")


def check_forced_pass(ctx: CheckContext) -> CheckResult:
    """A Sevens seat that cannot play must answer ``pass`` (SV-18)."""
    name = "sevens: forced pass"
    decision = find_decision("sevens", default_rules("sevens"), is_forced_pass)
    if decision is None:
        return CheckResult.skip(name, "no forced pass found in the seeded games")
    _reply, problem = _ask(ctx, decision, ctx.match_id("pass"))
    if problem:
        return CheckResult.fail(name, problem)
    return CheckResult.ok(name, f"hand {' '.join(decision.observation.get('hand', []))}")


def check_multi_card(ctx: CheckContext) -> CheckResult:
    """A turn that offers runs (``8D+9D``) under multi-card rules gets a legal answer."""
    name = "sevens: multi-card turn"
    rules = multi_card_rules(get_game("sevens"))
    if rules is None:
        return CheckResult.skip(name, "no Sevens preset offers multi-card turns")
    decision = find_decision("sevens", rules, offers_run)
    if decision is None:
        return CheckResult.skip(name, f"no run on offer in the seeded {rules.name} games")
    reply, problem = _ask(ctx, decision, ctx.match_id("multi"))
    if problem:
        return CheckResult.fail(name, problem)
    runs = [a for a in decision.legal_actions if RUN_SEPARATOR in a]
    return CheckResult.ok(name, f"offered {', '.join(runs)}; answered {reply.action}")


def check_stale(ctx: CheckContext, game: str) -> CheckResult:
    """After a timed-out decision and a match retry, the bot answers the new request.

    The bot first gets what a late answer gets (docs/PROTOCOL.md section 3): the worker's
    ``TIMED_OUT`` (reason ``timeout``) for a decision it answered; then a ``REFUSED``
    (``not_legal``) and a deal end it must take in its stride; then the same match again
    with a higher attempt and a different state: the answer must fit the new request, not
    the old one. (The referee itself answers an ``Action`` that comes too late with
    ``STALE``; that needs no scenario of its own.)
    """
    name = "stale request and retry"
    rules = default_rules(game)
    first = find_decision(game, rules, has_choice, seeds=range(1, 30))
    if first is None:
        return CheckResult.skip(name, f"no {game} decisions with a choice found")
    match_id = ctx.match_id("stale")
    reply, problem = _ask(ctx, first, match_id, attempt=1, seq=5)
    if problem:
        return CheckResult.fail(name, f"first request: {problem}")
    old_answer = reply.action

    def differs(match: Match) -> bool:  # the old answer must be wrong in the new state
        return has_choice(match) and old_answer not in match.legal_actions()

    second = find_decision(game, rules, differs, seeds=range(30, 90))
    if second is None:
        return CheckResult.skip(name, f"no {game} retry state found where {old_answer} is wrong")
    words = {
        "timeout": "sent by arena bot check: no answer within the clock (a late answer gets "
        "this TIMED_OUT, and the late Action itself a STALE)",
        "not_legal": "sent by arena bot check: the answer was not legal (an answer that "
        "arrives in time but is not among legal_actions is REFUSED)",
    }
    for status, reason in (("timed_out", "timeout"), ("refused", "not_legal")):
        result: ActionResultMessage = {
            "type": "action_result",
            "bot": ctx.probe.bot,
            "match_id": match_id,
            "attempt": 1,
            "seq": 5,
            "status": status,  # type: ignore[typeddict-item]
            "reason": reason,
            "message": words[reason],
            "penalty": 0,
            "applied_action": "pass",
            "think_ms": 0.0,
            "autopilot": False,
        }
        ctx.probe.notify(result)
    deal_end: DealEndMessage = {
        "type": "deal_end",
        "bot": ctx.probe.bot,
        "match_id": match_id,
        "attempt": 1,
        "deal_index": 0,
        "winner": 0,
        "deltas": [0] * len(first.observation.get("hand_sizes", [0, 0])),
        "totals": [0] * len(first.observation.get("hand_sizes", [0, 0])),
        "result": {},
    }
    ctx.probe.notify(deal_end)
    _reply, problem = _ask(ctx, second, match_id, attempt=2, seq=1)
    if not problem and _reply.action == old_answer:
        problem = f"answered {old_answer!r} again, the answer to the old attempt"
    if problem:
        return CheckResult.fail(name, f"retried match (attempt 2, seq 1): {problem}")
    return CheckResult.ok(name, "answered the retry after stale notifications")


def _offers_costly_pass(match: Match) -> bool:
    legal = match.legal_actions()
    if PASS not in legal or len(legal) < 2:
        return False
    infos = action_info(match.observation(match.to_act()), legal)
    return any(i["action"] == PASS and i["cost"] > 0 for i in infos)


def check_costly_pass(ctx: CheckContext) -> CheckResult:
    """A listed ``pass`` that costs chips (a voluntary pass, SV-20): the request's
    ``action_info`` says so; any legal answer passes, the detail says which was chosen."""
    name = "sevens: a listed pass that costs chips"
    rules = get_game("sevens").rules_from_dict(COSTLY_PASS_RULES)
    decision = find_decision("sevens", rules, _offers_costly_pass)
    if decision is None:
        return CheckResult.skip(name, "no costly voluntary pass found in the seeded games")
    reply, problem = _ask(ctx, decision, ctx.match_id("cost"))
    if problem:
        return CheckResult.fail(name, problem)
    infos = action_info(decision.observation, decision.legal_actions)
    cost = next(i["cost"] for i in infos if i["action"] == PASS)
    chosen = "passed, paying" if reply.action == PASS else f"played {reply.action}, avoiding"
    return CheckResult.ok(name, f"{chosen} the {cost}-chip voluntary pass")


def check_season_notices(ctx: CheckContext, game: str) -> CheckResult:
    """``season_start`` and ``season_end`` notices (with a standing row) arrive on the
    bot's stream; the bot must go on answering (unless it was asked to exit after that
    very season)."""
    name = "season notices"
    decision = find_decision(game, default_rules(game), has_choice)
    if decision is None:
        return CheckResult.skip(name, f"no {game} decision with a choice found")
    season = f"check-season-{uuid.uuid4().hex[:6]}"
    base = {"season": season, "game": game}
    listened = ctx.probe.notice({**base, "code": "season_start", "message": "sent by bot check"})
    if not listened:
        return CheckResult.skip(name, "no referee listens for bot notices on this platform")
    standing = {"bot": ctx.probe.bot, "rank": 2, "of": 4, "matches": 6, "score": 3.0}
    ctx.probe.notice(
        {
            **base,
            "code": "season_end",
            "message": "sent by arena bot check: a season you are not really in ended",
            "season_state": "finished",
            "standing": {**standing, "unit": "chips", "elo": 1510.5},
        }
    )
    time.sleep(NOTICE_SETTLE_S)  # pub/sub and the inbox are separate paths
    _reply, problem = _ask(ctx, decision, ctx.match_id("notice"))
    if problem:
        return CheckResult.fail(name, f"the request after two season notices: {problem}")
    return CheckResult.ok(name, "answered on after season_start and season_end")


def check_interleaved(ctx: CheckContext, game: str) -> CheckResult:
    """Requests of three matches at once: each answer must fit its own request.

    A bot that declared a concurrency above one gets them together and must echo each
    request's ``seq``; a bot of concurrency one gets them one after the other.
    """
    name = "interleaved requests of three matches"
    rules = default_rules(game)
    decisions = [
        find_decision(game, rules, has_choice, seeds=range(start, start + 20))
        for start in (100, 200, 300)
    ]
    if any(d is None for d in decisions):
        return CheckResult.skip(name, f"no {game} decisions with a choice found")
    pushed = []
    for index, decision in enumerate(decisions, start=1):
        assert decision is not None
        turn = ctx.probe.push_turn(
            match_id=ctx.match_id(f"multi{index}"),
            attempt=1,
            seq=index * 7,
            seat=decision.seat,
            observation=decision.observation,
            legal_actions=decision.legal_actions,
            clock=ctx.clock,
        )
        pushed.append((decision, turn))
    problems = []
    for decision, turn in pushed:
        problem = _problem(decision, ctx.probe.wait(turn), ctx.clock)
        if problem:
            problems.append(f"{turn['match_id']} seq {turn['seq']}: {problem}")
    if problems:
        return CheckResult.fail(name, problems[0], tuple(problems[1:]))
    return CheckResult.ok(name, "each answered legally")


def check_clock(ctx: CheckContext, game: str) -> CheckResult:
    """With a tight clock and no bank, the answer still arrives in time."""
    limit = TIGHT_CLOCK["move_ms"] + TIGHT_CLOCK["grace_ms"]
    name = f"clock near its limit ({TIGHT_CLOCK['move_ms']} ms, no bank)"
    decision = find_decision(game, default_rules(game), has_choice)
    if decision is None:
        return CheckResult.skip(name, f"no {game} decision with a choice found")
    reply, problem = _ask(ctx, decision, ctx.match_id("clock"), clock=TIGHT_CLOCK)
    if problem:
        return CheckResult.fail(name, problem)
    return CheckResult.ok(name, f"answered in {reply.think_ms or 0:.0f} ms of {limit}")


def check_reconnect(ctx: CheckContext, game: str) -> CheckResult:
    """The referee restarts; the bot must connect again and answer a request."""
    name = "reconnect after the referee restarts"
    if ctx.restart_referee is None:
        return CheckResult.skip(name, ctx.skip_reconnect_reason)
    decision = find_decision(game, default_rules(game), has_choice)
    if decision is None:
        return CheckResult.skip(name, f"no {game} decision with a choice found")
    ctx.restart_referee()
    started = time.monotonic()
    saved = ctx.probe.send_timeout_s
    ctx.probe.send_timeout_s = ctx.reconnect_timeout_s
    try:
        reply, problem = _ask(ctx, decision, ctx.match_id("reconnect"))
    finally:
        ctx.probe.send_timeout_s = saved
    if problem:
        if not reply.sent:
            problem = (
                f"the bot did not reconnect within {ctx.reconnect_timeout_s:.0f} s after the "
                "referee restarted: retry the stream with backoff when it closes"
            )
        return CheckResult.fail(name, problem)
    return CheckResult.ok(name, f"answered {time.monotonic() - started:.1f} s after the restart")


def run_all(ctx: CheckContext, report: Report) -> Report:
    """Run every scenario for the context's games, adding each result to ``report``."""
    steps: list[tuple[str, Callable[[], CheckResult]]] = []
    for game in ctx.games:
        steps.append((f"{game}: plays a deal", functools.partial(check_deal, ctx, game)))
        steps.append((f"{game}: every preset", functools.partial(check_presets, ctx, game)))
    if "sevens" in ctx.games:
        steps.append(("sevens: forced pass", lambda: check_forced_pass(ctx)))
        steps.append(("sevens: multi-card turn", lambda: check_multi_card(ctx)))
    main_game = ctx.games[0]
    if "sevens" in ctx.games:
        steps.append(("sevens: costly pass", lambda: check_costly_pass(ctx)))
    steps.append(("season notices", lambda: check_season_notices(ctx, main_game)))
    steps.append(("stale request and retry", lambda: check_stale(ctx, main_game)))
    steps.append(("interleaved requests", lambda: check_interleaved(ctx, main_game)))
    steps.append(("clock near its limit", lambda: check_clock(ctx, main_game)))
    steps.append(("reconnect", lambda: check_reconnect(ctx, main_game)))
    if ctx.only:
        wanted = [word.lower() for word in ctx.only]
        steps = [(label, step) for label, step in steps if any(w in label for w in wanted)]
    ctx.take_incidents()  # forget whatever happened before the first scenario
    for label, step in steps:
        try:
            result = step()
        except Exception as exc:  # a checker bug must not hide the other results
            result = CheckResult.fail(label, f"checker error: {exc!r}")
        report.add(_with_incidents(ctx, result))
    report.fallbacks += ctx.probe.fallbacks
    return report
