"""A folding directory for tests [F4]: a FUSE passthrough that compares names as APFS
(and NTFS) do — case-insensitive, normalisation-insensitive, case-preserving.

``BACKING`` is an ordinary (case-sensitive) directory; the mount shows it with these
rules:

- a lookup of any spelling of a name (``notes.md``, ``NOTES.MD``, the NFD form of
  ``café.md``) reaches the one entry whose :func:`fold` is the same;
- a name is kept as it was created (``readdir`` lists ``Notes.md``), and creating a second
  name of one fold fails with ``EEXIST`` (``O_EXCL``, ``mkdir``, ``symlink``, ``link``,
  ``mknod``; ``RENAME_NOREPLACE`` onto another entry);
- a rename of an entry onto another spelling of itself changes its spelling (the kernel
  may never forward it: Linux's VFS makes a rename onto the same inode a no-op, so a
  test makes a user's case-only rename on :attr:`FoldDir.backing`);
- ``readdir`` gives each entry its real inode and every ``getattr`` the backing
  ``st_ino`` (``use_ino``), so (``st_dev``, ``st_ino``) identity checks see real inodes;
- no caches (``entry_timeout``, ``attr_timeout``, ``negative_timeout`` are 0): a change
  made on the backing directory is seen at once; an unlinked open file is gone at once
  (``hard_remove``: no ``.fuse_hidden`` entry ever appears in a listing).

The server runs in a child process (``python -m tests.helpers.foldfs BACKING MNT``,
single-threaded, in the foreground) so a signal or a hang of the mount never reaches the
test process; :func:`mounted` waits for the mount (at most ``timeout`` seconds), and
unmounts in a ``finally`` (``fusermount3 -u``, lazily if busy, the child killed if it
does not end).  :func:`unavailable` says why a machine cannot mount one (no
``/dev/fuse``, no ``fusermount3``, no ``mfusepy``); the ``foldfs`` fixture skips with that
reason.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2

#: What a folding directory's ``st`` carries, in nanoseconds for the times.
_STAT_FIELDS = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size",
                "st_rdev", "st_blocks", "st_blksize")


def fold(name: str) -> str:
    """The spelling a folding directory compares: NFC of the case fold (of the NFD form,
    so that a precomposed and a decomposed letter fold alike)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())


def unavailable() -> str | None:
    """Why a folding mount cannot be made here, or ``None`` when it can."""
    if not sys.platform.startswith("linux"):
        return "the folding FUSE helper runs on Linux only"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse on this machine"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (Debian: apt-get install fuse3)"
    try:
        import mfusepy  # type: ignore[import-untyped,unused-ignore]  # noqa: F401
    except (ImportError, OSError, AttributeError) as exc:
        return f"mfusepy cannot load libfuse: {exc}"
    return None


# --------------------------------------------------------------------------- the server


def _operations(root: str) -> Any:
    """The passthrough's operations over the backing directory ``root``."""
    import mfusepy  # type: ignore[import-untyped,unused-ignore]

    class FoldOps(mfusepy.Operations):  # type: ignore[misc]
        use_ns = True

        def __init__(self) -> None:
            self.root = os.path.realpath(root)

        # -- names ----------------------------------------------------------------

        def _match(self, parent: str, name: str) -> str | None:
            """The name in the backing ``parent`` that ``name`` reaches, or ``None``."""
            try:
                os.lstat(os.path.join(parent, name))
                return name
            except FileNotFoundError:
                pass
            except NotADirectoryError as exc:
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from exc
            want = fold(name)
            try:
                entries = os.listdir(parent)
            except FileNotFoundError:
                return None
            for entry in sorted(entries):
                if fold(entry) == want:
                    return entry
            return None

        def real(self, path: str) -> str:
            """The backing path of ``path``: each component as it is on the backing disk
            (an absent last component as spelled)."""
            current = self.root
            parts = [p for p in path.split("/") if p]
            for index, part in enumerate(parts):
                found = self._match(current, part)
                if found is None:
                    if index < len(parts) - 1:
                        raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
                    found = part
                current = os.path.join(current, found)
            return current

        def _new(self, path: str) -> str:
            """The backing path to create ``path`` at; ``EEXIST`` when a name of its
            fold is there."""
            target = self.real(path)
            if os.path.lexists(target):
                raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
            return target

        # -- attributes -----------------------------------------------------------

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            st = os.fstat(fh) if fh is not None else os.lstat(self.real(path))
            attrs: dict[str, Any] = {key: getattr(st, key) for key in _STAT_FIELDS}
            attrs["st_atime"] = st.st_atime_ns
            attrs["st_mtime"] = st.st_mtime_ns
            attrs["st_ctime"] = st.st_ctime_ns
            return attrs

        def access(self, path: str, amode: int) -> int:
            if not os.access(self.real(path), amode, follow_symlinks=False):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
            return 0

        def chmod(self, path: str, mode: int) -> int:
            os.chmod(self.real(path), stat.S_IMODE(mode), follow_symlinks=False)
            return 0

        def chown(self, path: str, uid: int, gid: int) -> int:
            os.chown(self.real(path), uid, gid, follow_symlinks=False)
            return 0

        def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
            if times is None:
                os.utime(self.real(path), follow_symlinks=False)
            else:
                os.utime(self.real(path), ns=times, follow_symlinks=False)
            return 0

        def statfs(self, path: str) -> dict[str, int]:
            sv = os.statvfs(self.real(path))
            return {key: getattr(sv, key) for key in (
                "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                "f_files", "f_flag", "f_frsize", "f_namemax")}

        # -- directories ----------------------------------------------------------

        def readdir(self, path: str, fh: int) -> list[Any]:
            where = self.real(path)
            here = os.lstat(where)
            up = os.lstat(os.path.dirname(where) if where != self.root else where)
            out: list[Any] = [(".", {"st_ino": here.st_ino, "st_mode": here.st_mode}, 0),
                              ("..", {"st_ino": up.st_ino, "st_mode": up.st_mode}, 0)]
            with os.scandir(where) as entries:
                for entry in entries:
                    st = entry.stat(follow_symlinks=False)
                    out.append((entry.name, {"st_ino": st.st_ino, "st_mode": st.st_mode}, 0))
            return out

        def mkdir(self, path: str, mode: int) -> int:
            os.mkdir(self._new(path), mode)
            return 0

        def rmdir(self, path: str) -> int:
            os.rmdir(self.real(path))
            return 0

        # -- names made and removed -----------------------------------------------

        def symlink(self, target: str, source: str) -> int:
            os.symlink(source, self._new(target))
            return 0

        def readlink(self, path: str) -> str:
            return os.readlink(self.real(path))

        def link(self, target: str, source: str) -> int:
            os.link(self.real(source), self._new(target))
            return 0

        def mknod(self, path: str, mode: int, dev: int) -> int:
            os.mknod(self._new(path), mode, dev)
            return 0

        def unlink(self, path: str) -> int:
            os.unlink(self.real(path))
            return 0

        def rename_with_flags(self, old: str, new: str, flags: int) -> int:
            src = self.real(old)
            dst = self.real(new)
            same = os.path.lexists(dst) and os.path.samestat(os.lstat(src), os.lstat(dst))
            if same and os.path.dirname(src) == os.path.dirname(dst):
                # A new spelling of the entry itself: the case-only rename of APFS.
                wanted = os.path.join(os.path.dirname(dst), new.rsplit("/", 1)[-1])
                if wanted != src:
                    os.rename(src, wanted)
                return 0
            if flags & _RENAME_EXCHANGE:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            if flags & _RENAME_NOREPLACE and os.path.lexists(dst):
                raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
            os.rename(src, dst)
            return 0

        def rename(self, old: str, new: str) -> int:
            return self.rename_with_flags(old, new, 0)

        # -- files ----------------------------------------------------------------

        def open(self, path: str, flags: int) -> int:
            return os.open(self.real(path), flags & ~os.O_CREAT)

        def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
            return os.open(self._new(path), flags | os.O_CREAT | os.O_EXCL, mode)

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            return os.pread(fh, size, offset)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            return os.pwrite(fh, data, offset)

        def truncate(self, path: str, length: int, fh: int | None = None) -> int:
            if fh is not None:
                os.ftruncate(fh, length)
            else:
                os.truncate(self.real(path), length)
            return 0

        def flush(self, path: str, fh: int) -> int:
            return 0

        def fsync(self, path: str, datasync: int, fh: int) -> int:
            os.fsync(fh)
            return 0

        def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
            return 0

        def release(self, path: str, fh: int) -> int:
            os.close(fh)
            return 0

    return FoldOps()


def serve(backing: str, mountpoint: str) -> None:
    """Mount the folding view of ``backing`` at ``mountpoint``; returns when unmounted."""
    import mfusepy  # type: ignore[import-untyped,unused-ignore]

    class FoldFUSE(mfusepy.FUSE):  # type: ignore[misc]
        """mfusepy's libfuse 3 binding, with the flags of ``rename`` passed on (it drops
        them: ``RENAME_NOREPLACE`` would silently replace)."""

        def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
            ops = self.operations
            return int(ops.rename_with_flags(old.decode("utf-8", "surrogateescape"),
                                             new.decode("utf-8", "surrogateescape"), flags))

    ops = _operations(backing)
    FoldFUSE(ops, mountpoint, raw_fi=False, foreground=True, nothreads=True,
             use_ino=True, hard_remove=True, default_permissions=True,
             entry_timeout=0, attr_timeout=0, negative_timeout=0, fsname="foldfs")


# --------------------------------------------------------------------------- the client


class MountFailedError(RuntimeError):
    """The folding mount did not appear (the server's words, or the time waited)."""


class FoldDir:
    """A mounted folding directory: :attr:`path` (the mount, physical) shows
    :attr:`backing` (where a test makes what the kernel would not forward, such as a
    case-only rename)."""

    def __init__(self, path: str, backing: str) -> None:
        self.path = path
        self.backing = backing

    def __fspath__(self) -> str:
        return self.path

    def __truediv__(self, other: str) -> Path:
        return Path(self.path) / other


def _is_mounted(path: str) -> bool:
    try:
        return os.path.ismount(path)
    except OSError:
        return False


def _unmount(path: str) -> None:
    for args in (["fusermount3", "-u", path], ["fusermount3", "-uz", path]):
        done = subprocess.run(args, capture_output=True, check=False, timeout=30)
        if done.returncode == 0 or not _is_mounted(path):
            return


@contextmanager
def mounted(backing: str | Path, mountpoint: str | Path, *,
            timeout: float = 15.0, lifetime: float = 600.0) -> Iterator[FoldDir]:
    """The folding view of ``backing`` mounted at ``mountpoint`` (both created when
    absent) for the duration of the block.

    Raises :class:`MountFailedError` with the server's words when the mount does not appear
    within ``timeout`` seconds (the server is then killed).  A mount still there after
    ``lifetime`` seconds has its server killed: every call still waiting on it then fails
    (``ENOTCONN``) instead of hanging the suite.
    """
    backing = os.path.realpath(backing)
    mnt = os.path.realpath(mountpoint)
    os.makedirs(backing, exist_ok=True)
    os.makedirs(mnt, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    # The server's words go to a file (a pipe nobody reads could fill and hang it).
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.foldfs", backing, mnt],
            cwd=str(root), env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log,
        )
        watchdog = threading.Timer(lifetime, proc.kill)
        watchdog.daemon = True
        watchdog.start()
        try:
            deadline = time.monotonic() + timeout
            while not _is_mounted(mnt):
                if proc.poll() is not None:
                    log.seek(0)
                    err = log.read().decode(errors="replace").strip()
                    raise MountFailedError(f"the folding mount ended at once: {err}")
                if time.monotonic() > deadline:
                    raise MountFailedError(
                        f"the folding mount did not appear within {timeout} s")
                time.sleep(0.02)
            yield FoldDir(mnt, backing)
        finally:
            watchdog.cancel()
            if _is_mounted(mnt):
                _unmount(mnt)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
