"""The relink of ``--moved-from`` ([L4]): one atomic rename of a fresh symlink over the
old link, through the directory descriptor the executor holds ([E4])."""

from __future__ import annotations

import contextlib
import os

from aikito_mem.layout import relink_name
from aikito_mem.model import Kind, Operation
from aikito_mem.world import observe


def rename_over(pfd: int, name: str, op: Operation) -> str | None:
    """Make ``op.source`` a fresh symlink under ``name``'s relink name, re-read — just
    before the rename — that ``name`` is still the old link the plan recorded, and rename
    the fresh link over it.  Returns why it stopped (drift, nothing replaced) or ``None``.
    A kill leaves at most the fresh link under its relink name, which the next plan
    removes; any failure here removes it at once."""
    temp = relink_name(name)
    assert op.source is not None
    try:
        os.symlink(op.source, temp, dir_fd=pfd)
    except FileExistsError:
        return f"{temp} appeared next to {op.target}"
    try:
        live = observe.lstat_link(name, dir_fd=pfd)
        if live.kind is not Kind.LINK or live.literal != op.observed.literal:
            os.unlink(temp, dir_fd=pfd)
            return f"target {op.target} is now {live.describe()} (was {op.observed.describe()})"
        os.rename(temp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=pfd)  # never leave the fresh link behind
        raise
    return None
