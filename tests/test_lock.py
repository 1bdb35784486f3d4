"""The per-checkout lock ([E3], [K1], [E5]): one lock per directory whatever its spelling,
one fixed order, a bounded and interruptible wait, a validated timeout."""

from __future__ import annotations

import fcntl
import math
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import aikito_mem.executor.lock as lock_mod
from aikito_mem import signals
from aikito_mem.errors import ConfigError, InterruptedError_, LockBusyError
from aikito_mem.executor.lock import Locks, check_timeout
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS


@contextmanager
def held(path: str) -> Iterator[int]:
    """``flock(LOCK_EX)`` on ``path`` through a descriptor of our own (another open file
    description: it conflicts with the engine's lock as another process's would)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield fd
    finally:
        os.close(fd)


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


# ------------------------------------------------------------------ one lock per directory


def test_two_spellings_of_one_directory_are_locked_once(ws: WS) -> None:
    co = ws.checkout("co")
    os.symlink(ws.checkouts_dir, f"{ws.base}/alias")
    other = f"{ws.base}/alias/co"  # an intermediate symlink: the same directory
    before = open_fds()
    with Locks() as locks:
        # timeout 0: a second flock on a second descriptor would be "busy" at once.
        assert locks.acquire([co, other], 0) == []
        assert locks.fds[co] == locks.fds[other]
        with pytest.raises(BlockingIOError), held_nb(co):
            pass
    assert open_fds() == before


@contextmanager
def held_nb(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def test_a_later_acquire_of_another_spelling_reuses_the_held_lock(ws: WS) -> None:
    co = ws.checkout("co")
    os.symlink(ws.checkouts_dir, f"{ws.base}/alias")
    with Locks() as locks:
        locks.acquire([co], 0)
        assert locks.acquire([f"{ws.base}/alias/co"], 0) == []
        assert len(set(locks.fds.values())) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_a_bind_mount_of_the_checkout_is_locked_once(ws: WS) -> None:
    co = ws.checkout("co")
    bind = ws.checkout("bind")
    if subprocess.run(["mount", "--bind", co, bind], capture_output=True).returncode:
        pytest.skip("mount --bind is not permitted here")
    try:
        with Locks() as locks:
            assert locks.acquire([co, bind], 0) == []
            assert locks.fds[co] == locks.fds[bind]
    finally:
        subprocess.run(["umount", bind], check=True)


def test_checkouts_are_locked_in_identity_order_whatever_the_spelling(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = ws.checkout("x1"), ws.checkout("x2")
    ino = {p: os.stat(p).st_ino for p in (first, second)}
    low, high = sorted((first, second), key=ino.__getitem__)
    # Name them so that path order is the reverse of identity order.
    os.rename(low, f"{ws.checkouts_dir}/z")
    os.rename(high, f"{ws.checkouts_dir}/a")
    low, high = f"{ws.checkouts_dir}/z", f"{ws.checkouts_dir}/a"
    order: list[str] = []
    real = lock_mod.lock_fd
    monkeypatch.setattr(lock_mod, "lock_fd",
                        lambda fd, path, timeout: (order.append(path), real(fd, path, timeout)))
    with Locks() as locks:
        locks.acquire([high, low], 0)
    assert order == [low, high]


def test_busy_checkout_is_exit_6_and_leaks_nothing(ws: WS) -> None:
    a, b = ws.checkout("a"), ws.checkout("b")
    before = open_fds()
    with held(b), pytest.raises(LockBusyError) as info, Locks() as locks:
        locks.acquire([a, b], 0)
    assert info.value.exit_code == 6
    assert info.value.path == b
    assert open_fds() == before


def test_unopenable_path_is_reported_not_locked(ws: WS) -> None:
    co = ws.checkout("co")
    with Locks() as locks:
        assert locks.acquire([co, f"{ws.base}/missing"], 0) == [f"{ws.base}/missing"]
        assert list(locks.fds) == [co]


# ------------------------------------------------------------------ the timeout


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, -0.5, "30", True, None])
def test_invalid_timeout_is_a_config_error(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        check_timeout(value)
    assert info.value.exit_code == 4
    assert info.value.code == "config.lock_timeout"
    assert "finite number" in info.value.message


@pytest.mark.parametrize("value", [0, 0.0, 2.5, 30])
def test_valid_timeout(value: float) -> None:
    assert check_timeout(value) == float(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_invalid_timeout_refused_even_without_a_lock_to_wait_for(ws: WS, value: float) -> None:
    """Every checkout offline: no lock is taken, the value is refused all the same."""
    ws.add_file("a.md", "a")
    ws.write_config("demo", memory=["a.md"], paths=[f"{ws.base}/nowhere"])
    project = ws.project("demo")
    with pytest.raises(ConfigError):
        project.sync(lock_timeout=value)
    with pytest.raises(ConfigError):
        project.execute(project.plan(), lock_timeout=value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0])
def test_invalid_timeout_refused_by_every_entry_point_before_any_write(
    ws: WS, value: float
) -> None:
    """The lock is free here: without the validation NaN would simply succeed — the run is
    refused before it takes any lock or writes anything."""
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    project = ws.project("demo")
    before = snapshot(ws.base)
    with pytest.raises(ConfigError):
        project.sync(lock_timeout=value)
    with pytest.raises(ConfigError):
        project.execute(project.plan(), lock_timeout=value)
    with pytest.raises(ConfigError), Locks() as locks:
        locks.acquire([co], value)
    fd = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(ConfigError):
            lock_mod.lock_fd(fd, co, value)
    finally:
        os.close(fd)
    assert snapshot(ws.base) == before


def test_lock_timeout_nan_on_the_command_line_never_waits(ws: WS) -> None:
    """The command line refuses it before the engine (a usage error); either way the run
    ends at once on a busy checkout, with nothing written."""
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    aikito = os.path.join(os.path.dirname(sys.executable), "aikito")
    with held(co):  # busy: NaN used to wait forever here
        proc = subprocess.run(
            [aikito, "--workspace", ws.root, "sync", "project", "demo", "--json",
             "--lock-timeout", "nan"], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (2, 4), proc.stderr
    assert not os.path.lexists(f"{co}/.agents")


# ------------------------------------------------------------------ interruptible wait


def test_signal_while_waiting_ends_the_wait_at_once(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait is interruptible ([E5]): the signal raises at once instead of being
    recorded and the wait running out into "busy"."""
    co = ws.checkout("co")
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(lock_mod.time, "sleep", sleep)
    before = open_fds()
    with signals.installed(), held(co), Locks() as locks:
        with pytest.raises(InterruptedError_) as info:
            locks.acquire([co], 0.5)
        assert locks.fds == {}
    assert info.value.exit_code == 143
    assert len(sleeps) == 1
    assert open_fds() == before
