"""Alias of :mod:`arena_sdk.bridge`, the stdio bridge (where it lived before it became part
of the package the platform imports too)."""

from arena_sdk.bridge import *  # noqa: F403
