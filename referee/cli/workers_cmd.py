"""Commands of this group (see referee.cli.main.COMMAND_MODULES)."""

from __future__ import annotations

from referee.cli.common import Commands


def register(commands: Commands) -> None:
    """Add this module's subcommands (none yet)."""
