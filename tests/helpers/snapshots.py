"""Before/after snapshots of real trees: the one helper every "nothing else changed" test
uses — lstat (mode, inode, size, ``mtime_ns``, ``ctime_ns``) plus the link literal or the
sha256 of the content of every entry, never following links — and :func:`recreate`, a path
deleted and re-created until its inode number comes back."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Collection
from pathlib import Path

Entry = tuple[int, int, int, int, int, str]


def snapshot(*roots: str | Path, skip: Collection[str | Path] = ()) -> dict[str, Entry]:
    """Every entry under ``roots`` (the roots included), keyed by path; the paths in
    ``skip`` and everything below them are left out."""
    out: dict[str, Entry] = {}
    pruned = {str(p) for p in skip}

    def add(path: str) -> None:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            content = "-> " + os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            content = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        else:
            content = ""
        out[path] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                     content)

    for root in map(str, roots):
        if not os.path.lexists(root) or root in pruned:
            continue
        add(root)
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = [n for n in dirnames if os.path.join(dirpath, n) not in pruned]
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if path not in pruned:
                    add(path)
    return out


def changed(before: dict[str, Entry], after: dict[str, Entry]) -> set[str]:
    """Paths added, removed or altered between two snapshots."""
    return {k for k in set(before) | set(after) if before.get(k) != after.get(k)}


def recreate(path: str | Path, make: Callable[[], None], remove: Callable[[], None]) -> bool:
    """Delete and re-create ``path`` until its inode number is reused (at most 200 tries);
    return whether it was — a source deleted and re-created must be caught either way
    ([P5]: the inode generation number, not the inode number)."""
    ino = os.lstat(path).st_ino
    for _ in range(200):
        remove()
        make()
        if os.lstat(path).st_ino == ino:
            return True
    return False
