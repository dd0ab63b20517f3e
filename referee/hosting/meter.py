"""The referee's view of hosted bots' sandboxes: freeze between turns, CPU per turn.

:class:`CgroupMeter` is the relay's ``TurnMeter`` (referee.gateway.hub) on a machine
where the bot supervisor (referee.hosting.supervisor) keeps hosted bots in control
groups named by :func:`group_name`. A bot without such a group (an external bot, or a
hosted one run on another machine) is not metered: its turns cost two ``stat`` calls
a second at most.

* Freezing: a hosted bot's group is thawed when its first outstanding turn is written and
  frozen (without waiting for the kernel to finish) when its last one closes, so it never
  thinks on its opponents' time and its background work never slows anyone.
* A bot is also frozen ``settle_s`` after its stream opens if no turn of it is outstanding
  by then: it does not compute on its opponents' time before its first turn either.
* Breathing: a frozen bot is thawed for ``breath_s`` every ``breathe_every_s`` so that its
  gRPC transport answers the referee's keepalive pings (KEEPALIVE_TIMEOUT_MS is 10 s);
  a CPU burner gains ``breath_s / breathe_every_s`` of a core from it (0.4 % by default).
* CPU: :meth:`held` and :meth:`released` read the group's CPU counter, so a turn's
  ``Reply.cpu_ms`` is what the sandbox used while the turn was outstanding
  (``TimeControl.clock = "cpu"`` judges by it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from referee.hosting.cgroups import BotGroup, Hierarchy

log = logging.getLogger(__name__)

BREATHE_EVERY_S = 5.0
BREATH_S = 0.02
SETTLE_S = 0.5
"""How long after its stream opens a bot with no turn may run before it is frozen (to read
its Welcome and settle)."""
MISSING_RECHECK_S = 1.0
"""How long a bot found without a group is taken as unmetered before looking again."""


def group_name(bot: str) -> str:
    """The control group of hosted bot ``bot`` (bot names are ``[A-Za-z0-9_.-]{1,40}``)."""
    return f"bot-{bot}"


class CgroupMeter:
    """Freezes hosted bots between turns and meters their CPU per turn."""

    def __init__(
        self,
        hierarchy: Hierarchy,
        freeze: bool = True,
        breathe_every_s: float = BREATHE_EVERY_S,
        breath_s: float = BREATH_S,
        settle_s: float = SETTLE_S,
    ) -> None:
        self.hierarchy = hierarchy
        self.freezing = freeze
        self.settle_s = settle_s
        self.breathe_every_s = breathe_every_s
        self.breath_s = breath_s
        self.outstanding: dict[str, int] = {}
        self.frozen: set[str] = set()
        self._groups: dict[str, BotGroup] = {}
        self._missing: dict[str, float] = {}  # bot -> monotonic time to look again

    def group(self, bot: str) -> BotGroup | None:
        """The bot's group if the supervisor made one on this machine."""
        group = self._groups.get(bot)
        if group is not None:
            if group.exists():
                return group
            self._forget(bot)
        now = time.monotonic()
        if self._missing.get(bot, 0.0) > now:
            return None
        try:
            group = self.hierarchy.handle(group_name(bot))
        except ValueError:
            return None
        if not group.exists():
            self._missing[bot] = now + MISSING_RECHECK_S
            return None
        self._groups[bot] = group
        self._missing.pop(bot, None)
        return group

    # --- relay.TurnMeter ----------------------------------------------------------------
    def held(self, bot: str) -> int | None:
        group = self.group(bot)
        if group is None:
            return None
        count = self.outstanding.get(bot, 0)
        self.outstanding[bot] = count + 1
        try:
            if count == 0 and bot in self.frozen:
                group.thaw()
                self.frozen.discard(bot)
            return group.cpu_ns()
        except OSError as exc:  # the supervisor removed it meanwhile
            log.warning("cannot meter hosted bot %s: %s", bot, exc)
            self.outstanding[bot] = count
            self._forget(bot)
            return None

    def released(self, bot: str, cpu_at_send: int | None) -> float | None:
        if cpu_at_send is None:
            return None
        count = max(0, self.outstanding.get(bot, 1) - 1)
        self.outstanding[bot] = count
        group = self._groups.get(bot)
        if group is None:
            return None
        try:
            used = (group.cpu_ns() - cpu_at_send) / 1e6
            if count == 0 and self.freezing:
                group.freeze(wait=False)
                self.frozen.add(bot)
        except OSError as exc:
            log.warning("cannot meter hosted bot %s: %s", bot, exc)
            self._forget(bot)
            return None
        return max(0.0, used)

    def connected(self, bot: str) -> None:
        if self.freezing:
            asyncio.get_running_loop().call_later(self.settle_s, self.freeze_idle, bot)

    def freeze_idle(self, bot: str) -> None:
        """Freeze ``bot`` if it has a group, no turn outstanding and is not frozen yet."""
        if self.outstanding.get(bot, 0) or bot in self.frozen:
            return
        group = self.group(bot)
        if group is None:
            return
        try:
            group.freeze(wait=False)
        except OSError as exc:
            log.warning("cannot freeze hosted bot %s: %s", bot, exc)
            self._forget(bot)
            return
        self.frozen.add(bot)

    def _forget(self, bot: str) -> None:
        """Drop a group that went away (its kept files with it); looked up again next turn."""
        group = self._groups.pop(bot, None)
        self.frozen.discard(bot)
        if group is not None:
            group.close()

    # --- keepalive ------------------------------------------------------------------------
    async def breathe_forever(self, stop: asyncio.Event) -> None:
        """Thaw every frozen bot for ``breath_s`` every ``breathe_every_s``, until ``stop``."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.breathe_every_s)
                return
            await self.breathe()

    async def breathe(self) -> None:
        bots = [b for b in self.frozen if self.outstanding.get(b, 0) == 0]
        for bot in bots:
            with contextlib.suppress(OSError):
                self._groups[bot].thaw()
        await asyncio.sleep(self.breath_s)
        for bot in bots:
            if self.outstanding.get(bot, 0) == 0 and bot in self.frozen:
                with contextlib.suppress(OSError, KeyError):
                    self._groups[bot].freeze(wait=False)

    def thaw_all(self) -> None:
        """Thaw every bot this meter froze (the referee is stopping)."""
        for bot in list(self.frozen):
            with contextlib.suppress(OSError, KeyError):
                self._groups[bot].thaw()
        self.frozen.clear()
