"""A workspace that moved ([L4]): ``--moved-from OLD`` relinks, in one atomic rename of a
fresh symlink over each, every link whose literal is byte-exactly ``OLD`` + the remainder
of its canonical path; without the flag such links stay conflicts whose remedy names the
flag; a killed relink leaves nothing the next run does not remove.

Real ``mv`` of a workspace; foreign entries asserted byte- and inode-identical.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import pytest

from aikito_mem import Project
from aikito_mem.errors import ConfigError, StalePlanError, UnsafePlanError
from aikito_mem.executor import execute as execute_mod
from aikito_mem.executor.execute import execute
from aikito_mem.executor.planfile import read_plan, write_plan
from aikito_mem.layout import relink_base, relink_name, relink_path
from aikito_mem.model import Action, Operation, Plan
from aikito_mem.planner.moved import moved_literal, old_root, relink_target
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

# =================================================================== pure rules


def test_relink_names() -> None:
    assert relink_name("a.md") == ".a.md.aikito-relink"
    assert relink_base(".a.md.aikito-relink") == "a.md"
    assert relink_base("a.md") is None and relink_base("..aikito-relink") is None
    assert relink_target("team/.b.md.aikito-relink") == "team/b.md"
    assert relink_target("team/b.md") is None
    assert relink_path("team/b.md") == "team/.b.md.aikito-relink"
    assert relink_path("AGENTS.md") == ".AGENTS.md.aikito-relink"


def test_moved_literal_and_old_root() -> None:
    assert moved_literal("/old", "/new", "/new/memory/a.md") == "/old/memory/a.md"
    assert moved_literal(None, "/new", "/new/memory/a.md") is None
    assert moved_literal("/old", "/new", "/elsewhere/a.md") is None
    from aikito_mem.model import Kind, Observed

    def link(lit: str) -> Observed:
        return Observed(Kind.LINK, lit)

    assert old_root(link("/old/ws/memory/a.md"), "/new/memory/a.md", "/new") == "/old/ws"
    assert old_root(link("/new/memory/a.md"), "/new/memory/a.md", "/new") is None
    assert old_root(link("/x/memory/b.md"), "/new/memory/a.md", "/new") is None
    assert old_root(link("../memory/a.md"), "/new/memory/a.md", "/new") is None


# =================================================================== a real move


class World:
    """A workspace synced into a checkout (every segment), then ``mv``-ed."""

    def __init__(self, ws: WS) -> None:
        self.ws = ws
        ws.add_file("team/a.md", "a\n")
        ws.add_file("g.md", "g\n")
        ws.add_notes("demo")
        ws.add_skill("review")
        ws.write_instructions("demo", "# be nice\n")
        ws.add_agent("codex", '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n')
        self.co = ws.checkout("main")
        Path(self.co, "README.md").write_text("mine\n")
        ws.write_config("demo", memory=["team/a.md", "g.md"], paths=[self.co],
                        skills=["review"])
        ws.project("demo").sync()
        self.outside = f"{ws.base}/outside"
        os.makedirs(self.outside)
        Path(self.outside, "x.md").write_text("x\n")
        os.symlink(f"{self.outside}/x.md", f"{self.co}/.agents/memory/mine.md")
        self.old = ws.root
        self.new = f"{ws.base}/ws-moved"
        os.rename(self.old, self.new)  # mv ~/aikito ~/ws-moved

    def project(self) -> Project:
        return Project.load("demo", workspace=self.new)

    def literals(self) -> dict[str, str]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.co):
            for name in dirnames + filenames:
                path = f"{dirpath}/{name}"
                if os.path.islink(path):
                    out[path[len(self.co) + 1:]] = os.readlink(path)
        return out

    def foreign(self) -> dict[str, Any]:
        return {p: snapshot(f"{self.co}/{p}") for p in ("README.md", ".agents/memory/mine.md")}


@pytest.fixture
def w(ws: WS) -> World:
    return World(ws)


MOVED = {".agents/memory/g.md": "memory/g.md", ".agents/memory/notes":
         "projects/demo/memory/notes", ".agents/memory/team/a.md": "memory/team/a.md",
         ".agents/skills/review": "skills/review", "AGENTS.md": "projects/demo/AGENTS.md"}


def test_without_the_flag_every_moved_link_is_a_conflict_naming_the_flag(w: World) -> None:
    plan = w.project().plan()
    conflicts = [op for op in plan.operations if op.action is Action.CONFLICT]
    assert {op.target[len(w.co) + 1:] for op in conflicts} == set(MOVED)
    for op in conflicts:
        assert op.remedy is not None
        assert f"aikito sync --moved-from {w.old}" in op.remedy, op.remedy


def test_moved_from_relinks_every_segment_in_place(w: World) -> None:
    before = w.foreign()
    inodes = {rel: os.lstat(f"{w.co}/{rel}").st_ino for rel in MOVED}
    plan = w.project().plan(moved_from=w.old)
    assert plan.moved_from == w.old
    relinks = [op for op in plan.operations if op.rule == "L4"]
    assert {op.target[len(w.co) + 1:] for op in relinks} == set(MOVED)
    for op in relinks:
        assert op.action is Action.CREATE
        assert op.reason == f"relinked from {w.old}"
        assert op.observed.literal == f"{w.old}/{MOVED[op.target[len(w.co) + 1:]]}"
    result = w.project().sync(moved_from=w.old)
    assert result.outcome == "applied"
    literals = w.literals()
    for rel, src in MOVED.items():
        assert literals[rel] == f"{w.new}/{src}"
        assert os.lstat(f"{w.co}/{rel}").st_ino != inodes[rel]  # a fresh link, renamed
    assert {p: snapshot(f"{w.co}/{p}") for p in before} == before
    assert not [n for n in literals if "aikito-relink" in n]
    # Converged: a plain sync has nothing to do.
    again = w.project().plan()
    assert {op.action for op in again.operations} <= {Action.NOOP, Action.SKIP}


def test_a_link_into_another_root_is_not_relinked(w: World) -> None:
    """Byte-exact: OLD + the remainder, nothing looser (a trailing slash on the flag is
    dropped; another spelling of OLD is not the same literal)."""
    plan = w.project().plan(moved_from=w.old + "/")
    assert plan.moved_from == w.old
    plan = w.project().plan(moved_from=f"{w.ws.base}/./ws")
    assert not [op for op in plan.operations if op.rule == "L4"]


@pytest.mark.parametrize("bad", ["relative/old", "/", "/x\x01y"])
def test_a_bad_moved_from_is_a_configuration_error(w: World, bad: str) -> None:
    with pytest.raises(ConfigError, match="--moved-from"):
        w.project().plan(moved_from=bad)


def test_moved_from_the_workspace_itself_is_refused(w: World) -> None:
    with pytest.raises(ConfigError, match="the workspace itself"):
        w.project().plan(moved_from=w.new)


def test_a_link_changed_after_planning_is_stale_nothing_written(w: World) -> None:
    plan = w.project().plan(moved_from=w.old)
    target = f"{w.co}/.agents/memory/g.md"
    os.unlink(target)
    os.symlink(f"{w.outside}/x.md", target)
    before = snapshot(str(w.ws.base))
    with pytest.raises(StalePlanError):
        w.project().execute(plan)
    assert snapshot(str(w.ws.base)) == before


def test_a_kill_between_the_fresh_link_and_the_rename_leaves_nothing_behind(
        w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fresh link exists under its relink name when the run dies; the next run owns
    it (its literal is the canonical path of the name it stands for), removes it and
    relinks."""
    real_rename = os.rename

    def killed(src: Any, dst: Any, **kw: Any) -> None:
        raise KeyboardInterrupt  # the process dies after the symlink, before the rename

    monkeypatch.setattr(os, "rename", killed)
    with pytest.raises(KeyboardInterrupt):
        w.project().sync(moved_from=w.old)
    monkeypatch.setattr(os, "rename", real_rename)
    # The executor removes its temporary link on the way out; a SIGKILL would not: put
    # it back as a killed run leaves it.
    temp = f"{w.co}/.agents/skills/{relink_name('review')}"
    if not os.path.lexists(temp):
        os.symlink(f"{w.new}/skills/review", temp)
    nested = f"{w.co}/.agents/memory/team/{relink_name('a.md')}"
    os.symlink(f"{w.new}/memory/team/a.md", nested)
    instr = f"{w.co}/{relink_name('AGENTS.md')}"
    os.symlink(f"{w.new}/projects/demo/AGENTS.md", instr)
    plan = w.project().plan(moved_from=w.old)
    leftovers = {op.target for op in plan.operations if op.action is Action.UNLINK}
    assert {temp, nested, instr} <= leftovers
    w.project().sync(moved_from=w.old)
    assert not [n for n in w.literals() if "aikito-relink" in n]
    assert w.literals()["AGENTS.md"] == f"{w.new}/projects/demo/AGENTS.md"


@pytest.mark.parametrize(("rel", "segment"), [
    (f".agents/memory/{relink_name('g.md')}", "memory"),
    (f".agents/memory/team/{relink_name('a.md')}", "memory"),
    (f".agents/skills/{relink_name('review')}", "skills"),
    (relink_name("AGENTS.md"), "instructions"),
])
def test_a_foreign_entry_at_a_relink_name_is_a_conflict_dry_run_and_real_run_alike(
        w: World, rel: str, segment: str) -> None:
    """[L8]: the user's own file at aikito's temporary relink name is never touched and is
    planned — a CONFLICT naming it, in the dry run and the real run alike — where the dry
    run said 0 and every real run stopped stale (exit 3) at the relink."""
    temp = f"{w.co}/{rel}"
    Path(temp).write_text("mine\n")
    before = snapshot(temp)
    dry = invoke("--workspace", w.new, "sync", "project", "demo", "--moved-from", w.old,
                 "--dry-run", "--json", catch=True)
    real = invoke("--workspace", w.new, "sync", "project", "demo", "--moved-from", w.old,
                  "--json", catch=True)
    assert dry.exit_code == real.exit_code == 1, (dry.output, real.output)
    for doc in (one_json(dry.stdout), one_json(real.stdout)):
        conflicts = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
        assert [(op["target"], op["segment"]) for op in conflicts] == [(temp, segment)]
        assert "relink name" in conflicts[0]["reason"]
    assert snapshot(temp) == before  # byte- and inode-identical
    # The other segments were relinked; the blocked one wrote nothing.
    for path, src in MOVED.items():
        blocked = (segment == "memory" and path.startswith(".agents/memory")) or (
            segment == "skills" and path.startswith(".agents/skills")) or (
            segment == "instructions" and path == "AGENTS.md")
        assert w.literals()[path] == f"{w.old if blocked else w.new}/{src}"
    os.unlink(temp)
    assert w.project().sync(moved_from=w.old).outcome == "applied"


# =================================================================== saved plans, guard


def test_apply_replans_with_the_old_root_the_plan_records(w: World, tmp_path: Path) -> None:
    out = str(tmp_path / "plan.toml")
    write_plan(w.project().plan(moved_from=w.old), out)
    saved = read_plan(out)
    assert saved.moved_from == w.old
    res = invoke("apply", out, "--json")
    assert res.exit_code == 0, res.output
    assert one_json(res.stdout)["moved_from"] == w.old
    assert w.literals()["AGENTS.md"] == f"{w.new}/projects/demo/AGENTS.md"


def _relink(plan: Plan, rel: str) -> Operation:
    return next(op for op in plan.operations if op.target.endswith(rel) and op.rule == "L4")


def test_the_guard_refuses_a_relink_it_would_not_derive(w: World) -> None:
    """A relink is accepted only over the link whose literal is the plan's OLD + the
    remainder of the canonical source it writes ([E9], [L4])."""
    config = Path(w.new, "projects", "demo", "agent.toml")
    config.write_text(config.read_text().replace('"g.md"', '"g.md", "mine.md"'))
    plan = w.project().plan(moved_from=w.old)
    target = f"{w.co}/.agents/memory/mine.md"
    # The user's own link at a wanted target, recorded as it is: a relink over it.
    conflict = next(op for op in plan.operations if op.target == target)
    assert conflict.action is Action.CONFLICT
    tampered = attrs.evolve(plan, operations=tuple(
        attrs.evolve(op, action=Action.CREATE, rule="L4", remedy=None)
        if op.target == target else op for op in plan.operations))
    before = snapshot(str(w.ws.base))
    with pytest.raises(UnsafePlanError, match="a relink replaces only the link"):
        execute(tampered)
    assert snapshot(str(w.ws.base)) == before
    # A plan claiming another old root than its relinks' links have.
    other = attrs.evolve(plan, moved_from="/somewhere/else")
    with pytest.raises(UnsafePlanError, match="a relink replaces only the link"):
        execute(other)
    assert snapshot(str(w.ws.base)) == before


def test_without_the_guard_the_tampered_relink_would_replace_the_users_link(
        w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from aikito_mem.executor import guard

    config = Path(w.new, "projects", "demo", "agent.toml")
    config.write_text(config.read_text().replace('"g.md"', '"g.md", "mine.md"'))
    plan = w.project().plan(moved_from=w.old)
    target = f"{w.co}/.agents/memory/mine.md"
    tampered = attrs.evolve(plan, operations=tuple(
        attrs.evolve(op, action=Action.CREATE, rule="L4", remedy=None)
        if op.target == target else op for op in plan.operations))
    monkeypatch.setattr(guard, "check", lambda plan, **kw: None)
    execute(tampered)
    assert os.readlink(target) == f"{w.new}/memory/mine.md"


# =================================================================== the command line


def test_cli_moved_from_on_sync_project_and_bare_sync(w: World) -> None:
    res = invoke("--workspace", w.new, "sync", "project", "demo", "--json")
    assert res.exit_code == 1
    doc = one_json(res.stdout)
    assert any(f"--moved-from {w.old}" in (op.get("remedy") or "")
               for op in doc["operations"])
    res = invoke("--workspace", w.new, "sync", "--moved-from", w.old, "--dry-run")
    assert res.exit_code == 0, res.output
    assert f"(relinked from {w.old})" in res.stdout
    res = invoke("--workspace", w.new, "sync", "project", "demo", "--moved-from", w.old,
                 "--json")
    assert res.exit_code == 0, res.output
    doc = one_json(res.stdout)
    assert doc["moved_from"] == w.old
    assert sum(op["rule"] == "L4" for op in doc["operations"]) == len(MOVED)
    assert w.literals()["AGENTS.md"] == f"{w.new}/projects/demo/AGENTS.md"


def test_the_missing_workspace_error_names_aikito_init(w: World) -> None:
    res = invoke("--workspace", w.old, "sync", "project", "demo")
    assert res.exit_code == 4
    assert "aikito init" in res.stderr and "--moved-from" in res.stderr


def test_a_link_replaced_just_before_the_rename_is_never_renamed_over(
        w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """[E4]/[L4]: the old link is re-read just before the rename; a link the user put
    there after verification is kept, the run stops stale, and the fresh link is gone."""
    target = f"{w.co}/.agents/memory/g.md"
    swapped: list[str] = []

    def swap(op: Operation) -> None:
        if op.target == target and not swapped:
            os.unlink(target)
            os.symlink(f"{w.outside}/x.md", target)
            swapped.append(target)

    monkeypatch.setattr(execute_mod, "before_write", swap)
    with pytest.raises(StalePlanError):
        w.project().sync(moved_from=w.old)
    assert swapped and os.readlink(target) == f"{w.outside}/x.md"
    assert not os.path.lexists(f"{w.co}/.agents/memory/{relink_name('g.md')}")


def test_a_moved_from_that_still_holds_a_workspace_is_refused(w: World) -> None:
    """Links into a workspace that exists are that workspace's: OLD must be gone."""
    os.makedirs(f"{w.old}/projects")
    with pytest.raises(ConfigError, match="still holds a workspace"):
        w.project().plan(moved_from=w.old)
    plan = w.project().plan()
    assert not any("--moved-from" in (op.remedy or "") for op in plan.operations)


def test_the_guard_refuses_a_relink_into_a_workspace_that_exists(w: World) -> None:
    plan = w.project().plan(moved_from=w.old)
    os.makedirs(f"{w.old}/projects")  # the old root holds a workspace again
    before = snapshot(str(w.ws.base))
    with pytest.raises(UnsafePlanError, match="a relink replaces only the link"):
        execute(plan)
    assert snapshot(str(w.ws.base)) == before
