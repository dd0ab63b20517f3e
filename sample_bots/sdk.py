"""Alias of :mod:`arena_sdk.sdk`, the Python bot SDK (where it lived before it became the
package the platform imports too): ``from sample_bots.sdk import Bot, Turn, main`` works as
it always did."""

from arena_sdk.sdk import *  # noqa: F403
