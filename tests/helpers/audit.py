"""The write-event witness of dry-run proofs ([E7]): one ``sys.addaudithook`` hook,
installed once per process (audit hooks cannot be removed), that records every write-like
event — an ``open`` for writing, ``mkdir``, ``symlink``, ``unlink``, ``rename``, ``flock``
… — while it is armed.  Importing this module imports every room of ``aikito_mem`` first,
so that no lazy import can write a ``.pyc`` while the hook is armed."""

from __future__ import annotations

import fcntl  # noqa: F401  (observe.generation imports it lazily)
import importlib
import os
import pkgutil
import sys
from typing import Any

import aikito_mem

for _mod in pkgutil.walk_packages(aikito_mem.__path__, "aikito_mem."):
    if _mod.name == "aikito_mem.__main__":
        continue
    importlib.import_module(_mod.name)

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRITE_EVENTS = frozenset({
    "os.mkdir", "os.symlink", "os.remove", "os.rename", "os.rmdir", "os.chmod",
    "os.link", "os.truncate", "os.chown", "os.utime", "os.chflags", "os.lchmod",
    "os.lchown", "os.mkfifo", "os.mknod", "os.setxattr", "os.removexattr",
    "fcntl.flock", "fcntl.lockf",
})


class Recorder:
    """Armed, it records write events in ``events`` and every event in ``seen``."""

    def __init__(self) -> None:
        self.armed = False
        self.events: list[tuple[str, tuple[Any, ...]]] = []
        #: Every event seen while armed (to prove the hook was live).
        self.seen: set[str] = set()

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed:
            return
        self.seen.add(event)
        if event == "open":
            _path, mode, flags = (*tuple(args), None, None, None)[:3]
            writes = isinstance(mode, str) and any(c in mode for c in "wax+")
            writes = writes or (isinstance(flags, int) and bool(flags & _WRITE_FLAGS))
            if writes:
                self.events.append((event, tuple(args)))
        elif event in _WRITE_EVENTS or event.startswith("shutil."):
            self.events.append((event, tuple(args)))


RECORDER = Recorder()
sys.addaudithook(RECORDER)  # installed once: audit hooks cannot be removed
