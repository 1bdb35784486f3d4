"""[L5] adopt for every segment, on real directories: a skill directory at
``.agents/skills/NAME`` (moved, listed in ``skills`` with every other byte of
``agent.toml`` kept, linked back), a file at an instruction target while the project's
``AGENTS.md`` is absent or empty (moved there, every instruction target linked), an
identical copy replaced, a differing one refused with a diff, a file git tracks refused,
the dry run writing nothing, and the sync remedies that name adopt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aikito_mem import Project
from aikito_mem.commands.adopt import run as adopt_run
from aikito_mem.model import Action
from tests.helpers.adopt import CODEX, adopt_json, adopt_world, refused, skill_dir
from tests.helpers.adopt import LISTED_CONFIG as CONFIG
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

CLAUDE = ('[agents.claude-code]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
          '[agents.claude-code.detect]\npaths = [".claude"]\n')


@pytest.fixture
def world(ws: WS) -> tuple[WS, Path]:
    """Project ``demo`` (skill ``base`` linked) with checkout ``<base>/co/co``; agents
    codex (``AGENTS.md``) and claude-code (``.claude/CLAUDE.md``, detected)."""
    return ws, adopt_world(ws, CONFIG, {"codex": CODEX, "claude-code": CLAUDE})


def in_sync(ws: WS, segment: str) -> None:
    """The next sync has nothing to do in ``segment`` (the others are not adopt's)."""
    plan = Project.load("demo", workspace=ws.root).plan()
    ops = [op for op in plan.operations if op.segment.value == segment]
    assert ops and all(op.action in (Action.NOOP, Action.SKIP) for op in ops), ops


def make_skill(co: Path, name: str = "review", text: str = "# review\n") -> Path:
    return skill_dir(co / ".agents" / "skills", name, text)


def git(co: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(co), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


# --------------------------------------------------------------------------- skills


def test_a_skill_directory_is_moved_listed_and_linked(world: tuple[WS, Path]) -> None:
    ws, co = world
    Project.load("demo", workspace=ws.root).sync()
    target = make_skill(co)
    before = snapshot(ws.base)
    rc, doc = adopt_json(ws, target, "--dry-run")
    assert rc == 0 and doc["outcome"] == "planned" and doc["segment"] == "skills", doc
    assert changed(before, snapshot(ws.base)) == set()
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["outcome"] == "adopted", doc
    assert doc["destination"] == f"{ws.root}/skills/review" and doc["method"] == "rename"
    assert os.readlink(target) == f"{ws.root}/skills/review"
    assert Path(ws.root, "skills/review/scripts/run.sh").read_text() == "echo hi\n"
    text = Path(ws.config_path("demo")).read_text()
    assert text == CONFIG.format(co=json.dumps(str(co))).replace(
        '    "base",\n]', '    "base",\n    "review",\n]')
    in_sync(ws, "skills")


def test_an_identical_skill_copy_is_replaced_by_the_link(world: tuple[WS, Path]) -> None:
    ws, co = world
    target = make_skill(co, "base", "# base\n")
    os.unlink(target / "scripts" / "run.sh")
    os.rmdir(target / "scripts")
    workspace = snapshot(ws.root, skip=(ws.config_path("demo"),))
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["method"] == "replace", doc
    assert [s["status"] for s in doc["steps"]] == ["applied", "skipped", "applied"]
    assert os.readlink(target) == f"{ws.root}/skills/base"
    assert changed(workspace, snapshot(ws.root, skip=(ws.config_path("demo"),))) == set()
    in_sync(ws, "skills")


def test_a_differing_skill_copy_is_refused_with_a_diff(world: tuple[WS, Path]) -> None:
    ws, co = world
    target = make_skill(co, "base", "# base, edited\n")
    doc = refused(ws, target, "destination_exists")
    paths = {d["path"] for d in doc["differences"]}
    assert paths == {"SKILL.md", "scripts", "scripts/run.sh"}, doc["differences"]
    assert "+# base, edited" in doc["diff"]


def test_a_skill_must_be_a_directory(world: tuple[WS, Path]) -> None:
    ws, co = world
    (co / ".agents" / "skills").mkdir(parents=True)
    (co / ".agents" / "skills" / "note.md").write_text("x\n")
    refused(ws, co / ".agents" / "skills" / "note.md", "file_type")
    (co / ".agents" / "skills" / "deep").mkdir()
    (co / ".agents" / "skills" / "deep" / "inner").mkdir()
    refused(ws, co / ".agents" / "skills" / "deep" / "inner", "outside")


def test_a_skill_name_must_be_clean(world: tuple[WS, Path]) -> None:
    ws, co = world
    make_skill(co, "review ")  # a trailing space: not a name [G1] accepts
    refused(ws, co / ".agents" / "skills" / "review ", "reference_invalid")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_skill_git_tracks_belongs_to_the_repository(world: tuple[WS, Path]) -> None:
    ws, co = world
    target = make_skill(co)
    git(co, "init", "-q")
    git(co, "add", ".agents/skills/review/SKILL.md")
    git(co, "commit", "-qm", "skill")
    doc = refused(ws, target, "tracked")
    assert "it belongs to the repository" in doc["error"]["message"]
    assert "aikito adopt" not in doc["error"]["message"]  # [L1]: never the remedy


# --------------------------------------------------------------------------- instructions


def test_an_instruction_file_moves_to_the_project_and_every_target_is_linked(
    world: tuple[WS, Path]
) -> None:
    """No ``AGENTS.md`` in the project yet: the user's ``.claude/CLAUDE.md`` becomes it,
    and both targets of the checkout (``AGENTS.md`` too) are linked."""
    ws, co = world
    (co / ".claude").mkdir()
    target = co / ".claude" / "CLAUDE.md"
    target.write_text("# my rules\n")
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["segment"] == "instructions", doc
    source = f"{ws.root}/projects/demo/AGENTS.md"
    assert Path(source).read_text() == "# my rules\n"
    assert os.readlink(target) == source and os.readlink(co / "AGENTS.md") == source
    assert doc["steps"][1]["status"] == "skipped"  # no list to add an instruction target to
    in_sync(ws, "instructions")


@pytest.mark.parametrize("blank", ["", " \n\t\n"])
def test_an_empty_project_agents_md_is_replaced_by_the_file(
    world: tuple[WS, Path], blank: str
) -> None:
    ws, co = world
    source = Path(ws.write_instructions("demo", blank))
    target = co / "AGENTS.md"
    target.write_text("# rules\n")
    rc, doc = adopt_json(ws, target, "--dry-run")
    assert rc == 0 and source.read_text() == blank, doc
    rc, doc = adopt_json(ws, target)
    assert rc == 0, doc
    assert source.read_text() == "# rules\n" and os.readlink(target) == str(source)
    in_sync(ws, "instructions")


def test_an_empty_agents_md_that_changes_before_the_move_is_stale(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone writes the project's ``AGENTS.md`` after the last validation: it is no
    longer the empty file validated, so nothing is removed or moved (exit 3)."""
    ws, co = world
    source = Path(ws.write_instructions("demo", ""))
    target = co / "AGENTS.md"
    target.write_text("# mine\n")
    real = adopt_run._Run.validate
    calls: list[int] = []

    def validate(self: Any, *args: Any) -> Any:
        a = real(self, *args)
        calls.append(1)
        if len(calls) == 2:  # the validation under the lock, just before the move
            source.write_text("# theirs, written meanwhile\n")
        return a

    monkeypatch.setattr(adopt_run._Run, "validate", validate)
    rc, doc = adopt_json(ws, target)
    assert rc == 3 and doc["error"]["code"] == "adopt.stale", doc
    assert target.read_text() == "# mine\n"
    assert source.read_text() == "# theirs, written meanwhile\n"


def test_an_identical_instruction_copy_is_replaced(world: tuple[WS, Path]) -> None:
    ws, co = world
    source = Path(ws.write_instructions("demo", "# rules\n"))
    target = co / "AGENTS.md"
    target.write_text("# rules\n")
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["method"] == "replace", doc
    assert os.readlink(target) == str(source)
    in_sync(ws, "instructions")


def test_a_differing_instruction_file_is_refused_with_a_diff(world: tuple[WS, Path]) -> None:
    ws, co = world
    ws.write_instructions("demo", "# the project's\n")
    target = co / "AGENTS.md"
    target.write_text("# mine\n")
    doc = refused(ws, target, "destination_exists")
    assert "-# the project's" in doc["diff"] and "+# mine" in doc["diff"]


def test_an_instruction_target_must_be_a_file_and_a_registry_target(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    (co / "AGENTS.md").mkdir()
    refused(ws, co / "AGENTS.md", "file_type")
    (co / "README.md").write_text("x\n")
    refused(ws, co / "README.md", "outside")


def test_an_unsafe_or_symlinked_project_agents_md_is_never_written_through(
    world: tuple[WS, Path], tmp_path: Path
) -> None:
    ws, co = world
    (co / "AGENTS.md").write_text("# mine\n")
    outside = tmp_path / "outside.md"
    outside.write_text("")
    source = Path(ws.root, "projects/demo/AGENTS.md")
    source.symlink_to(outside)  # leaves the workspace: unsafe
    refused(ws, co / "AGENTS.md", "destination_parent")
    source.unlink()
    Path(ws.root, "projects/demo/empty.md").write_text("")
    source.symlink_to("empty.md")  # inside, but a symlink: never written through
    doc = refused(ws, co / "AGENTS.md", "destination_parent")
    assert "symlink" in doc["error"]["message"]


def test_a_hard_link_of_the_project_agents_md_is_the_same_object(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    source = ws.write_instructions("demo", "# rules\n")
    os.link(source, co / "AGENTS.md")
    refused(ws, co / "AGENTS.md", "same_object", exit_code=4)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_committed_agents_md_belongs_to_the_repository(world: tuple[WS, Path]) -> None:
    ws, co = world
    (co / "AGENTS.md").write_text("# committed\n")
    git(co, "init", "-q")
    git(co, "add", "AGENTS.md")
    git(co, "commit", "-qm", "rules")
    doc = refused(ws, co / "AGENTS.md", "tracked")
    assert "it belongs to the repository" in doc["error"]["message"]


# --------------------------------------------------------------------------- remedies


def test_sync_remedies_name_adopt_where_it_resolves_them(world: tuple[WS, Path]) -> None:
    ws, co = world
    ws.write_instructions("demo", "# rules\n")
    make_skill(co, "base")
    (co / "AGENTS.md").write_text("# mine\n")
    plan = Project.load("demo", workspace=ws.root).plan()
    conflicts = {op.target: op.remedy or "" for op in plan.operations
                 if op.action is Action.CONFLICT}
    assert f"aikito adopt {co}/.agents/skills/base" in conflicts[f"{co}/.agents/skills/base"]
    assert f"aikito adopt {co}/AGENTS.md" in conflicts[f"{co}/AGENTS.md"]
    os.symlink("/elsewhere", co / ".claude")
    plan = Project.load("demo", workspace=ws.root).plan()
    claude = next(op for op in plan.operations if op.target == f"{co}/.claude/CLAUDE.md")
    assert "aikito adopt" not in (claude.remedy or "")  # a symlinked parent: adopt cannot help
