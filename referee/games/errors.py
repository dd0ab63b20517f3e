"""Exceptions of the rules layer.

Hierarchy::

    RulesError (ValueError)
    ├── InvalidRulesError      a rules object or preset that the validator refuses
    ├── CardParseError         text that is not a card in canonical form
    └── MatchStateError        an operation that does not fit the match's state
                               (acting after the end, asking for a result too early)

Every message says what was wrong and what would be right. An illegal action is not an
error: ``Match.check`` says why in words and ``Match.apply`` handles it as the rules say.
"""


class RulesError(ValueError):
    """Base class of every error raised by the rules engines."""


class InvalidRulesError(RulesError):
    """A rules object, option value or preset name was refused by the validator."""


class CardParseError(RulesError):
    """Text that is not a card (or action) in canonical form."""


class MatchStateError(RulesError):
    """An operation that does not fit the current state of a deal or match."""
