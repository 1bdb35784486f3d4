"""Observation of the live world, read-only: the filesystem (`observe`), the checkouts and
which one contains a path, the desired resources and segment sources, the memory
descriptor — and, here in the package itself, its entry: the one observation pass of a
project, every segment of every checkout, once, before the planner runs ([P5], [P6],
§13).

The memory side (each checkout's runtime tree, the desired resources) and the skills and
instructions side (their sources, the registry's targets, what each active checkout
holds) are observed through one :class:`~aikito_mem.world.observe.Observer`, so a path
is looked at once; the result is one frozen :class:`~aikito_mem.views.Observations`
for :func:`aikito_mem.planner.project.plan_project`.  The pass imports the rooms it runs
through when it is called: a room of the package imported alone (the writer's
observation, the git room) brings nothing else, and a sync loads no module of its own
for the pass ([§12]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aikito_mem.config.registry import InstructionTarget, Registry
    from aikito_mem.model import ProjectConfig
    from aikito_mem.views import Observations
    from aikito_mem.world.checkouts import Slot
    from aikito_mem.world.observe import Observer

__all__ = ["load_registry", "observe_project"]


def load_registry(workspace: str) -> Registry:
    """The agent registry ([G3]): its files read and checked only when ``agents/`` holds
    some — a workspace without registry files is decided by the listing alone, and never
    imports the reader ([§12])."""
    from aikito_mem.config import registry as _registry

    files = _registry.agent_files(workspace)
    listed = _registry.listed_registry(files)
    if listed is not None:
        return listed
    from aikito_mem.config.registry_read import read_registry

    assert files is not None
    return read_registry(workspace, files)


def observe_project(
    config: ProjectConfig,
    workspace: str,
    slots: tuple[Slot, ...],
    observer: Observer,
    *,
    environ: Mapping[str, str],
    home: str | None,
    agent: str | None = None,
) -> Observations:
    """What the planner needs to plan ``config`` for ``slots``; ``agent`` limits the
    instruction targets to that agent's ([A3])."""
    from aikito_mem.model import CheckoutState, Kind
    from aikito_mem.views import Observations
    from aikito_mem.world import checkouts, segments
    from aikito_mem.world.resources import resolve

    resources = resolve(config, workspace, observer)
    views = checkouts.observed(slots, resources, observer)
    registry = load_registry(workspace)
    targets = registry.targets if agent is None else registry.targets_for(agent)
    detect = segments.Detection(registry, environ, home)
    skill_dirs: tuple[InstructionTarget, ...] = ()
    if registry.skill_dirs:  # per-agent skills directories ([N1]): looked at only then
        from aikito_mem.world import agent_skills

        skill_dirs = agent_skills.planned_dirs(registry, agent)
    detect_dirs = segments.Detection(registry, environ, home)
    agents, skill_views, instruction_views, agent_views = [], [], [], []
    for view in views:
        if view.state is not CheckoutState.ACTIVE or view.root.kind is not Kind.DIR:
            continue
        agents.append((view.path, view.agents))
        skill_views.append((view.path, segments.skills_view(view.path, view.agents,
                                                            observer)))
        instruction_views.append((view.path, segments.instructions_view(
            view.path, view.agents, targets, detect, observer)))
        if skill_dirs:
            agent_views.append((view.path, agent_skills.agent_skills_views(
                view.path, skill_dirs, bool(config.skills), detect_dirs, observer)))
    skills = segments.resolve_skills(config.skills, workspace, observer)
    source = segments.instruction_source(workspace, config.name, observer)
    # [L1]: git is asked only about targets a file, a directory or a foreign link occupies.
    tracked, git_findings = segments.tracked_targets(segments.occupied_targets(
        views, resources, skills, dict(skill_views), source, dict(instruction_views),
        dict(agent_views)))
    return Observations(
        resources=resources,
        checkouts=views,
        skills=skills,
        instructions=source,
        targets=detect.planned(targets),
        agents=tuple(agents),
        skill_views=tuple(skill_views),
        instruction_views=tuple(instruction_views),
        tracked=tuple(tracked.items()),
        git_findings=git_findings,
        skill_dirs=detect_dirs.planned(skill_dirs),
        agent_views=tuple(agent_views),
    )
