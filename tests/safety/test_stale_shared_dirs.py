"""A directory of the workspace on the way to several sources ([P5], [S3], [E2]): changed
between planning and execution, the plan is stale — by the API and by ``apply`` of a saved
plan — whichever source below it is linked, already in sync or still to be created, and
nothing is written.

The walker makes one check of such a directory and every source below it shares it; these
cases pin that the shared check still guards every one of them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli
from aikito_mem.errors import StalePlanError
from aikito_mem.model import Action
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

#: Three sources below ``team`` (two below ``team/t0``) and one beside it.
REFS = ["team/t0/a.md", "team/t0/b.md", "team/c.md", "top.md"]


def build(ws: WS, *, synced: tuple[str, ...]) -> str:
    """The sources written; ``synced`` linked by a first sync, the rest still to create."""
    for ref in REFS:
        ws.add_file(ref, f"{ref}\n")
    co = ws.checkout("main")
    if synced:
        ws.write_config("demo", memory=list(synced), paths=[co])
        ws.project("demo").sync()
    ws.write_config("demo", memory=REFS, paths=[co])
    return co


def swap_for_symlink(path: str) -> None:
    os.rename(path, f"{path}.real")
    os.symlink(f"{path}.real", path)


def remove(path: str) -> None:
    shutil.rmtree(path)


def replace_with_file(path: str) -> None:
    shutil.rmtree(path)
    Path(path).write_text("not a directory\n")


HOW: dict[str, Callable[[str], None]] = {
    "symlink": swap_for_symlink, "removed": remove, "file": replace_with_file}
#: What a difference names: the directory itself (a symlink, a file) or it and every
#: source below it (removed).
NAMED = {"symlink": "is now a symlink", "removed": "was deleted", "file": "is now a regular file"}
WHERE = ["team", "team/t0"]
SYNCED = [(), ("team/t0/a.md",), ("team/t0/a.md", "team/t0/b.md", "team/c.md")]


def _expected(where: str, how: str, diffs: list[str] | tuple[str, ...]) -> None:
    assert diffs
    assert any(d.startswith(f"source memory/{where} {NAMED[how]}") for d in diffs), diffs
    assert not any("top.md" in d for d in diffs), diffs


@pytest.mark.parametrize("synced", SYNCED, ids=["none", "one", "all-below"])
@pytest.mark.parametrize("how", sorted(HOW))
@pytest.mark.parametrize("where", WHERE)
def test_the_api_refuses_the_plan_and_writes_nothing(
    ws: WS, where: str, how: str, synced: tuple[str, ...]
) -> None:
    co = build(ws, synced=synced)
    project = ws.project("demo")
    plan = project.plan()
    by_ref = {op.resource: op.action for op in plan.operations}
    assert by_ref == {ref: Action.NOOP if ref in synced else Action.CREATE for ref in REFS}
    HOW[how](ws.memory_path(where))
    before = snapshot(*ws.roots())
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert snapshot(*ws.roots()) == before
    _expected(where, how, info.value.differences)
    assert not os.path.lexists(f"{co}/.agents/memory/top.md")


@pytest.mark.parametrize("how", sorted(HOW))
@pytest.mark.parametrize("where", WHERE)
def test_apply_of_a_saved_plan_is_stale_and_writes_nothing(ws: WS, where: str, how: str) -> None:
    co = build(ws, synced=("team/t0/a.md",))
    planfile = f"{ws.base}/plan.toml"
    runner = CliRunner()
    res = runner.invoke(cli, ["--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                              "--out", planfile, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    HOW[how](ws.memory_path(where))
    before = snapshot(*ws.roots())
    res = runner.invoke(cli, ["apply", planfile, "--json"], catch_exceptions=False)
    assert res.exit_code == 3, res.output
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "stale"
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}
    _expected(where, how, doc["error"]["differences"])
    assert snapshot(*ws.roots()) == before
    assert not os.path.lexists(f"{co}/.agents/memory/top.md")


@pytest.mark.parametrize("where", WHERE)
def test_a_directory_on_the_way_replaced_by_another_directory_is_not_stale(
    ws: WS, where: str
) -> None:
    """A directory on the way is checked by type alone: one recreated in place (its
    sources recreated with it) leaves the plan valid — for the linked sources their
    identity decides ([P5]), and a recreated source is stale."""
    build(ws, synced=tuple(REFS[:3]))  # every source below team already linked: NOOPs only there
    project = ws.project("demo")
    plan = project.plan()
    path = ws.memory_path(where)
    shutil.copytree(path, f"{path}.copy")
    shutil.rmtree(path)
    os.rename(f"{path}.copy", path)
    result = project.execute(plan)
    assert result.outcome == "applied"  # top.md created; the NOOPs below team unchanged
