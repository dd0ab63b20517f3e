"""The package graph of docs/ARCHITECTURE.md, enforced: every module belongs to one node,
each node imports only the nodes the graph lets it (every import statement, lazy ones
included, and what loading a node pulls in transitively), and the graph has no cycle.

A new package or top-level module of ``referee/`` or ``workers/`` belongs to no node until
it is added to :data:`NODES` (and to the drawing in docs/ARCHITECTURE.md): the test says so.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from tests.children import without_tree_path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("arena", "arena_sdk", "sample_bots", "referee", "workers")

NODES: dict[str, tuple[str, ...]] = {
    # node: the modules and packages it is made of (a dotted name and everything under it)
    "arena": ("arena",),  # generated from proto/ (scripts/gen_proto.py)
    "games": ("referee.games",),  # the rules engines
    "match": ("referee.match",),  # the match contract: spec, clock, states, results, replay
    "protocol": ("referee.protocol",),  # the wire encoding of the match contract
    "platform": (  # what every service shares: errors, Redis keys, the queue of record...
        "referee",  # its __init__ only (the other nodes live under it)
        "referee.aio",
        "referee.bots",
        "referee.cluster",
        "referee.defaults",
        "referee.embedded_redis",
        "referee.errors",
        "referee.keys",
        "referee.limits",
        "referee.lua",
        "referee.metrics_store",
        "referee.procs",
        "referee.queue",
        "referee.records",  # the record store, read through by the queue of record
    ),
    "workers": ("workers",),  # the match hosts
    "seasons": ("referee.seasons", "referee.ladder"),  # the continuous ladder plays seasons
    "hosting": (  # hosted bots: archives, versions, builds, the sandbox, cgroups, the meter
        "referee.hosting",
        "referee.hosting.archive",
        "referee.hosting.cgroups",
        "referee.hosting.errors",
        "referee.hosting.languages",
        "referee.hosting.meter",
        "referee.hosting.sandbox",
        "referee.hosting.versions",
    ),
    "supervisor": ("referee.hosting.supervisor",),  # keeps hosted bots running, sandboxed
    "metrics": ("referee.metrics",),  # the Prometheus exposition
    "web": ("referee.web",),
    "gateway": ("referee.gateway",),  # the gRPC referee (bot streams, League API)
    "botcheck": ("referee.botcheck",),
    "cli": ("referee.cli",),  # the composition root: the only node that sees every other
    "observation": ("arena_sdk.observation",),  # the declared observation (typing only)
    "sdk": ("arena_sdk", "arena_sdk.sdk", "arena_sdk.bridge"),  # the bot SDK
    "samples": ("sample_bots",),
}

GRAPH: dict[str, frozenset[str]] = {
    # node: the nodes it may import (directly); docs/ARCHITECTURE.md draws this
    "arena": frozenset(),
    "observation": frozenset(),
    "games": frozenset({"observation"}),
    "match": frozenset({"games"}),
    "protocol": frozenset({"arena", "games", "match"}),
    "platform": frozenset({"games", "match"}),
    "workers": frozenset({"arena", "games", "match", "protocol", "platform"}),
    "seasons": frozenset({"games", "match", "platform"}),
    "metrics": frozenset({"match", "platform"}),
    "hosting": frozenset({"platform"}),
    "web": frozenset({"games", "match", "platform", "seasons", "metrics", "hosting", "sdk"}),
    "gateway": frozenset({"arena", "games", "match", "platform", "seasons", "web", "hosting"}),
    "supervisor": frozenset({"platform", "seasons", "hosting", "gateway"}),
    "botcheck": frozenset({"arena", "games", "match", "protocol", "platform", "workers"}),
    "cli": frozenset(
        {
            "games",
            "match",
            "platform",
            "workers",
            "seasons",
            "web",
            "gateway",
            "botcheck",
            "hosting",
            "supervisor",
            "sdk",
        }
    ),
    "sdk": frozenset({"arena", "observation"}),
    "samples": frozenset({"sdk"}),
}

THIRD_PARTY: dict[str, tuple[str, ...]] = {
    # node: libraries it may not import (the pure layer is plain Python; a bot needs the
    # generated code, grpcio and protobuf only; the seasons speak no gRPC)
    "games": ("grpc", "google", "redis", "rq", "aiohttp"),
    "match": ("grpc", "google", "redis", "rq", "aiohttp"),
    "sdk": ("redis", "rq", "aiohttp"),
    "seasons": ("grpc",),
}

ENTRIES = [(entry, node) for node, entries in NODES.items() for entry in entries]


def _covers(entry: str, name: str) -> bool:
    """``entry`` stands for ``name``: itself and what is under it, except a package whose
    parts are other nodes' (``referee``), which stands for its ``__init__`` alone."""
    if name == entry:
        return True
    nested = any(other.startswith(entry + ".") for other, _ in ENTRIES)
    return not nested and name.startswith(entry + ".")


def node_of(name: str) -> str | None:
    found = [(len(entry), node) for entry, node in ENTRIES if _covers(entry, name)]
    return max(found)[1] if found else None


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _modules() -> list[tuple[str, Path]]:
    return sorted(
        (_module_name(path), path)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if not path.name.endswith(("_pb2.py", "_pb2_grpc.py"))
    )


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every imported name, ``from pkg import mod`` counted as ``pkg.mod``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, s if _is_module(s) else node.module) for s in subs]
    return found


def _reach(node: str) -> set[str]:
    seen: set[str] = set()
    todo = [node]
    while todo:
        for dep in GRAPH[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def _forbidden(node: str, name: str) -> bool:
    top = name.split(".")[0]
    if top in PACKAGES:
        target = node_of(name)
        return target is not None and target != node and target not in _reach(node)
    return top in THIRD_PARTY.get(node, ())


def test_every_module_belongs_to_a_node() -> None:
    lost = [name for name, _ in _modules() if node_of(name) is None]
    assert not lost, (
        f"modules in no node of the package graph: {lost}; add their package to NODES in "
        "tests/test_layering.py and to the drawing in docs/ARCHITECTURE.md"
    )


def test_the_graph_has_no_cycle() -> None:
    assert set(GRAPH) == set(NODES)
    assert all(deps <= set(NODES) for deps in GRAPH.values())
    try:
        tuple(TopologicalSorter(GRAPH).static_order())
    except CycleError as exc:
        pytest.fail(f"the package graph has a cycle: {exc.args[1]}")


def test_docs_architecture_draws_this_graph() -> None:
    """docs/ARCHITECTURE.md's ``graph`` block lists each node and what it may import."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    block = text.split("```graph\n", 1)[1].split("```", 1)[0]
    drawn: dict[str, frozenset[str]] = {}
    for line in block.splitlines():
        if line.strip():
            node, _, deps = line.partition("->")
            drawn[node.strip()] = frozenset(d.strip() for d in deps.split(",") if d.strip())
    assert drawn == GRAPH


@pytest.mark.parametrize("node", sorted(NODES))
def test_no_module_imports_outside_the_graph(node: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: import {name} ({node} may import "
        f"{', '.join(sorted(GRAPH[node])) or 'nothing of the project'})"
        for module, path in _modules()
        if node_of(module) == node
        for line, name in _imports(path)
        if _forbidden(node, name)
    ]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("node", sorted(n for n in NODES if n != "cli"))
def test_loading_a_node_loads_nothing_outside_its_reach(node: str) -> None:
    modules = [name for name, _ in _modules() if node_of(name) == node]
    allowed = sorted(_reach(node) | {node})
    # a module's parent packages load with it (``referee`` with ``referee.games``,
    # ``arena_sdk`` with ``arena_sdk.observation``): its own and those of nodes it reaches
    reached = [name for name, _ in _modules() if node_of(name) in allowed]
    parents = sorted({m.rsplit(".", 1)[0] for m in reached if "." in m} - set(reached))
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"for m in {modules!r}: __import__(m)\n"
        f"from tests.test_layering import THIRD_PARTY, node_of\n"
        f"allowed, barred = {allowed!r}, THIRD_PARTY.get({node!r}, ())\n"
        f"parents = {parents!r}\n"
        "bad = sorted(n for n in sys.modules if n not in parents\n"
        "    and node_of(n) not in (None, *allowed)\n"
        "    or n.split('.')[0] in barred)\n"
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
    subprocess.run(
        [sys.executable, "-S", "-c", code],
        check=True,
        timeout=120,
        cwd=tmp_path,
        env=without_tree_path(),
    )
