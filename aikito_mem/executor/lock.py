"""The per-checkout lock ([E3]).

``flock(LOCK_EX)`` on a descriptor of the checkout root directory itself: no lock file,
the kernel releases it when the process dies, and other tools can coordinate on the same
lock.

- **One lock per directory.** A lock is keyed by the directory's identity
  (``st_dev``, ``st_ino`` of the open descriptor) as well as by its path, so one directory
  reached under two spellings (a bind mount, a second registered path) is locked once by a
  run — a second ``flock`` on a second descriptor of the same directory would wait for the
  run itself ([K1]).
- **One fixed order.** The directories of a run are locked sorted by identity, which does
  not depend on how a path was spelt, so two runs can never deadlock.
- **A bounded wait.** ``timeout`` must be a finite number of seconds ≥ 0 (NaN or infinity
  would wait forever: refused as a configuration error). The wait is interruptible
  (:func:`aikito_mem.signals.interruptible`): SIGINT/SIGTERM end it at once.
"""

from __future__ import annotations

import fcntl
import math
import os
import time

from aikito_mem import signals
from aikito_mem.errors import ConfigError, LockBusyError
from aikito_mem.fsutil import DIR_NOFOLLOW

#: The default of ``--lock-timeout`` and of the API's ``lock_timeout`` (seconds).
DEFAULT_TIMEOUT = 30.0


def check_timeout(timeout: object) -> float:
    """``timeout`` as seconds to wait; a :class:`ConfigError` unless finite and ≥ 0."""
    number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if number and math.isfinite(timeout) and timeout >= 0:  # type: ignore[arg-type,operator]
        return float(timeout)  # type: ignore[arg-type]
    raise ConfigError(
        f"lock timeout {timeout!r} is not a valid number of seconds; expected a finite "
        "number ≥ 0 (NaN or infinity would wait forever on a busy checkout, a negative "
        "one means nothing) — pass e.g. --lock-timeout 30",
        code="config.lock_timeout",
    )


def open_root(path: str) -> int:
    """A descriptor of the checkout root directory (``O_NOFOLLOW``: never a symlink)."""
    return os.open(path, DIR_NOFOLLOW)


def lock_fd(fd: int, path: str, timeout: float) -> None:
    """``flock(LOCK_EX)`` on the checkout root descriptor, waiting up to ``timeout``.

    The wait is interruptible: a signal raises
    :class:`~aikito_mem.errors.InterruptedError_` at once (when the handlers of
    :mod:`aikito_mem.signals` are installed)."""
    timeout = check_timeout(timeout)
    with signals.interruptible():
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusyError(
                        f"checkout {path} is busy: another sync holds its lock (flock on "
                        f"the checkout directory) and did not release it within "
                        f"{timeout:g} s — wait for it to finish, or raise --lock-timeout",
                        path=path, timeout=timeout,
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)


class Locks:
    """Held checkout locks.

    ``fds`` maps every path asked for to the descriptor holding its directory's lock; two
    paths of one directory share one descriptor (and one lock).
    """

    def __init__(self) -> None:
        #: Path → descriptor of the locked root directory.
        self.fds: dict[str, int] = {}
        #: (st_dev, st_ino) → descriptor: the directories actually locked.
        self._by_id: dict[tuple[int, int], int] = {}

    def acquire(self, paths: list[str], timeout: float) -> list[str]:
        """Lock every path that can be opened; return the paths that could not be."""
        failed: list[str] = []
        opened: list[tuple[tuple[int, int], str, int]] = []
        try:
            for path in sorted(set(paths)):
                if path in self.fds:
                    continue
                try:
                    fd = open_root(path)
                except OSError:
                    failed.append(path)
                    continue
                try:
                    st = os.fstat(fd)
                except BaseException:
                    os.close(fd)
                    raise
                opened.append(((st.st_dev, st.st_ino), path, fd))
            opened.sort()
            while opened:
                ident, path, fd = opened.pop(0)
                held = self._by_id.get(ident)
                if held is not None:
                    # The same directory under another spelling: already locked by this
                    # run — share the descriptor, never lock it twice.
                    os.close(fd)
                else:
                    try:
                        lock_fd(fd, path, timeout)
                    except BaseException:
                        os.close(fd)
                        raise
                    self._by_id[ident] = held = fd
                self.fds[path] = held
        finally:
            for _, _, fd in opened:
                os.close(fd)
        return failed

    def release(self) -> None:
        for fd in self._by_id.values():
            os.close(fd)
        self._by_id.clear()
        self.fds.clear()

    def __enter__(self) -> Locks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
