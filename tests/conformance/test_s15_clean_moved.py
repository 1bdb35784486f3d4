"""§15 The life of a link: [L3] ``aikito clean`` (and [L4] a workspace that moved).

Black-box conformance, from SPEC.md alone: see :mod:`tests.conformance`.  Real
``aikito`` processes, a real ``rm -rf`` of a project."""

from __future__ import annotations

import os
import shutil

from tests.conformance._support import TOP_KEYS, run
from tests.helpers.snapshots import snapshot


def _world(w):
    w.mem("a.md")
    w.mem("team/b.md")
    w.notes_current()
    w.agent(memory=["a.md", "team/b.md"])
    (w.ws / "projects" / "demo" / "AGENTS.md").write_text("# rules\n")
    (w.co / "README.md").write_text("mine\n")
    r = w.sync()
    assert r.rc == 0, r
    (w.rt() / "user.md").write_text("the user's\n")
    os.symlink(w.src("team/b.md"), w.rt("a-alias.md"))  # another resource's path: foreign


def _links(root):
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if os.path.islink(os.path.join(dirpath, name)):
                out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def test_L3_clean_project_removes_owned_links_keeps_foreign_second_is_noop(w):
    _world(w)
    toml = w.toml.read_bytes()
    kept = {p: snapshot(p) for p in (w.co / "README.md", w.rt("user.md"), w.rt("a-alias.md"))}
    dry = w.cli("clean", "project", "demo", "--dry-run", "--json")
    assert dry.rc == 0, dry
    assert _links(w.co) == {"AGENTS.md", ".agents/memory/a.md", ".agents/memory/notes",
                            ".agents/memory/team/b.md", ".agents/memory/a-alias.md"}
    doc = dry.json
    assert set(doc) >= TOP_KEYS
    assert doc["schema"] == "aikito.clean/1" and doc["outcome"] == "planned"
    assert {o["status"] for o in doc["operations"]} == {"planned"}
    r = w.cli("clean", "project", "demo", "--json")
    assert r.rc == 0, r
    assert r.json["outcome"] == "applied"
    assert _links(w.co) == {".agents/memory/a-alias.md"}
    assert not (w.rt() / "team").exists()
    for path, snap in kept.items():
        assert snapshot(path) == snap
    assert any(f["path"] == str(w.rt("a-alias.md")) for f in r.json["findings"])
    assert w.toml.read_bytes() == toml
    again = w.cli("clean", "project", "demo", "--json")
    assert again.rc == 0 and again.json["outcome"] == "unchanged"
    assert again.json["summary"]["unlink"] == 0


def test_L3_clean_path_after_the_project_is_deleted(w):
    _world(w)
    shutil.rmtree(w.ws / "projects" / "demo")
    r = w.cli("clean", str(w.co))
    assert r.rc == 0, r
    assert _links(w.co) == {".agents/memory/a-alias.md"}
    assert (w.co / "README.md").read_text() == "mine\n"
    assert w.cli("clean", str(w.co), "--json").json["outcome"] == "unchanged"


def test_L4_a_real_mv_then_moved_from_relinks_in_place(w):
    w.mem("a.md")
    w.mem("team/b.md")
    w.notes_current()
    w.agent(memory=["a.md", "team/b.md"])
    (w.ws / "projects" / "demo" / "AGENTS.md").write_text("# rules\n")
    (w.co / "README.md").write_text("mine\n")
    assert w.sync().rc == 0
    old = str(w.ws)
    new = w.tmp / "ws-moved"
    os.rename(w.ws, new)  # mv ~/aikito ~/ws-moved
    w.ws = new
    # Without the flag: conflicts whose remedy names the flag with the OLD found.
    r = w.sync("--json")
    assert r.rc == 1, r
    remedies = [o.get("remedy") or "" for o in r.json["operations"] if o["action"] == "CONFLICT"]
    assert remedies and all(f"aikito sync --moved-from {old}" in x for x in remedies)
    # The dry run shows the relinks and writes nothing.
    before = snapshot(w.co)
    dry = w.cli("sync", "--moved-from", old, "--dry-run")
    assert dry.rc == 0, dry
    assert f"(relinked from {old})" in dry.out
    assert snapshot(w.co) == before
    r = w.sync("--moved-from", old, "--json")
    assert r.rc == 0, r
    doc = r.json
    assert doc["moved_from"] == old
    relinks = [o for o in doc["operations"] if o["rule"] == "L4"]
    assert len(relinks) == 4 and {o["action"] for o in relinks} == {"CREATE"}
    assert all(o["reason"] == f"relinked from {old}" for o in relinks)
    assert _links(w.co) == {"AGENTS.md", ".agents/memory/a.md", ".agents/memory/notes",
                            ".agents/memory/team/b.md"}
    for rel in _links(w.co):
        assert os.readlink(w.co / rel).startswith(str(new) + "/")
    assert (w.co / "README.md").read_text() == "mine\n"
    again = w.sync("--json")
    assert again.rc == 0 and again.json["outcome"] == "unchanged"


def test_L4_missing_workspace_names_init_and_init_repoints_the_pointer(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    pointer = w.home / ".config" / "aikito" / "workspace"
    pointer.parent.mkdir(parents=True)
    pointer.write_text(f"{w.ws}\n")
    old = str(w.ws)
    new = w.tmp / "ws-moved"
    os.rename(w.ws, new)
    r = run(["sync", "project", "demo"], w.home)
    assert r.rc == 4
    assert "aikito init" in r.err and f"--moved-from {old}" in r.err
    r = run(["init", str(new)], w.home)
    assert r.rc == 0, r
    assert pointer.read_text() == f"{new}\n"
    assert "no longer exists" in r.out
    assert run(["sync", "project", "demo", "--moved-from", old], w.home).rc == 0
