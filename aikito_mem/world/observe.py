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
import re
import stat
from collections.abc import Iterator

from aikito_mem.fsutil import DIR_NOFOLLOW
from aikito_mem.layout import projects_root
from aikito_mem.model import ABSENT, Kind, Observed

#: ``_IOR('v', 1, long)``: the inode generation number.
FS_IOC_GETVERSION = 0x80087601

#: An entry that vanished, or was replaced by a non-directory / a symlink, meanwhile.
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
_EMPTY: Iterator[os.DirEntry[str]] = iter(())
_MOUNTINFO = "/proc/self/mountinfo"
#: Compiled (and cached by ``re``) when the mount table is first read ([§12]).
_OCTAL = rb"\\([0-7]{3})"

#: ``stat.S_IFMT`` as a mask: the type bits of ``st_mode``.
_IFMT = 0o170000
_KINDS = {
    stat.S_IFLNK: Kind.LINK,
    stat.S_IFREG: Kind.FILE,
    stat.S_IFDIR: Kind.DIR,
    stat.S_IFIFO: Kind.FIFO,
    stat.S_IFSOCK: Kind.SOCKET,
    stat.S_IFCHR: Kind.CHAR,
    stat.S_IFBLK: Kind.BLOCK,
}


_OTHER = Kind.OTHER
#: The members read once per entry and per path, looked up once: reading a member off
#: its enum class is slow (the class's metaclass is asked first).
_LINK, _FILE, _DIR = Kind.LINK, Kind.FILE, Kind.DIR


def kind_of(mode: int) -> Kind:
    return _KINDS.get(mode & _IFMT, _OTHER)


def from_stat(st: os.stat_result, literal: str | None = None) -> Observed:
    return Observed(_KINDS.get(st.st_mode & _IFMT, _OTHER), literal, st.st_dev, st.st_ino)


def lstat(path: str, *, dir_fd: int | None = None) -> Observed:
    """Type and identity of ``path`` without following a final symlink; no literal."""
    try:
        st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return ABSENT
    return Observed(_KINDS.get(st.st_mode & _IFMT, _OTHER), None, st.st_dev, st.st_ino)


def lstat_link(path: str, *, dir_fd: int | None = None) -> Observed:
    """Like :func:`lstat` but with the literal of a symlink."""
    obs = lstat(path, dir_fd=dir_fd)
    if obs.kind is _LINK:
        try:
            literal = os.readlink(path, dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return ABSENT
        except OSError as exc:  # replaced by a non-link in between
            if exc.errno == errno.EINVAL:
                return lstat(path, dir_fd=dir_fd)
            raise
        return Observed(_LINK, literal, obs.dev, obs.ino)
    return obs


def mount_points(mountinfo: str = _MOUNTINFO) -> frozenset[str] | None:
    """Every mount point of this process's mount namespace (``/proc/self/mountinfo``,
    field 5, octal escapes decoded), or ``None`` when the table cannot be read."""
    try:
        with open(mountinfo, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    points: set[str] = set()
    for line in data.splitlines():
        fields = line.split(b" ")
        if len(fields) > 4:
            raw = re.sub(_OCTAL, lambda m: bytes([int(m.group(1), 8)]), fields[4])
            points.add(os.fsdecode(raw))
    return frozenset(points)


def another_workspace(root: str, workspace: str) -> bool:
    """[L4]: whether ``root`` (the ``OLD`` of ``--moved-from OLD``) holds a workspace
    other than ``workspace`` — ``root/projects`` exists and ``root`` is not this very
    workspace by identity (``st_dev``, ``st_ino``; after ``mv ws w2 && ln -s w2 ws`` the
    old root still leads here).  Links into another workspace are that workspace's."""
    if not lstat(projects_root(root)).exists:
        return False
    try:
        old, here = os.stat(root), os.stat(workspace)
    except OSError:
        return True
    return (old.st_dev, old.st_ino) != (here.st_dev, here.st_ino)


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
    if obs.kind not in (_FILE, _DIR):
        return obs
    return Observed(obs.kind, obs.literal, obs.dev, obs.ino, generation(path, dir_fd=dir_fd))


class Observer:
    """A per-run cache of observations: each path is looked at once."""

    def __init__(self) -> None:
        self._lstat: dict[str, Observed] = {}
        self._errors: dict[str, OSError] = {}
        #: Number of filesystem calls made (a structural seam for the syscall budget).
        self.calls = 0
        self._mounts: frozenset[str] | None = None
        self._mounts_read = False

    def lstat(self, path: str) -> Observed:
        """Cached :func:`lstat`; an ``OSError`` other than absence is re-raised each time."""
        obs = self._lstat.get(path)
        if obs is not None:
            return obs
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

    def look(self, path: str, *, identity: bool = True) -> Observed:
        """Cached :meth:`lstat` plus the literal of a link, or (``identity``) the
        identity of a directory."""
        obs = self.lstat(path)
        if obs.kind is _LINK:
            return Observed(_LINK, self.readlink(path), obs.dev, obs.ino)
        if identity and obs.kind is _DIR:
            return self.identity(path, obs)
        return obs

    def on_the_way(self, root: str, rel: str) -> tuple[tuple[str, Observed], ...]:
        """Each directory on the way from ``root`` to ``root/rel`` (relative path →
        :meth:`look`), outermost first, up to the first one that is not a real
        directory: ``rel`` can be looked at when the last one is a directory."""
        out: list[tuple[str, Observed]] = []
        parts = rel.split("/")
        for i in range(1, len(parts)):
            prel = "/".join(parts[:i])
            obs = self.look(f"{root}/{prel}")
            out.append((prel, obs))
            if obs.kind is not _DIR:
                break
        return tuple(out)

    def mount_point(self, path: str, obs: Observed) -> bool:
        """Whether the directory ``path`` (observed ``obs``) is the root of a mount
        ([L8], [E5]): another device than its parent's, or a mount point of the mount
        table (a bind mount of the same filesystem).  Nothing that is not a directory is."""
        if obs.kind is not _DIR:
            return False
        parent = path.rpartition("/")[0] or "/"
        try:
            if self.lstat(parent).dev != obs.dev:
                return True
        except OSError:
            return False
        mounts = self.mounts()
        return mounts is not None and path in mounts

    def mounts(self) -> frozenset[str] | None:
        """The mount points of this process (read once per run), ``None`` if unknown."""
        if not self._mounts_read:
            self._mounts_read = True
            self.calls += 1
            self._mounts = mount_points()
        return self._mounts

    def scan(self, root: str, root_obs: Observed, *, recursive: bool = True
             ) -> tuple[tuple[str, Observed], ...]:
        """Every entry below ``root`` (a real directory), recursively (or only its own
        entries when not ``recursive``), never through links and never into another
        mounted filesystem.

        The walk goes through ``O_NOFOLLOW`` directory descriptors, each directory listed
        relative to its parent's descriptor, so a tree deeper than ``PATH_MAX`` (which the
        executor can create the same way) is observed like any other ([E5]).  Types come
        from ``getdents`` (``DirEntry``); a link's identity from ``d_ino`` and its
        directory's device, its literal from one ``readlinkat``; a directory's identity
        from one ``fstatat`` — the same call verification makes ([E2]) — and a directory
        that is the root of another mount is a :attr:`Kind.MOUNT` entry, not descended.
        """
        out: list[tuple[str, Observed]] = []
        try:
            top = os.open(root, DIR_NOFOLLOW)
        except (FileNotFoundError, NotADirectoryError):
            return ()
        stack: list[tuple[int, str, int, Iterator[os.DirEntry[str]]]] = []
        entry_of, listing, append, DIR = self._entry, self._listing, out.append, _DIR
        try:
            # Each descriptor is on the stack before it is listed, so a failing listing
            # closes it too (the ``finally`` below).
            stack.append((top, "", root_obs.dev, _EMPTY))
            stack[-1] = (top, "", root_obs.dev, listing(top))
            while stack:
                fd, prefix, dev, entries = stack[-1]
                # The directory's entries, until one is a directory to descend into: its
                # listing is pushed, and this one resumes after it.
                for entry in entries:
                    found = entry_of(fd, entry, dev, root, prefix)
                    if found is None:
                        continue
                    rel = prefix + entry.name
                    append((rel, found))
                    if recursive and found.kind is DIR:
                        try:
                            sub = os.open(entry.name, DIR_NOFOLLOW, dir_fd=fd)
                        except OSError as exc:
                            if exc.errno in _GONE:
                                continue
                            raise
                        stack.append((sub, rel + "/", found.dev, _EMPTY))
                        stack[-1] = (sub, rel + "/", found.dev, listing(sub))
                        break
                else:
                    stack.pop()
                    os.close(fd)
        finally:
            for fd, *_ in stack:
                os.close(fd)
        out.sort()
        return tuple(out)

    def _listing(self, fd: int) -> Iterator[os.DirEntry[str]]:
        self.calls += 1
        with os.scandir(fd) as it:
            return iter(list(it))

    def _entry(self, fd: int, entry: os.DirEntry[str], dev: int, root: str, prefix: str
               ) -> Observed | None:
        """One directory entry, observed relative to its directory's descriptor ``fd``
        (the directory ``root/prefix``; ``None`` when the entry vanished meanwhile)."""
        name = entry.name
        try:
            if entry.is_symlink():
                self.calls += 1
                return Observed(_LINK, os.readlink(name, dir_fd=fd), dev, entry.inode())
            if entry.is_file(follow_symlinks=False):
                return Observed(_FILE, None, dev, entry.inode())
            self.calls += 1
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            if exc.errno in _GONE or exc.errno == errno.EINVAL:
                return None
            raise
        obs = from_stat(st)
        if obs.kind is _DIR and self._is_mount(st, dev, entry.inode(),
                                                   f"{root}/{prefix}{name}"):
            return Observed(Kind.MOUNT, None, st.st_dev, st.st_ino)
        return obs

    def _is_mount(self, st: os.stat_result, parent_dev: int, d_ino: int, path: str) -> bool:
        """Whether the directory ``path`` (``lstat`` ``st``) is the root of a mount.

        Another device than its parent's is a mount (or a btrfs subvolume: another
        filesystem root all the same).  On the parent's device, the inode number the
        directory listing gives (``d_ino``: the directory mounted over) differs from
        ``lstat``'s for a bind mount; the mount table confirms it (overlayfs may report
        different numbers for a plain directory).
        """
        if st.st_dev != parent_dev:
            return True
        if st.st_ino == d_ino:
            return False
        mounts = self.mounts()
        return mounts is not None and path in mounts
