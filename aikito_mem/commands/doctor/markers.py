"""Git conflict markers in the files a project's agents read ([G5]).

``doctor`` (never a sync: a sync does not read sources, [S3]) reports a complete group —
a line starting ``<<<<<<<``, then a line starting ``=======``, then a line starting
``>>>>>>>``, each at column 0 — in ``agent.toml``, ``AGENTS.md``, the selected skills'
files and the referenced memory files.  Files are read through
:func:`aikito_mem.fsutil.read_regular` (no symlink followed at the last component, never a
FIFO, at most :data:`MAX_BYTES`); trees are walked without following links, at most
:data:`MAX_FILES` files per root.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from attrs import frozen

MAX_BYTES = 4 * 1024 * 1024
MAX_FILES = 10_000

_OPEN, _MID, _CLOSE = b"<<<<<<<", b"=======", b">>>>>>>"


@frozen
class MarkedFile:
    """A file holding at least one complete conflict-marker group."""

    path: str
    #: 1-based line numbers of each group's ``<<<<<<<`` line.
    lines: tuple[int, ...]


def conflict_groups(data: bytes) -> tuple[int, ...]:
    """1-based line numbers where a complete ``<<<<<<<`` … ``=======`` … ``>>>>>>>`` group
    starts (markers at column 0).  Pure."""
    found: list[int] = []
    start: int | None = None
    middle = False
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.startswith(_OPEN):
            start, middle = number, False
        elif start is not None and line.startswith(_MID):
            middle = True
        elif start is not None and middle and line.startswith(_CLOSE):
            found.append(start)
            start, middle = None, False
    return tuple(found)


def _files(root: str) -> Iterator[str]:
    """``root`` if it is a regular file, else every regular file below it (no links
    followed, at most :data:`MAX_FILES`)."""
    try:
        st = os.lstat(root)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        yield root
        return
    if not stat.S_ISDIR(st.st_mode):
        return
    count = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                count += 1
                if count > MAX_FILES:
                    return
                yield entry.path


def scan(roots: list[str]) -> tuple[MarkedFile, ...]:
    """Every file below ``roots`` (files or directories) with a complete group."""
    from aikito_mem import fsutil

    out: list[MarkedFile] = []
    seen: set[str] = set()
    for root in roots:
        for path in _files(root):
            if path in seen:
                continue
            seen.add(path)
            try:
                data, _ = fsutil.read_regular(path, limit=MAX_BYTES)
            except OSError:
                continue
            groups = conflict_groups(data)
            if groups:
                out.append(MarkedFile(path, groups))
    return tuple(out)
