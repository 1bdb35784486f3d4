"""The guarded writes of one checkout ([E4], [E5]): every write through a directory
descriptor opened with ``O_NOFOLLOW`` from the checkout root's descriptor, each preceded
by its own just-in-time check, with no-clobber primitives only.

:mod:`aikito_mem.executor.execute` imports it for a plan that writes; a warm sync with
nothing to write never does ([§12]).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from aikito_mem.fsutil import DIR_NOFOLLOW
from aikito_mem.model import Action, CheckoutPlan, Kind, Observed, Operation
from aikito_mem.world import observe


class Drift(Exception):
    """A just-in-time check found the world changed: stop, exit 3."""


class Writer:
    """Writes one checkout through ``O_NOFOLLOW`` directory descriptors."""

    def __init__(self, co: CheckoutPlan, root_fd: int,
                 before_write: Callable[[Operation], None]) -> None:
        self.co = co
        #: Called as ``before_write(op)`` just before each write syscall (the test seam).
        self.before_write = before_write
        self.root_fd = root_fd
        self.fds: dict[str, int] = {}
        #: (dev, ino) of each held descriptor, by descriptor.
        self.ids: dict[int, tuple[int, int]] = {}
        self.recorded = dict(co.dirs)
        #: Entries this run removed (so a directory may be created in their place).
        self.removed: set[str] = set()

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.ids.clear()

    def dir_fd(self, rel: str, *, create: bool) -> int:
        """Descriptor of directory ``rel`` (relative to the checkout root), opened one level
        at a time from the nearest held ancestor (no recursion, no path longer than one
        name: a tree deeper than ``PATH_MAX`` is written like any other)."""
        if not rel:
            return self.root_fd
        fd = self.fds.get(rel)
        if fd is not None:
            return fd
        chain: list[str] = []
        cur = rel
        while cur and cur not in self.fds:
            chain.append(cur)
            cur = cur.rpartition("/")[0]
        pfd = self.fds[cur] if cur else self.root_fd
        for sub in reversed(chain):
            pfd = self._open(pfd, sub, create=create)
        return pfd

    def _open(self, pfd: int, rel: str, *, create: bool) -> int:
        """Open (creating it when planned) the directory ``rel`` inside ``pfd``."""
        name = rel.rpartition("/")[2]
        try:
            fd = os.open(name, DIR_NOFOLLOW, dir_fd=pfd)
        except FileNotFoundError:
            was = self.recorded.get(rel, Observed(Kind.ABSENT))
            if not create or (was.exists and rel not in self.removed):
                raise Drift(f"{self.co.path}/{rel} vanished") from None
            try:
                os.mkdir(name, dir_fd=pfd)
            except FileExistsError:
                raise Drift(f"{self.co.path}/{rel} appeared while being created") from None
            fd = os.open(name, DIR_NOFOLLOW, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Drift(f"{self.co.path}/{rel} is no longer a real directory") from None
            raise
        self.fds[rel] = fd
        return fd

    def forget(self, rel: str) -> None:
        fd = self.fds.pop(rel, None)
        if fd is not None:
            self.ids.pop(fd, None)
            os.close(fd)

    def split(self, op: Operation) -> tuple[int, str, str]:
        rel = op.target[len(self.co.path) + 1:]
        parent, _, name = rel.rpartition("/")
        pfd = self.dir_fd(parent, create=op.action is Action.CREATE)
        self.attached(parent)
        return pfd, name, rel

    def _fd_id(self, fd: int) -> tuple[int, int]:
        ident = self.ids.get(fd)
        if ident is None:
            st = os.fstat(fd)
            ident = self.ids[fd] = (st.st_dev, st.st_ino)
        return ident

    def attached(self, rel: str) -> None:
        """Prove the held descriptors still sit where the plan put them: the checkout root
        at its path, and each directory down to ``rel`` under its parent.  A directory
        moved elsewhere (the checkout renamed, ``.agents/memory`` moved out) is drift, so
        no write follows a moved directory ([E4])."""
        try:
            st = os.stat(self.co.path, follow_symlinks=False)
            live = (st.st_dev, st.st_ino)
        except OSError:
            live = None
        if live != self._fd_id(self.root_fd):
            raise Drift(f"checkout {self.co.path} was moved or replaced during execution")
        if not rel:
            return
        pfd = self.root_fd
        sub = ""
        for part in rel.split("/"):
            sub = f"{sub}/{part}" if sub else part
            fd = self.fds[sub]
            try:
                st = os.stat(part, dir_fd=pfd, follow_symlinks=False)
                live = (st.st_dev, st.st_ino)
            except OSError:
                live = None
            if live != self._fd_id(fd):
                raise Drift(f"{self.co.path}/{sub} was moved or replaced during execution")
            pfd = fd

    def unlink(self, op: Operation) -> None:
        pfd, name, _ = self.split(op)
        live = observe.lstat_link(name, dir_fd=pfd)
        if live.kind is not Kind.LINK or live.literal != op.observed.literal:
            raise Drift(f"target {op.target} is now {live.describe()} "
                         f"(was {op.observed.describe()})")
        self.before_write(op)
        os.unlink(name, dir_fd=pfd)
        self.removed.add(op.target[len(self.co.path) + 1:])

    def rmdir(self, op: Operation) -> None:
        pfd, name, rel = self.split(op)
        self.forget(rel)
        live = observe.lstat(name, dir_fd=pfd)
        if live.kind is not Kind.DIR or live.ino != op.observed.ino:
            raise Drift(f"directory {op.target} is now {live.describe()}")
        self.before_write(op)
        try:
            os.rmdir(name, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise Drift(f"directory {op.target} is no longer empty") from None
            raise
        self.removed.add(rel)

    def symlink(self, op: Operation) -> None:
        pfd, name, _ = self.split(op)
        live = observe.lstat(name, dir_fd=pfd)
        if live.exists:
            raise Drift(f"target {op.target} appeared ({live.describe()})")
        self.before_write(op)
        assert op.source is not None
        try:
            os.symlink(op.source, name, dir_fd=pfd)
        except FileExistsError:
            raise Drift(f"target {op.target} appeared") from None


    def relink(self, op: Operation) -> None:
        """[L4]: the one rename over an existing link (:func:`relink.rename_over`; its room
        is imported by the runs that relink, before their first write)."""
        from aikito_mem.executor.relink import rename_over

        pfd, name, _ = self.split(op)
        self.before_write(op)
        drift = rename_over(pfd, name, op)
        if drift is not None:
            raise Drift(drift)
