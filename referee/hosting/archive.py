"""A submitted bot's code as data: read a folder, .tar(.gz) or .zip, check every member,
and unpack it into a fresh folder, or refuse it whole.

Every member is checked before anything is written: its path stays inside the folder (no
absolute path, no ``..``, no drive letter or backslash), it is a regular file, a folder or a
symlink whose target stays inside (no device, fifo or hard link), and the totals stay under
:class:`ArchiveLimits`. Unpacking writes with ``O_EXCL | O_NOFOLLOW`` into a folder this
module made, drops setuid/setgid bits and owner-only modes (files become 0644 or 0755), and
counts the bytes it really writes (a zip's declared sizes may lie). The same code unpacks a
build's output, which is as untrusted as the submission.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from referee.hosting.errors import ArchiveRefused

MIB = 1024 * 1024
CHUNK = 64 * 1024


@dataclass(frozen=True)
class ArchiveLimits:
    """The largest submission taken: the archive's own bytes, the bytes unpacked, the
    number of members and the length of a path."""

    archive_bytes: int = 16 * MIB
    unpacked_bytes: int = 64 * MIB
    files: int = 2000
    path_chars: int = 240


@dataclass(frozen=True)
class Member:
    """One checked member: a file (``data`` opens it), a folder or a symlink (``link``)."""

    path: str
    kind: str  # "file", "dir" or "symlink"
    size: int = 0
    executable: bool = False
    link: str = ""


def archive_kind(name: str) -> str:
    """``tar`` or ``zip`` by the file name; :class:`ArchiveRefused` for anything else."""
    lower = name.lower()
    if lower.endswith((".tar.gz", ".tgz", ".tar", ".tar.xz", ".tar.bz2")):
        return "tar"
    if lower.endswith(".zip"):
        return "zip"
    raise ArchiveRefused(
        f"{name}: not an archive this platform takes; submit a folder, a .tar.gz (.tgz, .tar) "
        "or a .zip"
    )


def clean_path(raw: str, limits: ArchiveLimits) -> str:
    """The member path made relative and checked; :class:`ArchiveRefused` when it would
    land outside the bot's folder."""
    if "\\" in raw or "\x00" in raw:
        raise ArchiveRefused(f"member {raw!r}: a backslash or NUL in a path is not allowed")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise ArchiveRefused(
            f"member {raw!r}: an absolute path escapes the bot's folder; paths must be relative"
        )
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveRefused(f"member {raw!r}: '..' would escape the bot's folder")
    path = "/".join(parts)
    if len(path) > limits.path_chars:
        raise ArchiveRefused(
            f"member {raw[:60]!r}...: a path of {len(path)} characters; at most {limits.path_chars}"
        )
    return path


def check_link(path: str, target: str) -> None:
    """A symlink may point only inside the bot's folder, by a relative path."""
    if target.startswith("/"):
        raise ArchiveRefused(
            f"symlink {path!r} -> {target!r} points outside the bot's folder (an absolute "
            "target); only relative links inside the folder are taken"
        )
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        raise ArchiveRefused(
            f"symlink {path!r} -> {target!r} points outside the bot's folder; only links "
            "inside it are taken"
        )


class _Budget:
    def __init__(self, limits: ArchiveLimits) -> None:
        self.limits = limits
        self.files = 0
        self.bytes = 0

    def count(self, path: str) -> None:
        self.files += 1
        if self.files > self.limits.files:
            raise ArchiveRefused(
                f"more than {self.limits.files} files and folders (at {path!r}); pack fewer "
                "(leave out build products and dependencies the platform provides)"
            )

    def add(self, n: int, path: str) -> None:
        self.bytes += n
        if self.bytes > self.limits.unpacked_bytes:
            raise ArchiveRefused(
                f"more than {self.limits.unpacked_bytes // MIB} MiB unpacked (at {path!r}); "
                "leave out build products and data the bot does not need"
            )


def _tar_members(
    tar: tarfile.TarFile, limits: ArchiveLimits
) -> Iterator[tuple[Member, tarfile.TarInfo]]:
    for info in tar:
        path = clean_path(info.name, limits)
        if not path:
            continue
        if info.isdir():
            yield Member(path, "dir"), info
        elif info.isfile():
            yield Member(path, "file", info.size, bool(info.mode & 0o111)), info
        elif info.issym():
            check_link(path, info.linkname)
            yield Member(path, "symlink", link=info.linkname), info
        elif info.islnk():
            raise ArchiveRefused(
                f"member {path!r} is a hard link (to {info.linkname!r}); pack a copy instead"
            )
        else:
            what = "a device file" if info.ischr() or info.isblk() else "a fifo or special file"
            raise ArchiveRefused(
                f"member {path!r} is {what}; an archive holds only files, folders and links"
            )


def _zip_members(
    archive: zipfile.ZipFile, limits: ArchiveLimits
) -> Iterator[tuple[Member, zipfile.ZipInfo]]:
    for info in archive.infolist():
        path = clean_path(info.filename, limits)
        if not path:
            continue
        mode = info.external_attr >> 16
        if info.is_dir():
            yield Member(path, "dir"), info
        elif stat.S_ISLNK(mode):
            target = archive.read(info)[:4096].decode("utf-8", "replace")
            check_link(path, target)
            yield Member(path, "symlink", link=target), info
        elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: no type recorded, a file
            raise ArchiveRefused(
                f"member {path!r} is a device or special file; an archive holds only files, "
                "folders and links"
            )
        else:
            yield Member(path, "file", info.file_size, bool(mode & 0o111)), info


def unpack(
    source: IO[bytes], kind: str, dest: Path, limits: ArchiveLimits | None = None
) -> list[Member]:
    """Unpack the archive ``source`` (``tar`` or ``zip``) into the new folder ``dest`` (made
    here; it must not exist) and return its members. On :class:`ArchiveRefused` ``dest``
    may hold a part: the caller unpacks into a staging folder and removes it."""
    limits = limits or ArchiveLimits()
    dest.mkdir(mode=0o755)
    budget = _Budget(limits)
    members: list[Member] = []
    try:
        if kind == "zip":
            with zipfile.ZipFile(source) as archive:
                for member, zinfo in _zip_members(archive, limits):
                    budget.count(member.path)
                    with archive.open(zinfo) if member.kind == "file" else _empty() as data:
                        _write(dest, member, data, budget)
                    members.append(member)
        else:
            with tarfile.open(fileobj=source, mode="r:*") as tar:
                for member, info in _tar_members(tar, limits):
                    budget.count(member.path)
                    extracted = tar.extractfile(info) if member.kind == "file" else None
                    with extracted if extracted is not None else _empty() as stream:
                        _write(dest, member, stream, budget)
                    members.append(member)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
        raise ArchiveRefused(f"not a readable {kind} archive: {exc}") from exc
    return members


def _empty() -> IO[bytes]:
    return io.BytesIO(b"")


def _write(dest: Path, member: Member, data: IO[bytes], budget: _Budget) -> None:
    try:
        _write_member(dest, member, data, budget)
    except ArchiveRefused:
        raise
    except OSError as exc:  # a file where a folder should be, a name too long, ...
        raise ArchiveRefused(
            f"member {member.path!r} cannot be written: {exc.strerror or exc}"
        ) from None


def _write_member(dest: Path, member: Member, data: IO[bytes], budget: _Budget) -> None:
    target = dest / member.path
    _parents(dest, member.path)
    if member.kind == "dir":
        target.mkdir(mode=0o755, exist_ok=True)
        if target.is_symlink() or not target.is_dir():
            raise ArchiveRefused(f"member {member.path!r} is a folder and something else")
        return
    if member.kind == "symlink":
        try:
            os.symlink(member.link, target)
        except FileExistsError:
            raise ArchiveRefused(f"member {member.path!r} appears twice") from None
        return
    mode = 0o755 if member.executable else 0o644
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise ArchiveRefused(f"member {member.path!r} appears twice") from None
    with os.fdopen(fd, "wb") as out:
        while chunk := data.read(CHUNK):
            budget.add(len(chunk), member.path)
            out.write(chunk)
    os.chmod(target, mode)


def _parents(dest: Path, path: str) -> None:
    """Make the folders above ``path``; refuse when one of them is a symlink (a member
    written through a link could land outside)."""
    current = dest
    for part in path.split("/")[:-1]:
        current = current / part
        if current.is_symlink():
            raise ArchiveRefused(
                f"member {path!r} lies under the symlink {part!r}; write it under a real folder"
            )
        current.mkdir(mode=0o755, exist_ok=True)


def pack_folder(folder: Path, out: IO[bytes], limits: ArchiveLimits | None = None) -> None:
    """Write the folder as a .tar.gz to ``out``, checking what :func:`unpack` checks (a
    symlink pointing outside, a device file, too many or too large files) so that a
    folder is refused with the same words as an archive."""
    limits = limits or ArchiveLimits()
    if not folder.is_dir():
        raise ArchiveRefused(f"{folder}: no such folder")
    budget = _Budget(limits)
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                full = Path(root) / name
                rel = full.relative_to(folder).as_posix()
                budget.count(rel)
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    check_link(rel, os.readlink(full))
                elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                    raise ArchiveRefused(
                        f"{rel!r} is a device, fifo or socket; a bot's folder holds only files, "
                        "folders and links"
                    )
                if stat.S_ISREG(info.st_mode):
                    budget.add(info.st_size, rel)
                entry = tar.gettarinfo(str(full), arcname=rel)
                entry.uid = entry.gid = 0
                entry.uname = entry.gname = ""
                entry.mtime = 0
                if entry.isfile():
                    with open(full, "rb") as data:
                        tar.addfile(entry, data)
                else:
                    tar.addfile(entry)
