"""The environment of the processes a test starts.

The suite points ``PYTHONPATH`` at the tree under test (tests/conftest.py), so that every
child imports this checkout's code whatever its working folder. A test that checks what a
child finds *without* the project (the SDK alone, the wheel alone) starts it with
:func:`without_tree_path`.
"""

from __future__ import annotations

import os
from pathlib import Path

TREE_ROOT = str(Path(__file__).resolve().parents[1])


def point_children_at_tree() -> None:
    """Put the tree under test first on ``PYTHONPATH`` for every child of this process."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != TREE_ROOT]
    os.environ["PYTHONPATH"] = os.pathsep.join([TREE_ROOT, *rest])


def without_tree_path() -> dict[str, str]:
    """This process's environment less ``PYTHONPATH``: a child that must find nothing but
    what the test puts on its path."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
