"""Alias of :mod:`arena_sdk.sdk`, the Python bot SDK (where it lived before it became the
package the platform imports too): ``from sample_bots.sdk import Bot, Turn, main`` works as
it always did. It gives the SDK's public surface (``arena_sdk.sdk.__all__``) and nothing else."""

from arena_sdk.sdk import *  # noqa: F403
from arena_sdk.sdk import __all__ as __all__
