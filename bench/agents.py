"""The agent registry of the segment workloads (SPEC §13 [G3], §17 [N1]): which agents
``<ws>/agents/<name>.toml`` names, and each file as the reference tool writes it."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Agent:
    """One agent of the registry ``<ws>/agents/<name>.toml``, in the reference tool's format."""

    name: str
    display_name: str
    project_instruction_path: str = ""  # "": no project instruction target
    project_skills_path: str = ""  # "": no per-agent skills directory ([N1])
    #: ``detect.paths`` under HOME; none: detected by ``commands = ["sh"]`` (everywhere).
    detect_paths: tuple[str, ...] = ()


#: The instruction targets of W1+segments: one at the checkout root, one whose parent
#: (``.claude``) does not exist in a fresh checkout, so that creating it depends on the
#: agent being detected (SPEC §13 [G4]). Both agents are detected on every machine
#: (``commands = ["sh"]``), so a cold run creates both targets.
AGENTS: tuple[Agent, ...] = (
    Agent("codex", "Codex", "AGENTS.md"),
    Agent("claude-code", "Claude Code", ".claude/CLAUDE.md"),
)
#: The registry of W1+agents (SPEC §17 [N1]): W1+segments' two instruction targets, and
#: three agents with a per-agent skills directory, each detected by a path under HOME
#: (the harness creates those paths in every run's HOME), so a cold run creates all three.
SKILL_AGENTS: tuple[Agent, ...] = (
    AGENTS[0],
    Agent("claude-code", "Claude Code", ".claude/CLAUDE.md", ".claude/skills", (".claude",)),
    Agent("gemini", "Gemini CLI", "", ".gemini/skills", (".gemini",)),
    Agent("opencode", "OpenCode", "", ".opencode/skills", (".config/opencode",)),
)


def agent_registry_toml(agent: Agent) -> str:
    """``agents/<name>.toml`` as the reference tool writes it (SPEC §13 [G3], §17 [N1])."""
    text = f"[agents.{agent.name}]\ndisplay_name = {json.dumps(agent.display_name)}\n"
    if agent.project_instruction_path:
        text += f"project_instruction_path = {json.dumps(agent.project_instruction_path)}\n"
    if agent.project_skills_path:
        text += f"project_skills_path = {json.dumps(agent.project_skills_path)}\n"
    detect = (f"paths = {json.dumps(list(agent.detect_paths))}\n" if agent.detect_paths
              else 'commands = ["sh"]\n')
    return text + f"\n[agents.{agent.name}.detect]\n" + detect
