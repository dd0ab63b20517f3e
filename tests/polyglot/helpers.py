"""Shared pieces of the polyglot tests: where things are, and Node.js set up once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "sample_bots" / "node"
STDIO_DIR = ROOT / "sample_bots" / "stdio"
BROKEN_DIR = Path(__file__).resolve().parent / "bots"


def node_ready() -> Path:
    """The Node bot's folder with its dependencies installed (``npm ci`` when missing).

    Skips the calling test, saying why, when node or npm is not installed (``.ci/run``
    installs them)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the Node.js bot (apt-get install nodejs npm)")
    if not (NODE_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"npm ci failed in {NODE_DIR}:\n{done.stderr[-2000:]}"
    return NODE_DIR
