"""Exceptions of the referee service layer (rules errors live in ``referee.games.errors``).

Hierarchy::

    ArenaError (Exception)
    ├── EmbeddedRedisError     the embedded redis-server could not start or stop
    ├── ConfigError (ValueError)  a bad flag, TOML file or season spec; says what to fix
    ├── NotFoundError (KeyError)  an unknown bot, season or match
    ├── AuthError              a bad, missing or revoked token; acting for another bot
    └── ConflictError          a name already taken, a state change that does not apply

The gRPC layer maps these to status codes in one place (``referee.gateway.status``).
"""


class ArenaError(Exception):
    """Base class of the referee's own errors."""


class EmbeddedRedisError(ArenaError):
    """The embedded redis-server could not be found, started or stopped."""


class ConfigError(ArenaError, ValueError):
    """A configuration, flag or spec that is refused; the message says what would work."""


class NotFoundError(ArenaError, KeyError):
    """An unknown bot, season or match."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class AuthError(ArenaError):
    """Authentication or authorization failed."""


class ConflictError(ArenaError):
    """A name already taken or a state change that does not apply now."""
