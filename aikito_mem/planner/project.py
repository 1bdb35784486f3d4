"""One frozen Plan for the whole project: skills, instructions and memory (§13, [G6]).

:func:`plan_project` is the planner's one entry: observations in, a plan out.  The memory
planner builds the memory segment (and decides each checkout's state); :func:`add_segments`
adds the skills and instructions segments of every checkout — a SKIP per skill and per
instruction target for an offline checkout, a CONFLICT per segment for an invalid one —
and orders every operation by segment (skills, instructions, memory), then checkout order,
then target path ([G6]).  Pure: no I/O happens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    CheckoutPlan,
    CheckoutState,
    Finding,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    Operation,
    Plan,
    PlannedTarget,
    ProjectConfig,
    Resource,
    SegmentName,
    SourceCheck,
)
from aikito_mem.planner import offline_reason
from aikito_mem.planner.memory import build_plan
from aikito_mem.values import replace
from aikito_mem.views import InstructionsView, Observations, SkillsView

if TYPE_CHECKING:  # planned only when the registry names such a directory ([N1])
    from aikito_mem.views.agent_skills import AgentSkillsView

_FIRST, _SECOND, _LAST = SEGMENT_ORDER  # three segments: unpacking fails otherwise
_CONFLICT, _UNLINK = Action.CONFLICT, Action.UNLINK


def _invalid(co: CheckoutPlan, segment: SegmentName) -> Operation:
    return Operation(
        Action.CONFLICT, "G6", co.path, co.path,
        co.reason or f"checkout {co.path} is not a usable directory",
        remedy="fix the checkout path in agent.toml or its permissions",
        segment=segment,
    )


def _sort(ops: list[Operation], index: Mapping[str, int], plan: Plan) -> None:
    """[G6]: by segment, checkout order, target path, an UNLINK first.  The segment's
    place is told by identity: an enum's hash is a Python call, once per operation.

    Only the memory plan's own operations (``plan``'s, no segment added) and each
    checkout path once: they are in that order already — one segment, the checkouts in
    plan order, each by target ([P4], :func:`~aikito_mem.planner.memory.build_plan`) —
    and are left as they are."""
    if len(ops) == len(plan.operations) and len(index) == len(plan.checkouts):
        return
    last = len(index)

    def order(op: Operation) -> tuple[int, int, str, bool]:
        seg = op.segment
        return (0 if seg is _FIRST else 1 if seg is _SECOND else 2,
                index.get(op.checkout, last), op.target, op.action is not _UNLINK)

    ops.sort(key=order)


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


def _with_skill_sources(sources: tuple[SourceCheck, ...], skills: tuple[Resource, ...],
                        ops: list[Operation]) -> tuple[SourceCheck, ...]:
    """The plan's source checks plus every selected skill's, by identity for a skill the
    plan links ([P5]); without a selected skill, the memory plan's own (one per path,
    sorted, as :func:`~aikito_mem.planner.memory.build_plan` makes them)."""
    if not skills:
        return sources
    by_path = {c.path: c for c in sources}
    skills_segment, create = SegmentName.SKILLS, Action.CREATE  # looked up once
    linked = {op.resource for op in ops
              if op.segment is skills_segment and op.action is create}
    for res in skills:
        for check in res.checks:
            by_path.setdefault(check.path, check)
        if res.name in linked and res.checks:
            last = res.checks[-1]
            by_path[last.path] = replace(last, identity=True)
    return tuple(by_path[p] for p in sorted(by_path))


def plan_project(
    observed: Observations,
    *,
    config: ProjectConfig,
    workspace: str,
    workspace_source: str,
    explicit_path: str | None = None,
    register: str | None = None,
    home: str | None = None,
    agent: str | None = None,
    moved_from: str | None = None,
) -> Plan:
    """The plan of every segment from one observation pass ([G6]); ``agent`` is recorded
    when the instruction targets were limited to that agent's ([A3]); ``moved_from`` is
    the workspace's old root of ``--moved-from`` ([L4])."""
    plan = build_plan(config=config, workspace=workspace, workspace_source=workspace_source,
                      resources=observed.resources, checkouts=observed.checkouts,
                      explicit_path=explicit_path, register=register, home=home,
                      moved_from=moved_from)
    return add_segments(
        plan, skills=observed.skills, skill_views=dict(observed.skill_views),
        agents=dict(observed.agents), source=observed.instructions,
        targets=observed.targets, instruction_views=dict(observed.instruction_views),
        agent=agent, tracked=dict(observed.tracked), git_findings=observed.git_findings,
        skill_dirs=observed.skill_dirs, agent_views=dict(observed.agent_views),
    )


def _memory_ops(plan: Plan, tracked: Mapping[str, frozenset[str]]) -> list[Operation]:
    """The memory plan's operations, a CONFLICT at a target git tracks saying so ([L1])."""
    if not tracked:
        return list(plan.operations)
    none: frozenset[str] = frozenset()
    return [tracked_conflict(op, plan.config_path)
            if op.action is _CONFLICT and op.target in tracked.get(op.checkout, none)
            and op.resource is not None else op
            for op in plan.operations]


def _not_active(co: CheckoutPlan, skills: tuple[Resource, ...],
                targets: tuple[PlannedTarget, ...], source: InstructionSource,
                instructions_wanted: bool,
                skill_dirs: tuple[PlannedTarget, ...] = ()) -> list[Operation]:
    """An offline checkout: a SKIP per target; an invalid one: a CONFLICT per segment."""
    if co.state is CheckoutState.OFFLINE:
        reason = offline_reason(co.reason)
        ops: list[Operation] = []
        if skills:  # the planners of a segment with nothing to skip are not imported
            from aikito_mem.planner import skills as planner_skills

            ops += planner_skills.offline(co.path, reason, skills)
        if skills and skill_dirs:  # [N1]: an agent has a skills directory of its own
            from aikito_mem.planner import agent_skills as planner_agent_skills

            ops += planner_agent_skills.offline(co.path, reason, skill_dirs, skills)
        if instructions_wanted:
            from aikito_mem.planner import instructions as planner_instructions

            ops += planner_instructions.offline(co.path, reason, targets, source)
        return ops
    return [*([_invalid(co, SegmentName.SKILLS)] if skills else []),
            *([_invalid(co, SegmentName.INSTRUCTIONS)] if instructions_wanted else [])]


def skills_to_plan(skills: tuple[Resource, ...], view: SkillsView) -> bool:
    """Whether the skills planner has anything to plan in an active checkout: a selected
    skill, or an entry of ``.agents/skills`` (a stale link, a foreign entry).  Otherwise
    it plans nothing, and is not even imported ([§12]: a memory-only project)."""
    return bool(skills or view.entries)


def instructions_to_plan(source: InstructionSource, view: InstructionsView) -> bool:
    """Whether the instructions planner has anything to plan in an active checkout: a
    link at the legacy ``.agents/AGENTS.md`` (aikito's is retired), an instruction target
    while ``AGENTS.md`` has content (or is unsafe), else a link at a target or at its
    relink name (aikito's is unlinked: not left dangling; anything else there is a
    CONFLICT, [L8]).  Otherwise it plans nothing,
    and is not even imported ([§12]: a memory-only project)."""
    link = Kind.LINK
    if view.legacy.kind is link:
        return True
    if source.state is InstructionState.CONTENT or source.state is InstructionState.UNSAFE:
        return bool(view.targets)
    return any(t.observed.kind is link or t.relink.exists for t in view.targets)


def _skills(checkout: str, agents: Observed, view: SkillsView, skills: tuple[Resource, ...],
            plan: Plan, tracked: frozenset[str]
            ) -> tuple[list[Operation], list[Finding], list[tuple[str, Observed]]]:
    """[G2]: the skills segment of one active checkout."""
    if not skills_to_plan(skills, view):
        return [], [], []
    from aikito_mem.planner import skills as planner_skills

    return planner_skills.plan_checkout(checkout, agents, view, skills, plan.workspace,
                                        plan.config_path, tracked, plan.moved_from)


def _instructions(checkout: str, source: InstructionSource, view: InstructionsView,
                  plan: Plan, tracked: frozenset[str]
            ) -> tuple[list[Operation], list[Finding], list[tuple[str, Observed]]]:
    """[G4]: the instructions segment of one active checkout."""
    if not instructions_to_plan(source, view):
        return [], [], []
    from aikito_mem.planner import instructions as planner_instructions

    return planner_instructions.plan_checkout(checkout, source, view, tracked,
                                              plan.workspace, plan.moved_from)


def _agent_dirs(checkout: str, views: tuple[AgentSkillsView, ...],
                skills: tuple[Resource, ...], plan: Plan, tracked: frozenset[str]
                ) -> tuple[list[Operation], list[Finding], list[tuple[str, Observed]]]:
    """(operations, findings, directories relied on) of every per-agent skills directory
    of one active checkout ([N1])."""
    ops: list[Operation] = []
    findings: list[Finding] = []
    dirs: list[tuple[str, Observed]] = []
    if not views:  # no agent of the registry has a skills directory of its own
        return ops, findings, dirs
    from aikito_mem.planner import agent_skills as planner_agent_skills

    for view in views:
        a_ops, a_findings, a_dirs = planner_agent_skills.plan_dir(
            checkout, view, skills, plan.workspace, plan.config_path, tracked,
            plan.moved_from)
        ops += a_ops
        findings += a_findings
        dirs += a_dirs
    return ops, findings, dirs


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
    The views (and ``tracked``: the occupied targets git tracks, [L1]) are keyed by the
    active checkouts' paths; ``targets`` are the instruction targets for no checkout in
    particular; ``git_findings`` what observation found about git; ``skill_dirs`` and
    ``agent_views`` the per-agent skills directories likewise ([N1])."""
    index = {co.path: i for i, co in enumerate(plan.checkouts)}
    tracked = tracked or {}
    ops = _memory_ops(plan, tracked)
    findings: list[Finding] = [*plan.findings, *git_findings]
    checkouts: list[CheckoutPlan] = []
    # Instruction targets are wanted only while AGENTS.md has content (or is unsafe).
    instructions_wanted = bool(targets) and source.state in (InstructionState.CONTENT,
                                                              InstructionState.UNSAFE)
    for co in plan.checkouts:
        dirs = dict(co.dirs)
        if co.state is not CheckoutState.ACTIVE:
            ops += _not_active(co, skills, targets, source, instructions_wanted, skill_dirs)
        else:
            mine = tracked.get(co.path, frozenset())  # what git tracks there ([L1])
            s_ops, s_findings, s_dirs = _skills(
                co.path, agents[co.path], skill_views[co.path], skills, plan, mine)
            i_ops, i_findings, i_dirs = _instructions(
                co.path, source, instruction_views[co.path], plan, mine)
            a_ops, a_findings, a_dirs = _agent_dirs(
                co.path, (agent_views or {}).get(co.path, ()), skills, plan, mine)
            ops += [*s_ops, *i_ops, *a_ops]
            findings += [*s_findings, *i_findings, *a_findings]
            for rel, obs in (*s_dirs, *i_dirs, *a_dirs):
                dirs.setdefault(rel, obs)
        relied = tuple(sorted(dirs.items()))
        checkouts.append(co if relied == co.dirs else replace(co, dirs=relied))
    _sort(ops, index, plan)
    return attrs.evolve(
        plan,
        operations=tuple(ops),
        findings=tuple(findings),
        checkouts=tuple(checkouts),
        sources=_with_skill_sources(plan.sources, skills, ops),
        skills=tuple(res.name for res in skills),
        instructions=source,
        instruction_targets=targets,
        agent=agent,
        skill_dirs=skill_dirs,
    )
