"""A directory that appears, vanishes or is replaced between a plan and its run ([E2]).

A per-agent skills directory ([N1], ``.claude/skills``), the registry entry naming it,
``.agents/memory``, an instruction target's parent, or an entry that appears in a
directory the plan prunes: for a clean ([L3]) and for a sync alike, the plan is stale —
exit 3, every difference named, nothing written (the whole tree snapshotted before and
after) — and never the guard's refusal (exit 4), which stays the last line for a plan
that names a place aikito must never write ([E9]).  Each change is injected between the
plan and its execution: in process (``plan()`` then ``execute``), through ``aikito clean``
(its planning under the lock wrapped) and through ``aikito apply`` of a saved plan.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli
from aikito_mem.commands import clean as clean_mod
from aikito_mem.commands.clean import Cleaner
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.errors import StalePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.model import Action, Plan
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

#: Claude Code reading a project's skills from ``.claude/skills``; never detected here.
CLAUDE = ('[agents.claude-code]\nproject_skills_path = ".claude/skills"\n\n'
          '[agents.claude-code.detect]\ncommands = []\npaths = []\n')
SKILLS = ["review", "lint"]

Mutation = Callable[[WS, str], None]


def world(ws: WS, *, claude_dir: bool, sync_next: bool) -> str:
    """A checkout synced with two skills (linked in ``.claude/skills`` too when
    ``claude_dir``); with ``sync_next`` a third skill is selected, so the next sync's
    plan writes (a plan without writes is never verified, [§12])."""
    for s in SKILLS:
        ws.add_skill(s)
    co = ws.checkout("app")
    ws.write_config("demo", paths=[co], skills=SKILLS)
    ws.add_agent("claude-code", CLAUDE)
    if claude_dir:
        os.makedirs(f"{co}/.claude/skills")
    assert ws.project("demo").sync().success
    assert os.path.islink(f"{co}/.agents/skills/review")
    assert os.path.islink(f"{co}/.claude/skills/review") is claude_dir
    if sync_next:
        ws.add_skill("docs")
        ws.write_config("demo", paths=[co], skills=[*SKILLS, "docs"])
    return co


def skill_link(ws: WS, at: str, name: str = "review") -> None:
    os.symlink(f"{ws.root}/skills/{name}", at)


# -- the changes ----------------------------------------------------------------------


def skills_dir_added(ws: WS, co: str) -> None:
    os.makedirs(f"{co}/.claude/skills")
    skill_link(ws, f"{co}/.claude/skills/review")


def skills_dir_removed(ws: WS, co: str) -> None:
    shutil.rmtree(f"{co}/.claude/skills")


def skills_dir_to_symlink(ws: WS, co: str) -> None:
    os.rename(f"{co}/.claude/skills", f"{ws.base}/elsewhere")
    os.symlink(f"{ws.base}/elsewhere", f"{co}/.claude/skills")


def skills_dir_to_another_dir(ws: WS, co: str) -> None:
    os.rename(f"{co}/.claude/skills", f"{co}/.claude/old")
    os.mkdir(f"{co}/.claude/skills")
    for name in SKILLS:
        skill_link(ws, f"{co}/.claude/skills/{name}", name)


def registry_adds_a_skills_dir(ws: WS, co: str) -> None:
    ws.add_agent("cursor", CLAUDE.replace("claude-code", "cursor").replace(".claude",
                                                                           ".cursor"))


def registry_drops_the_skills_dir(ws: WS, co: str) -> None:
    ws.add_agent("claude-code", CLAUDE.replace('project_skills_path = ".claude/skills"\n',
                                               ""))


def registry_moves_the_skills_dir(ws: WS, co: str) -> None:
    ws.add_agent("claude-code", CLAUDE.replace(".claude/skills", ".claude/skillz"))


REGISTRY = "skills directories of the agent registry changed"

#: case → (the change, whether ``.claude/skills`` exists when planning, a difference).
CASES: dict[str, tuple[Mutation, bool, str]] = {
    "skills dir added": (skills_dir_added, False,
                         "/.claude/skills is now a directory (was nothing)"),
    "skills dir removed": (skills_dir_removed, True,
                           "/.claude/skills is now nothing (was a directory)"),
    "skills dir replaced by a symlink": (skills_dir_to_symlink, True,
                                         "/.claude/skills is now a symlink to "),
    "skills dir replaced by another": (skills_dir_to_another_dir, True,
                                       "/.claude/skills is now another directory"),
    "registry adds a skills dir": (registry_adds_a_skills_dir, True, REGISTRY),
    "registry drops the skills dir": (registry_drops_the_skills_dir, True, REGISTRY),
    "registry moves the skills dir": (registry_moves_the_skills_dir, True, REGISTRY),
}


def assert_stale(info: pytest.ExceptionInfo[StalePlanError], expected: str) -> None:
    exc = info.value
    assert exc.exit_code == 3
    assert any(expected in d for d in exc.differences), exc.differences
    for d in exc.differences:
        assert d in exc.message
    assert exc.result is not None and exc.result.outcome == "stale"
    assert {s.value for s in exc.result.statuses} == {"not_applied"}


def stale_and_untouched(ws: WS, run: Callable[[], object], expected: str) -> None:
    """``run()`` (the plan's execution) raises :class:`StalePlanError` as
    :func:`assert_stale` describes, and the whole tree is as it was before it."""
    before = snapshot(*ws.roots())
    with pytest.raises(StalePlanError) as info:
        run()
    assert snapshot(*ws.roots()) == before
    assert_stale(info, expected)


def cleaner(ws: WS) -> Cleaner:
    return Cleaner(resolve_workspace(ws.root), "demo", None)


def writes(plan: Plan) -> set[Action]:
    return {op.action for op in plan.operations} & {Action.CREATE, Action.UNLINK}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_clean_planned_before_the_change_is_stale(ws: WS, case: str) -> None:
    mutate, claude_dir, expected = CASES[case]
    co = world(ws, claude_dir=claude_dir, sync_next=False)
    plan = cleaner(ws).plan()
    assert writes(plan) == {Action.UNLINK}
    mutate(ws, co)
    stale_and_untouched(ws, lambda: execute(plan), expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_sync_planned_before_the_change_is_stale(ws: WS, case: str) -> None:
    mutate, claude_dir, expected = CASES[case]
    co = world(ws, claude_dir=claude_dir, sync_next=True)
    project = ws.project("demo")
    plan = project.plan()
    assert Action.CREATE in writes(plan)
    mutate(ws, co)
    stale_and_untouched(ws, lambda: project.execute(plan), expected)


# -- what a clean prunes ([L3]) and a sync prunes ([P2]) --------------------------------


def memory_dir_added(ws: WS, co: str) -> None:
    os.makedirs(f"{co}/.agents/memory")
    os.symlink(f"{ws.root}/memory/x.md", f"{co}/.agents/memory/x.md")


def instruction_parent_added(ws: WS, co: str) -> None:
    os.mkdir(f"{co}/.gemini")
    os.symlink(f"{ws.root}/projects/demo/AGENTS.md", f"{co}/.gemini/GEMINI.md")


def own_skill_in_a_pruned_dir(ws: WS, co: str) -> None:
    Path(co, ".claude", "skills", "my-own").mkdir()


def settings_in_a_pruned_parent(ws: WS, co: str) -> None:
    Path(co, ".claude", "settings.json").write_text("{}\n")


PRUNES: dict[str, tuple[Mutation, str]] = {
    ".agents/memory added": (memory_dir_added,
                             "/.agents/memory is now a directory (was nothing)"),
    "an instruction target's parent added": (instruction_parent_added,
                                             "/.gemini is now a directory (was nothing)"),
    "an entry in a pruned skills dir": (own_skill_in_a_pruned_dir,
                                        "/.claude/skills now holds 'my-own', which the plan "
                                        "does not remove"),
    "an entry in a pruned parent": (settings_in_a_pruned_parent,
                                    "/.claude now holds 'settings.json', which the plan "
                                    "does not remove"),
}


@pytest.mark.parametrize("case", sorted(PRUNES))
def test_a_clean_whose_pruned_directories_changed_is_stale_before_any_write(
        ws: WS, case: str) -> None:
    mutate, expected = PRUNES[case]
    co = world(ws, claude_dir=True, sync_next=False)
    ws.add_agent("gemini", '[agents.gemini]\nproject_instruction_path = ".gemini/GEMINI.md"\n')
    plan = cleaner(ws).plan()
    pruned = {op.target[len(co) + 1:] for op in plan.operations if op.entry == "directory"}
    assert pruned == {".agents", ".agents/skills", ".claude", ".claude/skills"}
    mutate(ws, co)
    stale_and_untouched(ws, lambda: execute(plan), expected)


def test_a_clean_planned_without_agents_is_stale_when_it_appears(ws: WS) -> None:
    co = world(ws, claude_dir=True, sync_next=False)
    shutil.rmtree(f"{co}/.agents")
    plan = cleaner(ws).plan()
    assert writes(plan) == {Action.UNLINK}  # in .claude/skills
    os.makedirs(f"{co}/.agents/skills")
    skill_link(ws, f"{co}/.agents/skills/review")
    stale_and_untouched(ws, lambda: execute(plan),
                        "/.agents is now a directory (was nothing)")


def test_a_sync_whose_pruned_directory_gained_an_entry_is_stale_before_any_write(
        ws: WS) -> None:
    ws.add_file("team/a.md", "a\n")
    co = ws.checkout("app")
    ws.write_config("demo", memory=["team/a.md"], paths=[co])
    assert ws.project("demo").sync().success
    ws.write_config("demo", memory=[], paths=[co])
    project = ws.project("demo")
    plan = project.plan()
    assert {(op.entry, op.target[len(co) + 1:]) for op in plan.operations
            if op.action is Action.UNLINK} == {("link", ".agents/memory/team/a.md"),
                                               ("directory", ".agents/memory/team")}
    Path(co, ".agents", "memory", "team", "mine.txt").write_text("mine\n")
    stale_and_untouched(ws, lambda: project.execute(plan),
                        "/.agents/memory/team now holds 'mine.txt'")


# -- through the command line ----------------------------------------------------------


def stale_document(stdout: str, expected: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    assert (doc["outcome"], doc["exit_code"], doc["error"]["code"]) == ("stale", 3,
                                                                         "sync.stale")
    assert any(expected in d for d in doc["error"]["differences"]), doc["error"]
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}
    return doc


@pytest.mark.parametrize("case", ["skills dir removed", "skills dir replaced by a symlink",
                                  "registry moves the skills dir"])
def test_aikito_clean_changed_under_its_lock_exits_3(
        ws: WS, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    mutate, claude_dir, expected = CASES[case]
    co = world(ws, claude_dir=claude_dir, sync_next=False)
    planned = Cleaner._plan
    seen: dict[str, Any] = {}

    def plan_then_change(self: Cleaner, *args: Any) -> Plan:
        plan = planned(self, *args)
        mutate(ws, co)  # another process, between the plan and the first write
        seen["before"] = snapshot(*ws.roots())
        return plan

    monkeypatch.setattr(clean_mod.Cleaner, "_plan", plan_then_change)
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "clean", "project", "demo",
                                   "--json"], catch_exceptions=False)
    assert res.exit_code == 3, res.output
    stale_document(res.stdout, expected)
    assert snapshot(*ws.roots()) == seen["before"]


@pytest.mark.parametrize("case", ["skills dir added", "skills dir replaced by a symlink",
                                  "registry drops the skills dir"])
def test_aikito_apply_of_a_sync_planned_before_the_change_exits_3(ws: WS, case: str
                                                                   ) -> None:
    mutate, claude_dir, expected = CASES[case]
    co = world(ws, claude_dir=claude_dir, sync_next=True)
    planfile = f"{ws.base}/plan.toml"
    runner = CliRunner()
    res = runner.invoke(cli, ["--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                              "--out", planfile, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    mutate(ws, co)
    before = snapshot(*ws.roots())
    res = runner.invoke(cli, ["apply", planfile, "--json"], catch_exceptions=False)
    assert res.exit_code == 3, res.output
    stale_document(res.stdout, expected)
    assert snapshot(*ws.roots()) == before
