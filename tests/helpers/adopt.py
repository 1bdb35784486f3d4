"""Shared set-up for the ``aikito adopt`` tests ([L5] [N1] [E5]): the adopt world (project
``demo`` with checkout ``co``), a skill directory, the ``--json`` run, the refusal that
changes nothing, and a real process SIGKILLed at one of adopt's steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

#: A commented ``agent.toml`` ({co}: the checkout) whose ``skills`` list spans lines: an
#: adopt's edit keeps every other byte of it.
LISTED_CONFIG = """\
# the demo project
paths = [{co}]  # one checkout
memory = []
skills = [  # shared skills
    "base",
]
"""
#: Claude Code with its own skills directory ``.claude/skills`` ([N1]), detected.
CLAUDE_SKILLS = ('[agents.claude-code]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
                 'project_skills_path = ".claude/skills"\n\n'
                 '[agents.claude-code.detect]\npaths = [".claude"]\n')
CODEX = '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n'
#: ``python -c KILL STEP ARGS…``: the CLI with ``ARGS``, SIGKILLed as ``_Run.<STEP>`` starts.
KILL = ("import os, signal, sys\n"
        "from aikito_mem.commands.adopt import run\n"
        "def die(*a, **k):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "setattr(run._Run, sys.argv[1], die)\n"
        "from aikito_mem.cli import main\n"
        "sys.argv[1:2] = []\n"
        "main()\n")


def adopt_world(ws: WS, config: str, agents: Mapping[str, str],
                detected: tuple[str, ...] = (".claude",)) -> Path:
    """Skill ``base`` in the workspace, the registry files ``agents`` (name → TOML), the
    ``detected`` directories in the home, checkout ``<base>/co/co`` and project ``demo``
    whose ``agent.toml`` is ``config`` with ``{co}`` the checkout (JSON-quoted)."""
    ws.add_skill("base")
    for name, toml in agents.items():
        ws.add_agent(name, toml)
    for d in detected:
        os.makedirs(f"{ws.home}/{d}", exist_ok=True)
    co = Path(ws.checkout("co"))
    ws.write_config("demo", raw=config.format(co=json.dumps(str(co))))
    return co


def skill_dir(where: Path, name: str = "review", text: str = "# review\n") -> Path:
    """A skill directory ``where/name`` holding ``SKILL.md`` and ``scripts/run.sh``."""
    path = where / name
    (path / "scripts").mkdir(parents=True)
    (path / "SKILL.md").write_text(text)
    (path / "scripts" / "run.sh").write_text("echo hi\n")
    return path


def adopt_json(ws: WS, target: Path | str, *args: str) -> tuple[int, dict[str, Any]]:
    """``aikito adopt TARGET --json ARGS``: its exit code and its one JSON document."""
    res = invoke("--workspace", ws.root, "adopt", str(target), "--json", *args, catch=True)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, one_json(res.stdout)


def refused(ws: WS, target: Path | str, code: str, exit_code: int = 1, *also: Path,
            no_next: bool = False) -> dict[str, Any]:
    """Dry run and real run alike: refused with ``code`` (exit ``exit_code``, each step
    ``not_applied``; with ``no_next`` no next command either), nothing changed in the
    workspace's base, the home or ``also``."""
    roots = (ws.base, ws.home, *also)
    before = snapshot(*roots)
    doc: dict[str, Any] = {}
    for args in (("--dry-run",), ()):
        rc, doc = adopt_json(ws, target, *args)
        assert (rc, doc["error"]["code"]) == (exit_code, f"adopt.{code}"), doc
        assert [s["status"] for s in doc["steps"]] == ["not_applied"] * 3
        if no_next:
            assert doc["next"] is None
    assert changed(before, snapshot(*roots)) == set()
    return doc


def killed_at(ws: WS, target: Path, step: str) -> None:
    """``aikito adopt TARGET`` in a real process, SIGKILLed as ``_Run.<step>`` starts."""
    proc = subprocess.run([sys.executable, "-c", KILL, step, "--workspace", ws.root,
                           "adopt", str(target)], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
