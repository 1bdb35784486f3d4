"""[L6] with [E2], [E3], [E9]: a real sync asks ``git worktree list --porcelain -z`` once
per registered checkout — its plan and its writer's guard share the answers of that one
call — while ``aikito apply PLANFILE`` asks afresh for its guard; the answers are re-used
only for the very plan object the call made with them (a forged answer from anywhere
else is refused), only when they give exactly the checkouts the plan records, and a
worktree removed or replaced between plan and run is a stale plan ([E2], [E3]: its path no
longer names the locked directory).  Counted with a ``git`` on ``PATH`` that logs and runs
the real one."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from aikito_mem.errors import UnsafePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.executor.lock import Locks
from aikito_mem.model import Plan
from aikito_mem.world import git as git_room
from aikito_mem.world.git import Worktree, WorktreeAnswers
from tests.helpers.cli import invoke
from tests.helpers.gitrepo import git, init_repo, needs_git
from tests.helpers.programs import executable
from tests.helpers.workspace import WS

pytestmark = needs_git


@pytest.fixture
def asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """Put a logging ``git`` first on ``PATH``; the returned function gives the
    ``worktree list`` questions asked so far (the directory of each) and forgets them."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "shim-bin"
    log = tmp_path / "git.log"
    executable(shim, "git", f'printf \'%s\\n\' "$*" >> "{log}"\nexec "{real}" "$@"\n')
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")

    def questions() -> list[str]:
        lines = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        out = []
        for line in lines:
            words = line.split(" ")
            if "worktree list --porcelain -z" in line:
                out.append(words[words.index("-C") + 1])
        return out

    return questions


def world(ws: WS) -> tuple[str, str, str, str]:
    """A repository registered as ``main`` with two linked worktrees, and a plain
    directory registered as ``plain``; returns (repo, feature, fix, plain)."""
    ws.add_file("style.md", "s\n")
    repo = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    feature, fix = f"{ws.checkouts_dir}/feature", f"{ws.checkouts_dir}/fix"
    git("worktree", "add", "-q", feature, cwd=repo)
    git("worktree", "add", "-q", fix, cwd=repo)
    plain = ws.checkout("plain")
    ws.write_config("demo", raw=f'worktrees = true\nmemory = ["style.md"]\n'
                    f'[paths]\nmain = "{repo}"\nplain = "{plain}"\n')
    return repo, os.path.realpath(feature), os.path.realpath(fix), plain


def linked(checkout: str) -> bool:
    return os.path.islink(f"{checkout}/.agents/memory/style.md")


def test_a_real_sync_asks_once_per_registered_checkout(
        ws: WS, asked: Callable[[], list[str]]) -> None:
    repo, feature, fix, plain = world(ws)
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["outcome"] == "applied"  # the guard ran
    assert all(linked(co) for co in (repo, feature, fix, plain))
    assert asked() == [repo, plain]


def test_an_explicit_worktree_sync_asks_once_per_registered_checkout(
        ws: WS, asked: Callable[[], list[str]]) -> None:
    repo, feature, fix, plain = world(ws)
    res = invoke("--workspace", ws.root, "sync", "project", "demo", feature)
    assert res.exit_code == 0, res.output
    assert linked(feature) and not linked(fix)
    assert asked() == [repo, plain]
    assert "feature" not in Path(ws.config_path("demo")).read_text()  # never registered


def test_apply_asks_again_for_its_guard(ws: WS, asked: Callable[[], list[str]],
                                        tmp_path: Path) -> None:
    repo, feature, _fix, plain = world(ws)
    planfile = str(tmp_path / "plan.json")
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                 "--out", planfile)
    assert res.exit_code == 0, res.output
    assert asked() == [repo, plain]
    res = invoke("apply", planfile)
    assert res.exit_code == 0, res.output
    assert linked(feature)
    assert asked() == [repo, plain, repo, plain]  # the fresh plan, then the guard


def _gone(worktree: str, repo: str, how: str) -> None:
    git("worktree", "remove", "--force", worktree, cwd=repo)
    if how == "replaced":
        os.mkdir(worktree)  # a plain directory at the worktree's path


def _refused_nothing_written(ws: WS, feature: str, *others: str) -> dict[str, object]:
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert res.exit_code == 4, res.output
    doc = json.loads(res.stdout)
    assert f"checkout {feature} is not one aikito may write to" in res.stdout, doc
    assert not any(linked(co) for co in others)
    assert not os.path.lexists(f"{feature}/.agents")
    return doc


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_worktree_gone_between_plan_and_run_is_stale(
        ws: WS, asked: Callable[[], list[str]], monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    """Gone after the locks and the plan: its path no longer names the locked directory,
    so verification ([E2], [E3]) finds the plan stale before the guard asks git again;
    nothing is written anywhere."""
    repo, feature, fix, plain = world(ws)
    made = WorktreeAnswers.made

    def then_gone(self: WorktreeAnswers, plan: object) -> None:
        _gone(feature, repo, how)
        made(self, plan)

    monkeypatch.setattr(WorktreeAnswers, "made", then_gone)
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert res.exit_code == 3, res.output
    doc = json.loads(res.stdout)
    expected = (f"checkout {feature} no longer exists" if how == "removed"
                else f"checkout {feature} was moved or replaced since planning")
    assert expected in doc["error"]["differences"], doc["error"]
    assert not any(linked(co) for co in (repo, fix, plain))
    assert not os.path.lexists(f"{feature}/.agents")
    assert asked() == [repo, plain]


def test_a_worktree_replaced_before_the_lock_is_refused(
        ws: WS, asked: Callable[[], list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaced by a plain directory after git listed it and before the locks (the
    planner then plans it): the guard sees the directory changed, asks git afresh and
    refuses it; nothing is written anywhere."""
    repo, feature, fix, plain = world(ws)
    ask = WorktreeAnswers.worktrees

    def then_replaced(self: WorktreeAnswers, path: str) -> object:
        found = ask(self, path)
        if path == repo and os.path.lexists(f"{feature}/.git"):  # the first answer
            _gone(feature, repo, "replaced")
        return found

    monkeypatch.setattr(WorktreeAnswers, "worktrees", then_replaced)
    _refused_nothing_written(ws, feature, repo, fix, plain)
    assert asked() == [repo, plain, repo, plain]


def _forged_plan(ws: WS) -> tuple[Plan, WorktreeAnswers, str, str, Locks]:
    """A plan made with answers forged to name a plain directory (``evil``) as a
    worktree of ``repo``: (plan, answers, repo, evil, locks held)."""
    repo, _feature, _fix, _plain = world(ws)
    evil = ws.checkout("evil")
    forged = WorktreeAnswers()
    forged._answers[repo] = (Worktree(repo, main=True), Worktree(evil))
    project = ws.project("demo")
    locks = Locks()
    plan = project.plan_locked(None, register=True, locks=locks, lock_timeout=5.0,
                               worktrees=forged)
    assert ("main@evil", evil) in [(co.label, co.path) for co in plan.checkouts]
    return plan, forged, repo, evil, locks


@pytest.mark.parametrize("bound", ["unbound", "another plan", "api"])
def test_forged_answers_from_outside_the_call_are_refused(ws: WS, bound: str) -> None:
    plan, forged, repo, evil, locks = _forged_plan(ws)
    project = ws.project("demo")
    with pytest.raises(UnsafePlanError) as info:
        if bound == "api":
            locks.release()  # Project.execute takes its own
            project.execute(plan)
        else:
            if bound == "another plan":
                forged.made(project.plan())
            try:
                execute(plan, locks=locks, config=project.config, home=project.home,
                        worktrees=forged)
            finally:
                locks.release()
    assert any(f"checkout {evil} is not one aikito may write to" in r
               for r in info.value.refusals), info.value.refusals
    assert not os.path.lexists(f"{evil}/.agents")
    assert not linked(repo)  # refused before the first write


def test_answers_that_differ_from_the_plan_are_asked_again(
        ws: WS, asked: Callable[[], list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    repo, feature, fix, plain = world(ws)
    made = WorktreeAnswers.made

    def then_forget_feature(self: WorktreeAnswers, plan: object) -> None:
        made(self, plan)
        listed = self._answers[repo]
        assert isinstance(listed, tuple)
        self._answers[repo] = tuple(wt for wt in listed
                                    if os.path.realpath(wt.path) != feature)

    monkeypatch.setattr(WorktreeAnswers, "made", then_forget_feature)
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    assert all(linked(co) for co in (repo, feature, fix, plain))
    assert asked() == [repo, plain, repo, plain]  # the guard asked git afresh


def test_answers_are_asked_once_and_bound_once(ws: WS, asked: Callable[[], list[str]]
                                               ) -> None:
    repo, _feature, _fix, _plain = world(ws)
    answers = WorktreeAnswers()
    first = answers.worktrees(repo)
    assert answers.worktrees(repo) is first
    assert first == git_room.worktrees(repo)
    assert asked() == [repo, repo]
    one, other = object(), object()
    assert answers.for_plan(one) is None
    answers.made(one)
    answers.made(other)
    assert answers.for_plan(one) is answers and answers.for_plan(other) is None
