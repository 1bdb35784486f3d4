"""Mounts for one test (root only): a tmpfs — the other filesystem of cross-filesystem
tests, or a tiny or read-only one — and a bind mount.  Each skips with the reason when not
root or when the mount fails, and always unmounts."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def need_root() -> None:
    """Skip unless this process may mount filesystems."""
    if os.getuid() != 0:
        pytest.skip("mounting a filesystem needs root")
    if shutil.which("mount") is None:
        pytest.skip("mount(8) is not installed")


def mount(*args: str) -> None:
    """``mount ARGS``; skips the test when it fails."""
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mount {' '.join(args)} failed: {proc.stderr.strip()}")


@contextmanager
def mounted(target: str | Path, *args: str) -> Iterator[Path]:
    """``mount ARGS TARGET`` (``target`` created when absent) for the duration of the
    block; skips when the mount fails."""
    need_root()
    path = Path(target)
    path.mkdir(parents=True, exist_ok=True)
    mount(*args, str(path))
    try:
        yield path
    finally:
        unmount(path)


def unmount(path: str | Path) -> None:
    """Unmount ``path``; lazily when it is still busy."""
    done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@contextmanager
def tmpfs(mnt: str | Path, options: str = "size=16m") -> Iterator[Path]:
    """A fresh tmpfs at ``mnt`` (created) with mount ``options``."""
    with mounted(mnt, "-t", "tmpfs", "-o", options, "tmpfs") as path:
        yield path


@contextmanager
def bind(source: str | Path, target: str | Path, *, readonly: bool = False) -> Iterator[Path]:
    """``source`` bind-mounted at ``target`` (created; it may be ``source`` itself),
    read-only when ``readonly``."""
    with mounted(target, "--bind", str(source)) as path:
        if readonly:
            mount("-o", "remount,ro,bind", str(path))
        yield path


def try_bind(source: str | Path, target: str | Path) -> bool:
    """``source`` bind-mounted at the existing directory ``target``, where a test cannot
    skip (a stateful machine's rule): ``False`` when not root or when the mount fails.
    The caller unmounts (:func:`unmount`)."""
    if os.getuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "--bind", str(source), str(target)],
                          capture_output=True, check=False)
    return done.returncode == 0
