"""``aikito clean project NAME`` with ``worktrees = true`` ([L3], [L6]): the project's
discovered linked worktrees are checkouts of the project, so they are cleaned too — a
real ``git worktree add``; without ``worktrees`` a worktree is no checkout of the project
and the writer's guard refuses a plan that cleans one."""

from __future__ import annotations

import os

import attrs
import pytest

from aikito_mem.commands.clean import Cleaner
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.errors import UnsafePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.model import CheckoutPlan, CheckoutState
from aikito_mem.world.observe import lstat_link, with_identity
from tests.helpers.gitrepo import git, init_repo, needs_git
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

pytestmark = needs_git


def world(ws: WS, *, worktrees: bool) -> tuple[str, str]:
    """A repository registered for ``demo`` and a linked worktree of it, both synced."""
    ws.add_file("style.md", "s\n")
    ws.add_skill("review")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    wt = f"{ws.checkouts_dir}/feature"
    git("worktree", "add", "-q", "-b", "feature", wt, cwd=co)
    wt = os.path.realpath(wt)
    extra = "worktrees = true\n" if worktrees else ""
    ws.write_config("demo", raw=f'paths = ["{co}"]\nmemory = ["style.md"]\n'
                    f'skills = ["review"]\n{extra}')
    assert ws.project("demo").sync().success
    if not worktrees:  # aikito's link there, as an earlier sync of it left it
        os.makedirs(f"{wt}/.agents/skills")
        os.symlink(f"{ws.root}/skills/review", f"{wt}/.agents/skills/review")
    for where in (co, wt):
        assert os.readlink(f"{where}/.agents/skills/review") == f"{ws.root}/skills/review"
    return co, wt


def cleaner(ws: WS) -> Cleaner:
    return Cleaner(resolve_workspace(ws.root), "demo", None)


def test_clean_project_cleans_the_discovered_worktrees_too(ws: WS) -> None:
    co, wt = world(ws, worktrees=True)
    plan = cleaner(ws).plan()
    assert {c.path for c in plan.checkouts if c.state is CheckoutState.ACTIVE} == {co, wt}
    assert cleaner(ws).run().outcome == "applied"
    for where in (co, wt):
        assert not os.path.lexists(f"{where}/.agents")
        assert not os.path.lexists(f"{where}/AGENTS.md")
    assert git("status", "--porcelain", cwd=wt) == ""
    assert not cleaner(ws).plan().has_changes


def test_without_worktrees_a_worktree_is_not_cleaned_and_a_plan_for_it_refused(
        ws: WS) -> None:
    co, wt = world(ws, worktrees=False)
    plan = cleaner(ws).plan()
    assert {c.path for c in plan.checkouts if c.state is CheckoutState.ACTIVE} == {co}
    # Tampered: the worktree's checkout and its owned link added to the plan.
    other = Cleaner(resolve_workspace(ws.root), "demo", wt).plan()
    root = with_identity(wt, lstat_link(wt))
    extra = CheckoutPlan("x", wt, CheckoutState.ACTIVE, dirs=(("", root),))
    ops = tuple(op for op in other.operations if op.checkout == wt)
    assert ops
    tampered = attrs.evolve(plan, checkouts=(*plan.checkouts, extra),
                            operations=(*plan.operations, *ops))
    before = snapshot(*ws.roots())
    with pytest.raises(UnsafePlanError, match="not one aikito may clean"):
        execute(tampered)
    assert snapshot(*ws.roots()) == before
    cleaner(ws).run()
    assert os.readlink(f"{wt}/.agents/skills/review") == f"{ws.root}/skills/review"
