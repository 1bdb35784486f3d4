"""doctor across segments [G5]: git conflict markers in what agents read; one checkout
registered by two projects."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from aikito_mem.cli import cli

GROUP = "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other\n"


def doctor(ws: Path) -> dict:
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "doctor", "--json"],
                             catch_exceptions=False)
    return json.loads(res.stdout)


def world(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "projects" / "demo").mkdir(parents=True)
    (ws / "memory" / "team").mkdir(parents=True)
    (ws / "skills" / "alpha").mkdir(parents=True)
    co = tmp_path / "co"
    co.mkdir()
    (ws / "projects" / "demo" / "agent.toml").write_text(
        f'paths = ["{co}"]\nmemory = ["team", "style.md"]\nskills = ["alpha"]\n')
    (ws / "memory" / "style.md").write_text("fine\n")
    return ws, co


def ids(doc: dict, check_id: str) -> list[dict]:
    return [c for c in doc["checks"] if c["id"] == check_id]


def test_conflict_markers_in_every_source_agents_read(tmp_path):
    ws, _ = world(tmp_path)
    assert ids(doctor(ws), "git.conflict_markers") == []
    (ws / "projects" / "demo" / "AGENTS.md").write_text("# Rules\n" + GROUP)
    (ws / "skills" / "alpha" / "SKILL.md").write_text(GROUP)
    (ws / "memory" / "team" / "a.md").write_text(GROUP)
    (ws / "memory" / "unlisted.md").write_text(GROUP)  # not referenced: not reported
    found = ids(doctor(ws), "git.conflict_markers")
    assert sorted(c["path"] for c in found) == sorted([
        str(ws / "memory" / "team" / "a.md"), str(ws / "projects" / "demo" / "AGENTS.md"),
        str(ws / "skills" / "alpha" / "SKILL.md")])
    assert {c["status"] for c in found} == {"error"}
    assert "line 2" in next(c for c in found if c["path"].endswith("AGENTS.md"))["message"]


def test_one_checkout_registered_by_two_projects(tmp_path):
    ws, co = world(tmp_path)
    assert ids(doctor(ws), "checkout.shared") == []
    (ws / "projects" / "other").mkdir()
    (ws / "projects" / "other" / "agent.toml").write_text(f'paths = ["{co}"]\n')
    (shared,) = ids(doctor(ws), "checkout.shared")
    assert shared["status"] == "warning" and shared["path"] == str(co)
    assert "demo, other" in shared["message"]
