"""The one filesystem toolbox: safe reads, atomic replaces, temporary names, sha256.

Every room that reads a small file it does not own (``agent.toml``, a registry file, the
workspace pointer file, a saved plan, ``MEMORY.md``) or replaces a file atomically
(registration, adopt's ``memory`` append, ``--out PLANFILE``) does it through here, so the
rules are written once:

- :func:`read_regular` opens with ``O_NONBLOCK`` (a FIFO can never hang a command) and,
  unless asked otherwise, ``O_NOFOLLOW``; it reads only a regular file (checked with
  ``fstat`` on the open descriptor, so nothing can be swapped in between) and at most
  ``limit`` bytes.
- :func:`atomic_replace` writes a temporary file in the same directory (a name that
  :func:`is_temp_name` recognises), ``fsync``\\ s it, calls an optional last check, renames
  it over the target and ``fsync``\\ s the directory.  The temporary file is removed on every
  failure before the rename.  A failed directory ``fsync`` is an error (the file is in
  place but not yet durable), except where the filesystem cannot sync directories at all
  (``EINVAL``/``ENOTSUP``).
- :func:`rename_noreplace` never replaces an existing destination; :func:`create_new`
  creates a file that did not exist (temporary file, then a no-replace rename), and
  :func:`open_subdir` opens a directory without following a symlink.

Modelled on pip's ``adjacent_tmp_file`` + ``replace`` and installer's single guarded write.
Errors are plain :class:`OSError` (or the two subclasses below); each caller turns them
into its own :mod:`aikito_mem.errors` error, which names the path and the remedy.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from typing import Any

#: Largest small file this package reads (agent.toml, registry files, plan files, the
#: pointer file, MEMORY.md).  A larger one is refused rather than read into memory.
MAX_READ = 64 * 1024 * 1024

_TEMP_MARK = ".aikito-"
_TEMP_SUFFIX = ".tmp"


class NotRegularFileError(OSError):
    """The path exists but is not a regular file (a FIFO, directory, device, …)."""

    def __init__(self, path: str, st: os.stat_result) -> None:
        super().__init__(errno.EINVAL, f"not a regular file ({describe_mode(st.st_mode)})", path)
        #: The ``fstat`` of what was found.
        self.st = st


class FileTooLargeError(OSError):
    """The file is larger than the caller's limit."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes ({size} bytes)", path)
        self.size = size
        self.limit = limit


def describe_mode(mode: int) -> str:
    """Words for a file type: ``a directory``, ``a FIFO``, ``a symlink``, …"""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "an entry of unknown type"


def sha256_hasher(data: bytes = b"") -> Any:
    """A fresh incremental sha256 object (``update`` / ``hexdigest``) fed ``data`` — the
    one sha256 loader of the package.  ``hashlib`` is imported by the first call (it
    loads OpenSSL, about 3 ms): a plain sync compares bytes and hashes nothing ([§12])."""
    import hashlib

    return hashlib.sha256(data)


def sha256_hex(data: bytes) -> str:
    """The sha256 hex digest of ``data``."""
    return str(sha256_hasher(data).hexdigest())


def read_regular(
    path: str,
    *,
    dir_fd: int | None = None,
    follow: bool = False,
    limit: int = MAX_READ,
) -> tuple[bytes, os.stat_result]:
    """The bytes and ``fstat`` of the regular file at ``path``.

    Never blocks (``O_NONBLOCK``: a FIFO is opened, found not regular and refused), never
    follows a final symlink unless ``follow`` (``ELOOP`` is raised as an :class:`OSError`),
    never reads more than ``limit`` bytes (:class:`FileTooLargeError`).  A non-regular
    file raises :class:`NotRegularFileError`.  Other failures are the ``OSError`` of the
    failing call.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    if not follow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(path, st)
        if st.st_size > limit:
            raise FileTooLargeError(path, st.st_size, limit)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 1 << 16))
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise FileTooLargeError(path, total, limit)
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def temp_name(name: str) -> str:
    """A fresh temporary name next to ``name``: ``.NAME.aikito-PID-RANDOM.tmp``."""
    return f".{name}{_TEMP_MARK}{os.getpid()}-{os.urandom(4).hex()}{_TEMP_SUFFIX}"


def is_temp_name(entry: str) -> bool:
    """Whether ``entry`` is a name :func:`temp_name` makes (for clean-up and reports)."""
    return entry.startswith(".") and _TEMP_MARK in entry and entry.endswith(_TEMP_SUFFIX)


def create_temp(dir_fd: int, name: str, mode: int = 0o600) -> tuple[int, str]:
    """Create and open (``O_EXCL|O_NOFOLLOW``) a temporary file next to ``name``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(16):
        temp = temp_name(name)
        try:
            return os.open(temp, flags, mode, dir_fd=dir_fd), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(dir_fd: int) -> None:
    """``fsync`` a directory; filesystems that cannot (``EINVAL``, ``ENOTSUP``) are let be."""
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise


def open_dir(path: str) -> int:
    """An ``O_DIRECTORY`` descriptor of ``path`` (a final symlink is followed)."""
    return os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def atomic_replace(
    dir_fd: int,
    name: str,
    data: bytes,
    *,
    mode: int = 0o644,
    owner: tuple[int, int] | None = None,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``name`` in ``dir_fd`` with ``data``, atomically and durably.

    A temporary file in the same directory gets ``data``, the permission bits ``mode``
    (never wider than asked: set-id bits are dropped) and, when ``owner`` is given and
    differs, that ``(uid, gid)``; it is ``fsync``\\ ed; ``before_rename`` (a last check,
    e.g. a compare-and-swap re-read) may raise to abandon the write; then it is renamed
    over ``name`` and the directory is ``fsync``\\ ed.  On any failure before the rename
    the temporary file is removed and ``name`` is untouched.
    """
    fd = -1
    temp: str | None = None
    try:
        fd, temp = create_temp(dir_fd, name)
        if owner is not None:
            created = os.fstat(fd)
            if (created.st_uid, created.st_gid) != owner:
                os.fchown(fd, *owner)
        os.fchmod(fd, stat.S_IMODE(mode) & 0o777)
        write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        if before_rename is not None:
            before_rename()
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        temp = None
    finally:
        if fd >= 0:
            os.close(fd)
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
    fsync_dir(dir_fd)


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def rename_noreplace(src: str, dst: str, *, dir_fd: int | None = None) -> None:
    """``rename(src, dst)`` that never replaces an existing ``dst``.

    ``renameat2(..., RENAME_NOREPLACE)`` through libc; where unavailable (old libc, or the
    filesystem rejects the flag with ``EINVAL``/``ENOSYS``/``ENOTSUP``) the fallback checks
    that ``dst`` is absent just before ``os.rename`` (racy in theory; documented in
    docs/safety.md).  With ``dir_fd`` both names are relative to that directory.
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        fn = None
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                       ctypes.c_uint]
        fn.restype = ctypes.c_int
        at = _AT_FDCWD if dir_fd is None else dir_fd
        if fn(at, os.fsencode(src), at, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), src, None, dst)
    try:
        os.lstat(dst, dir_fd=dir_fd)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), src, None, dst)


def is_blank(path: str, *, follow: bool = False, chunk: int = 1 << 16) -> bool:
    """Whether the regular file at ``path`` holds only white space (space, tab, CR, LF).

    Reads only until the first other byte (a large non-empty file costs one read).  Opened
    like :func:`read_regular` (non-blocking; no final symlink unless ``follow``); a
    non-regular file raises :class:`NotRegularFileError`.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    if not follow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(path, st)
        while True:
            data = os.read(fd, chunk)
            if not data:
                return True
            if data.strip(b" \t\r\n"):
                return False
    finally:
        os.close(fd)


#: Flags of every directory descriptor the engine walks, verifies and writes through:
#: never a symlink, never inherited by a child process.
DIR_NOFOLLOW = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_subdir(dir_fd: int | None, name: str) -> int:
    """An ``O_DIRECTORY|O_NOFOLLOW`` descriptor of ``name`` in ``dir_fd`` (or the path
    ``name`` itself when ``dir_fd`` is ``None``).

    A symlink or a non-directory is refused with the :class:`OSError` of the ``open``
    (``ENOTDIR``, or ``ELOOP`` for a symlink on some systems): nothing is ever reached
    through a link.
    """
    return os.open(name, DIR_NOFOLLOW, dir_fd=dir_fd)


def create_new(dir_fd: int, name: str, data: bytes) -> None:
    """Create the file ``name`` in ``dir_fd`` holding ``data``; never replace anything.

    The bytes go to a temporary file (created ``O_EXCL|O_NOFOLLOW`` with mode ``0o666``,
    so the umask decides the permissions as for any new file), which is ``fsync``\\ ed
    and renamed to ``name`` with :func:`rename_noreplace`, then the directory is
    ``fsync``\\ ed: ``name`` appears whole or not at all.  When ``name`` exists (whatever it
    is: a file, a directory, a symlink even dangling) :class:`FileExistsError` is raised
    and nothing is changed (an entry found before the temporary file is made leaves even
    the directory's times alone).  The temporary file is removed on every failure.
    """
    try:
        os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    else:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), name)
    fd = -1
    temp: str | None = None
    try:
        fd, temp = create_temp(dir_fd, name, mode=0o666)
        write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        rename_noreplace(temp, name, dir_fd=dir_fd)
        temp = None
    finally:
        if fd >= 0:
            os.close(fd)
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
    fsync_dir(dir_fd)
