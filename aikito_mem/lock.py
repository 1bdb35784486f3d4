"""The per-checkout lock ([E3]): ``flock(LOCK_EX)`` on a descriptor of the checkout root
directory itself — no lock file; the kernel releases it when the process dies, and other
tools can coordinate on the same lock.  Several checkouts are locked in one fixed order
(sorted by physical path) so two runs can never deadlock.
"""

from __future__ import annotations

import fcntl
import os
import time

from aikito_mem.errors import LockBusyError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC



def open_root(path: str) -> int:
    return os.open(path, _DIR_FLAGS)


def lock_fd(fd: int, path: str, timeout: float) -> None:
    """``flock(LOCK_EX)`` on the checkout root descriptor, waiting up to ``timeout``."""
    deadline = time.monotonic() + max(timeout, 0.0)
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockBusyError(
                    f"checkout {path} is busy: another sync holds its lock (flock on the "
                    f"checkout directory) and did not release it within {timeout:g} s — "
                    "wait for it to finish, or raise --lock-timeout",
                    path=path, timeout=timeout,
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


class Locks:
    """Held checkout locks: physical path → root descriptor.  Taken in sorted order."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}

    def acquire(self, paths: list[str], timeout: float) -> list[str]:
        """Lock every path that can be opened; return the paths that could not be."""
        failed: list[str] = []
        for path in sorted(set(paths)):
            if path in self.fds:
                continue
            try:
                fd = open_root(path)
            except OSError:
                failed.append(path)
                continue
            try:
                lock_fd(fd, path, timeout)
            except BaseException:
                os.close(fd)
                raise
            self.fds[path] = fd
        return failed

    def release(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def __enter__(self) -> Locks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
