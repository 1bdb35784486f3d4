"""[L6] ``worktrees = true``: every linked git worktree of each active registered
checkout is a checkout too (label ``<label>@<directory name>``), found with one
``git worktree list --porcelain -z`` per registered checkout, none without the key;
never written to ``agent.toml``; a missing worktree is offline; the key's type and its
near misses ([C6])."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aikito_mem.errors import ConfigError
from aikito_mem.world.git import parse_worktrees
from tests.helpers.cli import invoke
from tests.helpers.gitrepo import git, init_repo, needs_git
from tests.helpers.workspace import WS


def world(ws: WS, *, key: str | None = "worktrees = true") -> tuple[str, str, str]:
    """A repository registered as ``main`` with two linked worktrees (``feature``,
    ``fix``); returns (repo, feature, fix)."""
    ws.add_file("style.md", "s\n")
    repo = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    feature, fix = f"{ws.checkouts_dir}/feature", f"{ws.checkouts_dir}/fix"
    git("worktree", "add", "-q", feature, cwd=repo)
    git("worktree", "add", "-q", fix, cwd=repo)
    text = f'memory = ["style.md"]\n[paths]\nmain = "{repo}"\n'
    if key is not None:
        text = f"{key}\n{text}"
    ws.write_config("demo", raw=text)
    return repo, os.path.realpath(feature), os.path.realpath(fix)


def sync(ws: WS, *args: str) -> tuple[int, dict[str, object]]:
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json", *args)
    return res.exit_code, json.loads(res.stdout)


def checkouts(doc: dict[str, object]) -> list[tuple[str, str, str]]:
    found = doc["checkouts"]
    assert isinstance(found, list)
    return [(c["label"], c["path"], c["state"]) for c in found]


@needs_git
def test_every_linked_worktree_is_a_checkout(ws: WS) -> None:
    repo, feature, fix = world(ws)
    config = Path(ws.config_path("demo")).read_bytes()
    code, doc = sync(ws)
    assert code == 0, doc
    assert checkouts(doc) == [("main", repo, "active"), ("main@feature", feature, "active"),
                              ("main@fix", fix, "active")]
    for co in (repo, feature, fix):
        assert os.readlink(f"{co}/.agents/memory/style.md") == f"{ws.root}/memory/style.md"
    assert Path(ws.config_path("demo")).read_bytes() == config  # never written
    code, again = sync(ws)
    assert code == 0 and again["outcome"] == "unchanged"


@needs_git
def test_without_the_key_worktrees_are_not_checkouts(ws: WS) -> None:
    repo, _feature, _fix = world(ws, key=None)
    _code, doc = sync(ws, "--dry-run")
    assert checkouts(doc) == [("main", repo, "active")]
    _code, doc = sync(ws, "--dry-run")
    ws.write_config("demo", raw=f'worktrees = false\nmemory = []\npaths = ["{repo}"]\n')
    _code, doc = sync(ws, "--dry-run")
    assert [c[0] for c in checkouts(doc)] == ["1"]


def _git_calls(ws: WS, *args: str) -> list[list[str]]:
    calls: list[list[str]] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[bytes], argv: object, *a: object, **kw: object) -> None:
        if isinstance(argv, list):
            calls.append([str(x) for x in argv])
        real(self, argv, *a, **kw)  # type: ignore[arg-type]

    subprocess.Popen.__init__ = spy  # type: ignore[method-assign]
    try:
        invoke("--workspace", ws.root, "sync", "project", "demo", *args)
    finally:
        subprocess.Popen.__init__ = real  # type: ignore[method-assign]
    return calls


@needs_git
def test_one_worktree_list_per_registered_checkout_none_without_the_key(ws: WS) -> None:
    repo, _feature, _fix = world(ws)
    plain = ws.checkout("plain")
    offline = f"{ws.checkouts_dir}/gone"
    ws.write_config("demo", raw=f'worktrees = true\nmemory = ["style.md"]\n'
                    f'paths = ["{repo}", "{plain}", "{offline}"]\n')
    invoke("--workspace", ws.root, "sync", "project", "demo")  # everything linked
    calls = _git_calls(ws, "--dry-run")
    assert [c[c.index("-C") + 1:] for c in calls] == [
        [repo, "worktree", "list", "--porcelain", "-z"],
        [plain, "worktree", "list", "--porcelain", "-z"]]  # offline: not asked
    ws.write_config("demo", raw=f'memory = ["style.md"]\npaths = ["{repo}", "{plain}"]\n')
    assert _git_calls(ws, "--dry-run") == []


@needs_git
def test_a_missing_worktree_is_offline(ws: WS) -> None:
    _repo, feature, _fix = world(ws)
    shutil.rmtree(feature)  # git lists it as prunable
    code, doc = sync(ws)
    assert code == 0
    assert ("main@feature", feature, "offline") in checkouts(doc)


@needs_git
def test_the_main_worktree_is_a_checkout_of_a_registered_linked_one(ws: WS) -> None:
    repo, feature, fix = world(ws)
    ws.write_config("demo", raw=f'worktrees = true\nmemory = []\npaths = ["{feature}"]\n')
    _code, doc = sync(ws, "--dry-run")
    assert checkouts(doc) == [("1", feature, "active"), ("1@repo", repo, "active"),
                              ("1@fix", fix, "active")]


@needs_git
def test_a_discovered_worktree_named_explicitly_is_not_registered(ws: WS) -> None:
    _repo, feature, _fix = world(ws)
    config = Path(ws.config_path("demo")).read_bytes()
    res = invoke("--workspace", ws.root, "sync", "project", "demo", feature, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert checkouts(doc) == [("main@feature", feature, "active")]
    assert Path(ws.config_path("demo")).read_bytes() == config
    assert os.path.islink(f"{feature}/.agents/memory/style.md")


@needs_git
def test_sync_project_inside_a_worktree_finds_its_project(ws: WS,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    _repo, feature, _fix = world(ws)
    monkeypatch.chdir(feature)
    res = invoke("--workspace", ws.root, "sync", "project", "--quiet")
    assert res.exit_code == 0, res.output
    assert os.path.islink(f"{feature}/.agents/memory/style.md")


@needs_git
def test_a_checkout_in_a_subdirectory_maps_to_each_worktree(ws: WS) -> None:
    repo = init_repo(f"{ws.checkouts_dir}/mono", {"svc/README": "svc\n"})
    wt = f"{ws.checkouts_dir}/mono-wt"
    git("worktree", "add", "-q", wt, cwd=repo)
    ws.write_config("demo", raw=f'worktrees = true\nmemory = []\npaths = ["{repo}/svc"]\n')
    _code, doc = sync(ws, "--dry-run")
    assert checkouts(doc)[1] == ("1@mono-wt", f"{os.path.realpath(wt)}/svc", "active")


@needs_git
def test_toggling_the_key_after_planning_makes_the_plan_stale(ws: WS) -> None:
    _repo, feature, _fix = world(ws)
    project = ws.project("demo")
    plan = project.plan()
    assert plan.worktrees
    text = Path(ws.config_path("demo")).read_text().replace("worktrees = true",
                                                            "worktrees = false")
    Path(ws.config_path("demo")).write_text(text)
    from aikito_mem.errors import StalePlanError

    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any("worktrees changed" in d for d in info.value.differences)
    assert not os.path.lexists(f"{feature}/.agents")


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]", "{a = 1}"])
def test_worktrees_must_be_a_boolean(ws: WS, value: str) -> None:
    ws.write_config("demo", raw=f"worktrees = {value}\nmemory = []\n")
    with pytest.raises(ConfigError) as info:
        ws.project("demo")
    assert info.value.code == "config.worktrees"
    assert "key 'worktrees': expected true or false" in info.value.message


def test_a_misspelt_worktrees_is_refused(ws: WS) -> None:
    ws.write_config("demo", raw="worktree = true\nmemory = []\n")
    with pytest.raises(ConfigError) as info:
        ws.project("demo")
    assert "did you mean 'worktrees'" in info.value.message
    assert "git worktrees of its checkouts would not be synced" in info.value.message


def test_porcelain_records_are_parsed() -> None:
    data = (b"worktree /r\0HEAD abc\0branch refs/heads/main\0\0"
            b"worktree /b\0bare\0\0"
            b"worktree /w x\0HEAD def\0detached\0prunable gitdir file points nowhere\0\0")
    found = parse_worktrees(data)
    assert [(w.path, w.main, w.bare, w.prunable) for w in found] == [
        ("/r", True, False, False), ("/b", False, True, False), ("/w x", False, False, True)]
    assert parse_worktrees(b"") == ()
