"""[E8]/[G6]: a run where one segment is blocked and another applied — each segment's own
outcome beside the run's `blocked`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from aikito_mem.cli import cli


def test_applied_segment_reported_applied_beside_a_blocked_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "projects" / "demo").mkdir(parents=True)
    (ws / "memory").mkdir()
    (ws / "memory" / "style.md").write_text("style\n")
    (ws / "projects" / "demo" / "AGENTS.md").write_text("Be nice.\n")
    co = tmp_path / "co"
    co.mkdir()
    (co / "AGENTS.md").write_text("the user's own\n")  # blocks the instructions segment
    (ws / "projects" / "demo" / "agent.toml").write_text(
        f'paths = ["{co}"]\nmemory = ["style.md"]\n')
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "sync", "project", "demo",
                                   "--json"], catch_exceptions=False)
    doc = json.loads(res.stdout)
    assert (res.exit_code, doc["outcome"]) == (1, "blocked")
    seg = doc["segments"]
    assert (seg["instructions"]["outcome"], seg["instructions"]["success"]) == ("blocked", False)
    assert (seg["memory"]["outcome"], seg["memory"]["success"]) == ("applied", True)
    assert (seg["skills"]["active"], seg["skills"]["outcome"]) == (False, "unchanged")
    memory_op = next(op for op in doc["operations"] if op["segment"] == "memory")
    assert memory_op["status"] == "applied"
    assert os.readlink(co / ".agents" / "memory" / "style.md") == str(ws / "memory" / "style.md")
    assert (co / "AGENTS.md").read_text() == "the user's own\n"


def test_a_dry_run_blocked_in_two_segments_says_them(tmp_path: Path) -> None:
    """Two blocked segments, one to apply: the message says nothing of *them* would be
    written (one blocked segment is *it*)."""
    ws = tmp_path / "ws"
    (ws / "projects" / "demo").mkdir(parents=True)
    for name in ("style.md", "glossary.md"):
        (ws / "memory").mkdir(exist_ok=True)
        (ws / "memory" / name).write_text("x\n")
    (ws / "projects" / "demo" / "AGENTS.md").write_text("Be nice.\n")
    (ws / "skills" / "review").mkdir(parents=True)
    co = tmp_path / "co"
    (co / ".agents" / "memory").mkdir(parents=True)
    (co / ".agents" / "memory" / "glossary.md").write_text("mine\n")  # blocks memory
    (co / "AGENTS.md").write_text("the user's own\n")  # blocks the instructions
    (ws / "projects" / "demo" / "agent.toml").write_text(
        f'paths = ["{co}"]\nmemory = ["style.md", "glossary.md"]\nskills = ["review"]\n')
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "sync", "project", "demo",
                                   "--dry-run"], catch_exceptions=False,
                             env={"COLUMNS": "1000"})
    assert res.exit_code == 1
    assert res.stderr == (
        "aikito: 2 conflicts block the instructions and memory segments; nothing of them "
        "would be written; the other segments would be applied — resolve each as it says "
        "and run again\n")
