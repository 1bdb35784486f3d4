"""``aikito clean`` in the per-agent skills directories ([L3], [N1]).

Real checkouts synced first, then cleaned: the links ``<checkout>/.claude/skills/<name>``
→ ``<ws>/skills/<name>`` go, the directory and its parent ``.claude`` are pruned when the
clean emptied them, an agent's own skills are kept byte- and inode-identical and listed,
and the writer's guard accepts exactly these removals.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest

from aikito_mem.commands.clean import Cleaner
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.errors import UnsafePlanError
from aikito_mem.executor import guard
from aikito_mem.executor.execute import execute
from aikito_mem.model import Action, Operation, Plan, SegmentName
from aikito_mem.planner.clean import place, prune_segment
from aikito_mem.world.observe import lstat_link
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

CLAUDE = ('[agents.claude-code]\nproject_skills_path = ".claude/skills"\n\n'
          '[agents.claude-code.detect]\ncommands = []\npaths = []\n')
_SKILLS = SegmentName.SKILLS


def synced(ws: WS) -> str:
    """A checkout whose ``.claude/skills`` holds aikito's links to review and lint."""
    for s in ("review", "lint"):
        ws.add_skill(s)
    co = ws.checkout("app")
    ws.write_config("demo", paths=[co], skills=["review", "lint"])
    ws.add_agent("claude-code", CLAUDE)
    os.makedirs(f"{co}/.claude/skills")
    assert ws.project("demo").sync().success
    assert os.readlink(f"{co}/.claude/skills/review") == f"{ws.root}/skills/review"
    return co


def cleaner(ws: WS, project: str | None = "demo", path: str | None = None) -> Cleaner:
    return Cleaner(resolve_workspace(ws.root), project, path)


def test_place_and_prune_know_the_per_agent_skills_directories() -> None:
    dirs = frozenset({".claude/skills"})
    assert place(".claude/skills/review", frozenset(), dirs) == (_SKILLS, "review")
    assert place(".claude/skills/review", frozenset()) is None
    assert place(".claude/skills/a/b", frozenset(), dirs) is None
    assert place(".claude/other/review", frozenset(), dirs) is None
    assert place(".claude/skills/..", frozenset(), dirs) is None
    assert place(".claude/skills/", frozenset(), dirs) is None
    assert prune_segment(".claude/skills", frozenset(), dirs) == (_SKILLS, True)
    assert prune_segment(".claude", frozenset(), dirs) == (_SKILLS, True)
    assert prune_segment(".claude", frozenset()) is None
    assert prune_segment(".git", frozenset(), dirs) is None


def test_clean_removes_the_links_and_prunes_the_emptied_directories(ws: WS) -> None:
    co = synced(ws)
    result = cleaner(ws).run()
    assert result.outcome == "applied"
    assert not os.path.lexists(f"{co}/.claude")  # .claude/skills, then .claude: emptied
    assert not os.path.lexists(f"{co}/.agents")
    again = cleaner(ws).run()
    assert again.outcome == "unchanged" and not again.plan.has_changes


def test_an_agents_own_skills_are_kept_identical_and_listed(ws: WS) -> None:
    co = synced(ws)
    own = Path(co, ".claude", "skills", "my-own")
    own.mkdir()
    (own / "SKILL.md").write_text("# mine\n")
    os.symlink(f"{ws.root}/skills/lint", f"{co}/.claude/skills/alias")  # another name's
    Path(co, ".claude", "settings.json").write_text("{}\n")
    kept = snapshot(own, Path(co, ".claude", "settings.json"))
    alias = lstat_link(f"{co}/.claude/skills/alias")
    plan = cleaner(ws).plan()
    assert {f.path for f in plan.findings if f.code == "clean.foreign_entry"} >= {
        f"{co}/.claude/skills/my-own", f"{co}/.claude/skills/alias"}
    cleaner(ws).run()
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["alias", "my-own"]
    assert sorted(os.listdir(f"{co}/.claude")) == ["settings.json", "skills"]
    assert snapshot(own, Path(co, ".claude", "settings.json")) == kept
    assert lstat_link(f"{co}/.claude/skills/alias") == alias


def test_an_empty_skills_directory_the_clean_did_not_empty_is_kept(ws: WS) -> None:
    co = synced(ws)
    for s in ("review", "lint"):
        os.unlink(f"{co}/.claude/skills/{s}")
    cleaner(ws).run()
    assert os.listdir(f"{co}/.claude/skills") == []


def test_clean_path_owns_a_link_whose_literal_is_the_skill_of_its_name(ws: WS) -> None:
    co = synced(ws)
    os.unlink(ws.config_path("demo"))
    plan = cleaner(ws, project=None, path=co).plan()
    guard.check(plan)
    cleaner(ws, project=None, path=co).run()
    assert not os.path.lexists(f"{co}/.claude")


def _unlink(co: str, rel: str, entry: str = "link") -> Operation:
    path = f"{co}/{rel}"
    return Operation(Action.UNLINK, "L3", co, path, "tampered", observed=lstat_link(path),
                     entry=entry, segment=_SKILLS)


def _with(plan: Plan, op: Operation) -> Plan:
    return attrs.evolve(plan, operations=(*plan.operations, op))


@pytest.mark.parametrize("case", ["another name's link", "a user directory",
                                  "a directory outside", "an unregistered directory",
                                  "a directory nothing emptied"])
def test_the_guard_refuses_a_tampered_op(ws: WS, case: str) -> None:
    co = synced(ws)
    os.symlink(f"{ws.root}/skills/lint", f"{co}/.claude/skills/alias")
    Path(co, ".claude", "skills", "mine").mkdir()
    os.makedirs(f"{co}/.codex/skills")
    os.symlink(f"{ws.root}/skills/lint", f"{co}/.codex/skills/lint")
    os.makedirs(f"{co}/.cursor/skills")  # registered, empty: nothing of the clean's in it
    ws.add_agent("cursor", CLAUDE.replace("claude-code", "cursor").replace(".claude",
                                                                           ".cursor"))
    plan = cleaner(ws).plan()
    guard.check(plan)  # what the planner plans, the guard accepts
    op = {
        "another name's link": _unlink(co, ".claude/skills/alias"),
        "a user directory": _unlink(co, ".claude/skills/mine", "directory"),
        "a directory outside": _unlink(co, ".codex/skills", "directory"),
        "an unregistered directory": _unlink(co, ".codex/skills/lint"),
        "a directory nothing emptied": _unlink(co, ".cursor/skills", "directory"),
    }[case]
    before = snapshot(*ws.roots())
    with pytest.raises(UnsafePlanError):
        execute(_with(plan, op))
    assert snapshot(*ws.roots()) == before


def test_a_dry_run_writes_nothing(ws: WS) -> None:
    co = synced(ws)
    before = snapshot(*ws.roots())
    plan = cleaner(ws).plan()
    assert any(op.target == f"{co}/.claude/skills/review" for op in plan.operations)
    assert snapshot(*ws.roots()) == before
