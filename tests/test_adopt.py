"""``aikito adopt``: a file, a directory, an identical copy replaced by the link, a copy
that differs refused with a diff, a cross-filesystem move (tmpfs), every refusal, other
conflicts that never stop an adoption, failures that are undone or say where the content
is, and the byte-preserving ``memory`` list edit."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from aikito_mem import fsutil
from aikito_mem.api import Project
from aikito_mem.commands.adopt import plan as adopt_plan
from aikito_mem.commands.adopt import treemove
from aikito_mem.commands.adopt.run import adopt
from aikito_mem.config.edit import add_memory_reference
from aikito_mem.errors import ConfigError
from aikito_mem.model import Action
from aikito_mem.render.adopt import json_document
from tests.helpers.cli import invoke
from tests.helpers.programs import executable
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

CONFIG = """\
# the demo project
name = "demo"
paths = [{paths}]  # checkouts
memory = [
    "style.md",  # house style
    "team/a.md",
]

[hooks]
x = 1
"""


def make(ws: WS, checkout: str | None = None) -> tuple[Path, Path]:
    """A workspace with two references linked into one checkout."""
    ws.add_file("style.md", "style\n")
    ws.add_file("team/a.md", "a\n")
    co = checkout or ws.checkout("co")
    os.makedirs(co, exist_ok=True)
    ws.write_config("demo", raw=CONFIG.format(paths=json.dumps(co)))
    ws.project("demo").sync()
    return Path(ws.root), Path(co)


def rt(co: Path) -> Path:
    return co / ".agents" / "memory"


def run(ws: Path, target: Path | str, **kw: Any) -> dict[str, Any]:
    """``adopt`` through the API, as its ``aikito.adopt/1`` document."""
    return json_document(adopt(str(target), str(ws), **kw))


def cli_adopt(ws: Path, *args: str) -> Result:
    return invoke("--workspace", str(ws), "adopt", *args)


def clean(ws: Path, co: Path) -> None:
    """The next sync of the checkout has nothing to do."""
    plan = Project.load("demo", str(ws)).plan(str(co))
    assert not plan.has_changes and not plan.blocked
    assert {op.action for op in plan.operations} == {Action.NOOP}


def config_of(ws: Path) -> str:
    return (ws / "projects" / "demo" / "agent.toml").read_text()


def statuses(d: dict[str, Any]) -> list[str]:
    return [s["status"] for s in d["steps"]]


# -- adopting -----------------------------------------------------------------------------


def test_adopt_a_file(ws: WS) -> None:
    root, co = make(ws)
    (rt(co) / "glossary.md").write_text("terms\n")
    res = cli_adopt(root, str(rt(co) / "glossary.md"), "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["schema"] == "aikito.adopt/1" and d["outcome"] == "adopted"
    assert d["destination"] == f"{root}/memory/glossary.md" and d["reference"] == "glossary.md"
    assert d["method"] == "rename" and d["kind"] == "file"
    assert d["content_at"] == d["destination"]
    assert statuses(d) == ["applied", "applied", "applied"]
    assert d["sync"]["outcome"] == "applied" and d["conflicts"] == []
    assert (root / "memory" / "glossary.md").read_text() == "terms\n"
    assert os.readlink(rt(co) / "glossary.md") == f"{root}/memory/glossary.md"
    # Bytes and comments preserved; one element added.
    assert config_of(root) == CONFIG.format(paths=json.dumps(str(co))).replace(
        '    "team/a.md",\n', '    "team/a.md",\n    "glossary.md",\n')
    clean(root, co)


def test_adopt_a_directory_through_a_relative_path(ws: WS,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws)
    d = rt(co) / "decisions" / "adr"
    (d / "sub").mkdir(parents=True)
    (d / "0001.md").write_text("one\n")
    (d / "sub" / "deep.md").write_bytes(os.urandom(4096))
    os.symlink("0001.md", d / "latest.md")
    before = {p.relative_to(d): p.read_bytes() for p in d.rglob("*") if p.is_file()}
    monkeypatch.chdir(co)
    res = cli_adopt(root, ".agents/memory/decisions/adr")
    assert res.exit_code == 0, res.output
    assert "done: decisions/adr adopted" in res.stdout
    dest = root / "memory" / "decisions" / "adr"
    assert {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()} \
        == before
    assert os.readlink(dest / "latest.md") == "0001.md"
    assert os.path.islink(rt(co) / "decisions" / "adr")
    assert tomllib.loads(config_of(root))["memory"] == ["style.md", "team/a.md",
                                                        "decisions/adr"]
    clean(root, co)


def test_adopt_a_conflicting_reference_already_listed(ws: WS) -> None:
    """A real file where a listed reference's link should be, its source missing."""
    root, co = make(ws)
    text = config_of(root).replace('"team/a.md",', '"team/a.md",\n    "later.md",')
    (root / "projects" / "demo" / "agent.toml").write_text(text)
    (rt(co) / "later.md").write_text("written by an agent\n")
    assert Project.load("demo", str(root)).plan().blocked
    d = run(root, rt(co) / "later.md")
    assert d["outcome"] == "adopted" and d["exit_code"] == 0
    assert statuses(d) == ["applied", "skipped", "applied"]
    assert config_of(root) == text
    clean(root, co)


def test_adopt_without_a_memory_key(ws: WS) -> None:
    root, co = make(ws)
    cfg = root / "projects" / "demo" / "agent.toml"
    cfg.write_text(f'paths = ["{co}"]\n\n# tables\n[hooks]\nx = 1\n')
    (rt(co) / "a.md").write_text("a\n")
    assert run(root, rt(co) / "a.md")["outcome"] == "adopted"
    assert cfg.read_text() == f'paths = ["{co}"]\nmemory = ["a.md"]\n\n# tables\n[hooks]\nx = 1\n'
    # Exactly its own link: the links of the references this config dropped are left
    # for the next sync to unlink.
    assert os.readlink(rt(co) / "a.md") == f"{root}/memory/a.md"
    plan = Project.load("demo", str(root)).plan(str(co))
    assert {op.target for op in plan.changes} == {str(rt(co) / "style.md"),
                                                  str(rt(co) / "team" / "a.md"),
                                                  str(rt(co) / "team")}


def test_dry_run_writes_nothing(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    before = snapshot(tmp_path)
    res = cli_adopt(root, str(rt(co) / "g.md"), "--dry-run")
    assert res.exit_code == 0
    assert "would move" in res.stdout and "dry run: nothing was written" in res.stdout
    d = json.loads(cli_adopt(root, str(rt(co) / "g.md"), "--dry-run", "--json").stdout)
    assert d["outcome"] == "planned" and d["content_at"] == str(rt(co) / "g.md")
    assert statuses(d) == ["planned"] * 3
    assert snapshot(tmp_path) == before


# -- other conflicts of the checkout never stop an adoption -------------------------------


def test_other_conflicts_are_reported_and_the_target_is_linked(ws: WS, tmp_path: Path) -> None:
    """A real file in the way of another reference used to leave the adopted file moved
    into the workspace and the checkout without it (exit 1) after a dry run said 0."""
    root, co = make(ws)
    os.unlink(rt(co) / "style.md")
    (rt(co) / "style.md").write_text("a real file in the way\n")
    os.unlink(rt(co) / "team" / "a.md")  # a pending CREATE of another reference
    (rt(co) / "g.md").write_text("g\n")
    dry = cli_adopt(root, str(rt(co) / "g.md"), "--dry-run")
    assert dry.exit_code == 0 and f"! {rt(co) / 'style.md'}: found a regular file" in dry.stdout
    res = cli_adopt(root, str(rt(co) / "g.md"), "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["outcome"] == "adopted" and statuses(d) == ["applied"] * 3
    assert [c["target"] for c in d["conflicts"]] == [str(rt(co) / "style.md")]
    # Exactly its own target was linked: the other conflict and the other pending link
    # are left for sync.
    assert [op["target"] for op in d["sync"]["operations"]] == [str(rt(co) / "g.md")]
    assert os.readlink(rt(co) / "g.md") == f"{root}/memory/g.md"
    assert (rt(co) / "style.md").read_text() == "a real file in the way\n"
    assert not os.path.lexists(rt(co) / "team" / "a.md")


def test_a_link_the_engine_would_refuse_moves_nothing(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last check is the engine's own plan of the world after the move: with the
    explicit notes check gone, the shadowed reference is still refused, before any write,
    by the dry run and by the real run alike."""
    root, co = make(ws)
    ws.add_notes("demo")
    ws.project("demo").sync()
    os.unlink(rt(co) / "notes")
    (rt(co) / "notes").mkdir()
    monkeypatch.setattr(adopt_plan, "_check_notes", lambda *a: None)
    before = snapshot(tmp_path)
    for dry in (True, False):
        d = run(root, rt(co) / "notes", dry_run=dry)
        assert d["exit_code"] == 1 and d["error"]["code"] == "adopt.link_refused", d
        assert "shadowed by project notes" in d["error"]["message"]
        assert snapshot(tmp_path) == before


def test_a_resume_the_engine_would_not_link_says_where_the_content_stays(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[E5]: TARGET absent, its content at ``<ws>/memory/REL`` as an interrupted adopt
    leaves it — the engine's plan refuses the link (a reference shadowed by the project
    notes, the explicit check gone): ``adopt.link_refused`` naming the destination the
    content stays at, never "once moved"; nothing written."""
    root, co = make(ws)
    ws.add_notes("demo")
    ws.project("demo").sync()
    os.unlink(rt(co) / "notes")
    os.makedirs(ws.memory_path("notes"))
    Path(ws.memory_path("notes"), "n.md").write_text("n\n")
    monkeypatch.setattr(adopt_plan, "_check_notes", lambda *a: None)
    before = snapshot(tmp_path)
    for dry in (True, False):
        d = run(root, rt(co) / "notes", dry_run=dry)
        assert d["exit_code"] == 1 and d["error"]["code"] == "adopt.link_refused", d
        message = d["error"]["message"]
        assert message.startswith(
            f"{rt(co)}/notes could not be linked back to {root}/memory/notes, where an "
            "interrupted adopt left its content — the engine would plan "), message
        assert message.endswith("; nothing was written: the content stays there"), message
        assert "once moved" not in message
        assert snapshot(tmp_path) == before


# -- an identical copy is replaced by the link --------------------------------------------


def test_an_identical_file_is_replaced_by_the_link(ws: WS) -> None:
    root, co = make(ws)
    os.unlink(rt(co) / "style.md")
    (rt(co) / "style.md").write_text("style\n")  # a copy of the listed source
    os.chmod(rt(co) / "style.md", 0o600)  # permission bits are not content
    source = snapshot(root / "memory")
    d = run(root, rt(co) / "style.md")
    assert d["outcome"] == "adopted" and d["method"] == "replace", d
    assert statuses(d) == ["applied", "skipped", "applied"]
    assert os.readlink(rt(co) / "style.md") == f"{root}/memory/style.md"
    assert snapshot(root / "memory") == source
    clean(root, co)


def test_an_identical_tree_is_replaced_and_an_unlisted_one_registered(ws: WS) -> None:
    root, co = make(ws)
    for base in (root / "memory" / "kb", rt(co) / "kb"):
        (base / "sub" / "empty").mkdir(parents=True)
        (base / "a.md").write_text("a\n")
        (base / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
        os.symlink("../a.md", base / "sub" / "link")
    res = cli_adopt(root, str(rt(co) / "kb"))
    assert res.exit_code == 0, res.output
    assert "already there, identical" in res.stdout
    assert os.readlink(rt(co) / "kb") == f"{root}/memory/kb"
    assert tomllib.loads(config_of(root))["memory"][-1] == "kb"
    assert (root / "memory" / "kb" / "sub" / "empty").is_dir()
    clean(root, co)


def test_a_differing_text_file_is_refused_with_a_unified_diff(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    os.unlink(rt(co) / "style.md")
    (rt(co) / "style.md").write_text("style\nedited by an agent\n")
    before = snapshot(tmp_path)
    res = cli_adopt(root, str(rt(co) / "style.md"), "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 1 and d["outcome"] == "refused", d
    assert d["error"]["code"] == "adopt.destination_exists"
    assert d["differences"] == [{"path": "", "what": "content differs (25 bytes in the "
                                 "checkout, 6 in the workspace)"}]
    assert f"--- {root}/memory/style.md\n+++ {rt(co)}/style.md\n" in d["diff"]
    assert "+edited by an agent\n" in d["diff"]
    text = cli_adopt(root, str(rt(co) / "style.md"))
    assert "+edited by an agent" in text.stdout and "merge what you need" in text.stderr
    assert snapshot(tmp_path) == before


def test_a_differing_tree_is_refused_with_the_differing_paths(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    for base in (root / "memory" / "kb", rt(co) / "kb"):
        base.mkdir()
        (base / "same.md").write_text("same\n")
        (base / "blob").write_bytes(b"\0\1" * 10)
    (rt(co) / "kb" / "blob").write_bytes(b"\0\2" * 10)
    (rt(co) / "kb" / "new.md").write_text("new\n")
    os.symlink("same.md", root / "memory" / "kb" / "alias")
    before = snapshot(tmp_path)
    d = run(root, rt(co) / "kb")
    assert d["exit_code"] == 1 and d["error"]["code"] == "adopt.destination_exists"
    assert d["differences"] == [
        {"path": "alias", "what": "only in the workspace (symlink)"},
        {"path": "blob", "what": "content differs"},
        {"path": "new.md", "what": "only in the checkout (regular file)"},
    ]
    assert d["diff"] is None  # the one differing file is binary
    assert snapshot(tmp_path) == before


def test_an_identical_copy_that_changes_before_its_removal_is_kept(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws)
    os.unlink(rt(co) / "style.md")
    copy = rt(co) / "style.md"
    copy.write_text("style\n")
    real = treemove.remove_inventoried

    def late_write(path: str, entries: Any, before_write: Any) -> None:
        with open(copy, "a") as f:
            f.write("appended after the comparison\n")
        real(path, entries, before_write)

    monkeypatch.setattr(treemove, "remove_inventoried", late_write)
    cfg = config_of(root)
    d = run(root, copy)
    assert d["exit_code"] == 3 and d["outcome"] == "stale", d
    assert d["content_at"] == str(copy)
    assert copy.read_text() == "style\nappended after the comparison\n"
    assert config_of(root) == cfg


# -- the one writer of agent.toml ------------------------------------------------------


def test_an_owner_that_cannot_be_kept_refuses_before_anything_moves(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """adopt rewrites agent.toml through config/write's compare-and-swap, whose owner check
    refuses a file the user could not give back its owner — at validation, before the
    content is moved."""
    from aikito_mem.config import write

    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    config = root / "projects" / "demo" / "agent.toml"
    os.chown(config, 4242, 4242)
    before = snapshot(tmp_path)
    monkeypatch.setattr(write.os, "geteuid", lambda: 1000)
    res = cli_adopt(root, str(rt(co) / "g.md"), "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 4 and d["error"]["code"] == "config.register_failed", d
    assert "owner and group (4242:4242)" in d["error"]["message"]
    assert "memory` list by hand" in d["error"]["message"]
    assert snapshot(tmp_path) == before


def test_the_register_step_writes_through_the_compare_and_swap(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner check runs again at the write (an owner changed after validation): the
    register step fails, the content is moved back, agent.toml is untouched."""
    from aikito_mem.config import write

    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    config = root / "projects" / "demo" / "agent.toml"
    cfg = config_of(root)
    real = adopt_plan.validate
    calls: list[int] = []

    def owner_changes(*a: Any, **kw: Any) -> Any:
        out = real(*a, **kw)
        calls.append(1)
        if len(calls) == 2:  # validated, locked, validated again: now the owner changes
            os.chown(config, 4242, 4242)
            monkeypatch.setattr(write.os, "geteuid", lambda: 1000)
        return out

    monkeypatch.setattr(adopt_plan, "validate", owner_changes)
    d = run(root, rt(co) / "g.md")
    assert d["outcome"] == "failed" and d["exit_code"] == 5, d
    assert "owner and group (4242:4242)" in d["error"]["message"]
    assert statuses(d)[:2] == ["undone", "failed"]
    assert config_of(root) == cfg
    assert (rt(co) / "g.md").read_text() == "g\n"


# -- failures after the move are undone --------------------------------------------------


def test_a_register_failure_moves_the_content_back(ws: WS, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    before = snapshot(tmp_path)

    def fail(*_: Any, **__: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil, "atomic_replace", fail)
    res = cli_adopt(root, str(rt(co) / "g.md"), "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 5 and d["outcome"] == "failed", d
    assert d["content_at"] == str(rt(co) / "g.md")
    assert "moved back" in d["error"]["message"] and "nothing changed" in d["error"]["message"]
    assert statuses(d) == ["undone", "failed", "not_applied"]
    after = snapshot(tmp_path)
    # The same file is back (a rename moves its ctime and its directories' times).
    g = str(rt(co) / "g.md")
    assert changed(before, after) == {str(root / "memory"), str(rt(co)), g}
    assert (after[g][1], after[g][5]) == (before[g][1], before[g][5])


def test_a_link_failure_restores_the_list_and_moves_the_content_back(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws)
    (rt(co) / "docs").mkdir()
    (rt(co) / "docs" / "g.md").write_text("g\n")
    cfg = config_of(root)
    real = Project.plan

    def drifted(self: Project, *a: Any, **kw: Any) -> Any:
        plan = real(self, *a, **kw)
        ops = tuple(op.__class__(Action.CONFLICT, op.rule, op.checkout, op.target, "drift")
                    if op.target.endswith("/docs/g.md") else op for op in plan.operations)
        return plan.evolve(operations=ops)

    monkeypatch.setattr(Project, "plan", drifted)
    d = run(root, rt(co) / "docs" / "g.md")
    assert d["exit_code"] == 3 and d["outcome"] == "stale", d
    assert statuses(d) == ["undone", "undone", "failed"]
    assert config_of(root) == cfg
    assert (rt(co) / "docs" / "g.md").read_text() == "g\n"
    assert not os.path.lexists(root / "memory" / "docs")  # the directory it made is gone


def test_a_link_failure_that_cannot_move_back_says_where_the_content_is(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    from aikito_mem.executor import execute

    root, co = make(ws)
    target = rt(co) / "g.md"
    target.write_text("g\n")
    cfg = config_of(root)

    def agent_writes_again(op: Any) -> None:
        target.write_text("a new file, written meanwhile\n")

    monkeypatch.setattr(execute, "before_write", agent_writes_again)
    d = run(root, target)
    assert d["exit_code"] == 3 and d["outcome"] == "partial", d
    assert d["content_at"] == f"{root}/memory/g.md"
    assert f"the content is at {root}/memory/g.md" in d["error"]["message"]
    assert statuses(d) == ["applied", "undone", "failed"]
    assert (root / "memory" / "g.md").read_text() == "g\n"
    assert target.read_text() == "a new file, written meanwhile\n"
    assert config_of(root) == cfg


def test_a_target_replaced_before_the_lock_is_stale(ws: WS,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws)
    target = rt(co) / "g.md"
    target.write_text("g\n")
    real = adopt_plan.validate
    calls: list[int] = []

    def replaced(*a: Any, **kw: Any) -> Any:
        out = real(*a, **kw)
        if not calls:
            target.unlink()
            target.write_text("another file\n")
        calls.append(1)
        return out

    monkeypatch.setattr(adopt_plan, "validate", replaced)
    d = run(root, target)
    assert d["exit_code"] == 3 and d["error"]["code"] == "adopt.stale", d
    assert target.read_text() == "another file\n"
    assert not os.path.lexists(root / "memory" / "g.md")


# -- across filesystems -------------------------------------------------------------------


def test_adopt_across_filesystems(ws: WS, tmpfs: Path) -> None:
    root, co = make(ws, str(tmpfs / "co"))
    assert os.stat(co).st_dev != os.stat(root).st_dev
    (rt(co) / "big.md").write_bytes(os.urandom(3 << 20))
    want = hashlib.sha256((rt(co) / "big.md").read_bytes()).hexdigest()
    tree = rt(co) / "kb"
    (tree / "n" / "empty").mkdir(parents=True)
    (tree / "n" / "x.md").write_text("x\n")
    os.symlink("n/x.md", tree / "x")
    os.link(tree / "n" / "x.md", tree / "x-again.md")  # unlinking one moves the other's ctime
    os.chmod(tree / "n" / "x.md", 0o640)
    d = run(root, rt(co) / "big.md")
    assert d["outcome"] == "adopted" and d["method"] == "copy", d
    assert hashlib.sha256((root / "memory" / "big.md").read_bytes()).hexdigest() == want
    d = run(root, tree)
    assert d["outcome"] == "adopted" and d["method"] == "copy", d
    assert (root / "memory" / "kb" / "n" / "x.md").read_text() == "x\n"
    assert stat.S_IMODE(os.stat(root / "memory" / "kb" / "n" / "x.md").st_mode) == 0o640
    assert os.readlink(root / "memory" / "kb" / "x") == "n/x.md"
    assert (root / "memory" / "kb" / "n" / "empty").is_dir()
    assert sorted(os.listdir(root / "memory")) == ["big.md", "kb", "style.md", "team"]
    assert os.path.islink(rt(co) / "kb") and os.path.islink(rt(co) / "big.md")
    clean(root, co)


def test_a_tree_that_changes_during_the_copy_is_stale(
        ws: WS, tmpfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file removed (or grown) while the tree is copied across filesystems: exit 3, the
    original untouched, no temporary left, nothing registered."""
    root, co = make(ws, str(tmpfs / "co"))
    tree = rt(co) / "kb"
    tree.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (tree / name).write_text(f"{name}\n")
    real = treemove._copy_file
    cfg = config_of(root)

    def racing(src: str, dst: str, entry: Any) -> Any:
        if src.endswith("/a.md"):
            (tree / "c.md").unlink()  # an agent removes a note mid-copy
        if src.endswith("/b.md"):
            with open(src, "a") as f:
                f.write("grown\n")
        return real(src, dst, entry)

    monkeypatch.setattr(treemove, "_copy_file", racing)
    d = run(root, tree)
    assert d["exit_code"] == 3 and d["outcome"] == "stale", d
    assert d["error"]["code"] == "adopt.source_changed"
    assert d["content_at"] == str(tree)
    assert sorted(os.listdir(tree)) == ["a.md", "b.md"]
    assert sorted(os.listdir(root / "memory")) == ["style.md", "team"]
    assert config_of(root) == cfg
    (tree / "c.md").write_text("back\n")  # grown b.md: also stale, caught while reading it
    d = run(root, tree)
    assert d["exit_code"] == 3 and d["outcome"] == "stale", d
    assert (tree / "b.md").read_text() == "b.md\ngrown\ngrown\n"


def test_cross_filesystem_verification_failure_keeps_the_original(
        ws: WS, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws, str(tmpfs / "co"))
    (rt(co) / "deep" / "kb").mkdir(parents=True)
    (rt(co) / "deep" / "kb" / "a.md").write_text("a\n")

    def corrupt(*_: Any) -> None:
        raise OSError(5, "the copy differs from what was read")

    monkeypatch.setattr(treemove, "verify_copy", corrupt)
    before_cfg = config_of(root)
    d = run(root, rt(co) / "deep" / "kb")
    assert d["outcome"] == "failed" and d["exit_code"] == 5
    assert d["content_at"] == str(rt(co) / "deep" / "kb")
    assert "still at" in d["error"]["message"]
    assert statuses(d) == ["failed", "not_applied", "not_applied"]
    assert (rt(co) / "deep" / "kb" / "a.md").read_text() == "a\n"
    # The temporary copy and the directory created for it are removed.
    assert sorted(os.listdir(root / "memory")) == ["style.md", "team"]
    assert config_of(root) == before_cfg


def test_cross_filesystem_removal_keeps_what_changed_after_the_copy(
        ws: WS, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A note an agent writes (or a file it appends to) after the last check survives
    where it was written; the verified copy is complete at the destination."""
    root, co = make(ws, str(tmpfs / "co"))
    tree = rt(co) / "kb"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    (tree / "sub" / "b.md").write_text("b\n")
    real = treemove.remove_inventoried

    def late(path: str, entries: Any, before_write: Any) -> None:
        if path == str(tree):
            (tree / "sub" / "late.md").write_text("written during adopt\n")
            with open(tree / "a.md", "a") as f:
                f.write("appended during adopt\n")
        real(path, entries, before_write)

    monkeypatch.setattr(treemove, "remove_inventoried", late)
    d = run(root, tree)
    assert d["exit_code"] == 5 and d["outcome"] == "partial", d
    assert (tree / "sub" / "late.md").read_text() == "written during adopt\n"
    assert (tree / "a.md").read_text() == "a\nappended during adopt\n"
    assert not (tree / "sub" / "b.md").exists()  # copied and unchanged: removed
    assert (root / "memory" / "kb" / "a.md").read_text() == "a\n"
    assert (root / "memory" / "kb" / "sub" / "b.md").read_text() == "b\n"
    assert d["content_at"] == f"{root}/memory/kb"
    assert str(tree) in d["error"]["message"]


def test_cross_filesystem_refuses_special_files(ws: WS, tmpfs: Path, tmp_path: Path) -> None:
    root, co = make(ws, str(tmpfs / "co"))
    tree = rt(co) / "deep" / "kb"
    tree.mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    os.mkfifo(tree / "pipe")
    before = snapshot(tmp_path)
    d = run(root, tree)
    assert d["outcome"] == "refused" and d["error"]["code"] == "adopt.file_type", d
    assert d["content_at"] == str(tree)
    assert snapshot(tmp_path) == before


# -- refusals: nothing is written, by the dry run and the real run alike ------------------


def refused(ws: Path, target: Path | str, code: str, tmp_path: Path, exit_code: int = 1
            ) -> dict[str, Any]:
    before = snapshot(tmp_path)
    for dry in (["--dry-run"], []):
        res = cli_adopt(ws, str(target), "--json", *dry)
        d: dict[str, Any] = json.loads(res.stdout)
        assert res.exit_code == exit_code, d
        assert d["error"]["code"] == code, d
        assert statuses(d) == ["not_applied"] * 3
        assert snapshot(tmp_path) == before
    return d


def test_refuses_a_symlink(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    refused(root, rt(co) / "style.md", "adopt.symlink", tmp_path)  # aikito's own link
    os.symlink("/etc/hostname", rt(co) / "foreign")
    refused(root, rt(co) / "foreign", "adopt.symlink", tmp_path)


def test_refuses_paths_outside_agents_memory(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    (co / "README.md").write_text("")
    refused(root, co / "README.md", "adopt.outside", tmp_path)
    refused(root, rt(co), "adopt.outside", tmp_path)
    d = refused(root, co, "adopt.outside", tmp_path)  # the checkout root itself
    assert "is the checkout itself" in d["error"]["message"], d
    (co / ".agents" / "other").write_text("")
    refused(root, co / ".agents" / "other", "adopt.outside", tmp_path)
    stranger = tmp_path / "stranger" / ".agents" / "memory"
    stranger.mkdir(parents=True)
    (stranger / "x.md").write_text("")
    d = refused(root, stranger / "x.md", "adopt.not_registered", tmp_path)
    assert "register the checkout first" in d["error"]["message"]
    # Inside aikito's link to a workspace directory: physically outside the checkout.
    (root / "memory" / "team" / "b.md").write_text("")
    refused(root, rt(co) / "team" / "a.md", "adopt.symlink", tmp_path)
    refused(root, rt(co) / "nothing.md", "adopt.missing", tmp_path)


def test_refuses_through_a_symlinked_directory(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    (rt(co) / "real").mkdir()
    (rt(co) / "real" / "x.md").write_text("")
    os.symlink("real", rt(co) / "alias")
    refused(root, rt(co) / "alias" / "x.md", "adopt.through_symlink", tmp_path)


def test_refuses_a_destination_that_is_a_symlink(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    os.symlink("nowhere", root / "memory" / "g.md")
    (rt(co) / "g.md").write_text("mine\n")
    d = refused(root, rt(co) / "g.md", "adopt.destination_exists", tmp_path)
    assert d["differences"] == [{"path": "", "what": "regular file in the checkout, symlink "
                                 "in the workspace"}]


def test_refuses_a_destination_parent_that_is_not_a_directory(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    (root / "memory" / "docs").write_text("a file")
    (rt(co) / "docs").mkdir()
    (rt(co) / "docs" / "x.md").write_text("")
    refused(root, rt(co) / "docs" / "x.md", "adopt.destination_parent", tmp_path)


@pytest.mark.parametrize("name", [" lead.md", "trail ", "ctl\x01.md", "zw\u200b.md"])
def test_refuses_names_violating_c3(ws: WS, tmp_path: Path, name: str) -> None:
    root, co = make(ws)
    (rt(co) / name).write_text("")
    d = refused(root, rt(co) / name, "adopt.reference_invalid", tmp_path)
    assert "[C3]" in d["error"]["message"]


def test_refuses_prefix_and_case_clashes(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    # team/ holds aikito's link for team/a.md: "team" would hold reference "team/a.md".
    (rt(co) / "team" / "b.md").write_text("")
    refused(root, rt(co) / "team", "adopt.reference_clash", tmp_path)
    # kb/a.md is listed but its source is missing: adopting kb/ would swallow it.
    text = config_of(root).replace('"team/a.md",', '"team/a.md",\n    "kb/a.md",')
    (root / "projects" / "demo" / "agent.toml").write_text(text)
    (rt(co) / "kb").mkdir()
    (rt(co) / "kb" / "a.md").write_text("")
    d = refused(root, rt(co) / "kb", "adopt.reference_clash", tmp_path)
    assert "inside memory reference" in d["error"]["message"]
    # docs is listed (source missing): a file below it cannot become a reference.
    text = config_of(root).replace('"kb/a.md",', '"docs",')
    (root / "projects" / "demo" / "agent.toml").write_text(text)
    (rt(co) / "docs").mkdir()
    (rt(co) / "docs" / "x.md").write_text("")
    d = refused(root, rt(co) / "docs" / "x.md", "adopt.reference_clash", tmp_path)
    assert "inside memory reference 'docs'" in d["error"]["message"]
    (rt(co) / "Style.md").write_text("")
    d = refused(root, rt(co) / "Style.md", "adopt.reference_clash", tmp_path)
    assert "case folding" in d["error"]["message"]


def test_refuses_the_notes_runtime_path_and_the_legacy_notes_location(
        ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    # Legacy notes (no projects/demo/memory): memory/demo/notes is the notes source.
    (rt(co) / "demo").mkdir()
    (rt(co) / "demo" / "notes").mkdir()
    refused(root, rt(co) / "demo" / "notes", "adopt.notes", tmp_path)
    (root / "projects" / "demo" / "memory" / "notes").mkdir(parents=True)
    (rt(co) / "notes").mkdir()
    refused(root, rt(co) / "notes", "adopt.notes", tmp_path)


def test_refuses_to_rewrite_a_symlinked_agent_toml(ws: WS, tmp_path: Path) -> None:
    """A dotfile manager's link: the dry run refuses what the real run refuses."""
    root, co = make(ws)
    cfg = root / "projects" / "demo" / "agent.toml"
    real = tmp_path / "dotfiles" / "agent.toml"
    real.parent.mkdir()
    real.write_bytes(cfg.read_bytes())
    cfg.unlink()
    cfg.symlink_to(real)
    (rt(co) / "g.md").write_text("g\n")
    d = refused(root, rt(co) / "g.md", "config.memory_edit_failed", tmp_path, exit_code=4)
    assert "symlink" in d["error"]["message"]


def test_ambiguous_checkout_needs_project(ws: WS, tmp_path: Path) -> None:
    root, co = make(ws)
    ws.write_config("twin", raw=f'paths = ["{co}"]\n')
    (rt(co) / "g.md").write_text("g\n")
    d = refused(root, rt(co) / "g.md", "adopt.ambiguous_project", tmp_path)
    assert "--project" in d["error"]["message"]
    res = cli_adopt(root, str(rt(co) / "g.md"), "--project", "demo")
    assert res.exit_code == 0, res.output
    assert (root / "memory" / "g.md").read_text() == "g\n"


def test_workspace_error_exit_4(tmp_path: Path) -> None:
    res = cli_adopt(tmp_path / "none", str(tmp_path), "--json")
    assert res.exit_code == 4
    assert json.loads(res.stdout)["error"]["code"] == "config.workspace_missing"


def test_an_unexaminable_target_is_reported_not_a_traceback(ws: WS) -> None:
    """An OSError while examining TARGET (ENAMETOOLONG here; EACCES, ELOOP alike)."""
    root, co = make(ws)
    res = cli_adopt(root, str(rt(co) / ("a" * 300)), "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 5 and d["exit_code"] == 5, d
    assert d["error"]["code"] == "adopt.examine_failed"
    assert statuses(d) == ["not_applied"] * 3


def test_busy_checkout_exit_6(ws: WS, tmp_path: Path) -> None:
    import fcntl

    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    fd = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        before = snapshot(tmp_path)
        res = cli_adopt(root, str(rt(co) / "g.md"), "--lock-timeout", "0", "--json")
        assert res.exit_code == 6
        d = json.loads(res.stdout)
        assert d["outcome"] == "busy" and d["content_at"] == str(rt(co) / "g.md")
        assert snapshot(tmp_path) == before
    finally:
        os.close(fd)


# -- the memory list edit -----------------------------------------------------------------


def test_agent_toml_changed_meanwhile_is_recomputed(ws: WS,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Compare-and-swap: another process edits agent.toml between validation and the
    write; the edit is recomputed from the new bytes, which are kept."""
    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    cfg = root / "projects" / "demo" / "agent.toml"
    real = adopt_plan.validate
    calls: list[int] = []

    def edited_meanwhile(*a: Any, **kw: Any) -> Any:
        out = real(*a, **kw)
        calls.append(1)
        if len(calls) == 2:
            cfg.write_text(cfg.read_text() + "# a comment added by hand\n")
        return out

    monkeypatch.setattr(adopt_plan, "validate", edited_meanwhile)
    d = run(root, rt(co) / "g.md")
    assert d["outcome"] == "adopted", d
    text = cfg.read_text()
    assert text.endswith("# a comment added by hand\n")
    assert tomllib.loads(text)["memory"] == ["style.md", "team/a.md", "g.md"]


@pytest.mark.parametrize(("old", "new"), [
    ('memory = []\n', 'memory = ["x"]\n'),
    ('memory = [ ]  # none\n', 'memory = [ "x" ]  # none\n'),
    ('memory = ["a", "b",]\n', 'memory = ["a", "b", "x",]\n'),
    ('memory = [\n  "a",  # c\n]\n', 'memory = [\n  "a",  # c\n  "x",\n]\n'),
    ('memory = [\n  "a"\n]\n', 'memory = [\n  "a",\n  "x"\n]\n'),
    ('name = "p"\n', 'name = "p"\nmemory = ["x"]\n'),
    ('', 'memory = ["x"]\n'),
    ('# top\n\n# about t\n[t]\nk = 1\n', '# top\n\nmemory = ["x"]\n# about t\n[t]\nk = 1\n'),
    ('memory = ["a"] # ] tricky\n[paths]\nl = "/x"\n',
     'memory = ["a", "x"] # ] tricky\n[paths]\nl = "/x"\n'),
])
def test_add_memory_reference(old: str, new: str) -> None:
    assert add_memory_reference(old, "x") == new
    assert tomllib.loads(new)["memory"] == [*tomllib.loads(old).get("memory", []), "x"]


def test_add_memory_reference_escapes_and_refuses_odd_layouts() -> None:
    out = add_memory_reference('memory = []\n', 'q"uote\\.md')
    assert tomllib.loads(out)["memory"] == ['q"uote\\.md']
    with pytest.raises(ConfigError):
        add_memory_reference('[x]\nmemory = []\nmemory2 = 1\n[memory]\n', "a")


# -- the command line ---------------------------------------------------------------------


def test_a_signal_noticed_after_the_adoption_keeps_what_was_done(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    import aikito_mem.commands.adopt.run

    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")
    real = aikito_mem.commands.adopt.run.adopt

    def then_signalled(*a: Any, **kw: Any) -> Any:
        report = real(*a, **kw)
        os.kill(os.getpid(), signal.SIGINT)
        return report

    monkeypatch.setattr(aikito_mem.commands.adopt.run, "adopt", then_signalled)
    res = cli_adopt(root, str(rt(co) / "g.md"), "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 130 and d["outcome"] == "interrupted", d
    assert statuses(d) == ["applied"] * 3
    assert os.readlink(rt(co) / "g.md") == f"{root}/memory/g.md"


def test_an_unexpected_error_is_one_document_not_a_traceback_on_stdout(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    root, co = make(ws)
    (rt(co) / "g.md").write_text("g\n")

    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(adopt_plan, "validate", broken)
    for args in (["--json"], ["--json", "--dry-run"]):
        res = cli_adopt(root, str(rt(co) / "g.md"), *args)
        d = json.loads(res.stdout)
        assert res.exit_code == 5 and d["error"]["code"] == "internal", d
        assert d["dry_run"] is (args[-1] == "--dry-run")
        assert statuses(d) == ["not_applied"] * 3
    assert (rt(co) / "g.md").read_text() == "g\n"


def test_adopt_links_with_the_runs_environment(ws: WS) -> None:
    """[H5]: ``adopt(…, environ=ENV)`` links through the executor with ``ENV``'s ``PATH``
    and home, as it validated and planned: an agent detected only on ``ENV``'s ``PATH``
    is no difference at verification, and ``~`` expands with ``ENV``'s home."""
    bin_dir = Path(ws.base) / "their-bin"
    executable(bin_dir, "their-agent")
    os.makedirs(f"{ws.root}/agents")
    Path(f"{ws.root}/agents/their-agent.toml").write_text(
        '[agents.their-agent]\nproject_instruction_path = ".their/AGENTS.md"\n'
        '[agents.their-agent.detect]\ncommands = ["their-agent"]\n')
    home = f"{ws.base}/their-home"
    co = Path(home) / "code" / "demo"
    os.makedirs(co)
    ws.add_file("style.md", "style\n")
    ws.write_config("demo", memory=["style.md"], paths=["~/code/demo"])
    Path(f"{ws.root}/projects/demo/AGENTS.md").write_text("# demo\n")
    environ = {"HOME": home, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    # Not synced: the instruction target is planned, so detection is asked and recorded.
    rt(co).mkdir(parents=True)
    (rt(co) / "glossary.md").write_text("terms\n")
    d = run(Path(ws.root), rt(co) / "glossary.md", environ=environ)
    assert d["outcome"] == "adopted" and statuses(d) == ["applied", "applied", "applied"]
    assert os.readlink(rt(co) / "glossary.md") == f"{ws.root}/memory/glossary.md"
    assert not os.path.lexists(co / ".their")  # exactly TARGET's CREATE was executed
