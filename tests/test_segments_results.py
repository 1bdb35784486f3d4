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
