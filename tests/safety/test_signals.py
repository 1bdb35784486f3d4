"""SIGINT / SIGTERM at every moment of a real ``aikito`` process ([E5]).

Each case runs the command line in its own process and delivers the signal at one phase
reached deterministically — never after a sleep:

- **while waiting for the lock**: the test holds the checkout's ``flock`` itself and
  signals the ``aikito`` script once the process holds a descriptor of the checkout (it is
  then polling for the lock); the lock is released right after the signal;
- **while planning**, **just before the registration**, **in the write loop**: a small
  driver wraps one engine function (the observation of a checkout, the end of the
  verification, the executor's ``before_write`` seam) so that the process signals itself
  at that point, then runs the same ``aikito`` entry point.

Each asserts exit 130 / 143, exactly one JSON document on stdout under ``--json`` with
outcome ``interrupted``, and nothing written after the signal (snapshots).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

AIKITO = os.path.join(os.path.dirname(sys.executable), "aikito")
SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]
#: Generous: reached only when a process hangs, which is itself the failure.
TIMEOUT = 120

DRIVER = r'''
import os, sys

SIG, PHASE, LOG, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]


def note(what):
    with open(LOG, "a") as fh:
        fh.write(what + "\n")


def fire():
    os.kill(os.getpid(), SIG)


if PHASE == "planning":
    import aikito_mem.world.checkouts as mod

    real_observe = mod.observe
    seen = []

    def observe(slot, observer):
        seen.append(slot.path)
        note("observe " + slot.path)
        if len(seen) == 1:
            fire()
        return real_observe(slot, observer)

    mod.observe = observe
elif PHASE == "registration":
    import aikito_mem.executor.execute as mod

    real_checked = mod._checked

    def checked(*a):
        real_checked(*a)
        note("verified")
        fire()

    mod._checked = checked
elif PHASE == "writes":
    import aikito_mem.executor.execute as mod

    count = []

    def before_write(op):
        count.append(op)
        note("write " + op.target)
        if len(count) == 2:
            fire()

    mod.before_write = before_write

from aikito_mem.cli import main

sys.argv = ["aikito", *args]
main()
'''


def expected_code(sig: int) -> int:
    return 128 + sig


def one_document(stdout: str) -> dict[str, Any]:
    """Exactly one JSON document (``json.loads`` refuses trailing data)."""
    doc = json.loads(stdout)
    assert isinstance(doc, dict)
    return doc


def assert_interrupted(proc: subprocess.CompletedProcess[str], sig: int) -> dict[str, Any]:
    assert proc.returncode == expected_code(sig), (proc.returncode, proc.stderr)
    doc = one_document(proc.stdout)
    assert doc["outcome"] == "interrupted"
    assert doc["exit_code"] == expected_code(sig)
    assert doc["error"]["code"] == "sync.interrupted"
    assert "Traceback" not in proc.stderr
    return doc


def drive(tmp_path: Path, sig: int, phase: str, *args: str) -> tuple[
        subprocess.CompletedProcess[str], list[str]]:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    log = tmp_path / "phase.log"
    proc = subprocess.run([sys.executable, str(driver), str(int(sig)), phase, str(log), *args],
                          capture_output=True, text=True, timeout=TIMEOUT)
    notes = log.read_text().splitlines() if log.exists() else []
    return proc, notes


def project(ws: WS, n_checkouts: int = 1) -> list[str]:
    for ref in ("a.md", "b.md", "team/c.md", "team/d.md"):
        ws.add_file(ref, ref)
    cos = [ws.checkout(f"co{i}") for i in range(n_checkouts)]
    ws.write_config("demo", memory=["a.md", "b.md", "team/c.md", "team/d.md"], paths=cos)
    # Foreign entries the run must never touch.
    for co in cos:
        os.makedirs(f"{co}/.agents/memory")
        Path(co, ".agents/memory/mine.txt").write_text("mine\n")
        Path(co, "README.md").write_text("# project\n")
    return cos


# ------------------------------------------------------------------ waiting for the lock


def _wait_until_waiting_for_lock(proc: subprocess.Popen[str], co: str) -> None:
    """Until the process holds a descriptor of the checkout root: it opens that directory
    only to lock it, and then polls for the lock we hold."""
    fd_dir = f"/proc/{proc.pid}/fd"
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            names = os.listdir(fd_dir)
        except FileNotFoundError:
            names = []
        for name in names:
            try:
                if os.readlink(f"{fd_dir}/{name}") == co:
                    return
            except OSError:
                continue
        time.sleep(0.01)
    raise AssertionError("the process never started waiting for the lock")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("then", ["lock-held", "lock-freed"])
@pytest.mark.parametrize("command", ["sync", "apply"])
@pytest.mark.parametrize("sig", SIGNALS)
def test_signal_while_waiting_for_the_lock(
    ws: WS, tmp_path: Path, command: str, sig: int, then: str
) -> None:
    """The run stops at once — with the lock still held by another, it never waits out
    --lock-timeout (ten times this test's own hang guard) — and when the lock frees right
    after the signal nothing is written: not even the registration of the new checkout in
    agent.toml, the first write of the plan."""
    (registered,) = project(ws)
    co = ws.checkout("new")
    sync = [AIKITO, "--workspace", ws.root, "sync", "project", "demo", co, "--json"]
    if command == "apply":
        planfile = str(tmp_path / "plan.toml")
        made = subprocess.run([*sync, "--dry-run", "--out", planfile],
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert made.returncode == 0, made.stdout
        argv = [AIKITO, "--workspace", ws.root, "apply", planfile, "--json"]
    else:
        argv = sync
    config = Path(ws.config_path("demo")).read_bytes()
    before = snapshot(ws.root, ws.checkouts_dir)
    holder: int | None = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    proc = subprocess.Popen([*argv, "--lock-timeout", str(TIMEOUT * 10)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_until_waiting_for_lock(proc, co)
        proc.send_signal(sig)
        if then == "lock-freed":
            os.close(holder)
            holder = None
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if holder is not None:
            os.close(holder)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    doc = assert_interrupted(subprocess.CompletedProcess(argv, proc.returncode, out, err), sig)
    assert doc["registered"] is None
    assert Path(ws.config_path("demo")).read_bytes() == config
    assert snapshot(ws.root, ws.checkouts_dir) == before
    assert registered  # the registered checkout was never part of the run


# ------------------------------------------------------------------ planning


@pytest.mark.parametrize("sig", SIGNALS)
def test_signal_while_planning_a_sync(ws: WS, tmp_path: Path, sig: int) -> None:
    """Planning happens under the lock; the signal ends it at once: the second checkout is
    never observed, nothing is written."""
    cos = project(ws, n_checkouts=2)
    before = snapshot(ws.root, ws.checkouts_dir)
    proc, notes = drive(tmp_path, sig, "planning",
                        "--workspace", ws.root, "sync", "project", "demo", "--json")
    assert_interrupted(proc, sig)
    assert notes == [f"observe {cos[0]}"]
    assert snapshot(ws.root, ws.checkouts_dir) == before


@pytest.mark.parametrize("sig", SIGNALS)
def test_signal_while_planning_a_dry_run(ws: WS, tmp_path: Path, sig: int) -> None:
    """A dry run never enters the writing engine: the command line's handlers, installed
    at start-up, make its planning interruptible all the same."""
    cos = project(ws, n_checkouts=2)
    before = snapshot(ws.root, ws.checkouts_dir)
    proc, notes = drive(tmp_path, sig, "planning", "--workspace", ws.root, "sync",
                        "project", "demo", "--dry-run", "--json")
    assert_interrupted(proc, sig)
    assert notes == [f"observe {cos[0]}"]
    assert snapshot(ws.root, ws.checkouts_dir) == before


# ------------------------------------------------------------------ before the registration


@pytest.mark.parametrize("sig", SIGNALS)
def test_signal_just_before_the_registration(ws: WS, tmp_path: Path, sig: int) -> None:
    """The plan verified; the signal arrives before its first write (the registration of
    the new checkout): agent.toml keeps its bytes, no link is made."""
    project(ws)
    co = ws.checkout("new")
    config = Path(ws.config_path("demo")).read_bytes()
    before = snapshot(ws.root, ws.checkouts_dir)
    proc, notes = drive(tmp_path, sig, "registration", "--workspace", ws.root, "sync",
                        "project", "demo", co, "--json")
    doc = assert_interrupted(proc, sig)
    assert notes == ["verified"]
    assert doc["registered"] is None
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}
    assert Path(ws.config_path("demo")).read_bytes() == config
    assert snapshot(ws.root, ws.checkouts_dir) == before


# ------------------------------------------------------------------ the write loop


@pytest.mark.parametrize("sig", SIGNALS)
def test_signal_in_the_write_loop(ws: WS, tmp_path: Path, sig: int) -> None:
    """The operation in flight (the second write) is finished; no later write starts; the
    statuses say exactly which links exist."""
    (co,) = project(ws)
    foreign = snapshot(ws.root, f"{co}/README.md", f"{co}/.agents/memory/mine.txt")
    proc, notes = drive(tmp_path, sig, "writes",
                        "--workspace", ws.root, "sync", "project", "demo", "--json")
    doc = assert_interrupted(proc, sig)
    writes = [op for op in doc["operations"] if op["action"] == "CREATE"]
    assert len(writes) == 4
    applied = {op["target"] for op in writes if op["status"] == "applied"}
    assert len(applied) == 2
    assert {op["status"] for op in writes if op["target"] not in applied} == {"not_applied"}
    assert notes == [f"write {t}" for t in sorted(applied, key=[
        op["target"] for op in writes].index)]
    for op in writes:
        assert os.path.lexists(op["target"]) == (op["target"] in applied)
    assert snapshot(ws.root, f"{co}/README.md", f"{co}/.agents/memory/mine.txt") == foreign
    # The next run converges.
    again = subprocess.run([AIKITO, "--workspace", ws.root, "sync", "project", "demo",
                            "--json"], capture_output=True, text=True, timeout=TIMEOUT)
    assert (again.returncode, one_document(again.stdout)["outcome"]) == (0, "applied")
