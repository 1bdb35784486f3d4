"""A workspace that moved ([L4]): the pure rules of ``--moved-from OLD``.

After ``mv ~/aikito ~/ws`` every link still names the old root.  With ``--moved-from OLD``
a link whose literal is byte-exactly ``OLD`` + the remainder of its canonical path
(:func:`~aikito_mem.layout.moved_literal`: the same resource, the old root) is owned: each
planner plans it as a CREATE of rule ``L4`` whose recorded observation is the old link,
reason "relinked from OLD", which the executor carries out as one atomic rename of a
fresh symlink over it.
The fresh symlink is first made under the target's relink name
(:func:`aikito_mem.layout.relink_name`), which every planner recognises: a leftover of a
killed run is aikito's own and removed by the next run, so a kill never leaves clutter.

Without the flag, a link whose literal ends with its canonical remainder under another
root (:func:`old_root`) stays a CONFLICT; when that root no longer exists its remedy names
``aikito sync --moved-from OLD`` (:func:`moved_remedies`).  No I/O happens here.

The rules every run may read live where it already looks — the rule id
:data:`~aikito_mem.planner.R_MOVED` in the planner package, the relink name and the old
literal (:func:`~aikito_mem.layout.relink_target`, :func:`~aikito_mem.layout.moved_literal`)
in :mod:`aikito_mem.layout` — and are re-exported here: this module is imported only by a
run with ``--moved-from`` or a conflict ([§12]).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from aikito_mem.layout import moved_literal, moved_owner, relink_target
from aikito_mem.model import Action, Kind, Observed, Plan
from aikito_mem.planner import R_MOVED

__all__ = ["R_MOVED", "moved_literal", "moved_remedies", "normalise_old", "old_root",
           "relink_target", "stale_owner", "suggested_roots"]


def normalise_old(old: str) -> str:
    """``OLD`` as the flag gives it, without trailing ``/`` (``/`` itself stays)."""
    stripped = old.rstrip("/")
    return stripped or "/"


def stale_owner(literal: str | None, moved_from: str, workspace: str,
                candidates: Iterable[str], what: str) -> tuple[str | None, str]:
    """[L4]: (the candidate, the UNLINK's reason) of a stale link whose literal is the old
    root ``moved_from`` + the canonical remainder of its own place — aikito's link for
    ``what`` ("a reference", "a skill") the user has since removed: with ``--moved-from``
    the engine's as much as a current one (``None``: not such a link)."""
    return (moved_owner(literal, moved_from, workspace, candidates),
            f"no longer wanted: aikito's link (into {moved_from}) for {what} that was "
            "removed")


def old_root(observed: Observed, source: str | None, workspace: str) -> str | None:
    """The root an absolute link literal names its canonical source under, when that root
    is not this workspace: the ``OLD`` of ``--moved-from OLD`` that the link suggests."""
    literal = observed.literal
    if (observed.kind is not Kind.LINK or literal is None or source is None
            or not literal.startswith("/") or not source.startswith(workspace + "/")):
        return None
    remainder = source[len(workspace):]
    if not literal.endswith(remainder) or literal == source:
        return None
    root = literal[:-len(remainder)]
    return root if root.startswith("/") and root != workspace else None


def suggested_roots(plan: Plan) -> frozenset[str]:
    """Every old root a CONFLICT of ``plan`` suggests (to ask whether it still exists)."""
    return frozenset(
        root for op in plan.operations if op.action is Action.CONFLICT
        for root in (old_root(op.observed, op.source, plan.workspace),) if root is not None)


def moved_remedies(plan: Plan, missing: Iterable[str]) -> Plan:
    """``plan`` with the remedy of each CONFLICT over a link into a missing old root
    naming ``aikito sync --moved-from OLD``."""
    gone = frozenset(missing)
    if not gone:
        return plan
    from aikito_mem.planner.remedies import quote  # what shlex.quote writes

    ops = []
    for op in plan.operations:
        root = (old_root(op.observed, op.source, plan.workspace)
                if op.action is Action.CONFLICT else None)
        if root is not None and root in gone:
            op = attrs.evolve(op, remedy=(
                f"the link names {root}, a workspace that no longer exists — if it moved "
                f"to {plan.workspace}: aikito sync --moved-from {quote(root)} "
                "(relinks every such link in place)"))
        ops.append(op)
    return plan.evolve(operations=tuple(ops))
