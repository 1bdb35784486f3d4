"""Comparing two trees: do they hold the same content, and if not, how do they differ.

Content is the set of entries (never followed through a symlink), their types, the bytes
of every regular file and the literal of every symlink; permission bits and times are
not content.  :func:`compare` lists every difference; :func:`diff_text` shows the
differing small text files as a unified diff (``difflib``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

import attrs

from aikito_mem import fsutil
from aikito_mem.commands.adopt.treemove import Entry, EntryKind, TreeChangedError, inventory

_CHUNK = 1 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


@attrs.frozen
class Difference:
    """One way two trees differ, at ``rel`` (relative to both roots)."""

    rel: str
    what: str


def _join(root: str, rel: str) -> str:
    return f"{root}/{rel}" if rel else root


def _same_bytes(a: str, b: str) -> bool:
    fa = os.open(a, _READ_FLAGS)
    try:
        fb = os.open(b, _READ_FLAGS)
        try:
            if not (stat.S_ISREG(os.fstat(fa).st_mode) and stat.S_ISREG(os.fstat(fb).st_mode)):
                return False
            while True:
                ca, cb = os.read(fa, _CHUNK), os.read(fb, _CHUNK)
                if ca != cb:
                    return False
                if not ca:
                    return True
        finally:
            os.close(fb)
    finally:
        os.close(fa)


def _entry_difference(ea: Entry | None, eb: Entry | None, names: tuple[str, str]) -> str | None:
    na, nb = names
    if eb is None:
        assert ea is not None
        return f"only {na} ({ea.kind.value})"
    if ea is None:
        return f"only {nb} ({eb.kind.value})"
    if EntryKind.OTHER in (ea.kind, eb.kind):
        return "a special file (its content cannot be compared)"
    if ea.kind is not eb.kind:
        return f"{ea.kind.value} {na}, {eb.kind.value} {nb}"
    if ea.kind is EntryKind.LINK and ea.literal != eb.literal:
        return f"symlink to {ea.literal!r} {na}, to {eb.literal!r} {nb}"
    if ea.kind is EntryKind.FILE and ea.size != eb.size:
        return f"content differs ({ea.size} bytes {na}, {eb.size} {nb})"
    return None


def compare(a: str, b: str, names: tuple[str, str] = ("in the first", "in the second")
            ) -> tuple[tuple[Entry, ...], tuple[Difference, ...]]:
    """The inventory of ``a`` and every difference of content between ``a`` and ``b``
    (none: the same entries, the same types, byte-identical files, the same link
    literals; permission bits and times are not content).  ``names`` name the two sides
    in the descriptions.  :class:`TreeChangedError` when ``a`` changed while being
    compared."""
    ea = inventory(a, special=True)
    eb = inventory(b, special=True)
    ia, ib = {e.rel: e for e in ea}, {e.rel: e for e in eb}
    out: list[Difference] = []
    for rel in sorted(set(ia) | set(ib)):
        x, y = ia.get(rel), ib.get(rel)
        what = _entry_difference(x, y, names)
        if what is None and x is not None and x.kind is EntryKind.FILE and \
                not _same_bytes(_join(a, rel), _join(b, rel)):
            what = "content differs"
        if what is not None:
            out.append(Difference(rel, what))
    if inventory(a, special=True) != ea:
        raise TreeChangedError(a, "it changed while it was being compared")
    return ea, tuple(out)


def _small_text(path: str, limit: int) -> list[str] | None:
    try:
        data, _ = fsutil.read_regular(path, limit=limit)
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return [line if line.endswith("\n") else line + "\n"
            for line in text.splitlines(keepends=True)]


def diff_text(a: str, b: str, differences: Sequence[Difference], *,
              label_a: str, label_b: str, limit: int = 256 * 1024,
              max_lines: int = 200) -> str | None:
    """A unified diff (``difflib``) of every pair of small UTF-8 text files whose content
    differs, ``b`` as the old side and ``a`` as the new one; ``None`` when there is none.
    At most ``max_lines`` lines; the rest is counted."""
    import difflib

    lines: list[str] = []
    for d in differences:
        if not d.what.startswith("content differs"):
            continue
        old = _small_text(_join(b, d.rel), limit)
        new = _small_text(_join(a, d.rel), limit)
        if old is None or new is None:
            continue
        lines.extend(difflib.unified_diff(old, new, fromfile=_join(label_b, d.rel),
                                          tofile=_join(label_a, d.rel)))
    if not lines:
        return None
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"… {len(lines) - max_lines} more diff lines\n"]
    return "".join(lines)
