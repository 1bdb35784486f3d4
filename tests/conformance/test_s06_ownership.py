"""§6 Runtime targets and ownership: [O1]–[O4].

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest

from tests.conformance._support import AIKITO, clean_env, op_for
from tests.helpers.snapshots import snapshot


def test_O1_relative_literal_owned_is_noop_and_untouched(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    w.rt("team").mkdir(parents=True)
    rel = os.path.relpath(w.src("team/a.md"), w.rt("team"))
    os.symlink(rel, w.rt("team/a.md"))
    r, doc = w.jsync()
    assert r.rc == 0, r
    (o,) = doc["operations"]
    assert o["action"] == "NOOP" and o["rule"] == "INV-MEM-10"
    assert os.readlink(w.rt("team/a.md")) == rel


def test_O1_relative_literal_with_dotdot_normalised_lexically(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    rel = os.path.relpath(w.src("a.md"), w.rt())
    rel = "../memory/" + rel  # .agents/memory/../memory/... normalises to the same path
    os.symlink(rel, w.rt("a.md"))
    _, doc = w.jsync("--dry-run")
    assert doc["operations"][0]["action"] == "NOOP"


def test_O1_absolute_literal_through_symlinked_workspace_is_not_owned(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    os.symlink(w.ws, w.tmp / "wslink")
    w.rt().mkdir(parents=True)
    os.symlink(str(w.tmp / "wslink" / "memory" / "a.md"), w.rt("a.md"))
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1, "ownership is byte-for-byte on the literal, never by following [O1]"
    assert doc["operations"][0]["action"] == "CONFLICT"


def test_O1_trailing_slash_literal_is_not_owned(w):
    w.memdir("d")
    w.agent(memory=["d"])
    w.rt().mkdir(parents=True)
    os.symlink(w.src("d") + "/", w.rt("d"))
    _, doc = w.jsync("--dry-run")
    # AMBIGUOUS: "equals, byte for byte" for absolute literals; a trailing slash is not
    # byte-equal, so a careful checker expects CONFLICT.
    assert doc["operations"][0]["action"] == "CONFLICT"


def test_O1_hard_link_is_conflict_preserved(w):
    src = w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    os.link(src, w.rt("a.md"))
    r, doc = w.jsync()
    assert r.rc == 1, r
    (o,) = doc["operations"]
    assert o["action"] == "CONFLICT" and o["rule"] == "INV-MEM-07"
    assert w.rt("a.md").is_file() and not w.rt("a.md").is_symlink()
    assert os.stat(w.rt("a.md")).st_ino == os.stat(src).st_ino


def test_O3_creates_real_dirs_and_writes_nothing_in_workspace(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    ws_before = snapshot(w.ws, w.home)
    r = w.sync()
    assert r.rc == 0, r
    for p in (w.co / ".agents", w.rt(), w.rt("team")):
        st = os.lstat(p)
        assert stat.S_ISDIR(st.st_mode), p
    assert snapshot(w.ws, w.home) == ws_before


@pytest.mark.parametrize("where", [".agents", ".agents/memory"])
@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_O4_agents_dirs_not_directories_conflict(w, where, kind):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    p = w.co / where
    p.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = w.tmp / "elsewhere"
    elsewhere.mkdir()
    if kind == "symlink":
        os.symlink(elsewhere, p)
    else:
        p.write_text("x")
    before = snapshot(w.co, elsewhere)
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert doc["outcome"] == "blocked"
    assert snapshot(w.co, elsewhere) == before


def test_O4_intermediate_non_directory_conflicts_that_resource(w):
    w.mem("team/a.md")
    w.mem("b.md")
    w.agent(memory=["team/a.md", "b.md"])
    w.rt().mkdir(parents=True)
    w.rt("team").write_text("file in the way")
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    (o,) = op_for(doc, w.rt("team/a.md"))
    assert o["action"] == "CONFLICT"
    (b,) = op_for(doc, w.rt("b.md"))
    assert b["action"] == "CREATE"


def test_O3_permissions_of_existing_entries_unchanged_and_umask_respected(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    w.rt().mkdir(parents=True)
    os.chmod(w.co / ".agents", 0o750)
    os.chmod(w.rt(), 0o700)
    os.chmod(w.co, 0o711)
    assert w.sync().rc == 0
    assert stat.S_IMODE(os.stat(w.co / ".agents").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(w.rt()).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(w.co).st_mode) == 0o711
    shutil.rmtree(w.co / ".agents")
    cp = subprocess.run(["sh", "-c", f'umask 077; exec "{AIKITO}" --workspace "{w.ws}" '
                         "sync project demo"], env=clean_env(w.home), capture_output=True)
    assert cp.returncode == 0
    for p in (w.co / ".agents", w.rt(), w.rt("team")):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0, (p, oct(os.stat(p).st_mode))
