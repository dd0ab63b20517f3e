"""The stdio bridge: any program that reads and writes JSON lines becomes a gRPC bot.

``arena bridge --server HOST:PORT --token T -- COMMAND [ARGS]`` starts COMMAND and speaks
the line protocol of ``docs/STDIO.md`` with it, and the gRPC protocol with the referee
through the Python SDK (:class:`arena_sdk.sdk.Bot`). In short: for each decision the bridge
writes one line ``{"type": "turn", ..., "legal_actions": [...], "observation": {...}}`` to the
program's stdin and reads one line back: the action (``7D``, ``8D+9D``, ``pass``) or
``{"action": "7D"}``.

What the bridge does for the program:

* **Clock.** The program gets ``move_ms - margin_ms`` (plus ``bank_ms`` with
  ``--use-bank``). When it has not answered by then, the bridge answers the first legal action
  itself, says so on stderr and marks the answer as a fallback (``Action.fallback``: the
  platform counts it, docs/STDIO.md); the program's late answer is recognised and dropped.
* **Crashes.** When the program exits, the bridge answers the open decision itself, reports
  the exit code and the program's last stderr lines, and starts it again (with backoff).
  A program that owes several answers is considered hung and is restarted too.
* **Stderr.** The program's stderr is passed through, each line prefixed with ``[bot]``.

``--report-file PATH`` appends one JSON object per incident (rescue, restart, late answer,
answer that is not legal) to PATH; ``arena bot check`` reads it to explain failures.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import dataclasses
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from arena_sdk.sdk import (
    SEASON_NOTICES,
    ActionOutcome,
    Bot,
    BotRefused,
    Fallback,
    Turn,
    first_legal,
)

STDERR_TAIL_LINES = 20
"""How many of the program's last stderr lines a crash report quotes."""

HUNG_AFTER_MISSED = 3
"""A program that owes this many answers is restarted as hung."""

RESTART_BACKOFF_S = 0.1
RESTART_BACKOFF_MAX_S = 2.0
"""A crashing program is restarted after 0.1 s, doubling while it keeps crashing, up to 2 s."""

RESTART_LEEWAY_S = 0.1
"""A question waits for a pending restart only if this much of its budget is left after it."""

DEFAULT_MARGIN_MS = 50
"""Time kept back from the program's budget for the bridge and the network."""


@dataclass(frozen=True, slots=True)
class TurnKey:
    """Identifies one decision: what the program may echo in a JSON answer."""

    match_id: str
    attempt: int
    seq: int

    def __str__(self) -> str:
        return f"{self.match_id}#{self.attempt}.{self.seq}"


@dataclass(slots=True)
class Answer:
    """What became of one question to the program.

    ``action`` is the program's answer, or ``None`` when the program did not give one;
    then ``problem`` says why (``timeout``, ``exited``, ``not_started``).
    """

    action: str | None
    problem: str = ""
    detail: str = ""
    elapsed_ms: float = 0.0


_EOF = object()


def parse_answer_line(line: str) -> tuple[str | None, TurnKey | None, str]:
    """Read one line the program wrote: ``(action, echoed key or None, error)``.

    A line is either the action as text (``7D``, ``8D+9D``, ``pass``) or a JSON object with
    an ``action`` field and, optionally, ``match_id``/``attempt``/``seq`` echoed from the turn.
    """
    text = line.strip()
    if not text.startswith("{"):
        return text, None, ""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, None, f"not valid JSON ({exc.msg} at column {exc.colno}): {text[:80]!r}"
    if not isinstance(data, dict) or not isinstance(data.get("action"), str):
        return None, None, f'a JSON answer needs a string "action" field: {text[:80]!r}'
    key: TurnKey | None = None
    if "seq" in data:  # an echo; a field left out (match_id "", attempt -1) matches any
        try:
            key = TurnKey(
                str(data.get("match_id") or ""), int(data.get("attempt", -1)), int(data["seq"])
            )
        except (TypeError, ValueError):
            return None, None, f'"seq" and "attempt" must be integers: {text[:80]!r}'
    return data["action"].strip(), key, ""


def echo_matches(echo: TurnKey, key: TurnKey) -> bool:
    """Whether an answer's echo names ``key`` (fields left out of the echo match anything)."""
    return (
        echo.seq == key.seq
        and echo.match_id in ("", key.match_id)
        and echo.attempt in (-1, key.attempt)
    )


class Program:
    """A child program spoken to one line at a time; restarted when it dies.

    Thread-safe: :meth:`ask` holds a lock, so the program sees one question at a time.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stderr_sink: Callable[[str], None],
        report: Callable[[dict[str, Any]], None],
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        if not argv:
            raise ValueError("no program to run: give the command after `--`")
        self.argv = list(argv)
        self.cwd = cwd
        self.env = env
        self._stderr_sink = stderr_sink
        self.report = report
        self._lock = threading.Lock()  # one question at a time
        self._write_lock = threading.Lock()  # whole lines on stdin
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._owed: collections.deque[TurnKey] = collections.deque()
        self._leftover: collections.deque[str] = collections.deque()  # read, not yet matched
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._threads: list[threading.Thread] = []
        self._restarts = 0
        self._next_start = 0.0
        self._exit_reported = False
        self.starts = 0

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the program (again); raises ``OSError`` when it cannot be started."""
        self._lines = queue.Queue()
        self._leftover.clear()
        self._owed.clear()
        self._stderr_tail.clear()
        proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",  # a stray byte must not stop the reader threads
            bufsize=1,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,
        )
        self._proc = proc
        self._exit_reported = False
        self.starts += 1
        lines = self._lines
        assert proc.stdout is not None and proc.stderr is not None
        out = threading.Thread(target=self._read_stdout, args=(proc.stdout, lines), daemon=True)
        err = threading.Thread(target=self._read_stderr, args=(proc.stderr,), daemon=True)
        out.start()
        err.start()
        self._threads = [out, err]

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout_s: float = 2.0) -> None:
        """Close the program's stdin, then terminate and finally kill it if it lingers."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=timeout_s / 2)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=timeout_s / 2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=1.0)

    def _read_stdout(self, stream: TextIO, lines: queue.Queue[object]) -> None:
        """Queue the program's output one chunk (a list of whole lines) at a time.

        Lines that came in one read were written together: when the first answers a turn,
        the rest were written before any later question, so :meth:`_drain` can tell strays
        (a debug print after the answer) from answers however the threads are scheduled.
        """
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        partial = ""
        fd = stream.fileno()
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(fd, 65536):
                partial += decoder.decode(chunk)
                *complete, partial = partial.split("\n")
                if complete:
                    lines.put(complete)
        partial += decoder.decode(b"", final=True)
        if partial:
            lines.put([partial])
        lines.put(_EOF)

    def _read_stderr(self, stream: TextIO) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                text = line.rstrip("\n")
                self._stderr_tail.append(text)
                self._stderr_sink(text)

    def _ensure_running(self, deadline: float) -> str:
        """Start the program when it is not running; '' or why it cannot run now.

        After a crash the restart waits out a backoff (``RESTART_BACKOFF_S`` doubling up to
        ``RESTART_BACKOFF_MAX_S``); when the wait ends well before ``deadline`` the question
        waits for it rather than being answered by the bridge.
        """
        if self.alive():
            return ""
        if self._proc is not None:
            self._report_exit()
            self.stop()
            delay = min(RESTART_BACKOFF_MAX_S, RESTART_BACKOFF_S * 2 ** min(self._restarts, 6))
            self._restarts += 1
            self._next_start = time.monotonic() + delay
        wait = self._next_start - time.monotonic()
        if wait > 0:
            if self._next_start > deadline - RESTART_LEEWAY_S:
                return "the program exited and is waiting to be restarted"
            time.sleep(wait)
        try:
            self.start()
        except OSError as exc:
            self._next_start = time.monotonic() + 1.0
            return f"cannot start {self.argv[0]!r}: {exc}"
        if self.starts > 1:
            self.report({"event": "restart", "starts": self.starts})
        return ""

    # -- questions --------------------------------------------------------------------------
    def tell(self, line: str) -> None:
        """Write a line that wants no answer (a notification); dropped if the program is down.

        Only the write is serialised with questions, so a notification may arrive while the
        program is thinking about a turn.
        """
        proc = self._proc
        if proc is None or proc.poll() is not None or proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError), self._write_lock:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()

    def ask(self, line: str, key: TurnKey, timeout_s: float) -> Answer:
        """Write ``line`` and wait up to ``timeout_s`` for the answer to ``key``."""
        start = time.monotonic()
        with self._lock:
            problem = self._ensure_running(start + timeout_s)
            if problem:
                return Answer(None, "not_started", problem)
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            if self._drain():
                return self._died(key, start)
            try:
                with self._write_lock:
                    proc.stdin.write(line + "\n")
                    proc.stdin.flush()
            except (OSError, ValueError):
                return self._died(key, start)
            self._owed.append(key)
            deadline = start + timeout_s
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return self._timed_out(key, start)
                try:
                    item = self._lines.get(timeout=remaining)
                except queue.Empty:
                    return self._timed_out(key, start)
                if item is _EOF:
                    return self._died(key, start)
                assert isinstance(item, list)
                for index, raw in enumerate(item):
                    answer = self._match(raw, key, start)
                    if answer is not None:
                        self._leftover.extend(item[index + 1 :])
                        self._restarts = 0
                        return answer

    def _drain(self) -> bool:
        """Take in lines written before the next question: late answers or strays.

        A line that answers no open turn is reported (``extra_line``) and dropped, so that a
        program printing debug output to stdout does not shift its answers. True when the
        program's output has ended (it died).
        """
        while True:
            if self._leftover:
                raw = self._leftover.popleft()
            else:
                try:
                    item = self._lines.get_nowait()
                except queue.Empty:
                    return False
                if item is _EOF:
                    return True
                assert isinstance(item, list)
                self._leftover.extend(item)
                continue
            if not raw.strip():
                continue
            _action, echoed, _error = parse_answer_line(raw)
            late = self._owed.popleft() if self._owed and echoed is None else None
            if echoed is not None:
                late = next((k for k in self._owed if echo_matches(echoed, k)), None)
                if late is not None:
                    self._owed.remove(late)
            if late is not None:
                self.report({"event": "late_answer", "turn": str(late), "line": raw.strip()})
            else:
                self.report({"event": "extra_line", "line": raw.strip()[:200]})

    def _match(self, raw: str, key: TurnKey, start: float) -> Answer | None:
        """The answer to ``key`` in ``raw``, or ``None`` when the line answers something else."""
        if not raw.strip():
            return None
        action, echoed, error = parse_answer_line(raw)
        if echoed is None:
            answered = self._owed.popleft() if self._owed else key
        else:
            answered = next((k for k in self._owed if echo_matches(echoed, k)), echoed)
            with contextlib.suppress(ValueError):
                self._owed.remove(answered)
        if answered != key:
            self.report({"event": "late_answer", "turn": str(answered), "line": raw.strip()})
            return None
        elapsed = (time.monotonic() - start) * 1000.0
        if action is None:
            return Answer(None, "malformed", error, elapsed)
        return Answer(action, elapsed_ms=elapsed)

    def _report_exit(self) -> None:
        """Report the program's exit once (when it is noticed first)."""
        proc = self._proc
        if proc is None or self._exit_reported:
            return
        self._exit_reported = True
        tail = list(self._stderr_tail)
        self.report({"event": "exited", "exit_code": proc.poll(), "stderr_tail": tail})

    def _timed_out(self, key: TurnKey, start: float) -> Answer:
        elapsed = (time.monotonic() - start) * 1000.0
        if len(self._owed) >= HUNG_AFTER_MISSED:
            self.report({"event": "hung", "owed": len(self._owed)})
            self.stop(timeout_s=0.5)
            self._proc = None
        return Answer(None, "timeout", f"no answer within {elapsed:.0f} ms", elapsed)

    def _died(self, key: TurnKey, start: float) -> Answer:
        proc = self._proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=1.0)
        for thread in self._threads[1:]:
            thread.join(timeout=0.5)  # let the stderr reader drain
        tail = list(self._stderr_tail)
        self._report_exit()
        elapsed = (time.monotonic() - start) * 1000.0
        detail = f"the program exited with code {code}"
        if tail:
            detail += "; its last stderr line: " + tail[-1]
        return Answer(None, "exited", detail, elapsed)


@dataclass
class BridgeOptions:
    """How the bridge treats the program (the ``arena bridge`` options)."""

    margin_ms: int = DEFAULT_MARGIN_MS
    use_bank: bool = False
    report_file: str | None = None
    games: list[str] = field(default_factory=list)
    notify: bool = False  # also send result / match_start / deal_end / match_end / notice lines
    exit_after_season: str | None = None  # stop the bridge when this season ends ('*': any)


def turn_line(turn: Turn, budget_ms: int) -> str:
    """The JSON line that asks the program for a decision (docs/STDIO.md)."""
    return json.dumps(
        {
            "type": "turn",
            "match_id": turn.match_id,
            "attempt": turn.attempt,
            "seq": turn.seq,
            "seat": turn.seat,
            "game": turn.game,
            "legal_actions": list(turn.legal_actions),
            "action_info": [dataclasses.asdict(info) for info in turn.action_info],
            "clock": {
                "move_ms": turn.clock.move_ms,
                "bank_ms": turn.clock.bank_ms,
                "grace_ms": turn.clock.grace_ms,
            },
            "budget_ms": budget_ms,
            "season": turn.season,
            "observation": turn.observation,
        },
        separators=(",", ":"),
    )


def notice_line(kind: str, fields: dict[str, Any]) -> str:
    """A notification line (``--notify``): ``{"type": kind, ...fields}``; never answered."""
    return json.dumps({"type": kind, **fields}, separators=(",", ":"))


def budget_ms(turn: Turn, options: BridgeOptions) -> int:
    """How long the program may think about ``turn`` before the bridge answers for it."""
    total = turn.clock.move_ms + (turn.clock.bank_ms if options.use_bank else 0)
    return max(1, total - options.margin_ms)


class BridgeBot(Bot):
    """A bot whose decisions come from a child program over the stdio line protocol."""

    name = "bridge"
    version = "1"
    max_concurrent_matches = 1  # the program answers one question at a time

    def __init__(self, program: Program, options: BridgeOptions, log: Callable[[str], None]):
        self.program = program
        self.options = options
        self._log = log
        if options.games:
            self.games = tuple(options.games)
        self.exit_after_season = options.exit_after_season
        self.name = os.path.basename(program.argv[0]) or "bridge"
        # Accepted results are only passed on with --notify; otherwise the referee skips them
        self.accepted_results = options.notify

    def on_result(self, result: ActionOutcome) -> None:
        super().on_result(result)
        if self.options.notify:
            self.program.tell(notice_line("result", dataclasses.asdict(result)))

    def on_match_start(self, msg: dict[str, Any]) -> None:
        if self.options.notify:
            self.program.tell(notice_line("match_start", msg))

    def on_deal_end(self, msg: dict[str, Any]) -> None:
        if self.options.notify:
            self.program.tell(notice_line("deal_end", msg))

    def on_match_end(self, msg: dict[str, Any]) -> None:
        if self.options.notify:
            self.program.tell(notice_line("match_end", msg))

    def on_notice(self, code: str, message: str) -> None:
        super().on_notice(code, message)
        if self.options.notify and code not in SEASON_NOTICES:
            self.program.tell(notice_line("notice", {"code": code, "message": message}))

    def on_season_start(self, notice: dict[str, Any]) -> None:
        if self.options.notify:
            self.program.tell(notice_line("notice", notice))

    def on_season_end(self, notice: dict[str, Any]) -> None:
        super().on_season_end(notice)
        if self.options.notify:
            self.program.tell(notice_line("notice", notice))

    def choose(self, turn: Turn) -> str | Fallback:
        budget = budget_ms(turn, self.options)
        key = TurnKey(turn.match_id, turn.attempt, turn.seq)
        answer = self.program.ask(turn_line(turn, budget), key, budget / 1000.0)
        if answer.action is not None:
            if answer.action not in turn.legal_actions:
                self.program.report(
                    {
                        "event": "not_legal",
                        "turn": str(key),
                        "action": answer.action,
                        "legal_actions": list(turn.legal_actions),
                    }
                )
                self._log(
                    f"{key}: the program answered {answer.action!r}, which is not among the "
                    f"legal actions {', '.join(turn.legal_actions)}; sent as is"
                )
            return answer.action
        fallback = first_legal(turn)
        self.program.report(
            {
                "event": "rescue",
                "problem": answer.problem,
                "detail": answer.detail,
                "turn": str(key),
                "action": fallback,
                "budget_ms": budget,
            }
        )
        self._log(
            f"{key}: {answer.detail}; answered {fallback} (first legal action) for it, "
            f"marked as a fallback ({answer.problem})"
        )
        return Fallback(fallback, answer.problem or "no_answer")


class _Reporter:
    """Writes incidents to ``--report-file`` as JSON lines (thread-safe)."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()  # one question at a time
        self._write_lock = threading.Lock()  # whole lines on stdin

    def __call__(self, event: dict[str, Any]) -> None:
        if self._path is None:
            return
        event = {"ts_ms": time.time() * 1000.0, **event}
        with self._lock, open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")


def run_bridge(
    server: str,
    token: str,
    command: Sequence[str],
    options: BridgeOptions,
    *,
    stop: threading.Event | None = None,
) -> int:
    """Run the bridge until ``stop`` is set, SIGTERM or Ctrl-C; returns the exit code.

    The program is stopped on the way out (its stdin is closed first, so a program that
    exits at end of input leaves quietly).
    """
    logging.basicConfig(level=logging.INFO, format="arena bridge: %(message)s")
    stop = stop or threading.Event()

    def say(text: str) -> None:
        print(f"arena bridge: {text}", file=sys.stderr, flush=True)

    program = Program(
        command,
        stderr_sink=lambda text: print(f"[bot] {text}", file=sys.stderr, flush=True),
        report=_Reporter(options.report_file),
        env=dict(os.environ),
    )
    try:
        program.start()  # now, so a bad command is reported at once and notifications land
    except OSError as exc:
        say(f"cannot start {command[0]!r}: {exc}")
        return 1
    bot = BridgeBot(program, options, say)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda _sig, _frame: stop.set())
    try:
        bot.run(server, token, stop=stop)
    except BotRefused as exc:
        say(f"the referee refused this bot: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        program.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0
