"""A world for the skills and project instructions segments (SPEC §13): :class:`SegWorld`,
built with :class:`~tests.helpers.workspace.WS`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.helpers.cli import invoke, one_json
from tests.helpers.workspace import WS

SKILLS = ("alpha", "beta")


class SegWorld:
    """Workspace ``<base>/ws`` (project ``demo``: two skills, ``AGENTS.md``, one memory
    file; registry: ``AGENTS.md`` for codex, ``.claude/CLAUDE.md`` for claude-code, detected
    through ``~/.claude``), checkout ``<base>/co`` with foreign files, and this test's home."""

    def __init__(self, base: Path, *, register: bool = True) -> None:
        self.builder = WS(base)
        self.base = self.builder.base
        self.ws = Path(self.builder.root)
        self.co = Path(self.builder.checkouts_dir)
        self.home = Path(self.builder.home)
        (self.home / ".claude").mkdir(exist_ok=True)
        for name in SKILLS:
            self.builder.add_skill(name)
        (self.ws / "skills" / "unused").mkdir()
        self.builder.add_file("a.md", "a\n")
        self.builder.add_agent(
            "codex",
            '[agents.codex]\ndisplay_name = "Codex"\nproject_instruction_path = "AGENTS.md"\n')
        self.builder.add_agent(
            "claude-code",
            '[agents.claude-code]\ndisplay_name = "Claude Code"\n'
            'project_instruction_path = ".claude/CLAUDE.md"\n'
            '[agents.claude-code.detect]\npaths = [".claude"]\n')
        self.project_dir = self.ws / "projects" / "demo"
        self.agents_md = Path(self.builder.write_instructions("demo", "# Rules\nbe careful\n"))
        (self.co / "README.md").write_text("foreign\n")
        (self.co / "src").mkdir()
        (self.co / "src" / "main.py").write_text("print('hi')\n")
        self.write_config(paths=[str(self.co)] if register else [])

    def write_config(self, *, skills: tuple[str, ...] | None = SKILLS,
                     paths: list[str] | None = None, extra: str = "") -> None:
        text = f"paths = {json.dumps(paths if paths is not None else [str(self.co)])}\n"
        text += 'memory = ["a.md"]\n'
        if skills is not None:
            text += f"skills = {json.dumps(list(skills))}\n"
        self.builder.write_config("demo", raw=text + extra)

    # -- expected link literals ----------------------------------------------------------

    def skill(self, name: str) -> str:
        return f"{self.ws}/skills/{name}"

    @property
    def instructions(self) -> str:
        return f"{self.project_dir}/AGENTS.md"

    def targets(self) -> dict[str, tuple[str, str]]:
        """segment → (target, literal) of every link a full sync writes."""
        out: dict[str, tuple[str, str]] = {}
        for name in SKILLS:
            out[f"skills:{name}"] = (f"{self.co}/.agents/skills/{name}", self.skill(name))
        out["instructions:claude"] = (f"{self.co}/.claude/CLAUDE.md", self.instructions)
        out["instructions:agents"] = (f"{self.co}/AGENTS.md", self.instructions)
        out["memory:a.md"] = (f"{self.co}/.agents/memory/a.md", f"{self.ws}/memory/a.md")
        return out

    def links(self, segment: str) -> dict[str, str | None]:
        """target → literal (or ``None`` when not a link) of ``segment``'s targets."""
        out: dict[str, str | None] = {}
        for key, (target, _) in self.targets().items():
            if key.startswith(segment + ":"):
                out[target] = os.readlink(target) if os.path.islink(target) else None
        return out

    def roots(self) -> tuple[Path, ...]:
        return (self.base,)

    # -- running ---------------------------------------------------------------------------

    def run(self, *args: str) -> Any:
        return invoke("--workspace", str(self.ws), *args, catch=True)

    def sync(self, *args: str) -> Any:
        return self.run("sync", "project", "demo", *args)

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        res = self.sync(*args, "--json")
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        return res.exit_code, one_json(res.stdout)
