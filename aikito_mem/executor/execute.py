"""The writer of a sync: the only room that writes links ([E1]–[E6]).

Sequence: refuse a blocked plan → take the per-checkout locks (:mod:`aikito_mem.executor.lock`,
unless the caller already holds them) → re-check every recorded observation
(:mod:`aikito_mem.executor.verify`) → the writer's guard (:mod:`aikito_mem.executor.guard`)
→ register the checkout (:mod:`aikito_mem.config.write`) → per segment and checkout:
unlinks and pruning, directory creation, links.

Every write goes through a directory descriptor opened with ``O_NOFOLLOW`` from the
checkout root's descriptor, is preceded by its own just-in-time check, and uses only
no-clobber primitives (``symlinkat`` fails on an existing entry; ``unlinkat`` is preceded by
a ``readlinkat`` proving ownership; ``rmdir`` refuses a non-empty directory).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from aikito_mem import signals
from aikito_mem.errors import ConflictError, ExecutionError, InterruptedError_, StalePlanError
from aikito_mem.executor.lock import DEFAULT_TIMEOUT, Locks, check_timeout, lock_fd, open_root
from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    CheckoutPlan,
    CheckoutState,
    Operation,
    Plan,
    ProjectConfig,
    SegmentName,
    Status,
    SyncResult,
)
from aikito_mem.outcome import segment_results
from aikito_mem.planner import R_MOVED

if TYPE_CHECKING:
    from aikito_mem.world.git import WorktreeAnswers

__all__ = ["Locks", "execute", "final_statuses", "lock_fd", "open_root", "planned_result",
           "refused", "write_order"]

#: Test seam (races, faults, signals): called as ``hook(op)`` just before each write syscall.
before_write: Callable[[Operation], None] | None = None


def _before_write(op: Operation) -> None:
    """The writer's call of the seam, read at each write (a test may set it meanwhile)."""
    if before_write is not None:
        before_write(op)


def write_order(plan: Plan, ops: Iterable[tuple[int, Operation]]) -> list[int]:
    """Indices of ``co``'s writes in [E4] order: unlinks, prunes (deepest first), links."""
    unlinks: list[int] = []
    prunes: list[int] = []
    links: list[int] = []
    for i, op in ops:
        if op.action is Action.UNLINK:
            (prunes if op.entry == "directory" else unlinks).append(i)
        elif op.action is Action.CREATE:
            links.append(i)
    prunes.sort(key=lambda i: -plan.operations[i].target.count("/"))
    return unlinks + prunes + links


def final_statuses(plan: Plan, applied: set[int], unknown: set[int],
                    dry_run: bool = False,
                    blocked: frozenset[SegmentName] | None = None) -> tuple[Status, ...]:
    """One status per operation; ``blocked``: the plan's blocked segments, when known."""
    if dry_run:
        return (Status.PLANNED,) * len(plan.operations)
    if blocked is None:
        blocked = plan.blocked_segments
    # Every member read off its class once: reading one there is slow ([§12]).
    noop, skip = Action.NOOP, Action.SKIP
    unchanged, skipped, not_applied = Status.UNCHANGED, Status.SKIPPED, Status.NOT_APPLIED
    if not (blocked or applied or unknown):  # a run that wrote nothing: no look-ups
        return tuple([unchanged if op.action is noop else skipped if op.action is skip
                      else not_applied for op in plan.operations])
    done, lost = Status.APPLIED, Status.UNKNOWN
    out: list[Status] = []
    append = out.append
    for i, op in enumerate(plan.operations):
        if blocked and op.segment in blocked:
            # §9: every operation of a blocked segment, its NOOPs and SKIPs included.
            append(not_applied)
        elif op.action is noop:
            append(unchanged)
        elif op.action is skip:
            append(skipped)
        elif i in applied:
            append(done)
        elif i in unknown:
            append(lost)
        else:
            append(not_applied)
    return tuple(out)


def refused(plan: Plan, outcome: str) -> SyncResult:
    """The result of a plan nothing was done for: every operation ``not_applied``."""
    return SyncResult(plan, tuple(Status.NOT_APPLIED for _ in plan.operations), outcome,
                      segments=segment_results(plan, halted=outcome))


def _blocked_error(plan: Plan, *, partial: bool, changed: bool = True) -> ConflictError:
    n = len(plan.conflicts)
    names = ", ".join(seg.value for seg in SEGMENT_ORDER if seg in plan.blocked_segments)
    them = "them" if "," in names else "it"
    if not partial:
        written = "nothing was written"
    elif changed:
        written = f"nothing of {them} was written, the other segments were applied"
    else:  # the segments without conflicts had nothing to change
        written = f"nothing of {them} was written, the other segments were already in sync"
    return ConflictError(
        f"plan for project {plan.project!r} has {n} conflict{'s' * (n != 1)} in the "
        f"{names} segment{'s' * (',' in names)}; {written} — resolve each conflict as it "
        "says and run again",
        conflicts=plan.conflicts, plan=plan,
    )


def execute(
    plan: Plan,
    *,
    locks: Locks | None = None,
    lock_timeout: float = DEFAULT_TIMEOUT,
    always_verify: bool = False,
    environ: Mapping[str, str] | None = None,
    config: ProjectConfig | None = None,
    home: str | None = None,
    worktrees: WorktreeAnswers | None = None,
) -> SyncResult:
    """Execute ``plan`` exactly; raise on conflict, drift, failure or signal.

    ``environ`` is the environment the plan was made with (``None``: the process's):
    verification and the writer's check read ``PATH`` and the home directory from it,
    as planning did ([H5]).  ``config`` (and the ``home`` it was parsed with) is the
    caller's parse of ``agent.toml``, which the writer's guard re-uses when the live
    bytes are its bytes and ``home`` is the environment's ([E9], [P6]); ``worktrees``, the
    git answers the same call planned with, only for that very plan object ([L6]).

    The SIGINT/SIGTERM handlers of :mod:`aikito_mem.signals` are installed for the
    duration (nested inside the command line's, if it installed them): waiting for the
    locks and verifying end at once on a signal; from the registration on, a signal is
    checked before each write and the operation in flight is finished ([E5]).
    """
    lock_timeout = check_timeout(lock_timeout)
    blocked = plan.blocked_segments  # read once: each read is a pass over the operations
    if blocked and plan.refused:
        # Blocked as a whole: every active segment has a conflict ([E1], [G6]).
        error = _blocked_error(plan, partial=False)
        error.result = refused(plan, "blocked")
        raise error
    own_locks = locks is None
    held = locks if locks is not None else Locks()
    with signals.installed():
        try:
            _checked(plan, held, own_locks, lock_timeout, always_verify, environ,
                     (config, home, worktrees))
            with signals.deferred():
                return _apply(plan, held, blocked)
        finally:
            if own_locks:
                held.release()


def _verify() -> ModuleType:
    """[E2]'s room, loaded only for a plan that writes (a warm sync has nothing to check)."""
    from aikito_mem.executor import verify

    return verify


def _checked(plan: Plan, held: Locks, own_locks: bool, lock_timeout: float,
             always_verify: bool, environ: Mapping[str, str] | None,
             known: tuple[ProjectConfig | None, str | None, WorktreeAnswers | None]) -> None:
    """Lock ([E3]), verify ([E2]), guard ([E9]; ``known``: the caller's agent.toml parse,
    home and git answers), then the directories the plan prunes ([E2]).  A signal ends
    it at once, with nothing written."""
    try:
        with signals.interruptible():
            if own_locks:
                held.acquire([co.path for co in plan.checkouts
                              if co.state is CheckoutState.ACTIVE], lock_timeout)
            writes = plan.has_changes
            diffs = (_verify().verify(plan, held, environ=environ)
                     if writes or always_verify else [])
    except InterruptedError_ as exc:
        if exc.result is None:
            exc.result = refused(plan, "interrupted")
        raise
    if not diffs and writes:  # a plan without writes passes the guard at once
        from aikito_mem.executor.guard import check

        check(plan, environ=environ, config=known[0], home=known[1], worktrees=known[2])
        diffs = _verify().prune_differences(plan, held)
    if diffs:
        raise StalePlanError(
            "the plan is stale — the world changed since it was made; nothing was "
            "written. Run the sync again to plan afresh:\n  - " + "\n  - ".join(diffs),
            differences=tuple(diffs), result=refused(plan, "stale"),
        )


def _stop_if_signalled(result: Callable[[], SyncResult], done: str) -> None:
    """[E5]: raise :class:`InterruptedError_` when a signal was received — called before
    the registration and before each write, so no write starts after the signal."""
    signum = signals.received()
    if signum is not None:
        name = signals.signal_name(signum)
        raise InterruptedError_(f"interrupted by {name}: {done}", signum=signum,
                                result=result())


def _apply(plan: Plan, locks: Locks, blocked: frozenset[SegmentName]) -> SyncResult:
    applied: set[int] = set()
    unknown: set[int] = set()
    registered = False

    current: list[SegmentName] = []  # the segment being written

    def result(outcome: str, success: bool, errors: dict[int, str] | None = None, *,
               finished: bool = False) -> SyncResult:
        """``finished``: every write of the unblocked segments was made (a run blocked
        in part); otherwise a failure stops the segment in flight, or halts the run."""
        errs, n = errors or {}, len(plan.operations)
        stopped = (current[-1], outcome) if not success and current else None
        halted = outcome if not success and not current and not finished else None
        return SyncResult(
            plan, final_statuses(plan, applied, unknown, blocked=blocked), outcome,
            errors=tuple(errs.get(i) for i in range(n)) if errs else (None,) * n,
            segments=segment_results(plan, applied=applied, stopped=stopped, halted=halted,
                                     blocked=blocked),
            registered=registered,
        )

    def interrupted() -> SyncResult:
        return result("interrupted", False)

    if plan.register is not None:
        from aikito_mem.config.write import register_checkout

        _stop_if_signalled(interrupted, "nothing was written (agent.toml not registered) — "
                           "run the sync again")
        assert plan.config_sha256 is not None
        try:
            register_checkout(plan.config_path, plan.register,
                              expected_sha256=plan.config_sha256)
        except StalePlanError as exc:
            exc.result = refused(plan, "stale")
            raise
        except OSError as exc:
            raise ExecutionError(
                f"could not register {plan.register} in {plan.config_path}: {exc.strerror}; "
                "nothing else was written — fix the cause and run again",
                result=refused(plan, "failed"), path=plan.config_path,
            ) from None
        registered = True

    by_checkout = _verify().operations_by_checkout(plan) if plan.changes else {}
    # [E8]: skills, then instructions, then memory; a blocked segment writes nothing.
    if by_checkout:  # the guarded writes' room: only for a plan that writes ([§12])
        from aikito_mem.executor.writer import Drift, Writer
    order_of = _segment_order(plan, by_checkout, blocked) if by_checkout else ()
    for segment, co, order in order_of:
        current.append(segment)
        writer = Writer(co, locks.fds[co.path], _before_write)
        try:
            for i in order:
                _stop_if_signalled(interrupted, "the operation in flight was finished, the "
                                   "rest was not applied — run the sync again to converge")
                op = plan.operations[i]
                try:
                    if op.action is Action.CREATE and op.rule == R_MOVED:
                        writer.relink(op)
                    elif op.action is Action.CREATE:
                        writer.symlink(op)
                    elif op.entry == "directory":
                        writer.rmdir(op)
                    else:
                        writer.unlink(op)
                except Drift as exc:
                    msg = str(exc)
                    raise StalePlanError(
                        f"the plan went stale during execution: {msg}; stopped — "
                        "run the sync again to converge",
                        differences=(msg,),
                        result=result("stale", False, {i: msg}),
                    ) from None
                except OSError as exc:
                    if exc.errno == errno.EIO:
                        unknown.add(i)
                    text = f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno or 0, '?')})"
                    raise ExecutionError(
                        f"{op.action.value} {op.target} failed: {text}; stopped — "
                        f"{len(applied)} operation(s) applied, the rest not applied. Fix "
                        "the cause and run again; the next run converges",
                        result=result("failed", False, {i: text}), path=op.target,
                    ) from None
                applied.add(i)
        finally:
            writer.close()
    # A signal during the last operation: it was finished, and the run still reports the
    # interruption ([E5]).
    _stop_if_signalled(interrupted, "it arrived after the last operation finished; every "
                       "operation was applied")
    current.clear()
    changed = bool(applied) or registered
    if blocked:
        # [E8]: the segments without conflicts were applied; the run is still blocked.
        error = _blocked_error(plan, partial=True, changed=changed)
        error.result = result("blocked", False, finished=True)
        raise error
    return result("applied" if changed else "unchanged", True)


def _segment_order(
    plan: Plan, by_checkout: dict[str, list[tuple[int, Operation]]],
    blocked: frozenset[SegmentName],
) -> list[tuple[SegmentName, CheckoutPlan, list[int]]]:
    """(segment, checkout, writes in [E4] order) in execution order ([E8])."""
    out = []
    for segment in SEGMENT_ORDER:
        if segment in blocked:
            continue
        for co in plan.checkouts:
            if co.state is not CheckoutState.ACTIVE:
                continue
            ops = [(i, op) for i, op in by_checkout.get(co.path, ()) if op.segment is segment]
            order = write_order(plan, ops)
            if order:
                out.append((segment, co, order))
    return out


def planned_result(plan: Plan) -> SyncResult:
    """The result document of a dry run: every operation ``planned``."""
    return SyncResult(
        plan, final_statuses(plan, set(), set(), dry_run=True),
        "blocked" if plan.blocked else "planned",
        segments=segment_results(plan, dry_run=True), dry_run=True,
    )
