"""The outcome of each scenario, and the pass/fail report people read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TextIO

PASS = "pass"
FAIL = "FAIL"
SKIP = "skip"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One scenario: its name, ``pass``/``FAIL``/``skip``, and why (always for FAIL)."""

    name: str
    status: str
    reason: str = ""
    details: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    @classmethod
    def ok(cls, name: str, reason: str = "") -> CheckResult:
        return cls(name, PASS, reason)

    @classmethod
    def fail(cls, name: str, reason: str, details: tuple[str, ...] = ()) -> CheckResult:
        return cls(name, FAIL, reason, details)

    @classmethod
    def skip(cls, name: str, reason: str) -> CheckResult:
        return cls(name, SKIP, reason)


@dataclass(slots=True)
class Report:
    """Every scenario's result, in the order they ran."""

    bot: str
    results: list[CheckResult] = field(default_factory=list)
    fallbacks: int = 0
    """Answers that were fallbacks: the bot's SDK or bridge answered because its code
    failed (``Action.fallback``)."""

    def add(self, result: CheckResult) -> CheckResult:
        self.results.append(result)
        return result

    def __iter__(self) -> Iterator[CheckResult]:
        return iter(self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.failed]

    @property
    def passed(self) -> bool:
        return not self.failures and any(r.status == PASS for r in self.results)

    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def get(self, name: str) -> CheckResult:
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(f"no scenario {name!r} ran; ran: {', '.join(r.name for r in self)}")

    def print(self, out: TextIO) -> None:
        width = max((len(r.name) for r in self.results), default=10)
        out.write(f"bot check of {self.bot!r}\n")
        for result in self.results:
            line = f"  {result.status:<4}  {result.name:<{width}}"
            if result.reason:
                line += f"  {result.reason}"
            out.write(line.rstrip() + "\n")
            for detail in result.details:
                out.write(f"{'':{width + 10}}{detail}\n")
        passed = sum(r.status == PASS for r in self.results)
        skipped = sum(r.status == SKIP for r in self.results)
        if self.fallbacks:
            out.write(
                f"{self.fallbacks} answer(s) were fallbacks: the bot's code failed and its SDK "
                "or bridge answered for it (a season counts them, or refuses them with "
                'fallback = "invalid")\n'
            )
        verdict = "PASSED" if self.passed else "FAILED"
        out.write(f"{verdict}: {passed} passed, {len(self.failures)} failed, {skipped} skipped\n")
        out.flush()
