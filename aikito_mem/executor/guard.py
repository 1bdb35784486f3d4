"""The writer's own check of a plan ([E9], [O2], [O3]): defence in depth.

:func:`check` runs once, under the locks, after verification and before the first write.
It trusts nothing in the plan and re-derives from the live ``agent.toml``, the workspace
and :data:`SEGMENTS` (each segment's root and source rules, from :mod:`aikito_mem.layout`)
which checkouts, targets, sources, unlinks, prunes and registration the engine would
write; anything else is :class:`~aikito_mem.errors.UnsafePlanError`, nothing written.
docs/design.md ("The writer's guard") lists every rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import attrs

from aikito_mem import layout
from aikito_mem.config.names import entry_problem
from aikito_mem.errors import ConfigError, UnsafePlanError
from aikito_mem.executor.guard_checkouts import (
    allowed_checkouts,
    checkout_refusals,
    foreign_checkout,
    live_config,
    removal_refusal,
)
from aikito_mem.model import (
    Action,
    Kind,
    Operation,
    Plan,
    ProjectConfig,
    SegmentName,
)
from aikito_mem.planner.memory import history, owns
from aikito_mem.planner.moved import R_MOVED, moved_literal, relink_target
from aikito_mem.values import PlanKind, Value

if TYPE_CHECKING:
    from aikito_mem.world.git import WorktreeAnswers

_CREATE, _UNLINK = Action.CREATE, Action.UNLINK

__all__ = ["SEGMENTS", "SegmentRule", "check"]


class _Context:
    """What the guard derives from the live world for one plan (lazily, once)."""

    def __init__(self, plan: Plan, config: ProjectConfig) -> None:
        self.workspace = plan.workspace
        self.project = plan.project
        self.config = config
        #: The workspace's old root a relink replaces links into ([L4]).
        self.moved_from = plan.moved_from
        self._old_holds: bool | None = None
        self._notes: tuple[str | None, tuple[str, str]] | None = None
        self._wanted: frozenset[str] | None = None
        self._targets: frozenset[str] | None = None
        self._skill_dirs: tuple[str, ...] | None = None

    def notes(self) -> tuple[str | None, tuple[str, str]]:
        """(the notes source when a notes resource exists, else ``None``; (current,
        legacy)) — [S2] decided afresh: ``lstat`` of the project memory root, then of the
        selected location."""
        if self._notes is None:
            from aikito_mem.world.observe import lstat

            current, legacy = layout.notes_sources(self.workspace, self.project)
            project_memory = layout.project_memory(self.workspace, self.project)
            selected = current if lstat(project_memory).exists else legacy
            present = selected if lstat(selected).exists else None
            self._notes = (present, (current, legacy))
        return self._notes

    def skill_dirs(self) -> tuple[str, ...]:
        """The per-agent skills directories the live agent registry names ([N1])."""
        if self._skill_dirs is None:
            from aikito_mem.config.registry_read import load_registry

            try:
                registry = load_registry(self.workspace)
            except ConfigError:
                self._skill_dirs = ()
            else:
                self._skill_dirs = tuple(d.path for d in registry.skill_dirs)
        return self._skill_dirs

    def old_root_holds_a_workspace(self) -> bool:
        """Whether ``--moved-from OLD`` still holds a workspace (``OLD/projects``) other
        than this one by identity: then its links are its own and nothing of it is
        relinked ([L4])."""
        if self._old_holds is None:
            from aikito_mem.world.observe import another_workspace

            self._old_holds = self.moved_from is not None and another_workspace(
                self.moved_from, self.workspace)
        return self._old_holds

    def instruction_targets(self) -> frozenset[str]:
        """Instruction target paths the live agent registry names ([G3])."""
        if self._targets is None:
            from aikito_mem.config.registry_read import load_registry

            try:
                registry = load_registry(self.workspace)
            except ConfigError:
                self._targets = frozenset()
            else:
                self._targets = frozenset(t.path for t in registry.targets)
        return self._targets

    def wanted(self) -> frozenset[str]:
        """Runtime paths (relative to ``.agents/memory``) the live configuration wants:
        its references, minus those the notes shadow ([S4]), plus ``notes``."""
        if self._wanted is None:
            notes = self.notes()[0]
            refs = set(self.config.memory)
            if notes is not None:
                refs = {r for r in refs if not layout.is_notes(r)}
                refs.add(layout.NOTES)
            self._wanted = frozenset(refs)
        return self._wanted


def _memory_source(ctx: _Context, rel: str) -> str | None:
    """[S1]/[S2]: the canonical source of ``.agents/memory/<rel>``, or ``None`` when the
    live configuration wants nothing there."""
    if rel not in ctx.wanted():
        return None
    if rel == layout.NOTES:
        notes = ctx.notes()[0]
        if notes is not None:
            return notes
    return layout.memory_source(ctx.workspace, rel)


def _memory_history(ctx: _Context, rel: str) -> tuple[str, ...]:
    """[O2]: the allowed historical canonical sources of ``.agents/memory/<rel>``."""
    return history(ctx.workspace, rel, ctx.notes()[1])


@attrs.frozen(repr=False, eq=False)
class SegmentRule(Value):
    """Where one segment may write, and what it may write there."""

    name: str
    #: Root of the segment's targets, relative to the checkout root.
    root: str
    #: The canonical source for a target path relative to ``root`` (``None``: nothing).
    source: Callable[[_Context, str], str | None]
    #: The allowed historical sources ([O2]) of a link at a path relative to ``root``.
    history: Callable[[_Context, str], tuple[str, ...]]
    #: Targets are one path component (skills) rather than a clean relative path.
    single_component: bool = False
    #: Whether directories the plan's unlinks empty may be pruned ([P2]).
    prunes: bool = True
    #: Further roots of the segment, from the live world (the per-agent skills
    #: directories of [N1]), each with the same source and ownership rules.
    more_roots: Callable[[_Context], tuple[str, ...]] | None = None


def _skill_source(ctx: _Context, rel: str) -> str | None:
    """[G2]: ``<ws>/skills/<name>`` for a skill the live configuration selects."""
    if rel not in ctx.config.skills:
        return None
    return layout.skill_source(ctx.workspace, rel)


def _skill_history(ctx: _Context, rel: str) -> tuple[str, ...]:
    """[O2]: the one canonical source of ``.agents/skills/<name>``."""
    return (layout.skill_source(ctx.workspace, rel),)


def _instruction_source(ctx: _Context, rel: str) -> str | None:
    """[G3]: ``<ws>/projects/<p>/AGENTS.md`` at a target the live registry names."""
    if rel not in ctx.instruction_targets():
        return None
    return layout.instructions_source(ctx.workspace, ctx.project)


def _instruction_history(ctx: _Context, rel: str) -> tuple[str, ...]:
    """[O2]: the project instructions, at a registry target or the legacy
    ``.agents/AGENTS.md``."""
    if rel != layout.LEGACY_INSTRUCTIONS and rel not in ctx.instruction_targets():
        return ()
    return (layout.instructions_source(ctx.workspace, ctx.project),)


#: segment → its rules.  A segment without a row here cannot write at all.
SEGMENTS: dict[SegmentName, SegmentRule] = {
    SegmentName.SKILLS: SegmentRule("skills", layout.SKILLS_DIR, _skill_source,
                                    _skill_history, single_component=True, prunes=False,
                                    more_roots=_Context.skill_dirs),
    SegmentName.INSTRUCTIONS: SegmentRule("instructions", "", _instruction_source,
                                          _instruction_history, prunes=False),
    SegmentName.MEMORY: SegmentRule("memory", layout.MEMORY_DIR, _memory_source,
                                    _memory_history),
}


def _refusals(plan: Plan, environ: Mapping[str, str] | None, known: ProjectConfig | None,
              known_home: str | None, worktrees: WorktreeAnswers | None
              ) -> Iterator[str]:
    try:
        config, home = live_config(plan, environ, known, known_home)
    except ConfigError as exc:
        yield f"the project's agent.toml cannot be loaded to check the plan: {exc.message}"
        return
    if plan.config_path != config.config_path:
        yield (f"the plan names {plan.config_path!r} as the project's agent.toml; expected "
               f"{config.config_path}")
    if plan.register is not None:
        from aikito_mem.config.write import registered_form

        explicit = plan.explicit_path
        if explicit is None or plan.register not in (explicit,
                                                     registered_form(explicit, home)):
            yield (f"the plan registers {plan.register!r} in agent.toml; expected only the "
                   f"checkout named explicitly ({explicit!r}, as ~/… under the home "
                   "directory)")
        if plan.config_sha256 is None:
            yield ("the plan registers a checkout without the sha256 of agent.toml that the "
                   "compare-and-swap needs ([K4])")
    try:
        allowed, how = allowed_checkouts(plan, config, home, worktrees)
    except ConfigError as exc:
        yield f"the checkout named explicitly cannot be used: {exc.message}"
        return
    active, refused = checkout_refusals(plan, allowed, how, verb="write to")
    yield from refused
    ctx = _Context(plan, config)
    # Directories the plan's own unlinks empty: the only ones it may prune ([P2]).
    emptied: set[tuple[str, SegmentName, str]] = set()
    writes: list[Operation] = []
    for op in plan.operations:
        action = op.action
        if action is _UNLINK:
            emptied.add((op.checkout, op.segment, op.target.rpartition("/")[0]))
            writes.append(op)
        elif action is _CREATE:
            writes.append(op)
    for op in writes:
        problem = _refuse_op(op, ctx, active, emptied)
        if problem is not None:
            yield problem


def _refuse_op(op: Operation, ctx: _Context, active: set[str],
               emptied: set[tuple[str, SegmentName, str]]) -> str | None:
    """Why the write ``op`` is refused, or ``None`` when the engine would derive it."""
    problem = _refuse(op, ctx, active, emptied)
    return None if problem is None else f"{op.action.value} {op.target!r}{problem}"


def _prefix(op: Operation, rule: SegmentRule, ctx: _Context) -> str:
    """The root below which ``op`` writes: the segment's own, or the one of its further
    roots ([N1]) the target lies below (the registry keeps them apart from each other)."""
    prefix = f"{op.checkout}/{rule.root}/" if rule.root else f"{op.checkout}/"
    if rule.more_roots is None or op.target.startswith(prefix):
        return prefix
    for root in rule.more_roots(ctx):
        other = f"{op.checkout}/{root}/"
        if op.target.startswith(other):
            return other
    return prefix


def _refuse(op: Operation, ctx: _Context, active: set[str],
            emptied: set[tuple[str, SegmentName, str]]) -> str | None:
    """:func:`_refuse_op` without the leading words (built only for a refusal)."""
    foreign = foreign_checkout(op.checkout, active, op.target)
    if foreign is not None:
        return foreign
    segment = op.segment
    rule = SEGMENTS.get(segment)
    if rule is None:
        known = ", ".join(s.value for s in SEGMENTS)
        return f" is in segment {segment.value!r}, which cannot write yet; expected {known}"
    prefix = _prefix(op, rule, ctx)
    if not op.target.startswith(prefix):
        return f" is outside {prefix}; expected a target below it"
    rel = op.target[len(prefix):]
    # [H3]: the planners' own rule for what a runtime entry may be called.
    problem = entry_problem(rel, single=rule.single_component)
    if problem is not None:
        return f": the path below {prefix} {problem}; expected a clean relative path"
    if op.action is _CREATE:
        if op.entry != "link":
            return f" creates a {op.entry!r}; aikito only creates links"
        expected = rule.source(ctx, rel)
        if expected is None:
            return (f": the live configuration ({ctx.config.config_path}, the agent "
                    f"registry) wants nothing at {rel!r}; expected no CREATE there")
        if op.source != expected:
            return f" links to {op.source!r}; expected the canonical source {expected}"
        if op.rule == R_MOVED:
            # [L4]: the one rename over an existing entry — only the link into the
            # workspace's old root that --moved-from names for this very source.
            old = moved_literal(ctx.moved_from, ctx.workspace, expected)
            if (op.observed.kind is not Kind.LINK or old is None
                    or op.observed.literal != old or ctx.old_root_holds_a_workspace()):
                return (f" replaces {op.observed.describe()}; a relink replaces only the "
                        f"link {old or 'OLD + the canonical remainder'!r} (--moved-from, "
                        "[L4])")
        return None
    if op.entry == "directory":
        if not rule.prunes or (op.checkout, segment, op.target) not in emptied:
            return (" removes a directory the plan's own unlinks do not empty; "
                    "aikito prunes only such directories ([P2])")
        return None  # the writer's rmdir checks it is that very, empty directory
    removal = removal_refusal(op.entry, op.observed)
    if removal is not None:
        return removal
    # A relink's temporary name ([L4]) is owned as the entry it stands for.
    allowed = rule.history(ctx, relink_target(rel) or rel)
    literal = op.observed.literal
    if owns(literal, op.target.rpartition("/")[0], allowed) is None and (
            # [L4]: with --moved-from OLD, aikito's link under the old root is its own.
            layout.moved_owner(literal, ctx.moved_from, ctx.workspace, allowed) is None
            or ctx.old_root_holds_a_workspace()):
        return (f" removes a symlink to {op.observed.literal!r}, which aikito does not "
                f"own; expected a link to {' or '.join(allowed)} ([O2])")
    return None


def check(plan: Plan, *, environ: Mapping[str, str] | None = None,
          config: ProjectConfig | None = None, home: str | None = None,
          worktrees: WorktreeAnswers | None = None) -> None:
    """Refuse ``plan`` before its first write unless every write is one the engine
    derives (see the module documentation).  A plan without writes passes at once.

    ``environ`` is the run's environment ([H5]: ``~`` expands to its home; ``None``: the
    process's).  ``config`` is the engine's own parse of ``agent.toml`` (with the ``home``
    it expanded ``~`` with), passed by whoever planned: the guard still reads the live
    bytes and re-uses that parse only when they are its bytes and that home is the
    environment's.  ``worktrees``: git's answers of the call that made ``plan``, re-used
    only for that very plan object ([L6], see :func:`allowed_checkouts`)."""
    if not plan.has_changes:
        return
    from shlex import quote

    again = f"aikito sync project {quote(plan.project)} --dry-run"
    if plan.kind is PlanKind.CLEAN:
        from aikito_mem.executor import guard_clean

        refusals = tuple(dict.fromkeys(guard_clean.refusals(plan, environ)))
        again = guard_clean.again(plan)
    else:
        refusals = tuple(dict.fromkeys(_refusals(plan, environ, config, home, worktrees)))
    if refusals:
        n = len(refusals)
        raise UnsafePlanError(
            f"refused: the plan asks for {n} write{'s' * (n != 1)} the engine would never "
            "derive (it was edited or built by hand); nothing was written — plan again "
            f"with `{again}`:\n  - "
            + "\n  - ".join(refusals),
            refusals=refusals, plan=plan,
        )
