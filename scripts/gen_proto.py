"""Regenerate the Python code for proto/arena/v1/*.proto into the package ``arena``.

The one way generated code is made: ``python scripts/gen_proto.py`` (``make proto``).
``--check`` regenerates into a scratch folder and exits 1 when the committed code differs.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE = "arena"


def generate(out_dir: Path) -> list[Path]:
    from grpc_tools import protoc

    # protoc finds the mypy plugins (protoc-gen-mypy) beside this interpreter.
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")

    protos = sorted((PROTO_ROOT / PACKAGE / "v1").glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *(str(p.relative_to(PROTO_ROOT)) for p in protos),
    ]
    # The mypy plugin says "Writing mypy to <scratch folder>" on stderr for every file, which
    # reads as if --check wrote something: keep protoc's stderr, and show it only on failure.
    with tempfile.TemporaryFile() as err:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            code = protoc.main(args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if code != 0:
            err.seek(0)
            sys.stderr.write(err.read().decode(errors="replace"))
            raise SystemExit("protoc failed")
    for package_dir in (out_dir / PACKAGE, out_dir / PACKAGE / "v1"):
        init = package_dir / "__init__.py"
        init.write_text('"""Generated from proto/ by scripts/gen_proto.py; do not edit."""\n')
    (out_dir / PACKAGE / "py.typed").write_text("")
    return sorted(p for p in (out_dir / PACKAGE).rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if committed code is stale")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = generate(Path(tmp))
        stale = []
        for path in files:
            rel = path.relative_to(tmp)
            target = ROOT / rel
            if args.check:
                if not target.exists() or not filecmp.cmp(path, target, shallow=False):
                    stale.append(str(rel))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        if args.check and stale:
            print("stale generated code (run `make proto`):", *stale, sep="\n  ")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
