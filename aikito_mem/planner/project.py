"""One frozen Plan for the whole project: skills, instructions and memory (§13, [G6]).

The memory planner builds the memory segment (and decides each checkout's state); this
module adds the skills and instructions segments of every checkout — a SKIP per skill and
per instruction target for an offline checkout, a CONFLICT per segment for an invalid
one — and orders every operation by segment (skills, instructions, memory), then checkout
order, then target path ([G6]).  Pure: no I/O happens here.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    AgentSkillsView,
    CheckoutPlan,
    CheckoutState,
    Finding,
    InstructionSource,
    InstructionState,
    InstructionsView,
    Observed,
    Operation,
    Plan,
    PlannedTarget,
    Resource,
    SegmentName,
    SkillsView,
)
from aikito_mem.planner import agent_skills as planner_agent_skills
from aikito_mem.planner import instructions as planner_instructions
from aikito_mem.planner import skills as planner_skills

_RANK = {seg: i for i, seg in enumerate(SEGMENT_ORDER)}


def _invalid(co: CheckoutPlan, segment: SegmentName) -> Operation:
    return Operation(
        Action.CONFLICT, "G6", co.path, co.path,
        co.reason or f"checkout {co.path} is not a usable directory",
        remedy="fix the checkout path in agent.toml or its permissions",
        segment=segment,
    )


def tracked_conflict(op: Operation, config_path: str) -> Operation:
    """A memory CONFLICT at a target whose file or directory git tracks ([L1]): it stays a
    conflict (INV-MEM-07), saying so, and its remedy neither moves, deletes nor adopts
    the repository's file."""
    name = op.resource or op.target
    return attrs.evolve(
        op,
        reason=f"{op.reason} — git tracks it: it belongs to the repository",
        remedy=(f"keep it, it is the repository's (aikito never moves or overwrites what "
                f"git tracks); to stop linking it here, remove {name!r} from memory in "
                f"{config_path}"),
    )


def add_segments(
    plan: Plan,
    *,
    skills: tuple[Resource, ...],
    skill_views: Mapping[str, SkillsView],
    agents: Mapping[str, Observed],
    source: InstructionSource,
    targets: tuple[PlannedTarget, ...],
    instruction_views: Mapping[str, InstructionsView],
    agent: str | None = None,
    tracked: Mapping[str, frozenset[str]] | None = None,
    git_findings: tuple[Finding, ...] = (),
    skill_dirs: tuple[PlannedTarget, ...] = (),
    agent_views: Mapping[str, tuple[AgentSkillsView, ...]] | None = None,
) -> Plan:
    """``plan`` (the memory segment) with the skills and instructions segments added.

    ``skill_views``, ``agents`` (``.agents`` of each checkout) and ``instruction_views``
    are keyed by the active checkouts' paths; ``targets`` are the instruction targets
    as observed for no checkout in particular (their path, agents and detection).
    ``tracked`` (by checkout path): the occupied targets, of every segment, that git
    tracks ([L1]); ``git_findings``: what observation found about git (``git.unavailable``).
    ``skill_dirs`` and ``agent_views``: the per-agent skills directories likewise ([N1]).
    """
    index = {co.path: i for i, co in enumerate(plan.checkouts)}
    tracked = tracked or {}
    none: frozenset[str] = frozenset()
    ops: list[Operation] = [
        tracked_conflict(op, plan.config_path)
        if op.action is Action.CONFLICT and op.target in tracked.get(op.checkout, none)
        and op.resource is not None else op
        for op in plan.operations
    ]
    findings: list[Finding] = [*plan.findings, *git_findings]
    checkouts: list[CheckoutPlan] = []
    # Instruction targets are wanted only while AGENTS.md has content (or is unsafe, a
    # conflict to report); an absent or empty one plans nothing where nothing can be
    # checked (offline, invalid checkouts).
    instructions_wanted = bool(targets) and source.state in (InstructionState.CONTENT,
                                                              InstructionState.UNSAFE)
    for co in plan.checkouts:
        dirs = dict(co.dirs)
        if co.state is CheckoutState.OFFLINE:
            reason = co.reason or "path does not exist"
            ops.extend(planner_skills.offline(co.path, reason, skills))
            ops.extend(planner_agent_skills.offline(co.path, reason, skill_dirs, skills))
            if instructions_wanted:
                ops.extend(planner_instructions.offline(co.path, reason, targets, source))
        elif co.state is CheckoutState.INVALID:
            if skills:
                ops.append(_invalid(co, SegmentName.SKILLS))
            if instructions_wanted:
                ops.append(_invalid(co, SegmentName.INSTRUCTIONS))
        else:
            s_ops, s_findings, s_dirs = planner_skills.plan_checkout(
                co.path, agents[co.path], skill_views[co.path], skills, plan.workspace,
                plan.config_path, tracked.get(co.path, none), plan.moved_from)
            i_ops, i_findings, i_dirs = planner_instructions.plan_checkout(
                co.path, source, instruction_views[co.path], tracked.get(co.path, none),
                plan.workspace, plan.moved_from)
            ops.extend(s_ops)
            ops.extend(i_ops)
            findings.extend(s_findings)
            findings.extend(i_findings)
            for rel, obs in (*s_dirs, *i_dirs):
                dirs.setdefault(rel, obs)
            for view in (agent_views or {}).get(co.path, ()):
                a_ops, a_findings, a_dirs = planner_agent_skills.plan_dir(
                    co.path, view, skills, plan.workspace, plan.config_path,
                    tracked.get(co.path, none))
                ops.extend(a_ops)
                findings.extend(a_findings)
                for rel, obs in a_dirs:
                    dirs.setdefault(rel, obs)
        checkouts.append(attrs.evolve(co, dirs=tuple(sorted(dirs.items()))))
    ops.sort(key=lambda op: (_RANK[op.segment], index.get(op.checkout, len(index)),
                             op.target, 0 if op.action is Action.UNLINK else 1))
    sources = {c.path: c for c in plan.sources}
    linked = {op.resource for op in ops
              if op.segment is SegmentName.SKILLS and op.action is Action.CREATE}
    for res in skills:
        for check in res.checks:
            sources.setdefault(check.path, check)
        if res.name in linked and res.checks:
            last = res.checks[-1]
            sources[last.path] = attrs.evolve(last, identity=True)
    return attrs.evolve(
        plan,
        operations=tuple(ops),
        findings=tuple(findings),
        checkouts=tuple(checkouts),
        sources=tuple(sources[p] for p in sorted(sources)),
        skills=tuple(res.name for res in skills),
        instructions=source,
        instruction_targets=targets,
        agent=agent,
        skill_dirs=skill_dirs,
    )
