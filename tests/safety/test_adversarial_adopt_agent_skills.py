"""An adversary's review of ``aikito adopt`` from an agent's own skills directory ([L5]
[N1] [H2]) and of the committed-symlink SKIP ([L1]): every attempt to make adopt move,
overwrite or remove what it does not own — ``.claude`` or ``.claude/skills`` a symlink
(into the workspace, elsewhere, into another checkout), NAME a symlink, hard links,
mounts, nested symlinks, a ``<ws>/skills/NAME`` that is a symlink, registry paths that
leave the checkout, a NAME swapped between the last check and the move, a kill mid-adopt —
ends refused with nothing changed, or adopted with the content existing exactly once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aikito_mem import Project
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

CONFIG = 'paths = [{co}]\nmemory = []\nskills = ["base"]\n'
CLAUDE = ('[agents.claude-code]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
          'project_skills_path = ".claude/skills"\n\n'
          '[agents.claude-code.detect]\npaths = [".claude"]\n')


@pytest.fixture
def world(ws: WS) -> tuple[WS, Path]:
    """Project ``demo`` (skill ``base``), checkout ``co``; agent claude-code with
    ``.claude/skills``, detected."""
    ws.add_skill("base")
    ws.add_agent("claude-code", CLAUDE)
    os.makedirs(f"{ws.home}/.claude", exist_ok=True)
    co = Path(ws.checkout("co"))
    ws.write_config("demo", raw=CONFIG.format(co=json.dumps(str(co))))
    return ws, co


def make_skill(where: Path, name: str = "review", text: str = "# review\n") -> Path:
    path = where / name
    (path / "scripts").mkdir(parents=True)
    (path / "SKILL.md").write_text(text)
    (path / "scripts" / "run.sh").write_text("echo hi\n")
    return path


def adopt_json(ws: WS, target: Path | str, *args: str) -> tuple[int, dict[str, Any]]:
    res = invoke("--workspace", ws.root, "adopt", str(target), "--json", *args, catch=True)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, one_json(res.stdout)


def refused(ws: WS, target: Path | str, code: str, exit_code: int = 1,
            *also: Path) -> dict[str, Any]:
    """Dry run and real run alike: refused with ``code`` (exit ``exit_code``), nothing
    changed in the workspace, its base or ``also``."""
    roots = (ws.base, ws.home, *also)
    before = snapshot(*roots)
    doc: dict[str, Any] = {}
    for args in (("--dry-run",), ()):
        rc, doc = adopt_json(ws, target, *args)
        assert (rc, doc["error"]["code"]) == (exit_code, f"adopt.{code}"), doc
        assert [s["status"] for s in doc["steps"]] == ["not_applied"] * 3
    assert changed(before, snapshot(*roots)) == set()
    return doc


# ----------------------------------------------------------------- symlinks on the way


def test_claude_a_symlink_to_another_checkouts_claude_is_refused(
    world: tuple[WS, Path]
) -> None:
    """``co/.claude`` → ``other/.claude`` (another registered checkout): the path named is
    reached through a symlink below the checkout; adopt never takes the other checkout's
    skill through it."""
    ws, co = world
    other = Path(ws.checkout("other"))
    ws.write_config("demo", raw=CONFIG.format(co=f"{json.dumps(str(co))}, "
                                                 f"{json.dumps(str(other))}"))
    make_skill(other / ".claude" / "skills")
    os.symlink(other / ".claude", co / ".claude")
    refused(ws, co / ".claude/skills/review", "through_symlink")


def test_claude_skills_a_symlink_into_the_workspace_skills_is_unsafe(
    world: tuple[WS, Path]
) -> None:
    """``co/.claude/skills`` → ``<ws>/skills``: ``.claude/skills/base`` is the workspace's
    own ``base`` (exit 4, nothing changed)."""
    ws, co = world
    (co / ".claude").mkdir()
    os.symlink(f"{ws.root}/skills", co / ".claude/skills")
    refused(ws, co / ".claude/skills/base", "in_workspace", 4)


@pytest.mark.parametrize("into", ["elsewhere", "home"])
def test_claude_a_symlink_out_of_the_checkout_is_refused(
    world: tuple[WS, Path], into: str
) -> None:
    """``co/.claude`` → a directory outside every checkout (or ``~/.claude``, the agent's
    user-wide directory): never adopted from there."""
    ws, co = world
    outside = Path(ws.home, ".claude") if into == "home" else ws.base / "elsewhere/.claude"
    make_skill(outside / "skills")
    os.symlink(outside, co / ".claude")
    rc, doc = adopt_json(ws, co / ".claude/skills/review", "--dry-run")
    assert rc == 1 and doc["error"]["code"] in ("adopt.not_registered", "adopt.outside"), doc
    refused(ws, co / ".claude/skills/review", doc["error"]["code"][6:], 1, outside)


def test_name_a_symlink_to_a_real_skill_is_refused(world: tuple[WS, Path]) -> None:
    ws, co = world
    real = make_skill(ws.base / "elsewhere")
    (co / ".claude/skills").mkdir(parents=True)
    os.symlink(real, co / ".claude/skills/review")
    refused(ws, co / ".claude/skills/review", "symlink", 1, real)


def test_a_workspace_skill_that_is_a_symlink_to_target_is_never_an_identical_copy(
    world: tuple[WS, Path]
) -> None:
    """``<ws>/skills/review`` → TARGET itself: the same tree seen twice, never a copy to
    replace TARGET by (refused, TARGET whole)."""
    ws, co = world
    target = make_skill(co / ".claude/skills")
    os.symlink(target, f"{ws.root}/skills/review")
    refused(ws, target, "destination_exists")


def test_a_workspace_skill_bind_mounted_from_target_is_the_same_object(
    world: tuple[WS, Path]
) -> None:
    """[H2]: ``<ws>/skills/review`` a bind mount of TARGET — one directory, two names —
    is never "an identical copy": refused (exit 4) before any removal, TARGET whole."""
    from tests.helpers import mounts

    ws, co = world
    target = make_skill(co / ".claude/skills")
    with mounts.bind(target, f"{ws.root}/skills/review"):
        before = snapshot(target)
        refused(ws, target, "same_object", 4)
        assert snapshot(target) == before
    assert (target / "SKILL.md").read_text() == "# review\n"
