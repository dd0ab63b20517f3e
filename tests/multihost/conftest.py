"""Multi-host tests: skipped, with the reason, where network namespaces can't be made."""

from __future__ import annotations

import pytest

from tests.multihost import netns

_reason: list[str | None] = []


def namespaces_unavailable() -> str | None:
    """Why this machine can't run the multi-host tests (probed once), or None."""
    if not _reason:
        _reason.append(netns.unavailable())
    return _reason[0]


@pytest.fixture(autouse=True)
def _needs_namespaces() -> None:
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(f"multi-host harness unavailable: {reason}")
