"""Observation of the filesystem: the only room that calls ``lstat``, ``readlink``,
``scandir`` and the identity ioctl while planning.  It never reads contents and never
writes.

Each path is observed at most once per :class:`Observer` (a cache keyed by path), so
shared parent directories are looked up once, not once per resource ([P6]).

Source identity ([P5])
----------------------
``dev``/``ino`` alone do not survive delete-and-recreate on ext4 (the inode number is
reused at once), and ``statx`` birth time uses a coarse clock.  The inode *generation*
number does change, so :func:`generation` reads it with ``FS_IOC_GETVERSION`` on a
descriptor opened ``O_RDONLY|O_NOFOLLOW|O_NONBLOCK`` (nothing is read; a FIFO cannot
block).  Filesystems that reject the ioctl (tmpfs: ``ENOTTY``) fall back to
``dev``/``ino``; tmpfs does not reuse inode numbers.
"""

from __future__ import annotations

import errno
import os
import stat

from aikito_mem.model import ABSENT, Kind, Observed

#: ``_IOR('v', 1, long)``: the inode generation number.
FS_IOC_GETVERSION = 0x80087601

_KINDS = {
    stat.S_IFLNK: Kind.LINK,
    stat.S_IFREG: Kind.FILE,
    stat.S_IFDIR: Kind.DIR,
    stat.S_IFIFO: Kind.FIFO,
    stat.S_IFSOCK: Kind.SOCKET,
    stat.S_IFCHR: Kind.CHAR,
    stat.S_IFBLK: Kind.BLOCK,
}


def kind_of(mode: int) -> Kind:
    return _KINDS.get(stat.S_IFMT(mode), Kind.OTHER)


def from_stat(st: os.stat_result, literal: str | None = None) -> Observed:
    return Observed(kind_of(st.st_mode), literal, st.st_dev, st.st_ino)


def lstat(path: str, *, dir_fd: int | None = None) -> Observed:
    """Type and identity of ``path`` without following a final symlink; no literal."""
    try:
        st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    return from_stat(st)


def lstat_link(path: str, *, dir_fd: int | None = None) -> Observed:
    """Like :func:`lstat` but with the literal of a symlink."""
    obs = lstat(path, dir_fd=dir_fd)
    if obs.kind is Kind.LINK:
        try:
            literal = os.readlink(path, dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return ABSENT
        except OSError as exc:  # replaced by a non-link in between
            if exc.errno == errno.EINVAL:
                return lstat(path, dir_fd=dir_fd)
            raise
        return Observed(Kind.LINK, literal, obs.dev, obs.ino)
    return obs


def generation(path: str, *, dir_fd: int | None = None) -> int | None:
    """The inode generation number of a file or directory, or ``None`` if unsupported."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return None
    try:
        buf = fcntl.ioctl(fd, FS_IOC_GETVERSION, b"\0" * 8)
    except OSError:
        return None
    finally:
        os.close(fd)
    return int.from_bytes(buf[:4], "little")


def with_identity(path: str, obs: Observed, *, dir_fd: int | None = None) -> Observed:
    """``obs`` plus the generation number, for files and directories."""
    if obs.kind not in (Kind.FILE, Kind.DIR):
        return obs
    return Observed(obs.kind, obs.literal, obs.dev, obs.ino, generation(path, dir_fd=dir_fd))


class Observer:
    """A per-run cache of observations: each path is looked at once."""

    def __init__(self) -> None:
        self._lstat: dict[str, Observed] = {}
        self._errors: dict[str, OSError] = {}
        #: Number of filesystem calls made (a structural seam for the syscall budget).
        self.calls = 0

    def lstat(self, path: str) -> Observed:
        """Cached :func:`lstat`; an ``OSError`` other than absence is re-raised each time."""
        try:
            return self._lstat[path]
        except KeyError:
            pass
        if path in self._errors:
            raise self._errors[path]
        self.calls += 1
        try:
            obs = lstat(path)
        except OSError as exc:
            self._errors[path] = exc
            raise
        self._lstat[path] = obs
        return obs

    def readlink(self, path: str) -> str:
        self.calls += 1
        return os.readlink(path)

    def stat_follow(self, path: str) -> Observed:
        """``stat`` following links (used for checkout candidates and symlinked sources)."""
        self.calls += 1
        try:
            return from_stat(os.stat(path))
        except (FileNotFoundError, NotADirectoryError):
            return ABSENT

    def identity(self, path: str, obs: Observed) -> Observed:
        self.calls += 3
        return with_identity(path, obs)

    def scan(self, root: str, root_obs: Observed) -> tuple[tuple[str, Observed], ...]:
        """Every entry below ``root`` (a real directory), recursively, never through links.

        Types come from ``getdents`` (``DirEntry``), identities from ``d_ino`` and the
        parent's device, literals from one ``readlink`` per link.
        """
        out: list[tuple[str, Observed]] = []
        stack: list[tuple[str, str, int]] = [(root, "", root_obs.dev)]
        while stack:
            path, prefix, dev = stack.pop()
            self.calls += 1
            try:
                it = os.scandir(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with it:
                for entry in it:
                    rel = prefix + entry.name
                    if entry.is_symlink():
                        self.calls += 1
                        try:
                            literal = os.readlink(entry.path)
                        except OSError:
                            continue
                        out.append((rel, Observed(Kind.LINK, literal, dev, entry.inode())))
                    elif entry.is_dir(follow_symlinks=False):
                        out.append((rel, Observed(Kind.DIR, None, dev, entry.inode())))
                        stack.append((entry.path, rel + "/", dev))
                    elif entry.is_file(follow_symlinks=False):
                        out.append((rel, Observed(Kind.FILE, None, dev, entry.inode())))
                    else:
                        self.calls += 1
                        out.append((rel, lstat(entry.path)))
        out.sort()
        return tuple(out)
