"""Frozen views observation hands the planner: what was found for each checkout, its
skills directories and instruction targets, and the one :class:`Observations` of a
planning pass (§13, [P5]).

Nothing here performs I/O; every type is a frozen record
(:class:`~aikito_mem.values.Record`) and every collection a tuple.
"""

from __future__ import annotations

from aikito_mem.model import (
    ABSENT,
    CheckoutState,
    Finding,
    InstructionSource,
    Observed,
    PlannedTarget,
    Resource,
    ResourceSet,
)
from aikito_mem.values import Record


class CheckoutView(Record):
    """What observation found for one checkout candidate: the planner's input."""

    label: str
    path: str
    state: CheckoutState
    reason: str | None = None
    root: Observed = ABSENT
    agents: Observed = ABSENT
    memory: Observed = ABSENT
    #: Every entry under ``.agents/memory`` (recursive, never through links), by
    #: relative path, sorted.
    entries: tuple[tuple[str, Observed], ...] = ()
    #: ``.agents/memory/MEMORY.md`` is a regular file and ``.agents/config.yaml`` has a
    #: top-level ``memory:`` key: the memory descriptor's index, not a foreign entry.
    index_anchor: bool = False


class CleanCheckout(Record):
    """What observation found in one checkout candidate: the clean planner's input."""

    label: str
    path: str
    state: CheckoutState
    reason: str | None = None
    root: Observed = ABSENT
    agents: Observed = ABSENT
    #: The entries of ``.agents`` (one level), by name, sorted.
    agents_entries: tuple[tuple[str, Observed], ...] = ()
    memory: Observed = ABSENT
    #: Every entry under ``.agents/memory`` (recursive, never through links), sorted.
    memory_entries: tuple[tuple[str, Observed], ...] = ()
    skills: Observed = ABSENT
    skills_entries: tuple[tuple[str, Observed], ...] = ()
    #: Each instruction target of the registry (and the legacy ``.agents/AGENTS.md``
    #: when ``.agents`` is a real directory): path relative to the checkout → what is
    #: there (``ABSENT`` when a directory on the way is not a real directory).
    targets: tuple[tuple[str, Observed], ...] = ()
    #: The directories on the way to an instruction target or a per-agent skills
    #: directory: relative path → (observation, names of its entries — listed only
    #: where a link is held below).
    parents: tuple[tuple[str, Observed, tuple[str, ...]], ...] = ()
    #: Each per-agent skills directory of the registry ([N1], e.g. ``.claude/skills``):
    #: relative path → what is there and, when a real directory, its entries (one
    #: level).  The directories on the way to it are in :attr:`parents`.
    agent_skills: tuple[tuple[str, Observed, tuple[tuple[str, Observed], ...]], ...] = ()


class SkillsView(Record):
    """What observation found at ``.agents/skills`` of one active checkout ([G2])."""

    #: ``.agents/skills`` itself (a symlink carries its literal).
    root: Observed = ABSENT
    #: Its entries (one level: skill names are single components), by name, sorted.
    entries: tuple[tuple[str, Observed], ...] = ()


class AgentSkillsView(Record):
    """One per-agent skills directory of one active checkout, as observed ([N1])."""

    #: Relative to the checkout root, e.g. ``.claude/skills``.
    rel: str
    #: The agents whose ``project_skills_path`` this is (sorted).
    agents: tuple[str, ...] = ()
    #: Whether any of them is detected on this machine (asked only when it matters: the
    #: directory is missing and a skill would be linked there).
    detected: bool = False
    #: The directory itself (a symlink carries its literal).
    root: Observed = ABSENT
    #: Its entries (one level), by name, sorted — when it is a real directory.
    entries: tuple[tuple[str, Observed], ...] = ()
    #: Each ancestor directory, outermost first, up to the first one that is missing or
    #: not a real directory.
    parents: tuple[tuple[str, Observed], ...] = ()


class InstructionTargetView(Record):
    """One instruction target of one active checkout, as observed ([G4])."""

    #: Relative to the checkout root, e.g. ``AGENTS.md`` or ``.claude/CLAUDE.md``.
    rel: str
    #: The agents whose ``project_instruction_path`` this is (sorted; empty by default).
    agents: tuple[str, ...] = ()
    #: Whether any of them is detected on this machine ([G4]).
    detected: bool = False
    #: What is at the target.
    observed: Observed = ABSENT
    #: Each ancestor directory (relative path → observation), outermost first, up to the
    #: first one that is missing or not a real directory.
    parents: tuple[tuple[str, Observed], ...] = ()
    relink: Observed = ABSENT  # at the relink name: a killed relink's leftover ([L4])


class InstructionsView(Record):
    """Every instruction target of one active checkout plus the legacy link ([G4])."""

    targets: tuple[InstructionTargetView, ...] = ()
    #: ``.agents/AGENTS.md`` (absent when ``.agents`` is not a real directory).
    legacy: Observed = ABSENT


class Observations(Record):
    """Everything one planning pass observed, handed from ``world/`` to ``planner/`` in
    one value: the memory resources and checkouts, and the skills and instructions of
    every active checkout (§13).  The views are keyed by the active checkouts' paths."""

    resources: ResourceSet
    checkouts: tuple[CheckoutView, ...]
    skills: tuple[Resource, ...]
    instructions: InstructionSource
    #: The instruction targets for no checkout in particular (path, agents, detection).
    targets: tuple[PlannedTarget, ...]
    #: ``.agents`` of each active checkout.
    agents: tuple[tuple[str, Observed], ...] = ()
    skill_views: tuple[tuple[str, SkillsView], ...] = ()
    instruction_views: tuple[tuple[str, InstructionsView], ...] = ()
    #: The occupied targets (absolute) git tracks, by checkout ([L1]), and what
    #: observation found about git (``git.unavailable``).
    tracked: tuple[tuple[str, frozenset[str]], ...] = ()
    git_findings: tuple[Finding, ...] = ()
    #: The per-agent skills directories (path, agents, detection) and each active
    #: checkout's view of them ([N1]).
    skill_dirs: tuple[PlannedTarget, ...] = ()
    agent_views: tuple[tuple[str, tuple[AgentSkillsView, ...]], ...] = ()
