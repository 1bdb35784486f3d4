"""The agent registry ([G3]): ``<ws>/agents/<agent>.toml`` → project instruction targets.

Each regular file ``agents/<agent>.toml`` names the agent ``<agent>`` (its stem).  This
engine reads two keys of the table ``[agents.<agent>]`` — ``project_instruction_path`` (a
clean relative path inside the checkout, [C3]) and the ``detect`` table of [G4] — and
ignores every other key and sub-table (``display_name``, ``instruction_path``,
``skills_path``, ``runner``, ``mcp``, ``subagents``, …), so the reference tool's registry
files are accepted as they are.  Agents with the same target path form one target.

Without an ``agents/`` directory the one target is ``AGENTS.md``, for any agent; an empty
``agents/`` directory means no targets.

This module holds the registry's values, :func:`agent_files` (the directory listing) and
:func:`listed_registry` (the registry a listing alone decides: no directory, or no
registry file in it), and :func:`detected`, the one observation detection makes (``PATH``
look-ups and ``stat`` under the home directory).  Reading and checking the files
themselves is :mod:`aikito_mem.config.registry_read`'s job, imported only by a run whose
workspace has registry files ([§12]).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence

from aikito_mem.errors import ConfigError
from aikito_mem.layout import SKILLS_DIR, agents_root
from aikito_mem.values import Record

#: The default target when the workspace has no ``agents/`` directory.
DEFAULT_TARGET = "AGENTS.md"
#: The skills directory every checkout gets; naming it as an agent's adds nothing ([N1]).
SHARED_SKILLS = SKILLS_DIR


class Detect(Record):
    """``[agents.<a>.detect]``: bare command names looked up on ``PATH``, and clean
    relative paths looked up under the home directory ([G4])."""

    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()


class AgentEntry(Record):
    """One registry file, as far as this engine reads it."""

    name: str
    #: Absolute path of the registry file.
    file: str
    #: ``project_instruction_path``, or ``None`` (no project target).
    instruction_path: str | None = None
    #: ``None`` when the file has no ``detect`` table (never detected).
    detect: Detect | None = None
    #: ``project_skills_path`` ([N1]), or ``None`` (no skills directory of its own).
    skills_path: str | None = None


class InstructionTarget(Record):
    """One instruction target (relative to the checkout root) and the agents that use it."""

    path: str
    #: Agent names, sorted; empty for the default target of a workspace without agents/.
    agents: tuple[str, ...] = ()


class Registry(Record):
    #: Whether ``<ws>/agents`` exists (as a directory).
    present: bool
    agents: tuple[AgentEntry, ...] = ()
    targets: tuple[InstructionTarget, ...] = ()
    #: The per-agent skills directories ([N1]): each ``project_skills_path`` other than
    #: ``.agents/skills``, with the agents naming it (two agents, one directory).
    skill_dirs: tuple[InstructionTarget, ...] = ()

    def agent(self, name: str) -> AgentEntry | None:
        for entry in self.agents:
            if entry.name == name:
                return entry
        return None

    def targets_for(self, agent: str) -> tuple[InstructionTarget, ...]:
        """The targets ``agent`` uses ([A3]); every target when there is no registry."""
        if not self.present:
            return self.targets
        return tuple(t for t in self.targets if agent in t.agents)

    def skill_dirs_for(self, agent: str) -> tuple[InstructionTarget, ...]:
        """The skills directory of ``agent`` only ([N1], [A3])."""
        return tuple(d for d in self.skill_dirs if agent in d.agents)


#: The registry of a workspace without ``agents/``.
NO_REGISTRY = Registry(False, (), (InstructionTarget(DEFAULT_TARGET, ()),))


#: The registry of a workspace whose ``agents/`` directory holds no registry file.
EMPTY_REGISTRY = Registry(True)


def registry_error(file: str, key: str, problem: str, remedy: str) -> ConfigError:
    """The configuration error of a registry file (or of ``agents/`` itself): file, key,
    what was found, the remedy ([G3])."""
    return ConfigError(
        f"{file}: {key} {problem} — {remedy}", code="config.registry", path=file
    )


def agent_files(workspace: str) -> tuple[str, ...] | None:
    """The registry file names in ``<workspace>/agents`` (``*.toml`` not starting with
    ``.``, sorted), or ``None`` when there is no ``agents/``: one ``lstat`` and one listing.
    ``agents/`` as anything but a directory, or unreadable: :class:`ConfigError`."""
    from aikito_mem import fsutil

    directory = agents_root(workspace)
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise registry_error(directory, "the agents directory",
                             f"cannot be examined ({exc.strerror})",
                             "fix its permissions") from None
    if not stat.S_ISDIR(st.st_mode):
        raise registry_error(directory, "the agents directory",
                             f"is {fsutil.describe_mode(st.st_mode)}; expected a real "
                             "directory",
                             "make agents/ a directory of <agent>.toml files, or remove it")
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise registry_error(directory, "the agents directory",
                             f"cannot be listed ({exc.strerror})",
                             "fix its permissions") from None
    return tuple(n for n in names if n.endswith(".toml") and not n.startswith("."))


def listed_registry(files: tuple[str, ...] | None) -> Registry | None:
    """The registry an :func:`agent_files` listing alone decides — :data:`NO_REGISTRY`
    without ``agents/``, :data:`EMPTY_REGISTRY` when it holds no registry file — or
    ``None`` when the files must be read (:func:`aikito_mem.config.registry_read.read_registry`)."""
    if files is None:
        return NO_REGISTRY
    return None if files else EMPTY_REGISTRY


def detected(detect: Detect | None, environ: Mapping[str, str], home: str | None) -> bool:
    """Whether an agent is detected on this machine ([G4]): a ``commands`` entry found as
    an executable regular file on ``PATH`` (absolute entries only), or a ``paths`` entry
    existing under ``home``.  No ``detect`` table: not detected."""
    if detect is None:
        return False
    dirs = [d for d in environ.get("PATH", "").split(os.pathsep) if d.startswith("/")]
    for command in detect.commands:
        for d in dirs:
            candidate = f"{d}/{command}"
            try:
                st = os.stat(candidate)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and os.access(candidate, os.X_OK):
                return True
    if home:
        for path in detect.paths:
            if os.path.exists(f"{home}/{path}"):
                return True
    return False


def detection(
    registry: Registry, environ: Mapping[str, str], home: str | None
) -> dict[str, bool]:
    """Agent name → detected, for every agent of the registry."""
    return {e.name: detected(e.detect, environ, home) for e in registry.agents}


def agents_of(targets: Sequence[InstructionTarget]) -> tuple[str, ...]:
    return tuple(sorted({a for t in targets for a in t.agents}))
