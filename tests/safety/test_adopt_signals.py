"""SIGINT / SIGTERM at every phase of ``aikito adopt`` ([E5]): while waiting for the lock,
while validating, during a cross-filesystem copy, between the move and the memory list
edit, during the link — exit 130 / 143, one ``aikito.adopt/1`` document under ``--json``,
and no write started after the signal."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from aikito_mem import fsutil
from aikito_mem.commands.adopt import plan as adopt_plan
from aikito_mem.commands.adopt import treemove
from aikito_mem.commands.adopt.run import adopt
from aikito_mem.executor import execute, lock
from aikito_mem.render.adopt import json_document
from tests.helpers.cli import invoke
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS


def world(ws: WS, checkout: str | None = None) -> tuple[str, str]:
    """A project with one linked reference; returns (checkout, its .agents/memory)."""
    ws.add_file("style.md", "style\n")
    co = checkout or ws.checkout("co")
    os.makedirs(co, exist_ok=True)
    ws.write_config("demo", memory=["style.md"], paths=[co])
    ws.project("demo").sync()
    return co, ws.runtime(co)


def adopt_json(ws: WS, target: str, *args: str) -> tuple[Result, dict[str, Any]]:
    res = invoke("--workspace", ws.root, "adopt", target, "--json", *args)
    return res, json.loads(res.stdout)


def both(ws: WS, target: str, *args: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The command line (which installs the signal record itself), then the API alone:
    adopt is right either way."""
    res, d = adopt_json(ws, target, *args)
    yield res.exit_code, d
    timeout = float(args[args.index("--lock-timeout") + 1]) if "--lock-timeout" in args \
        else 30.0
    report = adopt(target, ws.root, dry_run="--dry-run" in args, lock_timeout=timeout)
    yield report.exit_code, json_document(report)


def kill(signum: int) -> None:
    os.kill(os.getpid(), signum)


def test_a_signal_while_waiting_for_the_lock(ws: WS, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Was click's "Aborted!" with exit 1 and no document."""
    co, rt = world(ws)
    Path(rt, "g.md").write_text("g\n")
    real = lock.lock_fd

    def signalled(fd: int, path: str, timeout: float) -> None:
        kill(signal.SIGINT)
        real(fd, path, timeout)

    monkeypatch.setattr(lock, "lock_fd", signalled)
    held = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        before = snapshot(tmp_path)
        for code, d in both(ws, f"{rt}/g.md", "--lock-timeout", "5"):
            # At once: not "busy" after the timeout, with the signal noticed late.
            assert code == 130 and d["exit_code"] == 130, d
            assert d["outcome"] == "interrupted" and d["error"]["code"] == "sync.interrupted"
            assert d["content_at"] == f"{rt}/g.md"
            assert [s["status"] for s in d["steps"]] == ["not_applied"] * 3
            assert snapshot(tmp_path) == before
    finally:
        os.close(held)


def test_a_signal_while_validating(ws: WS, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _co, rt = world(ws)
    Path(rt, "g.md").write_text("g\n")
    real = adopt_plan.predict_link

    def signalled(*a: Any, **kw: Any) -> Any:
        kill(signal.SIGTERM)
        return real(*a, **kw)

    monkeypatch.setattr(adopt_plan, "predict_link", signalled)
    before = snapshot(tmp_path)
    for dry in (["--dry-run"], []):
        for code, d in both(ws, f"{rt}/g.md", *dry):
            assert code == 143 and d["outcome"] == "interrupted", d
            assert d["reference"] is None  # validation did not go on
            assert snapshot(tmp_path) == before


def test_a_signal_during_a_cross_filesystem_copy(ws: WS, tmp_path: Path, tmpfs: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy stops before its next write; the temporary copy and the directory made
    for it are removed; the original is untouched."""
    _co, rt = world(ws, str(tmpfs / "co"))
    tree = Path(rt, "deep", "kb")
    tree.mkdir(parents=True)
    for name in ("a.md", "b.md", "c.md"):
        (tree / name).write_text(name)
    real = treemove._copy_file
    copied: list[str] = []

    def signalled(src: str, dst: str, entry: Any) -> Any:
        copied.append(entry.rel)
        kill(signal.SIGINT)
        return real(src, dst, entry)

    monkeypatch.setattr(treemove, "_copy_file", signalled)
    before = snapshot(tmp_path)
    res, d = adopt_json(ws, str(tree))
    assert res.exit_code == 130 and d["outcome"] == "interrupted", d
    assert copied == ["a.md"]  # the copy in flight was finished; no other was started
    assert d["content_at"] == str(tree)
    # Only the times of the directory that held the removed temporary copy moved.
    assert changed(before, snapshot(tmp_path)) == {f"{ws.root}/memory"}


@pytest.mark.parametrize("name", ["g.md", "my g.md"])
def test_a_signal_after_the_move_writes_nothing_more(ws: WS, monkeypatch: pytest.MonkeyPatch,
                                                     name: str) -> None:
    """... and the command its message names pastes as one shell word ([U2])."""
    _co, rt = world(ws)
    Path(rt, name).write_text("g\n")
    cfg = Path(ws.config_path("demo")).read_bytes()
    real = treemove.move
    writes: list[str] = []

    def signalled(*a: Any) -> Any:
        method = real(*a)
        kill(signal.SIGINT)
        return method

    monkeypatch.setattr(treemove, "move", signalled)
    monkeypatch.setattr(fsutil, "create_temp", lambda *a: writes.append("temp") or 1 / 0)
    res, d = adopt_json(ws, f"{rt}/{name}")
    assert writes == []  # not even a temporary file for agent.toml
    assert res.exit_code == 130 and d["outcome"] == "interrupted", d
    assert [s["status"] for s in d["steps"]] == ["applied", "not_applied", "not_applied"]
    assert d["content_at"] == ws.memory_path(name)
    assert f"the content is at {ws.memory_path(name)}" in d["error"]["message"]
    assert f"{name!r} is not yet in the memory list" in d["error"]["message"]
    word = f"{rt}/{name}" if " " not in name else f"'{rt}/{name}'"
    assert f"to finish, run `aikito adopt {word}` again" in d["error"]["message"]
    assert Path(ws.config_path("demo")).read_bytes() == cfg
    assert not os.path.lexists(f"{rt}/{name}")
    # [E5] what the message says converges: the same adopt again finishes it.
    monkeypatch.undo()
    res, d = adopt_json(ws, f"{rt}/{name}")
    assert (res.exit_code, d["outcome"], d["method"]) == (0, "adopted", "resume"), d
    assert os.readlink(f"{rt}/{name}") == ws.memory_path(name)


def test_a_signal_while_agent_toml_is_written_stops_before_the_rename(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _co, rt = world(ws)
    Path(rt, "g.md").write_text("g\n")
    cfg = Path(ws.config_path("demo")).read_bytes()
    real = fsutil.write_all

    def signalled(fd: int, data: bytes) -> None:
        real(fd, data)
        kill(signal.SIGTERM)

    monkeypatch.setattr(fsutil, "write_all", signalled)
    res, d = adopt_json(ws, f"{rt}/g.md")
    assert res.exit_code == 143 and d["outcome"] == "interrupted", d
    assert [s["status"] for s in d["steps"]] == ["applied", "not_applied", "not_applied"]
    assert Path(ws.config_path("demo")).read_bytes() == cfg
    assert not any(fsutil.is_temp_name(n) for n in os.listdir(Path(ws.config_path("demo")).parent))


def test_a_signal_while_an_identical_copy_is_removed(ws: WS,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Removal stops before its next unlink; the report says the content is in the
    workspace, where it was all along."""
    _co, rt = world(ws)
    for base in (ws.memory_path("kb"), f"{rt}/kb"):
        os.makedirs(base)
        for name in ("a.md", "b.md", "c.md"):
            Path(base, name).write_text(name)
    real = treemove.remove_inventoried
    calls: list[int] = []

    def signalled(root: str, entries: Any, before_write: Any) -> None:
        def check() -> None:
            calls.append(1)
            if len(calls) == 2:
                kill(signal.SIGINT)
            before_write()

        real(root, entries, check)

    monkeypatch.setattr(treemove, "remove_inventoried", signalled)
    res, d = adopt_json(ws, f"{rt}/kb")
    assert res.exit_code == 130 and d["outcome"] == "interrupted", d
    assert sorted(os.listdir(f"{rt}/kb")) == ["a.md", "b.md"]  # c.md went, then it stopped
    assert d["content_at"] == ws.memory_path("kb")
    assert f"the content is at {ws.memory_path('kb')}" in d["error"]["message"]
    assert sorted(os.listdir(ws.memory_path("kb"))) == ["a.md", "b.md", "c.md"]


def test_a_signal_during_the_link_finishes_it_and_reports(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    _co, rt = world(ws)
    Path(rt, "g.md").write_text("g\n")
    monkeypatch.setattr(execute, "before_write", lambda op: kill(signal.SIGTERM))
    res, d = adopt_json(ws, f"{rt}/g.md")
    assert res.exit_code == 143 and d["outcome"] == "interrupted", d
    assert [s["status"] for s in d["steps"]] == ["applied"] * 3
    assert "was adopted before the signal arrived" in d["error"]["message"]
    assert os.readlink(f"{rt}/g.md") == ws.memory_path("g.md")


def test_the_command_interrupted_while_it_waits_for_the_lock(ws: WS, tmp_path: Path) -> None:
    """A real process: SIGINT once it holds the checkout open (validating or waiting for
    the lock), exit 130 with its JSON document and nothing written."""
    co, rt = world(ws)
    Path(rt, "g.md").write_text("g\n")
    held = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        before = snapshot(tmp_path)
        proc = subprocess.Popen(
            [sys.executable, "-m", "aikito_mem", "--workspace", ws.root, "adopt",
             f"{rt}/g.md", "--json", "--lock-timeout", "600"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            fd_dir = f"/proc/{proc.pid}/fd"
            deadline = time.monotonic() + 120  # a hang guard, not a timing assertion
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    if any(os.readlink(f"{fd_dir}/{n}") == co for n in os.listdir(fd_dir)):
                        break
                except OSError:
                    pass
                time.sleep(0.01)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert snapshot(tmp_path) == before
    finally:
        os.close(held)
    assert proc.returncode == 130, err
    d = json.loads(out)
    assert d["outcome"] == "interrupted" and d["exit_code"] == 130
