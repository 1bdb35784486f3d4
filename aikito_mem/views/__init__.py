"""Frozen views observation hands the planner: what was found for each checkout, its
skills directory and instruction targets, and the one :class:`Observations` of a
planning pass (§13, [P5]).

Nothing here performs I/O; every type is a frozen record
(:class:`~aikito_mem.values.Record`) and every collection a tuple.  The views only a
rarer run builds are in the package's modules, imported by the rooms of that run
([§12]): :mod:`aikito_mem.views.agent_skills` (a per-agent skills directory, [N1]) and
:mod:`aikito_mem.views.clean` (what a clean observed, [L3]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # built only by a run whose registry has such directories ([N1])
    from aikito_mem.views.agent_skills import AgentSkillsView


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


class SkillsView(Record):
    """What observation found at ``.agents/skills`` of one active checkout ([G2])."""

    #: ``.agents/skills`` itself (a symlink carries its literal).
    root: Observed = ABSENT
    #: Its entries (one level: skill names are single components), by name, sorted.
    entries: tuple[tuple[str, Observed], ...] = ()


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
