"""Stale plans ([E2], [P5], INV-MEM-09): a plan made, the world moved, execution refused.

Each case plans (API ``Project.plan()`` or ``aikito sync project --dry-run --out``),
mutates the world, snapshots the whole temporary tree (lstat + readlink + file hashes of
checkout, workspace and HOME) and executes: ``StalePlanError`` / exit 3 with
``outcome: stale`` and the differences named, and the tree byte-for-byte as it was.
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
from aikito_mem.world.observe import generation
from tests.helpers.snapshots import recreate, snapshot
from tests.helpers.workspace import WS

FIRST = ["glossary", "team/a.md"]
WANTED = ["glossary", "team/a.md", "top.md", "adr"]


def build(ws: WS) -> str:
    """Synced once with ``FIRST``; now configured with ``WANTED``: the plan has NOOPs
    (glossary, team/a.md, legacy notes) and CREATEs (top.md, the directory adr)."""
    ws.add_file("top.md", "top\n")
    ws.add_file("team/a.md", "a\n")
    ws.add_file("glossary/terms.md", "terms\n")
    ws.add_dir("adr")
    ws.add_notes("demo", legacy=True)
    co = ws.checkout("main")
    Path(co, "README.md").write_text("foreign\n")
    os.makedirs(f"{co}/.agents/memory")
    Path(co, ".agents/memory/mine.txt").write_text("foreign\n")
    ws.write_config("demo", memory=FIRST, paths=[co])
    ws.project("demo").sync()
    ws.write_config("demo", memory=WANTED, paths=[co])
    return co


REUSED: dict[str, bool] = {}


def recreate_file(ws: WS, co: str) -> None:
    path = ws.memory_path("top.md")
    REUSED["file"] = recreate(path, lambda: Path(path).write_text("top\n"),
                               lambda: os.unlink(path))


def recreate_dir(ws: WS, co: str) -> None:
    path = ws.memory_path("adr")
    REUSED["dir"] = recreate(path, lambda: os.mkdir(path), lambda: os.rmdir(path))


def edit_memory_list(ws: WS, co: str) -> None:
    ws.write_config("demo", memory=[*WANTED, "team/b.md"], paths=[co])


def drop_from_memory_list(ws: WS, co: str) -> None:
    ws.write_config("demo", memory=WANTED[:-1], paths=[co])


def create_project_memory_root(ws: WS, co: str) -> None:
    os.makedirs(f"{ws.root}/projects/demo/memory")


def delete_source(ws: WS, co: str) -> None:
    os.unlink(ws.memory_path("top.md"))


def source_becomes_dir(ws: WS, co: str) -> None:
    os.unlink(ws.memory_path("top.md"))
    os.mkdir(ws.memory_path("top.md"))


def delete_notes(ws: WS, co: str) -> None:
    shutil.rmtree(ws.notes_path("demo", legacy=True))


def target_appears(ws: WS, co: str) -> None:
    Path(co, ".agents/memory/top.md").write_text("someone else's file\n")


def target_link_appears(ws: WS, co: str) -> None:
    os.symlink(ws.memory_path("top.md"), f"{co}/.agents/memory/top.md")


def retarget_noop_link(ws: WS, co: str) -> None:
    link = f"{co}/.agents/memory/glossary"
    os.unlink(link)
    os.symlink("/somewhere/else", link)


def remove_noop_link(ws: WS, co: str) -> None:
    os.unlink(f"{co}/.agents/memory/glossary")


def swap_agents_for_symlink(ws: WS, co: str) -> None:
    os.rename(f"{co}/.agents", f"{co}/agents.real")
    os.symlink("agents.real", f"{co}/.agents")


def swap_memory_for_symlink(ws: WS, co: str) -> None:
    os.rename(f"{co}/.agents/memory", f"{co}/.agents/memory.real")
    os.symlink("memory.real", f"{co}/.agents/memory")


def swap_intermediate_for_symlink(ws: WS, co: str) -> None:
    os.rename(f"{co}/.agents/memory/team", f"{co}/team.real")
    os.symlink(f"{co}/team.real", f"{co}/.agents/memory/team")


def remove_checkout(ws: WS, co: str) -> None:
    shutil.rmtree(co)


def replace_checkout(ws: WS, co: str) -> None:
    os.rename(co, f"{co}.old")
    os.mkdir(co)


CASES: dict[str, tuple[Callable[[WS, str], None], str]] = {
    "memory_list_edited": (edit_memory_list, "agent.toml memory list changed"),
    "memory_list_shortened": (drop_from_memory_list, "agent.toml memory list changed"),
    "project_memory_root_created": (create_project_memory_root, "project memory root"),
    "source_deleted": (delete_source, "source memory/top.md was deleted"),
    "source_file_became_dir": (source_becomes_dir, "source memory/top.md is now a directory"),
    "noop_notes_source_deleted": (delete_notes, "memory/demo/notes"),
    "source_file_recreated": (recreate_file, "source memory/top.md was deleted and recreated"),
    "source_dir_recreated": (recreate_dir, "source memory/adr was deleted and recreated"),
    "target_file_appeared": (target_appears, "top.md is now a regular file"),
    "target_link_appeared": (target_link_appears, "top.md is now a symlink"),
    "noop_link_retargeted": (retarget_noop_link, "glossary is now a symlink to '/somewhere"),
    "noop_link_removed": (remove_noop_link, "glossary is now nothing"),
    "agents_swapped_for_symlink": (swap_agents_for_symlink, ".agents is now a symlink"),
    "memory_swapped_for_symlink": (swap_memory_for_symlink, ".agents/memory is now a symlink"),
    "intermediate_swapped": (swap_intermediate_for_symlink, "memory/team is now a symlink"),
    "checkout_removed": (remove_checkout, "can no longer be opened"),
    "checkout_replaced": (replace_checkout, "was removed or replaced"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_stale_plan_is_refused_by_the_api(ws: WS, case: str) -> None:
    co = build(ws)
    plan = ws.project("demo").plan()
    actions = {op.target.rpartition("/")[2]: op.action for op in plan.operations}
    assert actions == {"glossary": Action.NOOP, "a.md": Action.NOOP, "notes": Action.NOOP,
                       "top.md": Action.CREATE, "adr": Action.CREATE}
    mutate, expected = CASES[case]
    project = ws.project("demo")  # loaded before the change, like a long-lived caller
    mutate(ws, co)
    before = snapshot(*ws.roots())
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert snapshot(*ws.roots()) == before
    exc = info.value
    assert exc.exit_code == 3
    assert exc.differences, exc.message
    assert any(expected in d for d in exc.differences), exc.differences
    for d in exc.differences:
        assert d in exc.message
    if exc.result is not None:
        assert exc.result.outcome == "stale"
        assert {s.value for s in exc.result.statuses} == {"not_applied"}
    assert not os.path.lexists(f"{co}/.agents/memory/top.md") or case.startswith("target")
    if case == "checkout_removed":
        assert not os.path.lexists(co)


@pytest.mark.parametrize("case", sorted(CASES))
def test_stale_plan_file_is_refused_by_apply(ws: WS, case: str) -> None:
    co = build(ws)
    planfile = f"{ws.base}/plan.toml"
    runner = CliRunner()
    res = runner.invoke(cli, ["--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                              "--out", planfile, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    mutate, expected = CASES[case]
    mutate(ws, co)
    before = snapshot(*ws.roots())
    res = runner.invoke(cli, ["apply", planfile, "--json"], catch_exceptions=False)
    assert res.exit_code == 3, res.output
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "stale"
    assert doc["exit_code"] == 3
    assert doc["error"]["code"] == "sync.stale"
    diffs = doc["error"]["differences"]
    assert any(expected in d for d in diffs), diffs
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}
    assert snapshot(*ws.roots()) == before


def test_recreated_sources_are_caught_even_when_the_inode_number_is_reused(ws: WS) -> None:
    """Explicitly: the identity is more than (dev, ino) — on ext4 the number comes back."""
    co = build(ws)
    plan = ws.project("demo").plan()
    recreate_file(ws, co)
    recreate_dir(ws, co)
    with pytest.raises(StalePlanError) as info:
        ws.project("demo").execute(plan)
    diffs = info.value.differences
    assert "source memory/top.md was deleted and recreated" in diffs
    assert "source memory/adr was deleted and recreated" in diffs
    # On ext4 the inode numbers are usually reused: then the recorded generation number
    # (FS_IOC_GETVERSION) is what differs; otherwise the (dev, ino) pair does.
    assert set(REUSED) == {"file", "dir"}
    checks = {c.path: c for c in plan.sources if c.identity}
    for ref in ("top.md", "adr"):
        path = ws.memory_path(ref)
        rec = checks[path].observed
        live = os.lstat(path)
        if (rec.dev, rec.ino) == (live.st_dev, live.st_ino):
            assert rec.gen is not None
            assert generation(path) != rec.gen


def test_text_apply_names_differences_on_stderr(ws: WS) -> None:
    co = build(ws)
    planfile = f"{ws.base}/plan.toml"
    runner = CliRunner()
    runner.invoke(cli, ["--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                        "--out", planfile], catch_exceptions=False)
    target_appears(ws, co)
    res = runner.invoke(cli, ["apply", planfile], catch_exceptions=False)
    assert res.exit_code == 3
    assert "stale" in res.stderr
    assert "top.md is now a regular file" in res.stderr
    assert "Traceback" not in res.output


# --------------------------------------------------------------------------- negatives


def append_to_source(ws: WS, co: str) -> None:
    with open(ws.memory_path("top.md"), "a") as fh:
        fh.write("more\n")


def add_note_to_source_dir(ws: WS, co: str) -> None:
    Path(ws.memory_path("adr"), "0002.md").write_text("new decision\n")


def add_note_to_notes(ws: WS, co: str) -> None:
    Path(ws.notes_path("demo", legacy=True), "later.md").write_text("later\n")


def add_foreign_file_in_checkout(ws: WS, co: str) -> None:
    Path(co, "NEW.md").write_text("x\n")


@pytest.mark.parametrize("mutate", [append_to_source, add_note_to_source_dir,
                                    add_note_to_notes, add_foreign_file_in_checkout],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("via", ["api", "cli"])
def test_content_changes_do_not_make_the_plan_stale(
    ws: WS, mutate: Callable[[WS, str], None], via: str
) -> None:
    co = build(ws)
    if via == "api":
        plan = ws.project("demo").plan()
        mutate(ws, co)
        result = ws.project("demo").execute(plan)
        assert result.outcome == "applied"
    else:
        planfile = f"{ws.base}/plan.toml"
        runner = CliRunner()
        res = runner.invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                  "--dry-run", "--out", planfile], catch_exceptions=False)
        assert res.exit_code == 0
        mutate(ws, co)
        res = runner.invoke(cli, ["apply", planfile, "--json"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["outcome"] == "applied"
    assert os.readlink(f"{co}/.agents/memory/top.md") == ws.memory_path("top.md")
    assert os.readlink(f"{co}/.agents/memory/adr") == ws.memory_path("adr")
    assert Path(co, ".agents/memory/mine.txt").read_text() == "foreign\n"


# --------------------------------------------------------------------------- fresh trees


@pytest.mark.parametrize("where", [".agents", ".agents/memory", ".agents/memory/team"])
def test_missing_directory_appearing_as_a_symlink_is_stale(
    ws: WS, where: str, tmp_path: Path
) -> None:
    ws.add_file("team/a.md", "a\n")
    co = ws.checkout("fresh")
    ws.write_config("demo", memory=["team/a.md"], paths=[co])
    if where != ".agents":
        os.makedirs(f"{co}/{where.rpartition('/')[0]}")
    plan = ws.project("demo").plan()
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), f"{co}/{where}")
    before = snapshot(*ws.roots(), outside)
    with pytest.raises(StalePlanError) as info:
        ws.project("demo").execute(plan)
    assert any(f"{co}/{where} is now a symlink" in d for d in info.value.differences)
    assert snapshot(*ws.roots(), outside) == before
    assert list(outside.iterdir()) == []


def test_offline_checkout_appearing_is_not_touched(ws: WS) -> None:
    """The active/offline split is frozen in the plan ([K3]): a checkout that appears after
    planning is neither written nor a reason to refuse the others."""
    ws.add_file("top.md", "top\n")
    co = ws.checkout("main")
    later = f"{ws.base}/co/later"
    ws.write_config("demo", memory=["top.md"], paths=[co, later])
    plan = ws.project("demo").plan()
    assert [c.state.value for c in plan.checkouts] == ["active", "offline"]
    os.mkdir(later)
    result = ws.project("demo").execute(plan)
    assert result.outcome == "applied"
    assert os.listdir(later) == []
    assert os.readlink(f"{co}/.agents/memory/top.md") == ws.memory_path("top.md")
