"""Moving a file or a directory tree to a new path, possibly on another filesystem,
never losing content and never removing what changed.

- :func:`move` renames with no-replace (:func:`aikito_mem.fsutil.rename_noreplace`);
  across filesystems (``EXDEV``) it copies to a temporary name beside the destination,
  verifies the copy, renames it into place with no-replace and removes the original
  entry by entry.
- :func:`inventory` lists a tree (itself first, pre-order), never through a symlink, with
  what identifies each entry's state (device, inode, size, ``mtime_ns``, ``ctime_ns``,
  link literal): two inventories are equal only if nothing changed in between.
- :func:`remove_inventoried` removes exactly the inventoried entries, deepest first,
  through ``O_NOFOLLOW`` directory descriptors, re-checking each one just before its
  ``unlink``/``rmdir``; an entry that changed or appeared is kept (never ``rmtree``).

Comparing two trees is :mod:`aikito_mem.commands.adopt.treecompare`.

Errors are :class:`OSError` (the failing call's, or the subclasses below); the caller turns
them into its own error naming the path and the remedy.  A ``before_write`` callable given
by the caller runs before every write (the signal check of [E5]).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Sequence
from enum import Enum

import attrs

from aikito_mem import fsutil

_CHUNK = 1 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def _nothing() -> None:
    return None


class EntryKind(Enum):
    DIR = "directory"
    FILE = "regular file"
    LINK = "symlink"
    #: A FIFO, socket or device: its content cannot be copied or compared.
    OTHER = "special file"


class MoveMethod(Enum):
    RENAME = "rename"
    COPY = "copy"


@attrs.frozen
class Entry:
    """One entry of a tree and what identifies its state."""

    #: Path relative to the tree root (``""`` for the root itself).
    rel: str
    kind: EntryKind
    dev: int
    ino: int
    #: Size of a regular file (0 for other kinds).
    size: int
    mtime_ns: int
    ctime_ns: int
    #: The literal of a symlink.
    literal: str | None = None
    #: The file type in words, for a special file.
    what: str | None = None


class SpecialFileError(OSError):
    """A FIFO, socket or device inside a tree to copy: its content cannot be copied."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(errno.EINVAL, f"{what} cannot be copied", path)
        self.what = what


class TreeChangedError(OSError):
    """The tree changed while it was being copied or compared."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(errno.ESTALE, why, path)


class RemoveIncompleteError(OSError):
    """The removal of an inventoried tree kept some entries: they changed or appeared
    after they were listed, or their removal failed."""

    def __init__(self, path: str, kept: tuple[str, ...], failed: tuple[str, ...]) -> None:
        n = len(kept)
        super().__init__(errno.EBUSY, f"{n} entr{'y was' if n == 1 else 'ies were'} kept",
                         path)
        #: Every path kept, deepest first.
        self.kept = kept
        #: The kept paths whose removal failed (the others changed after they were listed).
        self.failed = failed


class SwappedError(OSError):
    """[H2] The entry at ``src`` was another one than the one examined (``expect``): it
    was swapped in after the last check.  Nothing was moved (a copy not started), or it
    was renamed back (``moved_back``); else it is at the destination, ``src`` being
    occupied again (never renamed over)."""

    def __init__(self, path: str, destination: str, moved_back: bool) -> None:
        super().__init__(errno.ESTALE, "it is another entry than the one examined", path)
        self.destination = destination
        self.moved_back = moved_back


class OriginalKeptError(Exception):
    """:func:`move` placed the verified copy at the destination, but the original was not
    (completely) removed: ``cause`` says why (the original changed after the copy, a
    removal failed, or ``before_write`` raised)."""

    def __init__(self, source: str, destination: str, cause: BaseException) -> None:
        super().__init__(f"{destination} holds the verified copy; {source} was kept: {cause}")
        self.source = source
        self.destination = destination
        self.cause = cause


# ------------------------------------------------------------------------------ inventory


def _entry(rel: str, st: os.stat_result, literal: str | None = None) -> Entry:
    mode = st.st_mode
    what = None
    if stat.S_ISDIR(mode):
        kind = EntryKind.DIR
    elif stat.S_ISREG(mode):
        kind = EntryKind.FILE
    elif stat.S_ISLNK(mode):
        kind = EntryKind.LINK
    else:
        kind, what = EntryKind.OTHER, fsutil.describe_mode(mode)
    size = st.st_size if kind is EntryKind.FILE else 0
    return Entry(rel, kind, st.st_dev, st.st_ino, size, st.st_mtime_ns, st.st_ctime_ns,
                 literal, what)


def _join(root: str, rel: str) -> str:
    return f"{root}/{rel}" if rel else root


def inventory(root: str, *, special: bool = False) -> tuple[Entry, ...]:
    """Every entry of ``root`` (itself first, then pre-order by name), never through a
    symlink.  A special file raises :class:`SpecialFileError` unless ``special``."""
    out: list[Entry] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        path = _join(root, rel)
        st = os.lstat(path)
        literal = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
        entry = _entry(rel, st, literal)
        if entry.kind is EntryKind.OTHER and not special:
            raise SpecialFileError(path, entry.what or "a special file")
        if entry.kind is EntryKind.DIR:
            with os.scandir(path) as it:
                names = sorted(e.name for e in it)
            stack.extend(f"{rel}/{n}" if rel else n for n in reversed(names))
        out.append(entry)
    return tuple(out)


# ---------------------------------------------------------------------------------- copy


def _copy_file(src: str, dst: str, entry: Entry) -> tuple[int, str]:
    """Copy ``src`` to the new file ``dst`` (``O_EXCL``) and fsync it; return the size and
    sha256 of the bytes read.  At most ``entry.size + 1`` bytes are read, so an entry
    swapped meanwhile for an endless one (a device) cannot make the copy endless: any
    change shows as a size that differs from the inventory (caught by :func:`verify_copy`
    and the inventory re-check of :func:`copy_move`)."""
    sfd = os.open(src, _READ_FLAGS)
    try:
        st = os.fstat(sfd)
        digest = fsutil.sha256_hasher()
        size = 0
        dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600)
        try:
            while size <= entry.size:
                chunk = os.read(sfd, min(_CHUNK, entry.size + 1 - size))
                if not chunk:
                    break
                size += len(chunk)
                digest.update(chunk)
                fsutil.write_all(dfd, chunk)
            os.fchmod(dfd, stat.S_IMODE(st.st_mode) & 0o777)
            os.fsync(dfd)
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)
    os.utime(dst, ns=(st.st_atime_ns, entry.mtime_ns), follow_symlinks=False)
    return size, digest.hexdigest()


def _fsync_path(path: str) -> None:
    fd = fsutil.open_dir(path)
    try:
        fsutil.fsync_dir(fd)
    finally:
        os.close(fd)


def copy_tree(src: str, temp: str, entries: Sequence[Entry],
              before_write: Callable[[], None] = _nothing) -> dict[str, tuple[int, str]]:
    """Copy every inventoried entry of ``src`` to the new path ``temp``; fsync each file and
    directory; return the size and sha256 of each file as read."""
    hashes: dict[str, tuple[int, str]] = {}
    dirs: list[tuple[str, str, Entry]] = []
    for entry in entries:
        s, d = _join(src, entry.rel), _join(temp, entry.rel)
        before_write()
        if entry.kind is EntryKind.DIR:
            os.mkdir(d, 0o700)
            dirs.append((s, d, entry))
        elif entry.kind is EntryKind.FILE:
            hashes[entry.rel] = _copy_file(s, d, entry)
        elif entry.kind is EntryKind.LINK:
            assert entry.literal is not None
            os.symlink(entry.literal, d)
        else:
            raise SpecialFileError(s, entry.what or "a special file")
    for s, d, entry in reversed(dirs):  # deepest first: modes and times after the contents
        st = os.lstat(s)
        if (st.st_dev, st.st_ino) != (entry.dev, entry.ino) or not stat.S_ISDIR(st.st_mode):
            raise TreeChangedError(s, "it was replaced while being copied")
        os.chmod(d, stat.S_IMODE(st.st_mode) & 0o777)
        os.utime(d, ns=(st.st_atime_ns, entry.mtime_ns))
        _fsync_path(d)
    return hashes


def _sha256_file(path: str) -> tuple[int, str]:
    digest = fsutil.sha256_hasher()
    size = 0
    fd = os.open(path, _READ_FLAGS)
    try:
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            digest.update(chunk)
    finally:
        os.close(fd)
    return size, digest.hexdigest()


def verify_copy(temp: str, entries: Sequence[Entry], hashes: dict[str, tuple[int, str]]) -> None:
    """The copy has exactly the inventoried entries, each file with the size and sha256
    read from the original, each link with its literal (``EIO`` otherwise)."""
    copied = inventory(temp)
    want = [(e.rel, e.kind, e.size, e.literal) for e in entries]
    got = [(e.rel, e.kind, e.size, e.literal) for e in copied]
    if want != got:
        raise OSError(errno.EIO, "the copy does not have the same entries as the original",
                      temp)
    for e in copied:
        if e.kind is EntryKind.FILE and _sha256_file(_join(temp, e.rel)) != hashes[e.rel]:
            raise OSError(errno.EIO, "the copy differs from what was read (size or sha256)",
                          _join(temp, e.rel))


def discard(path: str) -> None:
    """Remove a temporary copy this module made (never anything else)."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return
        for entry in reversed(inventory(path, special=True)):
            target = _join(path, entry.rel)
            with contextlib.suppress(OSError):
                (os.rmdir if entry.kind is EntryKind.DIR else os.unlink)(target)


def _unchanged(root: str, entries: Sequence[Entry]) -> bool:
    try:
        return inventory(root, special=True) == tuple(entries)
    except OSError:
        return False


def copy_move(src: str, dst: str, before_write: Callable[[], None] = _nothing,
              expect: tuple[int, int] | None = None) -> None:
    """Move ``src`` to the absent ``dst`` on another filesystem: copy, verify, place with
    no-replace, remove the original entry by entry.

    Until the copy is placed, ``src`` is untouched and the temporary copy is removed on
    every failure (:class:`TreeChangedError` when ``src`` changed meanwhile).  After it,
    every failure is an :class:`OriginalKeptError`: the complete copy is at ``dst``.
    ``expect``: the (``st_dev``, ``st_ino``) ``src`` must have — else :class:`SwappedError`
    before anything is written.
    """
    entries = inventory(src)
    if expect is not None and (entries[0].dev, entries[0].ino) != expect:
        raise SwappedError(src, dst, moved_back=True)
    parent, name = os.path.split(dst)
    temp = f"{parent}/{fsutil.temp_name(name)}"
    try:
        try:
            hashes = copy_tree(src, temp, entries, before_write)
            _fsync_path(parent)
            verify_copy(temp, entries, hashes)
        except OSError as exc:
            if not isinstance(exc, TreeChangedError) and not _unchanged(src, entries):
                raise TreeChangedError(src, "it changed while it was being copied") from exc
            raise
        if not _unchanged(src, entries):
            raise TreeChangedError(src, "it changed while it was being copied")
        before_write()
        fsutil.rename_noreplace(temp, dst)
    except BaseException:
        discard(temp)
        raise
    try:
        _fsync_path(parent)
        if not _unchanged(src, entries):
            raise TreeChangedError(src, "it changed after it was copied")
        remove_inventoried(src, entries, before_write)
    except BaseException as exc:
        raise OriginalKeptError(src, dst, exc) from exc


def move(src: str, dst: str, before_write: Callable[[], None] = _nothing,
         expect: tuple[int, int] | None = None) -> MoveMethod:
    """Move ``src`` to the absent ``dst``: a no-replace rename, or :func:`copy_move` when
    they are on different filesystems.

    ``expect`` ([H2]): the (``st_dev``, ``st_ino``) of the entry examined at ``src``.  A
    rename goes by path, so the entry it moved is checked once at ``dst``: another one (a
    directory swapped in at ``src`` after the check) is renamed back with no-replace —
    never over what may have appeared at ``src`` since — and :class:`SwappedError` is
    raised."""
    before_write()
    try:
        fsutil.rename_noreplace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        copy_move(src, dst, before_write, expect)
        return MoveMethod.COPY
    if expect is not None:
        st = os.lstat(dst)
        if (st.st_dev, st.st_ino) != expect:
            try:
                fsutil.rename_noreplace(dst, src)
            except OSError:
                raise SwappedError(src, dst, moved_back=False) from None
            raise SwappedError(src, dst, moved_back=True)
    return MoveMethod.RENAME


# -------------------------------------------------------------------------------- removal


def remove_inventoried(root: str, entries: Sequence[Entry],
                       before_write: Callable[[], None] = _nothing) -> None:
    """Remove exactly the inventoried entries of ``root``, deepest first, through
    ``O_NOFOLLOW`` directory descriptors.  Each entry is re-checked just before it is
    removed (type, device, inode, size, ``mtime_ns``, ``ctime_ns``, literal); one that
    changed is kept, and so is every directory above it (``rmdir`` is never recursive).
    Raises :class:`RemoveIncompleteError` listing what was kept."""
    base_dir, base_name = os.path.split(root)
    index = {e.rel: e for e in entries}
    kept: list[str] = []
    failed: list[str] = []
    #: Descriptor of each inventoried directory, by rel (None: it could not be opened as
    #: the inventoried directory, so nothing below it is touched).
    fds: dict[str, int | None] = {}
    #: Inodes this run unlinked: unlinking one name of a hard-linked file moves the
    #: ``ctime`` of the others.
    unlinked: set[tuple[int, int]] = set()
    top = os.open(base_dir or ".", fsutil.DIR_NOFOLLOW)

    def where(rel: str) -> tuple[int | None, str]:
        if not rel:
            return top, base_name
        parent, _, name = rel.rpartition("/")
        return dir_fd(parent), name

    def dir_fd(rel: str) -> int | None:
        if rel in fds:
            return fds[rel]
        pfd, name = where(rel)
        fd = None
        if pfd is not None:
            try:
                fd = os.open(name, fsutil.DIR_NOFOLLOW, dir_fd=pfd)
            except OSError:
                fd = None
            if fd is not None:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != (index[rel].dev, index[rel].ino):
                    os.close(fd)
                    fd = None
        fds[rel] = fd
        return fd

    def same(entry: Entry, pfd: int, name: str) -> bool:
        st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        if _entry(entry.rel, st).kind is not entry.kind:
            return False
        if (st.st_dev, st.st_ino) != (entry.dev, entry.ino):
            return False
        if entry.kind is EntryKind.DIR:
            return True
        if (st.st_size if entry.kind is EntryKind.FILE else 0) != entry.size:
            return False
        if st.st_mtime_ns != entry.mtime_ns:
            return False
        if st.st_ctime_ns != entry.ctime_ns and (st.st_dev, st.st_ino) not in unlinked:
            return False
        return entry.kind is not EntryKind.LINK or \
            os.readlink(name, dir_fd=pfd) == entry.literal

    try:
        for entry in reversed(entries):
            path = _join(root, entry.rel)
            if entry.kind is EntryKind.DIR:
                fd = fds.pop(entry.rel, None)
                if fd is not None:
                    os.close(fd)
            pfd, name = where(entry.rel)
            if pfd is None:
                kept.append(path)
                continue
            try:
                if not same(entry, pfd, name):
                    kept.append(path)
                    continue
                before_write()
                if entry.kind is EntryKind.DIR:
                    os.rmdir(name, dir_fd=pfd)
                else:
                    os.unlink(name, dir_fd=pfd)
                    unlinked.add((entry.dev, entry.ino))
            except FileNotFoundError:
                continue  # removed by someone else meanwhile: nothing to keep
            except OSError as exc:
                kept.append(path)
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    failed.append(path)
    finally:
        for fd in fds.values():
            if fd is not None:
                os.close(fd)
        os.close(top)
    if kept:
        raise RemoveIncompleteError(root, tuple(kept), tuple(failed))
