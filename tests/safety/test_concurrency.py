"""Concurrent syncs of one checkout ([E3]): real ``aikito`` processes, real ``flock``."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import aikito_argv
from tests.helpers.home import child_env
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS


def build(ws: WS) -> str:
    refs = [f"f{i:02d}.md" for i in range(20)] + ["team/a.md", "team/b.md", "dir"]
    for ref in refs:
        if ref == "dir":
            ws.add_dir(ref)
        else:
            ws.add_file(ref, ref)
    ws.add_notes("demo")
    co = ws.checkout("main")
    Path(co, "README.md").write_text("foreign\n")
    ws.write_config("demo", memory=refs, paths=[co])
    return co


def aikito(ws: WS, *args: str) -> list[str]:
    return aikito_argv("--workspace", ws.root, *args)


def env() -> dict[str, str]:
    return child_env(NO_COLOR="1")


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, dict[str, Any]]:
    out, err = proc.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out)


@contextmanager
def held_lock(path: str) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def test_six_concurrent_syncs_serialise(ws: WS) -> None:
    co = build(ws)
    readme = snapshot(f"{co}/README.md")
    n = 6
    # Hold the lock while the processes start so that they all really contend for it,
    # then let them go at once.
    with held_lock(co):
        procs = [
            subprocess.Popen(aikito(ws, "sync", "project", "demo", "--json"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env())
            for _ in range(n)
        ]
        time.sleep(0.5)
        assert all(p.poll() is None for p in procs)  # all waiting for the lock
    results = [finish(p) for p in procs]
    assert [code for code, _ in results] == [0] * n
    outcomes = sorted(doc["outcome"] for _, doc in results)
    assert outcomes == ["applied"] + ["unchanged"] * (n - 1)
    for _, doc in results:
        if doc["outcome"] == "unchanged":
            assert {op["action"] for op in doc["operations"]} == {"NOOP"}
            assert {op["status"] for op in doc["operations"]} == {"unchanged"}
        else:
            assert {op["status"] for op in doc["operations"]} == {"applied"}
    base = f"{co}/.agents/memory"
    assert os.readlink(f"{base}/f00.md") == ws.memory_path("f00.md")
    assert os.readlink(f"{base}/team/b.md") == ws.memory_path("team/b.md")
    assert os.readlink(f"{base}/notes") == ws.notes_path("demo")
    assert snapshot(f"{co}/README.md") == readme
    # No lock file or clutter next to the links.
    assert sorted(os.listdir(base)) == sorted(
        [f"f{i:02d}.md" for i in range(20)] + ["team", "dir", "notes"]
    )
    assert sorted(os.listdir(co)) == [".agents", "README.md"]


def test_six_concurrent_syncs_started_together_without_a_held_lock(ws: WS) -> None:
    co = build(ws)
    procs = [
        subprocess.Popen(aikito(ws, "sync", "project", "demo", "--json"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        for _ in range(6)
    ]
    results = [finish(p) for p in procs]
    assert [code for code, _ in results] == [0] * 6
    outcomes = sorted(doc["outcome"] for _, doc in results)
    assert outcomes == ["applied"] + ["unchanged"] * 5
    assert len(os.listdir(f"{co}/.agents/memory")) == 23


@pytest.mark.parametrize("json_flag", [True, False])
def test_held_lock_makes_a_writer_busy_with_nothing_written(ws: WS, json_flag: bool) -> None:
    co = build(ws)
    with held_lock(co):
        before = snapshot(*ws.roots())
        args = ["sync", "project", "demo", "--lock-timeout", "0.2"]
        start = time.monotonic()
        proc = subprocess.run(aikito(ws, *args, *(["--json"] if json_flag else [])),
                              capture_output=True, text=True, env=env(), timeout=60)
        elapsed = time.monotonic() - start
        assert proc.returncode == 6, proc.stderr
        assert "Traceback" not in proc.stderr
        if json_flag:
            doc = json.loads(proc.stdout)
            assert doc["outcome"] == "busy"
            assert doc["exit_code"] == 6
            assert doc["error"]["code"] == "sync.busy"
        else:
            assert "busy" in proc.stderr
        assert snapshot(*ws.roots()) == before
    assert elapsed < 20
    assert not os.path.lexists(f"{co}/.agents")


def test_apply_is_busy_too(ws: WS) -> None:
    co = build(ws)
    planfile = f"{ws.base}/plan.toml"
    subprocess.run(aikito(ws, "sync", "project", "demo", "--dry-run", "--out", planfile),
                   check=True, capture_output=True, env=env(), timeout=60)
    with held_lock(co):
        before = snapshot(ws.base)
        proc = subprocess.run(aikito(ws, "apply", planfile, "--json", "--lock-timeout", "0.2"),
                              capture_output=True, text=True, env=env(), timeout=60)
        assert proc.returncode == 6
        assert json.loads(proc.stdout)["outcome"] == "busy"
        assert snapshot(ws.base) == before
    proc = subprocess.run(aikito(ws, "apply", planfile, "--json"),
                          capture_output=True, text=True, env=env(), timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert json.loads(proc.stdout)["outcome"] == "applied"


def test_dry_run_does_not_wait_for_the_lock(ws: WS) -> None:
    co = build(ws)
    with held_lock(co):
        before = snapshot(ws.base)
        start = time.monotonic()
        # The default --lock-timeout is 30 s: a dry run that waited would take that long.
        proc = subprocess.run(aikito(ws, "sync", "project", "demo", "--dry-run", "--json"),
                              capture_output=True, text=True, env=env(), timeout=25)
        elapsed = time.monotonic() - start
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["outcome"] == "planned"
        assert doc["summary"]["create"] == 24
        assert elapsed < 10
        proc = subprocess.run(aikito(ws, "sync", "project", "demo", "--check"),
                              capture_output=True, text=True, env=env(), timeout=25)
        assert proc.returncode == 7
        assert snapshot(ws.base) == before


def test_a_released_lock_lets_the_waiting_writer_through(ws: WS) -> None:
    co = build(ws)
    with held_lock(co):
        proc = subprocess.Popen(aikito(ws, "sync", "project", "demo", "--json",
                                       "--lock-timeout", "30"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env())
        time.sleep(0.5)
        assert proc.poll() is None
        assert not os.path.lexists(f"{co}/.agents")  # nothing written while waiting
    code, doc = finish(proc)
    assert (code, doc["outcome"]) == (0, "applied")


def test_six_concurrent_registering_syncs_register_once(ws: WS) -> None:
    """``sync project demo PATH`` ×6 with PATH unregistered: the first registers and links,
    the others (which read agent.toml before the lock) re-read it under the lock and find
    nothing left to do — not a stale plan.  Regression: they used to exit 3."""
    co = build(ws)
    new = ws.checkout("second")
    config = Path(ws.config_path("demo"))
    with held_lock(new):
        procs = [
            subprocess.Popen(aikito(ws, "sync", "project", "demo", new, "--json"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env())
            for _ in range(6)
        ]
        time.sleep(0.5)
    results = [finish(p) for p in procs]
    assert [code for code, _ in results] == [0] * 6, [d["error"] for _, d in results]
    assert sorted(doc["outcome"] for _, doc in results) == ["applied"] + ["unchanged"] * 5
    assert tomllib.loads(config.read_text())["paths"] == [co, new]
    assert os.readlink(f"{new}/.agents/memory/f00.md") == ws.memory_path("f00.md")
    assert not os.path.lexists(f"{co}/.agents")
