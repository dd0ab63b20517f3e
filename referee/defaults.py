"""Runtime defaults that more than one package reads: one definition each.

A value used by one module only stays in that module; a value that the gateway, the match
hosts, the queue or the CLI all need (a queue's name, a timeout both ends of a stream
apply, a host's sizes that ``arena worker`` and ``arena referee`` both offer) lives here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

QUEUE_NAME: Final = "arena"
"""The RQ queue that season match jobs go to."""
CASUAL_QUEUE_NAME: Final = "arena-casual"
"""The queue of casual matches (a person against bots, from ``/play`` or ``arena play``):
hosts run them on slots of their own (``--casual-matches``), never on the slots of
seasons' matches, so strangers' games cannot hold the seasons' slots."""

DEFAULT_MATCHES: Final = 64
"""Matches one host process runs at once (``--matches``)."""
DEFAULT_CASUAL_MATCHES: Final = 2
"""Slots of a host for casual matches (:data:`CASUAL_QUEUE_NAME`), besides its matches."""
DEFAULT_STALE_S: Final = 5.0
"""A running match whose host has not heartbeaten for this long is re-run (a host beats
every second)."""
DEFAULT_GRACE_S: Final = 10.0
"""On stop, a host's running matches get this long to finish before they are handed back."""

LINK_WRITE_TIMEOUT_S: Final = 10.0
"""Longest wait for one write on the internal stream between a referee and a host, at
either end; past it the link is given up (its open requests are sent again; an unbounded
write waits on HTTP/2 flow control forever)."""


DATA_DIR_ENV: Final = "ARENA_DATA_DIR"


def default_data_dir() -> Path:
    """Where the platform keeps its embedded Redis and state, the same from any folder:
    ``$ARENA_DATA_DIR``, else ``$XDG_STATE_HOME/arena``, else ``~/.local/state/arena``."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state else Path.home() / ".local" / "state"
    return (base / "arena").resolve()
