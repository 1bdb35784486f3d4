"""The per-agent skills directories of a checkout ([N1]): the observing side.

:func:`agent_skills_views` looks, in one active checkout, at each registry agent's
``project_skills_path`` (``.claude/skills``…): the directories on the way, the directory
itself and its entries (one level, through the observing room's walk — the identities
verification re-checks).  Detection is asked only where it matters: the directory is
missing and a skill would be linked there.  :func:`differences` re-checks, for [E2], the
directories and the detection the plan recorded.  Stat-family calls and ``readlink``
only; the planner decides.
"""

from __future__ import annotations

from collections.abc import Callable

from aikito_mem.config.registry import InstructionTarget, Registry
from aikito_mem.model import (
    ABSENT,
    Kind,
    Observed,
    Plan,
)
from aikito_mem.views.agent_skills import AgentSkillsView
from aikito_mem.world.observe import Observer


def agent_skills_views(
    checkout: str, dirs: tuple[InstructionTarget, ...], wanted: bool,
    detect: Callable[[InstructionTarget], bool], observer: Observer,
) -> tuple[AgentSkillsView, ...]:
    """Each per-agent skills directory of one active checkout.  ``wanted``: whether any
    skill is selected (else only a directory's entries matter: stale links to unlink)."""
    views = []
    for d in dirs:
        parents = observer.on_the_way(checkout, d.path)
        usable = not parents or parents[-1][1].kind is Kind.DIR
        root = observer.look(f"{checkout}/{d.path}") if usable else ABSENT
        entries: tuple[tuple[str, Observed], ...] = ()
        if root.kind is Kind.DIR:
            entries = observer.scan(f"{checkout}/{d.path}", root, recursive=False)
        blocked = any(o.exists and o.kind is not Kind.DIR for _, o in parents)
        missing = root.kind is Kind.ABSENT and not blocked
        detected = detect(d) if (missing and wanted) else False
        views.append(AgentSkillsView(d.path, d.agents, detected, root, entries, parents))
    return tuple(views)


def planned_dirs(registry: Registry, agent: str | None) -> tuple[InstructionTarget, ...]:
    """The per-agent skills directories a plan covers: every agent's, or only ``agent``'s
    ([A3]: ``Project.prepare(agent)``)."""
    return registry.skill_dirs if agent is None else registry.skill_dirs_for(agent)


def differences(plan: Plan, registry: Registry,
                detect: Callable[[InstructionTarget], bool]) -> list[str]:
    """[E2]/[G7]: the per-agent skills directories of the live registry (path and agents)
    and the detection the plan relied on (asked again through ``detect``), compared with
    what the plan recorded."""
    live = planned_dirs(registry, plan.agent)
    live_dirs = [(d.path, d.agents) for d in live]
    recorded = [(d.rel, d.agents) for d in plan.skill_dirs]
    if live_dirs != recorded:
        return ["skills directories of the agent registry changed "
                f"(now {live_dirs or 'none'}, were {recorded or 'none'})"]
    out = []
    for d, planned in zip(live, plan.skill_dirs, strict=True):
        if planned.detected is not None and detect(d) is not planned.detected:
            word = "detected" if planned.detected else "not detected"
            out.append(f"agents of skills directory {d.path} ({', '.join(d.agents)}) "
                       f"were {word} when planned; no longer")
    return out
