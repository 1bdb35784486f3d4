"""§8 Execution: [E1]–[E9].

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.conformance._support import (
    AIKITO,
    apply_plan,
    assert_schema,
    clean_env,
    hold_lock,
    save_plan,
)
from tests.helpers.snapshots import snapshot


def test_E1_blocked_exit_1_nothing_written(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "missing.md"])
    r, doc = w.jsync()
    assert r.rc == 1 and doc["outcome"] == "blocked"
    assert doc["segments"]["memory"]["success"] is False
    assert not (w.co / ".agents").exists()


def test_E2_apply_after_memory_list_edit_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    plan = save_plan(w)
    w.agent(memory=["a.md", "b.md"])
    r, doc = apply_plan(w, plan)
    assert r.rc == 3, r
    assert_schema(doc, 3)
    assert doc["outcome"] == "stale"
    assert not (w.co / ".agents").exists()
    assert "memory" in json.dumps(doc["error"]), doc["error"]


def test_E2_source_deleted_and_recreated_is_stale(w):
    w.mem("a.md")
    w.memdir("d")
    w.agent(memory=["a.md", "d"])
    plan = save_plan(w)
    shutil.rmtree(w.ws / "memory" / "d")
    w.memdir("d")
    r, doc = apply_plan(w, plan)
    assert r.rc == 3, r
    assert doc["outcome"] == "stale"
    assert not (w.co / ".agents").exists()


def test_E2_target_appeared_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md", "b.md"])
    plan = save_plan(w)
    w.rt().mkdir(parents=True)
    w.rt("b.md").write_text("appeared")
    before = snapshot(w.co)
    r, _ = apply_plan(w, plan)
    assert r.rc == 3, r
    assert snapshot(w.co) == before


def test_E2_noop_target_tampered_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=["a.md", "b.md"])
    plan = save_plan(w)
    os.unlink(w.rt("a.md"))
    w.rt("a.md").write_text("now a regular file")
    r, _ = apply_plan(w, plan)
    assert r.rc == 3, r
    assert not os.path.lexists(w.rt("b.md"))


def test_E2_project_memory_appearing_is_stale(w):
    w.notes_legacy()
    w.agent(memory=[])
    plan = save_plan(w)
    (w.ws / "projects" / "demo" / "memory").mkdir()
    r, _ = apply_plan(w, plan)
    assert r.rc == 3, r
    assert not (w.co / ".agents").exists()


def test_E2_editing_source_content_does_not_invalidate(w):
    a = w.mem("a.md")
    d = w.memdir("d")
    w.agent(memory=["a.md", "d"])
    plan = save_plan(w)
    a.write_text("edited content, longer than before\n")
    (d / "new-note.md").write_text("added")
    r, doc = apply_plan(w, plan)
    assert r.rc == 0, r
    assert doc["outcome"] == "applied"
    assert os.readlink(w.rt("a.md")) == str(a)


def test_E2_apply_applies_exactly_and_statuses(w):
    w.mem("a.md")
    w.agent(memory=["a.md"], paths=[str(w.co), str(w.tmp / "off")])
    plan = save_plan(w)
    r, doc = apply_plan(w, plan)
    assert r.rc == 0, r
    assert_schema(doc, 0)
    st = {o["action"]: o["status"] for o in doc["operations"]}
    assert st == {"CREATE": "applied", "SKIP": "skipped"}
    r, doc = apply_plan(w, plan)
    assert r.rc == 3, "re-applying an executed plan: the target appeared -> stale"


def test_E3_busy_exit_6_with_held_flock(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    try:
        t0 = time.monotonic()
        r, doc = w.jsync("--lock-timeout", "0.2")
        assert r.rc == 6, r
        assert time.monotonic() - t0 < 10
        assert_schema(doc, 6)
        assert doc["outcome"] == "busy"
        assert "busy" in (json.dumps(doc["error"]) + r.err).lower()
        assert not (w.co / ".agents").exists()
        # dry runs take no lock
        r = w.sync("--dry-run", "--lock-timeout", "0.2")
        assert r.rc == 0, r
        # apply takes the lock before verification
        plan = save_plan(w)
        r, doc = apply_plan(w, plan, "--lock-timeout", "0.2")
        assert r.rc == 6, r
        assert not (w.co / ".agents").exists()
    finally:
        os.close(fd)
    assert w.sync("--lock-timeout", "0.2").rc == 0


def test_E3_no_lock_file_created(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    before = set(os.listdir(w.co)), set(os.listdir(w.home))
    assert w.sync().rc == 0
    assert set(os.listdir(w.co)) - before[0] == {".agents"}
    assert set(os.listdir(w.home)) == before[1]


def test_E6_second_sync_changes_nothing(w):
    w.mem("team/a.md")
    w.memdir("d")
    w.notes_current()
    w.agent(memory=["team/a.md", "d"])
    assert w.sync().rc == 0
    before = snapshot(w.co, w.ws, w.home)
    time.sleep(0.02)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert doc["outcome"] == "unchanged"
    assert {o["action"] for o in doc["operations"]} == {"NOOP"}
    assert {o["status"] for o in doc["operations"]} == {"unchanged"}
    assert snapshot(w.co, w.ws, w.home) == before


def test_E7_dry_run_zero_writes_and_out_is_only_write(w):
    w.mem("team/a.md")
    w.notes_legacy()
    w.agent(memory=["team/a.md"])
    new = w.tmp / "newco"
    new.mkdir()
    before = snapshot(w.co, w.ws, w.home, new)
    r = w.sync("--dry-run")
    assert r.rc == 0
    r = w.sync(new, "--dry-run", "--json")
    assert r.rc == 0
    r = w.sync("--check")
    assert r.rc == 7
    out = w.tmp / "p.toml"
    assert w.sync("--dry-run", "--out", out).rc == 0
    assert snapshot(w.co, w.ws, w.home, new) == before
    assert out.exists()


def test_E7_api_plan_writes_nothing(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    before = snapshot(w.co, w.ws, w.home)
    Project.load("demo", workspace=str(w.ws)).plan()
    assert snapshot(w.co, w.ws, w.home) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits; cannot provoke EACCES")
def test_E5_permission_failure_exit_5(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    os.chmod(w.rt(), 0o555)
    try:
        r, doc = w.jsync()
        assert r.rc == 5, r
        assert doc["outcome"] == "failed"
        assert "Traceback" not in r.err
        assert {o["status"] for o in doc["operations"]} <= {"applied", "not_applied", "unknown"}
    finally:
        os.chmod(w.rt(), 0o755)


def test_E8_segments_memory(w):
    w.agent(memory=[])
    _, doc = w.jsync()
    assert doc["segments"]["memory"]["success"] is True


def test_E5_write_failure_exit_5_statuses(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md", "b.md"])
    w.rt().mkdir(parents=True)
    cp = subprocess.run(["chattr", "+i", str(w.rt())], capture_output=True)
    if cp.returncode != 0:
        pytest.skip("cannot make a directory immutable here")
    try:
        r, doc = w.jsync()
    finally:
        subprocess.run(["chattr", "-i", str(w.rt())])
    assert r.rc == 5, r
    assert_schema(doc, 5)
    assert doc["outcome"] == "failed"
    assert doc["segments"]["memory"]["success"] is False
    assert "Traceback" not in r.err
    assert {o["status"] for o in doc["operations"]} <= {"applied", "not_applied", "unknown"}
    # running again converges
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "applied"


def test_E3_lock_taken_before_planning(w):
    """[E3] a sync waiting for the lock plans only after it gets it: it then finds the
    work done by the holder (unchanged), not a stale plan."""
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    try:
        p = subprocess.Popen([AIKITO, "--workspace", str(w.ws), "sync", "project", "demo",
                              "--json", "--lock-timeout", "10"], env=clean_env(w.home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        assert p.poll() is None, "sync must wait for the held lock"
        w.rt().mkdir(parents=True)
        os.symlink(w.src("a.md"), w.rt("a.md"))
    finally:
        os.close(fd)
    out, err = p.communicate(timeout=15)
    assert p.returncode == 0, (out, err)
    assert json.loads(out)["outcome"] == "unchanged"


def test_E3_concurrent_syncs_serialise(w):
    w.mem("a.md")
    w.mem("d/b.md")
    w.agent(memory=["a.md", "d/b.md"])
    ps = [subprocess.Popen([AIKITO, "--workspace", str(w.ws), "sync", "project", "demo",
                            "--json"], env=clean_env(w.home), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outcomes = []
    for p in ps:
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0, (out, err)
        outcomes.append(json.loads(out)["outcome"])
    assert sorted(outcomes) == ["applied", "unchanged", "unchanged", "unchanged"]


def test_E3_check_takes_no_lock(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    try:
        assert w.sync("--check", "--lock-timeout", "0").rc == 7
    finally:
        os.close(fd)


def test_E2_every_difference_named(api_env):
    w = api_env
    import aikito_mem as m
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md", "b.md"])
    w.rt().mkdir(parents=True)
    plan = m.Project.load("demo", workspace=str(w.ws)).plan()
    w.agent(memory=["a.md"])
    w.rt("b.md").write_text("appeared")
    with pytest.raises(m.StalePlanError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).execute(plan)
    diffs = list(ei.value.differences)
    assert len(diffs) >= 2, diffs
    text = " ".join(map(str, diffs))
    assert "memory" in text and "b.md" in text
    assert w.rt("b.md").read_text() == "appeared"


def test_E2_checkout_vanished_is_stale_and_never_created(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = save_plan(w)
    shutil.rmtree(w.co)
    r, doc = apply_plan(w, plan)
    assert r.rc == 3 and doc["outcome"] == "stale", r
    assert not w.co.exists()


def test_E2_noop_source_deleted_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=["a.md", "b.md"])
    plan = save_plan(w)
    os.unlink(w.src("a.md"))
    r, _ = apply_plan(w, plan)
    assert r.rc == 3, r
    assert not os.path.lexists(w.rt("b.md"))


def test_E2_file_source_recreated_is_stale(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = save_plan(w)
    os.unlink(w.src("a.md"))
    w.mem("a.md")
    r, _ = apply_plan(w, plan)
    assert r.rc == 3, r
    assert not (w.co / ".agents").exists()


def test_E2_offline_checkout_appearing_after_plan_is_not_touched(w):
    w.mem("a.md")
    off = w.tmp / "off"
    w.agent(memory=["a.md"], paths=[str(w.co), str(off)])
    plan = save_plan(w)
    off.mkdir()
    r, _doc = apply_plan(w, plan)
    # [K3] the active/offline split is frozen in the plan
    assert r.rc in (0, 3), r
    assert os.listdir(off) == []


def test_E1_apply_of_blocked_plan(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    plan = w.tmp / "p.toml"
    r = w.sync("--dry-run", "--out", plan)
    assert r.rc == 1
    if not plan.exists():
        return
    r, doc = apply_plan(w, plan)
    assert r.rc == 1 and doc["outcome"] == "blocked"
    assert not (w.co / ".agents").exists()
