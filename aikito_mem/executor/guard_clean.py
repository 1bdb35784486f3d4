"""The writer's own check of a clean plan ([E9], [L3]): defence in depth.

A clean plan may only remove: every write is an UNLINK, of a checkout the live
``agent.toml`` lists (or the one named explicitly: ``clean project NAME PATH``, ``clean
PATH``), at a place a clean looks ([L3]: below ``.agents/memory``, in ``.agents/skills``
or a per-agent skills directory of the live registry ([N1]), an instruction target of the
live registry, the legacy ``.agents/AGENTS.md``), of a link
whose recorded literal the clean planner's own rule proves owned
(:func:`aikito_mem.planner.clean.owner` — the writer's ``readlinkat`` then refuses any
other live literal), or the ``rmdir`` of a directory the clean may prune
(:func:`aikito_mem.planner.clean.prune_segment`; the writer's ``rmdir`` refuses one that
is not empty).  A CREATE, or any other write, is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from aikito_mem.errors import ConfigError
from aikito_mem.executor.guard_checkouts import (
    checkout_refusals,
    clean_checkouts,
    foreign_checkout,
    removal_refusal,
)
from aikito_mem.model import Action, Observed, Plan, SegmentName
from aikito_mem.planner.clean import owner, place, prune_segment


def again(plan: Plan) -> str:
    """The command that plans the clean afresh."""
    import shlex

    path = shlex.quote(plan.explicit_path) if plan.explicit_path else ""
    what = f"project {shlex.quote(plan.project)} {path}".rstrip() if plan.project else path
    return f"aikito clean {what} --dry-run"


def refusals(plan: Plan, environ: Mapping[str, str] | None = None) -> Iterator[str]:
    """Every write of the clean ``plan`` the engine would not derive; where it may
    write is derived from the live world, read with the run's environment ``environ``
    ([H5]; ``None``: the process's)."""
    checkouts = clean_checkouts(plan, environ)
    if isinstance(checkouts, str):
        yield checkouts
        return
    allowed, how = checkouts
    from aikito_mem.config.registry_read import load_registry

    try:
        registry = load_registry(plan.workspace)
        targets = frozenset(t.path for t in registry.targets)
        skill_dirs = frozenset(d.path for d in registry.skill_dirs)
    except ConfigError:
        targets = skill_dirs = frozenset()
    active, refused = checkout_refusals(plan, allowed, how, verb="clean")
    yield from refused
    # Directories with a planned removal inside: the only ones but aikito's own runtime
    # directories a clean may prune.
    holding = {op.target.rpartition("/")[0] for op in plan.operations
               if op.action is Action.UNLINK}
    project = plan.project or None
    moved_from = plan.moved_from
    if moved_from is not None:
        from aikito_mem.world.observe import another_workspace

        if another_workspace(moved_from, plan.workspace):
            moved_from = None  # its links are that workspace's own ([L4])
    for op in plan.operations:
        if op.action is Action.CREATE:
            yield (f"CREATE {op.target!r}: a clean plan creates nothing; expected only "
                   "removals of aikito's own links")
            continue
        if op.action is not Action.UNLINK:
            continue
        problem = _refuse(op.checkout, op.target, op.entry, op.segment, op.observed,
                          (targets, skill_dirs), holding, active, plan.workspace,
                          project, moved_from)
        if problem is not None:
            yield f"UNLINK {op.target!r}{problem}"


def _refuse(checkout: str, target: str, entry: str, segment: SegmentName,
            observed: Observed, places: tuple[frozenset[str], frozenset[str]],
            holding: set[str],
            active: set[str], workspace: str, project: str | None,
            moved_from: str | None = None) -> str | None:
    foreign = foreign_checkout(checkout, active, target)
    if foreign is not None:
        return foreign
    rel = target[len(checkout) + 1:]
    targets, skill_dirs = places
    if entry == "directory":
        allowed = prune_segment(rel, targets, skill_dirs)
        if allowed is None or allowed[0] is not segment or (allowed[1]
                                                            and target not in holding):
            return (" removes a directory a clean may not prune; expected .agents, "
                    ".agents/memory, .agents/skills, or a directory the plan's own "
                    "removals empty below .agents/memory, on the way to an instruction "
                    "target, or a per-agent skills directory of the registry or on the "
                    "way to one ([L3], [N1])")
        return None  # the writer's rmdir checks it is that very, empty directory
    removal = removal_refusal(entry, observed)
    if removal is not None:
        return removal
    where = place(rel, targets, skill_dirs)
    if where is None or where[0] is not segment:
        return (" is not a place a clean looks at; expected a path below .agents/memory or "
                ".agents/skills, in a per-agent skills directory of the agent registry, "
                "an instruction target of the registry, or .agents/AGENTS.md ([L3], [N1])")
    link_dir = target.rpartition("/")[0]
    if owner(where[0], where[1], observed.literal, link_dir, workspace, project,
             moved_from) is None:
        return (f" removes a symlink to {observed.literal!r}, which this workspace does "
                "not own there ([O1], [L3])")
    return None
