"""The one write of ``aikito init PATH`` over an existing file ([L4]): re-pointing the
pointer file of [W1] when the workspace it names no longer exists."""

from __future__ import annotations

import errno
import os

from aikito_mem import fsutil
from aikito_mem.commands.init.paths import names_a_workspace


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
