"""A memory root that is a symlink ([S2], [S3]): the notes or references behind it are a
CONFLICT, and the plan records the link with its literal ([P5]) — verification reads the
literal back, so a link recorded without it made every run that writes another segment
stale (exit 3, nothing written, forever)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli
from tests.helpers.workspace import WS


def _world(tmp_path: Path, broken: str) -> tuple[WS, str, str]:
    """A project with one reference and one skill, whose ``broken`` root (``project``:
    ``projects/demo/memory``; ``workspace``: ``memory``) is a symlink."""
    ws = WS(tmp_path)
    co = ws.checkout("c")
    ws.add_skill("rev")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "notes").mkdir(parents=True)
    (elsewhere / "a.md").write_text("a\n")
    if broken == "project":
        ws.add_file("a.md", "a\n")
        root = f"{ws.root}/projects/demo/memory"
        os.makedirs(os.path.dirname(root), exist_ok=True)
    else:
        root = f"{ws.root}/memory"
        os.rmdir(root)
    literal = str(elsewhere) if broken == "workspace" else "nowhere"
    os.symlink(literal, root)
    ws.write_config("demo", memory=["a.md"], paths=[co], skills=["rev"])
    return ws, co, literal


@pytest.mark.parametrize("broken", ["project", "workspace"])
def test_a_symlinked_memory_root_blocks_memory_and_never_makes_the_plan_stale(
        tmp_path: Path, broken: str) -> None:
    ws, co, literal = _world(tmp_path, broken)
    result = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                      "--json"], catch_exceptions=False)
    doc = json.loads(result.stdout)
    assert doc["outcome"] != "stale", doc.get("error")
    assert result.exit_code == 1  # the memory segment is blocked, the skill is linked
    assert doc["segments"]["memory"]["outcome"] == "blocked"
    assert doc["segments"]["skills"]["success"] is True
    assert os.readlink(f"{co}/.agents/skills/rev") == f"{ws.root}/skills/rev"
    conflicts = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
    assert conflicts
    # The conflict names what is there: the link and its literal (never "to None").
    assert all(f"a symlink to {literal!r}" in op["reason"] for op in conflicts), conflicts
