"""The authorization metadata a bot or admin sends: only ``Bearer <token>`` is read."""

from __future__ import annotations

import pytest

from referee.errors import AuthError
from referee.gateway.auth import bearer_token


def test_only_the_bearer_scheme_is_accepted() -> None:
    """Pins the scheme check: ``Basic <valid token>`` (or any other scheme, or none) is
    refused with the form that works, not read as a token (a mutation that skipped the
    scheme let ``Basic`` through)."""
    token = "arena_0123456789abcdef"
    assert bearer_token([("authorization", f"Bearer {token}")]) == token
    assert bearer_token([("Authorization", f"bearer  {token} ")]) == token
    assert bearer_token([("authorization", f"Bearer {token}".encode())]) == token
    for value in (f"Basic {token}", f"Token {token}", f"{token}", f"Bearer{token}", "Bearer "):
        with pytest.raises(AuthError, match="Bearer <token>"):
            bearer_token([("authorization", value)])
    with pytest.raises(AuthError, match="missing authorization"):
        bearer_token([("x-token", token)])
    with pytest.raises(AuthError, match="missing authorization"):
        bearer_token(None)
