"""The project instructions segment's planner ([G4]): pure, like the memory planner.

Source ``<ws>/projects/<p>/AGENTS.md``; targets from the agent registry ([G3]), e.g.
``AGENTS.md`` and ``.claude/CLAUDE.md`` relative to the checkout root; the link literal is
the source path.  Per target:

============================  ========================================  ===============
source                        at the target                             action
============================  ========================================  ===============
content                       missing, parent exists                    CREATE
content                       missing, parent missing                   CREATE (parent made) when
                                                                        an agent is detected,
                                                                        else SKIP
content                       owned link                                NOOP
content                       file, directory, foreign link             CONFLICT
content                       one of those that git tracks              SKIP ([L1])
empty or absent               owned link                                UNLINK
empty or absent               anything else                             nothing
unsafe                        anything                                  CONFLICT
============================  ========================================  ===============

A parent on the way that is a symlink or not a directory is a CONFLICT for that target.
The legacy owned link ``.agents/AGENTS.md`` is unlinked.  No I/O happens here.
"""

from __future__ import annotations

import attrs

from aikito_mem.layout import (
    AGENTS_DIR,
    LEGACY_INSTRUCTIONS,
    moved_literal,
    relink_path,
    too_long,
)
from aikito_mem.model import (
    ABSENT,
    Action,
    Finding,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    Operation,
    PlannedTarget,
    SegmentName,
)
from aikito_mem.planner import R_MOVED
from aikito_mem.planner.memory import owns
from aikito_mem.planner.skills import R_TRACKED, TRACKED_REASON, is_tracked, tracked_finding
from aikito_mem.views import InstructionsView, InstructionTargetView

R_INSTR = "G4"
R_OFFLINE = "G6"
_SEG = SegmentName.INSTRUCTIONS
#: The actions whose target's directories the plan relies on (looked up once: an enum
#: member read off its class is slow).
_RELIED = (Action.CREATE, Action.UNLINK, Action.NOOP, Action.CONFLICT)


def _link_dir(checkout: str, rel: str) -> str:
    parent = rel.rpartition("/")[0]
    return f"{checkout}/{parent}" if parent else checkout


def _op(action: Action, checkout: str, rel: str, reason: str, source: str, *,
        remedy: str | None = None, observed: Observed = ABSENT) -> Operation:
    return Operation(action, R_INSTR, checkout, f"{checkout}/{rel}", reason, resource=rel,
                     source=source, remedy=remedy, observed=observed, segment=_SEG)


def offline(checkout: str, reason: str, targets: tuple[PlannedTarget, ...],
            source: InstructionSource) -> list[Operation]:
    """A SKIP per instruction target for an offline checkout ([G6])."""
    return [
        Operation(Action.SKIP, R_OFFLINE, checkout, f"{checkout}/{t.rel}",
                  f"checkout offline: {reason}", resource=t.rel, source=source.path,
                  segment=_SEG)
        for t in targets
    ]


def _agents_words(target: InstructionTargetView) -> str:
    if not target.agents:
        return "the project instructions"
    names = ", ".join(target.agents)
    return f"the instructions of {names}"


def _on_the_way(target: InstructionTargetView) -> tuple[tuple[str, Observed] | None, bool]:
    """(the first directory on the way to the target that is not one, whether one is
    missing) — whichever comes first, outermost first."""
    for prel, pobs in target.parents:
        if pobs.kind is Kind.ABSENT:
            return None, True
        if pobs.kind is not Kind.DIR:
            return (prel, pobs), False
    return None, False


def _plan_target(checkout: str, source: InstructionSource,
                 target: InstructionTargetView, tracked: frozenset[str],
                 moved: tuple[str, str] | None = None) -> Operation | None:
    """The operation at one target; ``moved`` is ``(OLD, the literal a link to the
    source had under it)`` of ``--moved-from OLD`` ([L4])."""
    rel, obs, src = target.rel, target.observed, source.path
    link_dir = _link_dir(checkout, rel)
    owned = obs.kind is Kind.LINK and owns(obs.literal, link_dir, (src,)) is not None
    if source.state is InstructionState.UNSAFE:
        return _op(Action.CONFLICT, checkout, rel, source.problem or f"{src} is unsafe", src,
                   remedy=f"make {src} a regular file inside the workspace, reached "
                   "through directories and symlinks that stay inside it, or remove it",
                   observed=obs)
    blocked_parent, missing_parent = _on_the_way(target)
    if source.state is not InstructionState.CONTENT:
        # [L4]: with --moved-from, aikito's link to the same source under the old root.
        into_old = not owned and moved is not None and obs.literal == moved[1]
        if (owned or into_old) and blocked_parent is None and not missing_parent:
            why = "is empty" if source.state is InstructionState.EMPTY else "does not exist"
            into = f" (into {moved[0]})" if into_old and moved else ""
            return _op(Action.UNLINK, checkout, rel, f"aikito's link{into} to {src}, which "
                       f"{why}: not left dangling", src, observed=obs)
        return None
    long = too_long(f"{checkout}/{rel}")
    if long is not None and obs.kind is Kind.ABSENT:  # [E5]: a target never to create
        return _op(Action.CONFLICT, checkout, rel, long, src,
                   remedy="shorten the project_instruction_path of the agent registry, or "
                   "move the checkout to a shorter path", observed=obs)
    if blocked_parent is not None:
        prel, pobs = blocked_parent
        where = f"{checkout}/{prel}"
        return _op(Action.CONFLICT, checkout, rel,
                   f"{where} is {pobs.describe()}; expected a real directory to hold "
                   f"{checkout}/{rel}", src,
                   remedy=f"move {where} out of the way and run again; aikito never writes "
                   "through or replaces it", observed=obs)
    if missing_parent:
        if target.detected:
            return _op(Action.CREATE, checkout, rel,
                       "target missing (its directory is created: "
                       f"{', '.join(target.agents) or 'an agent'} detected)", src,
                       observed=obs)
        return _op(Action.SKIP, checkout, rel,
                   f"agent not detected ({', '.join(target.agents) or 'none'}): its directory "
                   "does not exist", src, observed=obs)
    if obs.kind is Kind.ABSENT:
        return _op(Action.CREATE, checkout, rel, "target missing", src, observed=obs)
    if owned:
        return _op(Action.NOOP, checkout, rel, "already linked", src, observed=obs)
    if moved is not None and obs.kind is Kind.LINK and obs.literal == moved[1]:
        # [L4]: the project's instructions under the workspace's old root.
        return attrs.evolve(_op(Action.CREATE, checkout, rel, f"relinked from {moved[0]}",
                                src, observed=obs), rule=R_MOVED)
    what = f"{checkout}/{rel}"
    if is_tracked(what, obs, tracked):
        # [L1]: a committed AGENTS.md / CLAUDE.md is the repository's own — a file, or a
        # committed symlink such as ``CLAUDE.md -> AGENTS.md``.
        return Operation(Action.SKIP, R_TRACKED, checkout, what, TRACKED_REASON,
                         resource=rel, source=src, observed=obs, segment=_SEG)
    return _conflict(checkout, target, src)


def _conflict(checkout: str, target: InstructionTargetView, src: str) -> Operation:
    """The CONFLICT of something aikito does not own (and git does not track) at a
    target, with the remedy that fits what it is."""
    from aikito_mem.planner.remedies import foreign_link_remedy

    rel, obs = target.rel, target.observed
    what = f"{checkout}/{rel}"
    if obs.kind is Kind.LINK:  # moving a link into the workspace would break it
        remedy = (f"{what} is a link of this checkout that aikito does not own: keep it "
                  "and leave the project instructions unlinked there, or "
                  f"{foreign_link_remedy(what)}")
    else:
        remedy = (f"{what} is {_agents_words(target)} of this checkout and not aikito's: "
                  f"keep it and leave the project instructions unlinked there, or move it "
                  f"into {src} and remove it, then run again (aikito never overwrites it)")
    if obs.kind is Kind.FILE:  # [L5]: adopt resolves an identical copy
        remedy += (f"; aikito adopt {what} replaces it with the link when it holds the same "
                   f"text as {src} (and shows the differences otherwise)")
    return _op(Action.CONFLICT, checkout, rel,
               f"found {obs.describe()}; expected a symlink to {src!r}", src,
               remedy=remedy, observed=obs)


def plan_checkout(
    checkout: str, source: InstructionSource, view: InstructionsView,
    tracked: frozenset[str] = frozenset(),
    workspace: str | None = None, moved_from: str | None = None,
) -> tuple[list[Operation], list[Finding], list[tuple[str, Observed]]]:
    """(operations, findings, directories relied on) of one active checkout ([G4]);
    ``tracked``: the targets (absolute paths) whose file, directory or link git
    tracks ([L1]); ``moved_from`` is ``--moved-from OLD`` ([L4])."""
    ops: list[Operation] = []
    findings: list[Finding] = []
    dirs: dict[str, Observed] = {}
    old = moved_literal(moved_from, workspace or "", source.path)
    moved = (moved_from, old) if moved_from is not None and old is not None else None
    legacy = view.legacy
    if legacy.kind is Kind.LINK and owns(legacy.literal, f"{checkout}/{AGENTS_DIR}",
                                         (source.path,)) is not None:
        ops.append(_op(Action.UNLINK, checkout, LEGACY_INSTRUCTIONS,
                       f"aikito's legacy instruction link ({LEGACY_INSTRUCTIONS}) is retired",
                       source.path, observed=legacy))
    for target in view.targets:
        leftover = target.relink
        if leftover.kind is Kind.LINK and owns(leftover.literal, _link_dir(checkout, target.rel),
                                               (source.path,)) is not None:
            # A relink's temporary name ([L4]): aikito's own, never left behind.
            ops.append(_op(Action.UNLINK, checkout, relink_path(target.rel),
                           "the leftover of an interrupted relink", source.path,
                           observed=leftover))
        elif leftover.exists:
            # [L8]: anything else at aikito's temporary name is a CONFLICT, in the dry run
            # as in the real run (a relink would stop at it, stale).
            from aikito_mem.planner.remedies import relink_name_conflict

            where = relink_path(target.rel)
            reason, remedy = relink_name_conflict(f"{checkout}/{where}",
                                                  f"{checkout}/{target.rel}", leftover)
            ops.append(_op(Action.CONFLICT, checkout, where, reason, source.path,
                           remedy=remedy, observed=leftover))
            for prel, pobs in target.parents:
                dirs.setdefault(prel, pobs)
        op = _plan_target(checkout, source, target, tracked, moved)
        if op is None:
            continue
        ops.append(op)
        if op.rule == R_TRACKED:
            findings.append(tracked_finding(
                op.target, op.observed, "the project instructions"))
        if op.action in _RELIED:
            for prel, pobs in target.parents:
                dirs.setdefault(prel, pobs)
    ops.sort(key=lambda op: op.target)
    return ops, findings, sorted(dirs.items())
