"""The agent registry entries ``aikito init`` writes into a new workspace's ``agents/``.

One file ``agents/<name>.toml`` per agent, holding only the table ``[agents.<name>]`` —
the format of [G3], which is also the reference tool's (``aikito`` 1.61.1: it refuses an
``agents/`` file holding anything but ``[agents.<file stem>]``).  The names, display names,
project instruction paths and detection tables are the ones the reference tool knows for
the same agents, so a workspace made here and one made there name an agent the same way
(``claude-code``, not ``claude``) and ``Project.prepare("claude-code")`` works in both.

Only the keys this engine reads are written (``project_instruction_path``, ``detect``) plus
``display_name``.  The reference tool's other keys (``instruction_path``, ``skills_path``,
``runner``, ``mcp``, ``subagents``) configure writes into the home directory that belong
to that tool; a user who wants them copies that tool's registry files over these.
"""

from __future__ import annotations

import attrs

from aikito_mem.config.edit import toml_basic_string

__all__ = ["AGENTS", "AgentDefault", "registry_text", "toml_list"]


@attrs.frozen
class AgentDefault:
    """One agent of the default registry."""

    #: The file stem and table name: ``agents/<name>.toml``, ``[agents.<name>]``.
    name: str
    display_name: str
    #: Where the project instructions appear in a checkout ([G3]).
    project_instruction_path: str
    #: ``[agents.<name>.detect]``: bare command names looked up on ``PATH``.
    commands: tuple[str, ...]
    #: ``[agents.<name>.detect]``: paths relative to the home directory.
    paths: tuple[str, ...]


#: The default registry, in the reference tool's order.
AGENTS: tuple[AgentDefault, ...] = (
    AgentDefault("codex", "Codex", "AGENTS.md", ("codex",), (".codex",)),
    AgentDefault("claude-code", "Claude Code", ".claude/CLAUDE.md", ("claude",), (".claude",)),
    AgentDefault("agy", "Antigravity CLI", "AGENTS.md", ("agy",), (".gemini/config",)),
    AgentDefault("opencode", "OpenCode", "AGENTS.md", ("opencode",), (".config/opencode",)),
    AgentDefault(
        "github-copilot", "GitHub Copilot CLI", "AGENTS.md", ("copilot",), (".copilot",)
    ),
    AgentDefault("dsh", "DeepSeek Harness", "AGENTS.md", ("dsh",), (".dsh",)),
    AgentDefault("grok", "Grok Build", "AGENTS.md", ("grok",), (".grok",)),
    AgentDefault("pi", "Pi", "AGENTS.md", ("pi",), (".pi",)),
)


def toml_list(values: tuple[str, ...] | list[str]) -> str:
    """A one-line TOML array of basic strings."""
    return "[" + ", ".join(toml_basic_string(v) for v in values) + "]"


def registry_text(agent: AgentDefault) -> str:
    """The text of ``agents/<agent.name>.toml``: a comment header, then the one table."""
    return (
        f"# {agent.display_name}: where `aikito sync project` links the project's\n"
        "# instructions (projects/<name>/AGENTS.md) in each checkout, and how this agent\n"
        "# is detected on a machine (a command on PATH, or a path under your home).\n"
        "# A target whose parent directory is missing is created only where the agent is\n"
        "# detected.  Delete this file if you do not use this agent.\n"
        f"[agents.{agent.name}]\n"
        f"display_name = {toml_basic_string(agent.display_name)}\n"
        f"project_instruction_path = {toml_basic_string(agent.project_instruction_path)}\n"
        "\n"
        f"[agents.{agent.name}.detect]\n"
        f"commands = {toml_list(agent.commands)}\n"
        f"paths = {toml_list(agent.paths)}\n"
    )
