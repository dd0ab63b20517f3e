"""The package layering (docs/engine.md, README "Layout"): each layer imports only the
layers below it. Checked on the source (every import statement, lazy ones included) and by
loading the modules in a fresh interpreter (what they pull in transitively).

* the rules engines (``referee/games``) import nothing of the platform;
* the bot SDK (``arena_sdk``) imports nothing of the referee, the workers or the samples, nor
  the platform's own dependencies: a bot needs the generated ``arena.v1`` code, grpcio and
  protobuf only (and the SDK loads from a copy of ``arena_sdk/`` and ``arena/`` alone);
* the samples (``sample_bots``) import nothing of the referee or the workers;
* the referee and the workers never import ``sample_bots``: what they need of the bot
  client is the SDK package both import (docs/bots.md, "What the SDK is");
* the seasons (``referee/seasons``) import neither gRPC nor the CLI (nor the gateway).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS = {
    # directory: forbidden import prefixes
    "referee/games": (
        "referee.",
        "workers",
        "sample_bots",
        "arena",
        "grpc",
        "redis",
        "rq",
    ),
    "arena_sdk": ("referee", "workers", "sample_bots", "redis", "rq", "aiohttp"),
    "sample_bots": ("referee", "workers"),
    "referee": ("sample_bots",),
    "workers": ("sample_bots",),
    "referee/seasons": ("grpc", "arena", "referee.gateway", "referee.cli", "sample_bots"),
}
ALLOWED = {"referee/games": ("referee.games",)}


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _forbidden(name: str, prefixes: tuple[str, ...], allowed: tuple[str, ...]) -> bool:
    def under(prefix: str) -> bool:  # "pkg." matches pkg's modules, not pkg itself
        return name.startswith(prefix) if prefix.endswith(".") else _within(name, prefix)

    return any(under(p) for p in prefixes) and not any(under(a) for a in allowed)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_module_imports_a_layer_above_it(layer: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: import {name}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for line, name in _imports(path)
        if _forbidden(name, LAYERS[layer], ALLOWED.get(layer, ()))
    ]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_loading_a_layer_loads_nothing_above_it(layer: str) -> None:
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in (ROOT / layer).rglob("*.py")
    )
    code = (
        "import sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        f"prefixes, allowed = {LAYERS[layer]!r}, {ALLOWED.get(layer, ())!r}\n"
        "def under(n, p): return n.startswith(p) if p.endswith('.') else"
        " n == p or n.startswith(p + '.')\n"
        "bad = sorted(n for n in sys.modules if any(under(n, p) for p in prefixes)"
        " and not any(under(n, a) for a in allowed))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=ROOT)


def test_the_sdk_runs_from_a_copy_of_itself_and_the_generated_code_alone(tmp_path: Path) -> None:
    """What a bot author installs: ``arena_sdk/`` and ``arena/`` next to grpcio and protobuf.
    The interpreter starts without site (no editable install of this project on its path),
    imports the SDK and the bridge from the copy, builds a bot and parses its command line."""
    import google.protobuf
    import grpc  # type: ignore[import-untyped]

    for package in ("arena_sdk", "arena"):
        shutil.copytree(ROOT / package, tmp_path / package)
    libraries = sorted(
        {
            str(Path(m.__file__ or "").resolve().parents[n])
            for m, n in ((grpc, 1), (google.protobuf, 2))
        }
    )
    code = (
        "import sys\n"
        f"sys.path[:] = [{str(tmp_path)!r}, *{libraries!r}, *sys.path[1:]]\n"
        "from arena_sdk.sdk import Bot, Turn, channel_options\n"
        "from arena_sdk.bridge import BridgeOptions\n"
        "class B(Bot):\n"
        "    def choose(self, turn: Turn) -> str: return turn.legal_actions[0]\n"
        "assert B().name and channel_options()\n"
        "import importlib.util as u\n"
        "assert all(u.find_spec(p) is None for p in ('referee', 'workers', 'sample_bots'))\n"
        f"assert sys.modules['arena_sdk'].__file__.startswith({str(tmp_path)!r})\n"
    )
    subprocess.run([sys.executable, "-S", "-c", code], check=True, timeout=120, cwd=tmp_path)
