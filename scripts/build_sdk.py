"""Build the bot SDK alone: a wheel ``arena_sdk-VERSION-py3-none-any.whl`` holding the
packages ``arena_sdk`` (the SDK and the stdio bridge) and ``arena`` (the generated protocol
code), requiring grpcio and protobuf only (docs/bots.md, "What the SDK is").

``python scripts/build_sdk.py OUT_DIR`` (``make sdk`` writes it to ``dist/``). A bot author
installs that one file (``pip install arena_sdk-*.whl``): none of the platform's Redis, RQ
or aiohttp, and nothing of ``referee/`` or ``workers/``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("arena_sdk", "arena")
REQUIRES = ("grpcio", "protobuf")
"""The SDK's dependencies, with the platform's lower bounds (pyproject.toml)."""


def _requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = []
    for name in REQUIRES:
        [spec] = [d for d in project["dependencies"] if re.match(rf"{name}\b(?!-)", d)]
        wanted.append(spec)
    return wanted


def _pyproject(version: str) -> str:
    requires = ", ".join(f'"{r}"' for r in _requirements())
    packages = ", ".join(f'"{p}*"' for p in PACKAGES)
    return (
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n\n'
        "[project]\n"
        'name = "arena-sdk"\n'
        f'version = "{version}"\n'
        'description = "Python SDK and stdio bridge for Sevens Arena bots"\n'
        'requires-python = ">=3.11"\n'
        'license = "MIT"\n'
        f"dependencies = [{requires}]\n\n"
        f"[tool.setuptools.packages.find]\ninclude = [{packages}]\n\n"
        '[tool.setuptools.package-data]\n"*" = ["py.typed"]\n'
    )


def build(out_dir: Path) -> Path:
    """Build the SDK's wheel into ``out_dir``; returns its path."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arena-sdk-") as tmp:
        src = Path(tmp)
        for package in PACKAGES:
            shutil.copytree(
                ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__")
            )
        (src / "pyproject.toml").write_text(_pyproject(version))
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
                *("--no-build-isolation", "--wheel-dir", str(out_dir), str(src)),
            ],
            check=True,
        )
    return out_dir / f"arena_sdk-{version}-py3-none-any.whl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="where the wheel goes")
    wheel = build(parser.parse_args(argv).out_dir)
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
