"""``Project.prepare(agent, path=None)`` ([A3], INV-MEM-12): one checkout's memory made
ready for an agent session — the same engine as a sync, holding the checkout's lock,
limited to that agent's instruction targets; it never registers and prints nothing.

Its own room, imported by :meth:`aikito_mem.api.Project.prepare` on its first call, so
that a sync (which never prepares) does not import it ([§12]).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from aikito_mem import layout
from aikito_mem.errors import ConfigError, ConflictError, ProjectPrepareConflictError
from aikito_mem.executor.execute import execute
from aikito_mem.executor.lock import DEFAULT_TIMEOUT, Locks
from aikito_mem.model import CheckoutState, Kind, Plan, ProjectConfig, SyncResult
from aikito_mem.values import Record
from aikito_mem.world import checkouts as _checkouts
from aikito_mem.world.observe import Observer, lstat


class PreparedProject(Record):
    """What :meth:`~aikito_mem.api.Project.prepare` returns ([A3])."""

    project: str
    agent: str
    #: Physical path of the prepared checkout.
    checkout: str
    result: SyncResult


class PrepareConflict(Record):
    """One conflict reported by :meth:`~aikito_mem.api.Project.prepare`."""

    #: The runtime path (or checkout path) in conflict.
    path: str
    #: What was found and what was expected.
    reason: str
    #: The safe remedy.
    remedy: str | None = None
    #: The resource concerned, when there is one.
    resource: str | None = None
    #: The segment of the conflict: ``skills``, ``instructions`` or ``memory`` ([A3]).
    segment: str = "memory"


def prepare(
    config: ProjectConfig, workspace: str, agent: str, path: str | None, *,
    environ: Mapping[str, str] | None, home: str,
    plan: Callable[[_checkouts.Slot], Plan],
) -> tuple[str, SyncResult]:
    """What :meth:`~aikito_mem.api.Project.prepare` does, inside its signal handlers: the
    physical path of the checkout prepared and the result.  ``plan`` plans the one slot
    for ``agent`` under its lock (the facade's one observation pass and planner)."""
    check_agent(workspace, agent)
    observer = Observer()
    if path is None:
        listed = _checkouts.slots(config, observer, home=home)
        active = [s for s in listed if s.state is CheckoutState.ACTIVE]
        if not active:
            for slot in listed:  # [H1]: say why rather than "no active checkout"
                if slot.code is not None:
                    raise ConfigError(f"{slot.reason} — pass path=", code=slot.code,
                                      path=slot.path)
            raise ConfigError(
                f"project {config.name!r} has no active checkout (none of its paths in "
                f"{config.config_path} exists on this machine) — pass path=",
                code="config.no_active_checkout", path=config.config_path,
            )
        if len(active) > 1:
            listing = ", ".join(f"{s.label}={s.path}" for s in active)
            raise ConfigError(
                f"project {config.name!r} has several active checkouts: {listing} — "
                "pass path= to choose one",
                code="config.ambiguous_checkout", path=config.config_path,
            )
        slot = active[0]
    else:
        slot, _registered = _checkouts.explicit_slot(config, path, observer,
                                                     home=home)
    with Locks() as locks:
        locks.acquire([slot.path], DEFAULT_TIMEOUT)
        planned = plan(slot)
        try:
            result = execute(planned, locks=locks, environ=environ, config=config, home=home)
        except ConflictError as exc:
            # [A3]/[E8]: the segments without conflicts were applied (unless every
            # segment was blocked); the conflicts are reported segment by segment.
            conflicts = tuple(
                PrepareConflict(op.target, op.reason, op.remedy, op.resource,
                                op.segment.value)
                for op in planned.conflicts
            )
            n = len(conflicts)
            listing = "; ".join(f"{c.segment}: {c.path}: {c.reason}" for c in conflicts)
            done = ("nothing was written" if planned.refused else
                    "the segments without conflicts were applied")
            error = ProjectPrepareConflictError(
                f"cannot fully prepare project {config.name!r} for agent {agent!r}: {n} "
                f"conflict{'s' * (n != 1)} ({done}) — {listing}",
                project=config.name, conflicts=conflicts, plan=planned,
            )
            error.result = exc.result
            raise error from None
    return slot.path, result


def check_agent(workspace: str, agent: str) -> None:
    """``agent`` is a single file name and, when the workspace has a registry, one of its
    agents ([A3], [G3]); else :class:`ConfigError`."""
    if not agent or "/" in agent or agent in (".", "..") or "\0" in agent:
        raise ConfigError(
            f"agent name {agent!r} is not a single file name; expected a name such "
            "as 'claude'", code="config.agent_invalid",
        )
    registry = layout.agents_root(workspace)
    if lstat(registry).kind is not Kind.DIR:
        return
    entry = f"{registry}/{agent}.toml"
    if lstat(entry).kind is not Kind.FILE:
        raise ConfigError(
            f"agent {agent!r} is not registered: expected the file {entry}, found "
            f"nothing there — add {agent}.toml to {registry} or use a registered agent",
            code="config.agent_unknown", path=entry,
        )
