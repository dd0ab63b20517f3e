"""Fixtures of the hosting tests: they run on the real sandbox, and skip with the reason
where it cannot be had (``.ci/run`` installs bubblewrap, so CI runs them)."""

from __future__ import annotations

import pytest

from referee.hosting.errors import SandboxUnavailable
from referee.hosting.sandbox import require_sandbox


@pytest.fixture(scope="session")
def sandbox() -> None:
    """Skip the test, saying what is missing, where no sandbox can be had."""
    try:
        require_sandbox()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")
