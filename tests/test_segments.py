"""Observation for the skills and instructions segments (§13) on real directories."""

from __future__ import annotations

import os

from aikito_mem.config.registry import NO_REGISTRY, AgentEntry
from aikito_mem.config.registry_read import build_registry
from aikito_mem.model import InstructionState as S
from aikito_mem.model import Kind
from aikito_mem.world.observe import Observer
from aikito_mem.world.segments import (
    instruction_source,
    instructions_view,
    resolve_skills,
    skills_view,
)


def _ws(tmp_path):
    ws = tmp_path / "ws"
    (ws / "projects" / "p").mkdir(parents=True)
    (ws / "skills").mkdir()
    return ws


def test_skill_sources(tmp_path):
    ws = _ws(tmp_path)
    (ws / "skills" / "good").mkdir()
    (ws / "skills" / "file").write_text("x")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", ws / "skills" / "escape")
    os.symlink("good", ws / "skills" / "alias")
    res = {r.name: r for r in resolve_skills(("good", "file", "escape", "alias", "gone"),
                                             str(ws), Observer())}
    assert res["good"].problem is None and res["good"].source == f"{ws}/skills/good"
    assert res["alias"].problem is None
    assert "expected a directory" in (res["file"].problem or "")
    assert "leaves" in (res["escape"].problem or "")
    assert res["gone"].missing


def test_instruction_source_states(tmp_path):
    ws = _ws(tmp_path)
    src = ws / "projects" / "p" / "AGENTS.md"

    def state():
        return instruction_source(str(ws), "p", Observer()).state

    assert state() is S.ABSENT
    src.write_text(" \n\t\r\n")
    assert state() is S.EMPTY
    src.write_text("# Rules\n")
    assert state() is S.CONTENT
    src.unlink()
    (ws / "shared.md").write_text("rules")
    os.symlink("../../shared.md", src)
    assert state() is S.CONTENT
    src.unlink()
    (tmp_path / "out.md").write_text("rules")
    os.symlink(tmp_path / "out.md", src)
    assert state() is S.UNSAFE
    src.unlink()
    os.symlink("missing.md", src)
    assert state() is S.UNSAFE
    src.unlink()
    os.mkfifo(src)
    assert state() is S.UNSAFE  # never opened for reading: a FIFO cannot hang a sync


def test_skills_view_one_level(tmp_path):
    co = tmp_path / "co"
    (co / ".agents" / "skills" / "real" / "deep").mkdir(parents=True)
    os.symlink("/x", co / ".agents" / "skills" / "a")
    obs = Observer()
    view = skills_view(str(co), obs.lstat(str(co / ".agents")), obs)
    assert [(n, o.kind, o.literal) for n, o in view.entries] == [
        ("a", Kind.LINK, "/x"), ("real", Kind.DIR, None)]


def test_instructions_view_parents_and_detection(tmp_path):
    co = tmp_path / "co"
    co.mkdir()
    (co / "AGENTS.md").write_text("mine")
    reg = build_registry([AgentEntry("claude", "f", ".claude/CLAUDE.md"),
                          AgentEntry("codex", "g", "AGENTS.md")])
    asked = []

    def detect(target):
        asked.append(target.path)
        return True

    obs = Observer()
    view = instructions_view(str(co), obs.lstat(str(co / ".agents")), reg.targets, detect, obs)
    claude, codex = view.targets
    assert (claude.rel, claude.detected, claude.parents[0][1].kind) == (
        ".claude/CLAUDE.md", True, Kind.ABSENT)
    assert (codex.rel, codex.detected, codex.observed.kind) == ("AGENTS.md", False, Kind.FILE)
    assert asked == [".claude/CLAUDE.md"]  # detection only where the directory is missing
    default = instructions_view(str(co), obs.lstat(str(co / ".agents")), NO_REGISTRY.targets,
                                detect, Observer())
    assert [t.rel for t in default.targets] == ["AGENTS.md"]
