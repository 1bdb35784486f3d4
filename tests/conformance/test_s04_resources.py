"""§4 Resources: [S1]–[S4].

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import os

import pytest

from tests.conformance._support import op_for, ops, run


def test_S1_link_literal_is_lexical_join_of_physical_root(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    # workspace given through a symlink: the literal must use the physical root
    os.symlink(w.ws, w.tmp / "wslink")
    r = run(["--workspace", w.tmp / "wslink", "sync", "project", "demo"], w.home)
    assert r.rc == 0, r
    assert os.readlink(w.rt("team/a.md")) == w.src("team/a.md")


def test_S2_current_notes_win_over_legacy(w):
    cur = w.notes_current()
    w.notes_legacy()
    w.agent(memory=[])
    _, doc = w.jsync("--dry-run")
    (o,) = ops(doc, resource="notes")
    assert o["action"] == "CREATE" and o["source"] == str(cur)


def test_S2_legacy_notes_used_when_project_memory_absent(w):
    leg = w.notes_legacy()
    w.agent(memory=[])
    _, doc = w.jsync("--dry-run")
    (o,) = ops(doc, resource="notes")
    assert o["action"] == "CREATE" and o["source"] == str(leg)
    assert o["target"] == str(w.rt("notes"))


def test_S2_project_memory_dir_without_notes_disables_legacy(w):
    w.notes_legacy()
    (w.ws / "projects" / "demo" / "memory").mkdir()
    (w.ws / "projects" / "demo" / "memory" / "other.md").write_text("o")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    assert doc["operations"] == [], "no notes resource, legacy never consulted [S2]"


def test_S2_project_memory_broken_symlink_disables_legacy(w):
    w.notes_legacy()
    os.symlink(w.tmp / "nowhere", w.ws / "projects" / "demo" / "memory")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    # the root is "not a directory" -> unsafe notes resource -> CONFLICT at notes
    assert all(o["source"] != str(w.ws / "memory" / "demo" / "notes") for o in doc["operations"])
    assert r.rc == 1, r
    (o,) = op_for(doc, w.rt("notes"))
    assert o["action"] == "CONFLICT"


def test_S2_project_memory_regular_file_is_notes_conflict(w):
    w.notes_legacy()
    (w.ws / "projects" / "demo" / "memory").write_text("not a dir")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1, r
    (o,) = op_for(doc, w.rt("notes"))
    assert o["action"] == "CONFLICT"


def test_S2_notes_regular_file_is_conflict(w):
    (w.ws / "projects" / "demo" / "memory").mkdir()
    (w.ws / "projects" / "demo" / "memory" / "notes").write_text("file")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    assert op_for(doc, w.rt("notes"))[0]["action"] == "CONFLICT"


def test_S2_notes_symlink_leaving_project_memory_root_is_conflict(w):
    outside = w.tmp / "outside"
    outside.mkdir()
    (w.ws / "projects" / "demo" / "memory").mkdir()
    os.symlink(outside, w.ws / "projects" / "demo" / "memory" / "notes")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    assert op_for(doc, w.rt("notes"))[0]["action"] == "CONFLICT"


def test_S2_only_notes_exposed(w):
    w.notes_current()
    (w.ws / "projects" / "demo" / "memory" / "scratch.md").write_text("s")
    (w.ws / "projects" / "demo" / "memory" / "other").mkdir()
    w.agent(memory=[])
    _, doc = w.jsync("--dry-run")
    assert [o["target"] for o in doc["operations"]] == [str(w.rt("notes"))]


def test_S4_reference_notes_shadowed_by_project_notes(w):
    w.notes_current()
    w.memdir("notes")
    w.mem("notes/x.md")
    w.agent(memory=["notes"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    skips = [o for o in ops(doc, "SKIP") if o["resource"] == "notes"]
    assert len(skips) == 1, doc["operations"]
    assert skips[0]["reason"] == "shadowed by project notes"
    assert any(f["severity"] == "warning" and "notes" in f["message"] for f in doc["findings"])
    creates = ops(doc, "CREATE")
    assert len(creates) == 1 and creates[0]["source"].endswith("projects/demo/memory/notes")


def test_S4_reference_under_notes_shadowed(w):
    w.notes_current()
    w.mem("notes/x.md")
    w.agent(memory=["notes/x.md"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    (o,) = ops(doc, resource="notes/x.md")
    assert o["action"] == "SKIP" and o["reason"] == "shadowed by project notes"
    assert any(f["severity"] == "warning" for f in doc["findings"])


def test_S4_shadowing_applies_even_when_notes_unsafe(w):
    (w.ws / "projects" / "demo" / "memory").mkdir()
    (w.ws / "projects" / "demo" / "memory" / "notes").write_text("file")
    w.memdir("notes")
    w.agent(memory=["notes"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    skips = [o for o in doc["operations"] if o["action"] == "SKIP"]
    assert skips and skips[0]["reason"] == "shadowed by project notes"


def test_S4_reference_notes_is_ordinary_without_notes_resource(w):
    w.memdir("notes")
    w.agent(memory=["notes"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0
    (o,) = doc["operations"]
    assert o["action"] == "CREATE" and o["source"] == w.src("notes")


@pytest.mark.parametrize("kind", ["link-outside", "broken-link", "fifo", "parent-link-outside",
                                  "missing"])
def test_S3_unsafe_or_missing_source_is_conflict(w, kind):
    outside = w.tmp / "outside"
    outside.mkdir()
    (outside / "s.md").write_text("s")
    ref = "r.md"
    if kind == "link-outside":
        os.symlink(outside / "s.md", w.ws / "memory" / "r.md")
    elif kind == "broken-link":
        os.symlink(w.ws / "memory" / "nothing", w.ws / "memory" / "r.md")
    elif kind == "fifo":
        os.mkfifo(w.ws / "memory" / "r.md")
    elif kind == "parent-link-outside":
        os.symlink(outside, w.ws / "memory" / "sub")
        ref = "sub/s.md"
    w.agent(memory=[ref])
    r, doc = w.jsync("--dry-run", timeout=10)
    assert r.rc == 1, r
    (o,) = op_for(doc, w.rt(ref))
    assert o["action"] == "CONFLICT"
    # AMBIGUOUS: table gives "INV-MEM-02 / 07" for this row; accept either id.
    assert "INV-MEM-02" in o["rule"] or "INV-MEM-07" in o["rule"], o
    if kind == "missing":
        assert "does not exist" in o["reason"]


def test_S3_symlink_staying_inside_root_is_allowed(w):
    w.mem("real/x.md")
    os.symlink(w.ws / "memory" / "real", w.ws / "memory" / "alias")
    w.agent(memory=["alias/x.md"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    (o,) = doc["operations"]
    assert o["action"] == "CREATE" and o["source"] == w.src("alias/x.md")
