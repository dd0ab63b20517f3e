"""Errors of the hosting layer; each names its status (``status``, see ``referee.errors``).

Hierarchy (beside ``referee.errors``)::

    ArenaError
    └── HostingError                    FAILED_PRECONDITION
        ├── SandboxUnavailable          FAILED_PRECONDITION: no sandbox can be had here
        │                               (the message names what is missing); hosted bots
        │                               are never run without one
        ├── ArchiveRefused (ValueError) INVALID_ARGUMENT: a submitted archive or folder that
        │                               is refused (path escape, symlink, device file, too
        │                               large, unknown language); nothing is stored
        └── BuildFailed                 FAILED_PRECONDITION: a version's build did not
                                        succeed; the build log says why
"""

from __future__ import annotations

from referee.errors import ArenaError


class HostingError(ArenaError):
    """A hosted bot's code could not be stored, built or run."""

    status = "FAILED_PRECONDITION"


class SandboxUnavailable(HostingError):
    """The sandbox cannot be set up on this machine; the message says what is missing and
    how to get it."""

    status = "FAILED_PRECONDITION"


class ArchiveRefused(HostingError, ValueError):
    """A submitted archive or folder refused before anything is stored; the message names
    the member and the rule it breaks."""

    status = "INVALID_ARGUMENT"


class BuildFailed(HostingError):
    """A version's build ended with an error, a limit or a timeout."""

    status = "FAILED_PRECONDITION"
