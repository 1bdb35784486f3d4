"""The writes of ``aikito init``, one planned step each: a new directory or file (never
over anything), or the one write over an existing file ([L4]) — re-pointing the pointer
file of [W1] when the workspace it names no longer exists."""

from __future__ import annotations

import errno
import os
from typing import Protocol

from aikito_mem import fsutil
from aikito_mem.commands.init.paths import REPOINT, names_a_workspace
from aikito_mem.commands.init.report import EntryKind


class Step(Protocol):
    """What a planned step of ``init`` tells its write."""

    @property
    def parts(self) -> tuple[str, ...]: ...
    @property
    def kind(self) -> EntryKind: ...
    @property
    def role(self) -> str: ...
    @property
    def data(self) -> bytes: ...
    @property
    def mode(self) -> int: ...
    @property
    def path(self) -> str: ...


def write_step(fd: int, step: Step) -> None:
    """Write ``step`` in the directory ``fd``: ``mkdir``, an ``O_EXCL`` file, or the
    pointer's re-point."""
    name = step.parts[-1]
    if step.role == REPOINT:
        repoint(fd, name, step.data, step.path)
    elif step.kind is EntryKind.DIRECTORY:
        os.mkdir(name, step.mode, dir_fd=fd)
    else:
        fsutil.create_new(fd, name, step.data)


def repoint(fd: int, name: str, data: bytes, path: str) -> None:
    """Replace the pointer file ``name`` (in the directory ``fd``) with ``data``
    atomically, keeping its mode — after re-reading, just before the rename, that it still
    names a workspace that does not exist (else ``FileExistsError``: stale, untouched)."""
    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode & 0o777

    def still_gone() -> None:
        text, _ = fsutil.read_regular(name, dir_fd=fd, limit=64 * 1024)
        line = text.decode("utf-8", "replace").removeprefix("\ufeff").split("\n", 1)[0]
        named = os.path.expanduser(line.strip())
        if not line.strip() or names_a_workspace(named):
            raise FileExistsError(errno.EEXIST, "the pointer file changed", path)

    fsutil.atomic_replace(fd, name, data, mode=mode, before_rename=still_gone)
