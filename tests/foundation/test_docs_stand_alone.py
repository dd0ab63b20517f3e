"""The project's documents stand on their own: README.md and docs/ point
only at files of this repository, and docs/RULES.md states every rules clause the tests
cite (SV-n, SD-n) and every preset."""

from __future__ import annotations

import re
from pathlib import Path

from referee.games.registry import GAMES

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLAUSE = re.compile(r"\b(S[VD])-(\d+)\b")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
OUTSIDE = ("rules/RULES.md", "DESIGN", "PITFALLS", "../shared", "shared/")


def test_readme_and_docs_cite_no_document_outside_the_repository() -> None:
    found = [
        f"{doc.relative_to(ROOT)}:{n}: {line.strip()}"
        for doc in DOCS
        for n, line in enumerate(doc.read_text().splitlines(), 1)
        if any(word in line for word in OUTSIDE)
    ]
    assert not found, "\n".join(found)


def test_every_relative_link_of_the_docs_exists() -> None:
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_rules_md_states_every_clause_the_tests_cite_and_every_preset() -> None:
    rules = (ROOT / "docs" / "RULES.md").read_text()
    stated = {m.group(0) for m in re.finditer(r"\*\*(S[VD]-\d+)\*\*", rules)}
    stated = {s.strip("*") for s in stated}
    assert {f"SV-{n}" for n in range(1, 35)} <= stated
    assert {f"SD-{n}" for n in range(1, 21)} <= stated
    cited = {
        f"{m.group(1)}-{m.group(2)}"
        for path in (ROOT / "tests").rglob("*.py")
        for m in CLAUSE.finditer(path.read_text())
    }
    assert cited and cited <= stated, sorted(cited - stated)
    for preset in GAMES["sevens"].presets():
        assert f"`{preset}`" in rules, preset
    for preset in GAMES["sedma"].presets():
        if preset != "sedma":
            assert f"`{preset}`" in rules, preset


CODE_CITES = re.compile(
    r"DESIGN\.md|DESIGN (?:section|\d)|DESIGN sections|PITFALLS|STYLE\.md|\.\./shared"
)


def test_the_code_cites_no_document_outside_the_repository() -> None:
    """Docstrings and comments cite the project's own docs/, not the design notes
    the project was built from (a reader of the repository has only the repository)."""
    skip = {"tests/foundation/test_docs_stand_alone.py", "tests/games/test_docs.py"}
    found = [
        f"{rel}:{n}: {line.strip()}"
        for folder in (
            "referee",
            "workers",
            "arena_sdk",
            "sample_bots",
            "scripts",
            "bench",
            "dashboards",
            "tests",
            "proto",
        )
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in (".py", ".proto", ".js", ".sh", ".pl")
        and "old_v1" not in path.parts
        and "node_modules" not in path.parts
        and (rel := str(path.relative_to(ROOT))) not in skip
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if CODE_CITES.search(line)
    ]
    assert not found, "\n".join(found)


ISSUE_CITE = re.compile(r"\b[Ii]ssues? #?\d+")


def test_the_product_code_cites_no_issue_number() -> None:
    """Docstrings and comments say why, not which issue or incident led there (that is
    what commit messages are for): no ``issue 14 item 3`` in the shipped packages."""
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("referee", "workers", "arena_sdk", "sample_bots")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if ISSUE_CITE.search(line)
    ]
    assert not found, "\n".join(found)
