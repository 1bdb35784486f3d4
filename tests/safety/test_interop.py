"""Interop with the public reference tool ``aikito`` 1.61.1 (§13): links either tool writes
for skills, project instructions and memory are owned by the other ([O1]: the absolute
canonical literal), so running both tools on one workspace, in either order, relinks
nothing.

The reference tool runs from the benchmark's own environment (``bench/.cache/ref-venv``,
created on first use from PyPI with a Python >= 3.12); the test is skipped, with the reason,
where that interpreter or the package cannot be had.  Both tools get the same workspace
(with ``layout.toml`` ``version = 2`` and ``agents/`` / ``subagents/``, which the reference
tool requires), ``AIKITO_DIR`` and a throw-away ``HOME`` holding ``.claude`` so Claude Code
is detected.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.runner.peers import reference_tool
from tests.helpers.cli import aikito_argv
from tests.helpers.home import child_env
from tests.helpers.workspace import WS

PROJECT = "demo"
SKILLS = ("review", "lint")
MEMORY = ("a.md", "team")

# Minimal equivalents of the reference tool's own registry files (``[agents.<name>]``).
REGISTRY = {
    "claude-code.toml": (
        '[agents.claude-code]\ndisplay_name = "Claude Code"\n'
        'instruction_path = ".claude/CLAUDE.md"\n'
        'project_instruction_path = ".claude/CLAUDE.md"\nskills_path = ".claude/skills"\n\n'
        '[agents.claude-code.detect]\ncommands = ["claude"]\npaths = [".claude"]\n'
    ),
    "codex.toml": (
        '[agents.codex]\ndisplay_name = "Codex"\ninstruction_path = ".codex/AGENTS.md"\n'
        'project_instruction_path = "AGENTS.md"\nskills_path = ".agents/skills"\n\n'
        '[agents.codex.detect]\ncommands = ["codex"]\npaths = [".codex"]\n'
    ),
}


@pytest.fixture(scope="module")
def ref_exe() -> Iterator[str]:
    peer = reference_tool(allow_install=True)
    if peer.path is None:
        pytest.skip(f"reference tool aikito 1.61.1 unavailable: {peer.reason}")
    yield peer.path


class Setup:
    def __init__(self, base: Path, memory: tuple[str, ...], per_agent: bool = False) -> None:
        builder = WS(base)
        self.ws = Path(builder.root)
        self.home = builder.base / "home"
        self.co = Path(builder.checkouts_dir)
        for d in ("agents", "subagents", f"projects/{PROJECT}"):
            (self.ws / d).mkdir(parents=True)
        (self.home / ".claude").mkdir(parents=True)
        (self.co / "README.md").write_text("the user's own file\n")
        (self.ws / "layout.toml").write_text("version = 2\n")
        for name, text in REGISTRY.items():
            if per_agent and name == "claude-code.toml":  # [N1]: a key the reference tolerates
                text = text.replace('skills_path = ".claude/skills"\n',
                                    'skills_path = ".claude/skills"\n'
                                    'project_skills_path = ".claude/skills"\n')
            builder.add_agent(name.removesuffix(".toml"), text)
        for skill in SKILLS:
            builder.add_skill(skill)
        builder.write_instructions(PROJECT, "# project rules\n")
        builder.add_file("a.md", "a\n")
        builder.add_file("team/b.md", "b\n")
        skills = ", ".join(f'"{s}"' for s in SKILLS)
        mem = ", ".join(f'"{m}"' for m in memory)
        builder.write_config(
            PROJECT, raw=f'paths = ["{self.co}"]\nskills = [{skills}]\nmemory = [{mem}]\n')
        self.memory = memory
        self.per_agent = per_agent

    def env(self) -> dict[str, str]:
        return child_env(self.home, AIKITO_DIR=str(self.ws),
                         XDG_CONFIG_HOME=str(self.home / ".config"))

    def expected(self) -> dict[str, str]:
        """Target (relative to the checkout) → the absolute canonical literal."""
        src = str(self.ws / "projects" / PROJECT / "AGENTS.md")
        out = {f".agents/skills/{s}": str(self.ws / "skills" / s) for s in SKILLS}
        out.update({"AGENTS.md": src, ".claude/CLAUDE.md": src})
        if self.per_agent:
            out.update({f".claude/skills/{s}": str(self.ws / "skills" / s) for s in SKILLS})
        out.update({f".agents/memory/{m}": str(self.ws / "memory" / m) for m in self.memory})
        return out

    def links(self) -> dict[str, tuple[int, str]]:
        """Every link below the checkout: relative path → (inode, literal)."""
        out: dict[str, tuple[int, str]] = {}
        for dirpath, dirnames, filenames in os.walk(self.co):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    out[os.path.relpath(path, self.co)] = (os.lstat(path).st_ino,
                                                           os.readlink(path))
        return out

    def ours(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(aikito_argv("sync", "project", PROJECT, *args),
                              capture_output=True, text=True, env=self.env(),
                              cwd=self.home, timeout=120, check=False)

    def reference(self, exe: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([exe, "sync", "project", PROJECT], capture_output=True,
                              text=True, env=self.env(), cwd=self.home, timeout=300,
                              check=False)


def _assert_linked(s: Setup) -> dict[str, tuple[int, str]]:
    links = s.links()
    assert {rel: lit for rel, (_ino, lit) in links.items()} == s.expected()
    assert (s.co / "README.md").read_text() == "the user's own file\n"
    return links


def _assert_ours_all_noop(s: Setup) -> None:
    check = s.ours("--check", "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    doc = json.loads(check.stdout)
    ops = doc["operations"]
    assert {op["segment"] for op in ops} >= {"skills", "instructions"}
    assert [op for op in ops if op["action"] != "NOOP"] == []
    for name in ("skills", "instructions"):
        summary = doc["segments"][name]["summary"]
        assert summary["noop"] > 0 and summary["noop"] == sum(summary.values()), summary
    real = s.ours("--json")
    assert real.returncode == 0, real.stdout + real.stderr
    doc = json.loads(real.stdout)
    assert doc["outcome"] == "unchanged", doc["outcome"]
    assert all(seg["outcome"] == "unchanged" for seg in doc["segments"].values())


@pytest.mark.parametrize("memory", [(), MEMORY], ids=["no-memory", "memory"])
def test_reference_links_are_noop_here(ref_exe: str, tmp_path: Path,
                                       memory: tuple[str, ...]) -> None:
    """Order A: the reference tool links first; this engine owns every link it made."""
    s = Setup(tmp_path, memory)
    ref = s.reference(ref_exe)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    before = _assert_linked(s)
    _assert_ours_all_noop(s)
    assert s.links() == before, "this engine relinked what the reference tool made"


@pytest.mark.parametrize("memory", [(), MEMORY], ids=["no-memory", "memory"])
def test_our_links_are_noop_for_the_reference(ref_exe: str, tmp_path: Path,
                                              memory: tuple[str, ...]) -> None:
    """Order B: this engine links first; the reference tool relinks nothing, and a run of
    ours afterwards is still unchanged."""
    s = Setup(tmp_path, memory)
    first = s.ours("--json")
    assert first.returncode == 0, first.stdout + first.stderr
    assert json.loads(first.stdout)["outcome"] == "applied"
    before = _assert_linked(s)
    ref = s.reference(ref_exe)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    relinked = [line for line in ref.stdout.splitlines()
                if line.startswith(("[LINK]", "[RELINK]", "[UPDATE]", "[REPLACE]", "[COPY]"))]
    assert relinked == [], ref.stdout
    assert s.links() == before, "the reference tool relinked what this engine made"
    _assert_ours_all_noop(s)
    assert s.links() == before


def test_per_agent_skill_links_and_the_reference_leave_each_other_alone(
        ref_exe: str, tmp_path: Path) -> None:
    """[N1] both ways: the reference tool (which reads ``project_skills_path`` of no agent)
    links first, this engine then adds only the ``.claude/skills`` links and keeps every
    link the reference made; the reference run after it relinks nothing."""
    s = Setup(tmp_path, MEMORY, per_agent=True)
    ref = s.reference(ref_exe)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    theirs = s.links()
    first = s.ours("--json")
    assert first.returncode == 0, first.stdout + first.stderr
    doc = json.loads(first.stdout)
    assert sorted(op["target"] for op in doc["operations"] if op["action"] != "NOOP") == [
        str(s.co / ".claude" / "skills" / name) for name in sorted(SKILLS)]
    after = _assert_linked(s)
    assert {rel: v for rel, v in after.items() if rel in theirs} == theirs
    again = s.reference(ref_exe)
    assert again.returncode == 0, again.stdout + again.stderr
    relinked = [line for line in again.stdout.splitlines()
                if line.startswith(("[LINK]", "[RELINK]", "[UPDATE]", "[REPLACE]", "[COPY]"))]
    assert relinked == [], again.stdout
    assert s.links() == after
    _assert_ours_all_noop(s)
    assert s.links() == after
