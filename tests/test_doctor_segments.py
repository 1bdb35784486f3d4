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


def run(ws: Path, *args: str) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, ["--workspace", str(ws), *args, "--json"],
                             catch_exceptions=False)
    return res.exit_code, json.loads(res.stdout)


def test_the_registry_is_loaded_as_a_sync_loads_it(tmp_path):
    """[H5]: whatever makes every sync exit 4 on the registry is a doctor error (exit 1),
    naming the file; a registry that loads is an ``ok`` listing its targets."""
    ws, _ = world(tmp_path)
    assert ids(doctor(ws), "agents.registry") == []  # no agents/: nothing to load
    agents = ws / "agents"
    agents.mkdir()
    (agents / "claude-code.toml").write_text(
        '[agents.claude-code]\nproject_instruction_path = ".claude/CLAUDE.md"\n')
    (ok,) = ids(doctor(ws), "agents.registry")
    assert ok["status"] == "ok" and ".claude/CLAUDE.md" in ok["message"]
    broken = agents / "codex.toml"
    for text in ('[agents.codex\n', '[agents.codex]\nproject_instruction_path = 7\n',
                 '[agents.codex]\nproject_instruction_path = "lib/.git/hooks/x"\n'):
        broken.write_text(text)
        sync_code, sync_doc = run(ws, "sync", "project", "demo", "--dry-run")
        assert sync_code == 4 and sync_doc["error"]["code"].startswith("config.")
        code, doc = run(ws, "doctor")
        (error,) = ids(doc, "agents.registry")
        assert code == 1 and doc["exit_code"] == 1
        assert error["status"] == "error" and error["path"] == str(broken)
        assert sync_doc["error"]["message"] in error["message"]


def test_a_merge_conflicted_agent_toml_names_its_markers_beside_the_parse_error(
        tmp_path, monkeypatch):
    # [G5] A conflicted agent.toml never parses; doctor still names the markers (the
    # cause) beside the project.config parse error (what a sync reports, exit 4).
    ws, co = world(tmp_path)
    config = ws / "projects" / "demo" / "agent.toml"
    config.write_text(f'paths = ["{co}"]\n' + GROUP + "memory = []\n" + GROUP)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "doctor"],
                             env={"COLUMNS": "400"}, catch_exceptions=False)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "project.config" in line)
    assert lines[start:start + 4] == [
        f"error    project.config    {config}:2:1: invalid TOML: Invalid statement — fix "
        "the syntax at that position (see https://toml.io)",
        "    remedy: resolve the merge conflict in "
        "ws/projects/demo/agent.toml and remove its markers (git.conflict_markers)",
        f"error    git.conflict_markers demo: {config} holds git conflict markers (groups "
        "starting at lines 2, 8); it is not valid TOML, so every sync of demo fails "
        "(exit 4)",
        "    remedy: resolve the merge conflict in that file and "
        "remove the markers",
    ]
    assert [c for c in doctor(ws)["checks"] if c["id"] == "git.conflict_markers"] == [{
        "id": "git.conflict_markers", "status": "error",
        "message": f"demo: {config} holds git conflict markers (groups starting at lines "
                   "2, 8); it is not valid TOML, so every sync of demo fails (exit 4)",
        "remedy": "resolve the merge conflict in that file and remove the markers",
        "path": str(config), "project": "demo"}]


def test_an_agent_toml_that_does_not_parse_without_markers_has_no_marker_check(tmp_path):
    ws, _ = world(tmp_path)
    config = ws / "projects" / "demo" / "agent.toml"
    config.write_text("<<<<<<< HEAD\nmemory = []\n")  # no complete group
    (check,) = ids(doctor(ws), "project.config")
    assert check["remedy"] == f"fix {config} as the message says"
    assert ids(doctor(ws), "git.conflict_markers") == []
