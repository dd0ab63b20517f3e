"""The languages a hosted bot may be written in: how each is recognised, built and run.

A :class:`Language` names its build command (run in the sandbox, in a copy of the bot's
folder) and the command that runs the result, with the protocol it speaks: ``stdio`` (JSON
lines through the platform's bridge, docs/STDIO.md) or ``grpc`` (the bot protocol over the
socket the run side binds in, docs/PROTOCOL.md). The runtime a language needs beyond the
host's ``/usr`` (the platform's Python with the SDK, the Node modules the sample bot uses)
is bound read-only under ``/opt/arena`` by :func:`runtime_mounts`, computed on the host
where the bot runs rather than stored, so that moving the platform moves it too.

An operator adds a language by adding a :class:`Language` to :data:`LANGUAGES` (its
compiler or interpreter must be under the host's /usr or bound by :func:`runtime_mounts`);
docs/HOSTING.md has the steps.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from referee.hosting.errors import ArchiveRefused
from referee.hosting.sandbox import Mount

#: Where the platform's runtime pieces appear inside the sandbox.
OPT = "/opt/arena"
PY_LIB = f"{OPT}/lib"
NODE_MODULES = f"{OPT}/node_modules"
PROTO_DIR = f"{OPT}/proto"
PYTHON_HOME = f"{OPT}/python"  # the platform's Python, when it is not the host's /usr one

REPO = Path(__file__).resolve().parents[2]

#: The Python packages a Python bot may import without shipping them: the SDK, the
#: generated protocol code and what they import.
PY_PACKAGES = ("arena_sdk", "arena", "sample_bots", "grpc", "google", "typing_extensions")


@dataclass(frozen=True)
class Recipe:
    """What :func:`detect` found: the language, how to build and run the bot, and which
    protocol it speaks."""

    language: str
    build: str  # a shell command run in the bot's folder; "" = nothing to build
    run: list[str]
    protocol: str  # "stdio" or "grpc"
    env: dict[str, str] = field(default_factory=dict)
    makes: str = ""  # an executable the build must leave, if any
    requires: str = ""  # an interpreter the sandbox must hold (a #! line's), if any


@dataclass(frozen=True)
class Language:
    name: str
    aliases: tuple[str, ...]
    describe: str  # what it looks for, for the error message


LANGUAGES = (
    Language("python", ("py", "python3"), "bot.py or main.py (Python 3)"),
    Language("node", ("js", "nodejs", "javascript"), "package.json, bot.js or index.js (Node.js)"),
    Language("cpp", ("c++", "cxx"), "*.cpp / *.cc files, or a Makefile making ./bot (C++)"),
    Language("c", (), "*.c files, or a Makefile making ./bot (C)"),
    Language("script", ("shell", "sh", "bash", "perl", "shebang"), "an executable bot with #!"),
)


def language_named(name: str) -> str:
    """The canonical language name for ``name`` or an alias; :class:`ArchiveRefused`
    listing the known ones."""
    wanted = name.strip().lower()
    for lang in LANGUAGES:
        if wanted == lang.name or wanted in lang.aliases:
            return lang.name
    known = ", ".join(lang.name for lang in LANGUAGES)
    raise ArchiveRefused(f"unknown language {name!r}: hosted bots may be {known}")


def python_executable() -> str:
    """The platform's own Python interpreter as the sandbox sees it (a hosted bot runs the
    same version as the platform, with the SDK's compiled dependencies matching it)."""
    prefix = sys.base_prefix if sys.base_prefix.startswith("/usr") else PYTHON_HOME
    return f"{prefix}/bin/python{sys.version_info[0]}.{sys.version_info[1]}"


def _python(src: Path) -> Recipe | None:
    entry = next((n for n in ("bot.py", "main.py", "__main__.py") if (src / n).is_file()), None)
    if entry is None:
        return None
    texts = (p.read_text("utf-8", "replace") for p in src.rglob("*.py") if p.is_file())
    grpc = any("arena_sdk" in t or "sample_bots" in t for t in texts)
    return Recipe(
        "python",
        build=f"{shlex.quote(python_executable())} -m compileall -q .",
        run=[python_executable(), entry],
        protocol="grpc" if grpc else "stdio",
        env={"PYTHONPATH": PY_LIB, "PYTHONUNBUFFERED": "1"},
    )


def _node(src: Path) -> Recipe | None:
    entry = None
    grpc = False
    package = src / "package.json"
    if package.is_file():
        try:
            data = json.loads(package.read_text("utf-8"))
        except ValueError as exc:
            raise ArchiveRefused(f"package.json is not JSON: {exc}") from None
        if isinstance(data, dict):
            main = data.get("main")
            entry = main if isinstance(main, str) else None
            deps = data.get("dependencies")
            grpc = isinstance(deps, dict) and "@grpc/grpc-js" in deps
    if entry is None:
        entry = next((n for n in ("bot.js", "index.js") if (src / n).is_file()), None)
    if entry is None:
        return None
    return Recipe(
        "node",
        build=f"node --check {shlex.quote(entry)}",
        run=["node", entry],
        protocol="grpc" if grpc else "stdio",
        env={"NODE_PATH": NODE_MODULES, "ARENA_PROTO_DIR": PROTO_DIR},
    )


CPP_SOURCES = ("*.cpp", "*.cc", "*.cxx")


def _compiled(src: Path, cpp: bool) -> Recipe | None:
    cpp_files = sorted(p.name for pat in CPP_SOURCES for p in src.glob(pat))
    c_files = sorted(p.name for p in src.glob("*.c"))
    if (src / "Makefile").is_file() and (cpp_files if cpp else (c_files or not cpp_files)):
        build = "make"
    elif cpp and cpp_files:
        build = "c++ -O2 -std=c++17 -o bot " + " ".join(map(shlex.quote, cpp_files)) + " -lm"
    elif not cpp and c_files:
        build = "cc -O2 -std=c11 -o bot " + " ".join(map(shlex.quote, c_files)) + " -lm"
    else:
        return None
    return Recipe("cpp" if cpp else "c", build=build, run=["./bot"], protocol="stdio", makes="bot")


def _script(src: Path) -> Recipe | None:
    for name in ("bot", "bot.sh", "bot.pl", "bot.rb"):
        path = src / name
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as head:
                first = head.readline(256)
            if first.startswith(b"#!"):
                interpreter = first[2:].decode("utf-8", "replace").split()
                return Recipe(
                    "script",
                    build=f"chmod +x {shlex.quote(name)}",
                    run=[f"./{name}"],
                    protocol="stdio",
                    requires=interpreter[0] if interpreter else "/nonexistent",
                )
    return None


_DETECT = {
    "python": _python,
    "node": _node,
    "cpp": lambda src: _compiled(src, cpp=True),
    "c": lambda src: _compiled(src, cpp=False),
    "script": _script,
}


def detect(src: Path, language: str | None = None) -> Recipe:
    """The recipe for the bot in ``src``: of ``language`` when given, else of the first
    language whose files are there; :class:`ArchiveRefused` saying what was looked for."""
    if language is not None:
        name = language_named(language)
        recipe = _DETECT[name](src)
        if recipe is None:
            describe = next(lang.describe for lang in LANGUAGES if lang.name == name)
            raise ArchiveRefused(f"no {name} bot here: a {name} bot needs {describe}")
        return recipe
    for lang in LANGUAGES:
        recipe = _DETECT[lang.name](src)
        if recipe is not None:
            return recipe
    looked = "; ".join(lang.describe for lang in LANGUAGES)
    raise ArchiveRefused(
        f"unknown language: none of {looked} at the top of the folder; add the entry file or "
        "give --language"
    )


def _package_path(name: str) -> Path | None:
    """The folder of package ``name``, or the file of module ``name``, on this host."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin else None


def runtime_mounts(language: str) -> list[Mount]:
    """The read-only binds a bot of ``language`` needs beyond the host's /usr."""
    mounts: list[Mount] = []
    if language == "python":
        prefix = Path(sys.base_prefix)
        if not str(prefix).startswith("/usr"):
            mounts.append(Mount(prefix, PYTHON_HOME))
        for package in PY_PACKAGES:
            where = _package_path(package)
            if where is not None:
                mounts.append(Mount(where, f"{PY_LIB}/{where.name}"))
    elif language == "node":
        modules = REPO / "sample_bots" / "node" / "node_modules"
        if modules.is_dir():
            mounts.append(Mount(modules, NODE_MODULES))
        if (REPO / "proto").is_dir():
            mounts.append(Mount(REPO / "proto", PROTO_DIR))
    return mounts
