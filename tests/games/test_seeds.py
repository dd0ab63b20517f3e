"""One seed derivation: every seed the project derives goes through
:func:`referee.games.base.derive_seed`, and folding the former per-module copies into it
changed no value: each caller still yields what its documented formula gives (D-11 of
docs/SEVENS_DECISIONS.md for Sevens' own deals), so no recorded match is re-dealt."""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import pytest

from referee.cli.games import deal_seed as selfplay_deal_seed
from referee.games.base import derive_seed
from referee.games.sevens.match import derive_deal_seed
from referee.match.spec import match_deal_seed, redeal_seed
from referee.seasons.inprocess import turn_rng

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [0, 1, 7, 42, 2**31 - 1, 2**62 + 12345, 98765432123456789]


def _word(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@pytest.mark.parametrize("seed", SEEDS)
def test_every_caller_keeps_the_values_of_its_documented_formula(seed: int) -> None:
    for d in range(3):
        # D-11: first 8 bytes, big-endian, top bit cleared
        assert derive_deal_seed(seed, d) == _word(f"{seed}:{d}") & (2**63 - 1)
        assert selfplay_deal_seed(seed, d) == _word(f"selfplay:{seed}:{d}") & (2**63 - 1)
        # arena match run / casual games and redeals: the first 6 bytes
        digest = hashlib.sha256(f"arena-match:{seed}:{d}".encode()).digest()
        assert match_deal_seed(seed, d) == int.from_bytes(digest[:6], "big")
        digest = hashlib.sha256(f"arena-redeal:{seed}:{d}:-1".encode()).digest()
        assert redeal_seed(seed, d) == int.from_bytes(digest[:6], "big")
        # seasons and Sedma (docs/seasons.md): the high 63 bits
        assert derive_seed(seed, d, "match") == _word(f"{seed}:{d}:match") >> 1
        assert turn_rng(seed, "s-m0003", d).random() == (
            random.Random(_word(f"{seed}:m0003:{d}")).random()
        )


def test_a_width_outside_one_to_64_bits_is_refused() -> None:
    for bits in (0, 65):
        with pytest.raises(ValueError, match="1 to 64 bits"):
            derive_seed(1, bits=bits)


def test_no_module_but_the_engines_base_derives_a_seed_from_a_digest() -> None:
    """A second derivation would drift from the first: a digest turned into an integer
    (``int.from_bytes(hashlib...`` or ``int.from_bytes(digest...``) appears only in
    ``referee/games/base.py``; each of the six former copies matched this pattern."""
    pattern = re.compile(r"from_bytes\(\s*(?:hashlib\.|\w*digest\b)")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("referee", "workers", "sample_bots", "scripts")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if pattern.search(path.read_text()) and path != ROOT / "referee/games/base.py"
    ]
    assert not offenders, offenders
