"""A tmpfs mounted for one test (root only): the other filesystem of cross-filesystem
tests.  Skips with the reason when not root or when the mount fails; always unmounts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(mnt: Path, options: str = "size=16m") -> Iterator[Path]:
    """Mount a fresh tmpfs at ``mnt`` (created) for the duration of the block."""
    if os.getuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
