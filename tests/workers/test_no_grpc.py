"""Workers talk only to Redis: no module under workers/ may import gRPC (PITFALLS 3)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import workers

WORKERS_DIR = Path(workers.__file__).parent


def test_no_module_under_workers_imports_grpc() -> None:
    offenders = []
    for path in sorted(WORKERS_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: {n}" for n in names if n.split(".")[0] in ("grpc", "arena")
            ]
    assert not offenders, f"gRPC imported under workers/: {offenders}"


def test_loading_the_worker_modules_loads_no_grpc() -> None:
    modules = sorted("workers." + p.stem for p in WORKERS_DIR.glob("*.py") if p.stem != "__init__")
    code = (
        f"import sys\nfor m in {modules!r}: __import__(m)\n"
        "bad = sorted(m for m in sys.modules if m == 'grpc' or m.startswith('grpc.'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
