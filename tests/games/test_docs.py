"""The engines' documentation runs and points inside the project: every doctest in
``referee/games`` passes (run by ``make test``), and every document a docstring or comment
cites is one of the repository's own ``docs/`` files."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import referee.games

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(m.name for m in pkgutil.walk_packages(referee.games.__path__, "referee.games."))


@pytest.mark.parametrize("name", MODULES)
def test_the_doctests_of_the_engines_pass(name: str) -> None:
    module = importlib.import_module(name)
    failed, _attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0, f"{name}: {failed} doctest(s) failed"


def test_the_engines_have_doctests() -> None:
    attempted = sum(doctest.testmod(importlib.import_module(name)).attempted for name in MODULES)
    assert attempted >= 8, "the examples in base.py, cards.py and sevens/rules.py run"


def test_the_engines_cite_only_the_projects_own_documents() -> None:
    outside = re.compile(r"DESIGN\.md|DESIGN section|PITFALLS|STYLE\.md|\.\./shared")
    cited = re.compile(r"docs/[\w./-]+\.md")
    problems = []
    for path in sorted((ROOT / "referee" / "games").rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(ROOT)
        problems += [f"{rel}: cites {m.group(0)!r}" for m in outside.finditer(text)]
        problems += [
            f"{rel}: cites {m.group(0)}, which is not in the repository"
            for m in cited.finditer(text)
            if not (ROOT / m.group(0)).exists()
        ]
        problems += [
            f"{rel}: cites RULES.md without its path (docs/RULES.md)"
            for m in re.finditer(r"(?<![/\w])RULES\.md", text)
        ]
    assert not problems, "\n".join(problems)
