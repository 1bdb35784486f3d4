"""``aikito adopt TARGET``: move a real file or directory that blocks a sync into the
workspace, list it in ``memory`` and link it back — or leave things as they were and say
where the content is.

This module only sequences the steps — validate, lock, validate again, move, register
(through :func:`aikito_mem.config.write.replace_config`), link TARGET's CREATE through the
executor — and undoes a half-done adoption.  docs/design.md ("adopt") describes each step
and what a signal does in it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from aikito_mem import fsutil, signals
from aikito_mem.commands.adopt import plan as adopt_plan
from aikito_mem.commands.adopt import treemove
from aikito_mem.commands.adopt.plan import (
    Adoption,
    AdoptOutcome,
    AdoptReport,
    Method,
    Step,
    StepResult,
    StepStatus,
)
from aikito_mem.config.write import replace_config
from aikito_mem.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STALE,
    AdoptFailed,
    AikitoError,
    InterruptedError_,
    StalePlanError,
)
from aikito_mem.model import Action, Operation, Plan, SegmentName, Status, SyncResult
from aikito_mem.planner.remedies import quote

if TYPE_CHECKING:
    from aikito_mem.executor.lock import Locks

__all__ = ["adopt"]


def _cause(exc: BaseException) -> str:
    if isinstance(exc, AikitoError):
        return exc.message
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return str(exc)


class _Run:
    """One adoption in progress: what has been done so far (frozen into the report)."""

    def __init__(self, target: str, dry_run: bool) -> None:
        given = os.path.abspath(os.path.expanduser(target))
        self.dry_run = dry_run
        self.a: Adoption | None = None
        self.method: Method | None = None
        self.content_at: str | None = given if os.path.lexists(given) else None
        self.steps = {s: StepStatus.NOT_APPLIED for s in Step}
        self.details: dict[Step, str] = {}
        self.sync: SyncResult | None = None
        self.created: list[str] = []
        #: The bytes register wrote (to undo it by compare-and-swap).
        self.written: tuple[bytes, bytes] | None = None

    def report(self, error: AikitoError | None) -> AdoptReport:
        a = self.a
        if error is None:
            outcome = AdoptOutcome.PLANNED if self.dry_run else AdoptOutcome.ADOPTED
            code = EXIT_OK
        else:
            outcome, code = adopt_plan.outcome_of(error), error.exit_code
            if isinstance(error, AdoptFailed):
                self.content_at = error.content_at
            for step, status in self.steps.items():
                if status is StepStatus.PLANNED:
                    self.steps[step] = StepStatus.NOT_APPLIED
        return AdoptReport(
            dry_run=self.dry_run, outcome=outcome, exit_code=code, adoption=a,
            method=self.method, content_at=self.content_at,
            steps=tuple(StepResult(s, st, self.details.get(s)) for s, st in self.steps.items()),
            conflicts=a.conflicts if a is not None else (), sync=self.sync, error=error)

    # -- 1, 2: validate ---------------------------------------------------------------

    def validate(self, target: str, workspace: str | None, project: str | None,
                 environ: Mapping[str, str] | None) -> Adoption:
        try:
            with signals.interruptible():
                a = adopt_plan.validate(target, workspace, project=project, environ=environ)
        except OSError as exc:
            raise AdoptFailed(f"cannot examine {_cause(exc)}; nothing was written, the content "
                              f"is at {self.content_at}", code="examine_failed",
                              content_at=self.content_at or target) from None
        if self.a is not None and a.identity != self.a.identity:
            raise AdoptFailed(f"{a.target} changed since it was examined (it is another "
                              "entry now); nothing was written — run adopt again",
                              code="stale", content_at=a.target, exit_code=EXIT_STALE,
                              outcome="stale")
        resumed = a.method is Method.RESUME
        self.a, self.method = a, a.method
        self.content_at = a.destination if resumed else a.target
        self.steps = {s: StepStatus.PLANNED for s in Step}
        if resumed:  # [E5]: an adopt stopped after its move; what is left is done
            self.steps[Step.MOVE] = StepStatus.SKIPPED
            self.details[Step.MOVE] = (f"{a.target} is absent and its content already at "
                                       f"{a.destination} (an adopt stopped after its move)")
        if a.new_config is None:
            self.steps[Step.REGISTER] = StepStatus.SKIPPED
        return a

    # -- 3: move ----------------------------------------------------------------------

    def move(self, a: Adoption) -> None:
        signals.check()
        if a.method is Method.RESUME:
            return
        try:
            for path in a.missing_dirs:
                signals.check()
                os.mkdir(path, 0o755)
                self.created.append(path)
            if a.method is Method.REPLACE:
                treemove.remove_inventoried(a.target, a.entries, signals.check)
            else:
                self._remove_empty(a)
                self.method = Method(treemove.move(a.target, a.destination, signals.check,
                                                   a.identity[:2]).value)
        except treemove.OriginalKeptError as exc:
            self._original_kept(a, exc)
        except treemove.RemoveIncompleteError as exc:
            self._copy_kept(a, exc)
        except BaseException as exc:
            self._remove_created()
            if isinstance(exc, InterruptedError_):
                if a.method is Method.REPLACE and self._touched(a):
                    self.steps[Step.MOVE] = StepStatus.FAILED
                    self.content_at = a.destination
                    raise InterruptedError_(
                        f"{exc.message}: part of the identical copy {a.target} was removed; "
                        f"the content is at {a.destination}", signum=exc.signum) from None
                raise
            self.steps[Step.MOVE] = StepStatus.FAILED
            if isinstance(exc, treemove.SwappedError):
                raise _swapped(a, exc) from None
            if isinstance(exc, treemove.TreeChangedError):
                raise AdoptFailed(
                    f"{a.target} changed while it was being copied; nothing was adopted, it is "
                    "still there, complete — run adopt again when it is quiet",
                    code="source_changed", content_at=a.target, exit_code=EXIT_STALE,
                    outcome="stale") from None
            if isinstance(exc, treemove.SpecialFileError):
                raise AdoptFailed(f"{exc.filename} is {exc.what}, which cannot be copied; "
                                  f"nothing was moved, the content is still at {a.target}",
                                  code="file_type", content_at=a.target) from None
            if isinstance(exc, OSError):
                raise AdoptFailed(
                    f"moving {a.target} to {a.destination} failed ({_cause(exc)}); nothing was "
                    f"moved, the content is still at {a.target}", code="move_failed",
                    content_at=a.target) from None
            raise
        self.content_at = a.destination
        self.steps[Step.MOVE] = StepStatus.APPLIED

    @staticmethod
    def _remove_empty(a: Adoption) -> None:
        """[L5]: the empty ``AGENTS.md`` the instructions move over, re-checked by identity
        just before its removal (a kill right after leaves it absent: it was empty)."""
        if a.empty_destination is None:
            return
        from aikito_mem.commands.adopt.segments import recheck_empty

        recheck_empty(a)
        signals.check()
        os.unlink(a.destination)

    def _original_kept(self, a: Adoption, exc: treemove.OriginalKeptError) -> None:
        self.steps[Step.MOVE] = StepStatus.FAILED
        self.details[Step.MOVE] = f"copied to {a.destination}; the original was kept"
        self.method = Method.COPY
        cause = exc.cause
        if isinstance(cause, InterruptedError_):
            raise InterruptedError_(
                f"{cause.message}: the verified copy is complete at {a.destination}, and "
                f"what was not yet removed of {a.target} is still there — compare them, keep "
                "one", signum=cause.signum) from None
        if isinstance(cause, treemove.TreeChangedError):
            raise AdoptFailed(
                f"{a.target} changed just after it was copied to {a.destination}; both were "
                f"kept — compare them, keep the right one (the copy at {a.destination} is what "
                "the original was before the change)", code="source_changed",
                content_at=a.destination, exit_code=EXIT_STALE, outcome="partial") from None
        kept = cause.kept if isinstance(cause, treemove.RemoveIncompleteError) else ()
        raise AdoptFailed(
            f"the content is complete and verified at {a.destination}, but removing the "
            f"original {a.target} did not complete ({_cause(cause)}"
            + (f"; kept: {', '.join(kept[:5])}" if kept else "") + "); what remains of it "
            f"was kept because it changed after the copy or could not be removed — compare "
            f"it with {a.destination}, keep what you need, remove it, then run `aikito adopt "
            f"{a.target}` again", code="remove_failed", content_at=a.destination,
            outcome="partial") from None

    def _copy_kept(self, a: Adoption, exc: treemove.RemoveIncompleteError) -> None:
        """``replace``: removing TARGET (identical to the destination) kept entries."""
        self.steps[Step.MOVE] = StepStatus.FAILED
        untouched = len(exc.kept) == len(a.entries)
        changed = not exc.failed
        raise AdoptFailed(
            f"{a.target} was identical to {a.destination}, but "
            + ("it changed before it could be removed; nothing was written" if untouched else
               f"removing it kept {len(exc.kept)} entr{'y' if len(exc.kept) == 1 else 'ies'} "
               f"that changed or could not be removed ({', '.join(exc.kept[:5])})")
            + f" — the workspace content is at {a.destination}; run adopt again",
            code="source_changed" if changed else "remove_failed",
            content_at=a.target if untouched else a.destination,
            exit_code=EXIT_STALE if changed else EXIT_FAILED,
            outcome="stale" if untouched and changed else "partial") from None

    @staticmethod
    def _touched(a: Adoption) -> bool:
        """Whether any inventoried entry of TARGET is gone."""
        return any(not os.path.lexists(f"{a.target}/{e.rel}" if e.rel else a.target)
                   for e in a.entries)

    def _remove_created(self) -> None:
        for path in reversed(self.created):
            with contextlib.suppress(OSError):
                os.rmdir(path)
        self.created.clear()

    # -- 4: register ------------------------------------------------------------------

    def register(self, a: Adoption, environ: Mapping[str, str] | None) -> None:
        if a.new_config is None:
            return
        from aikito_mem.config.agent_toml import parse_project_config
        from aikito_mem.config.discovery import home_directory

        signals.check()
        directory = os.path.dirname(a.config_path)
        old, new = a.config_bytes, a.new_config
        for _attempt in range(3):
            # A signal stops the edit before its rename ([E5]).
            if replace_config(a.config_path, old, new, before_rename=signals.check):
                self.written = (old, new)
                self.steps[Step.REGISTER] = StepStatus.APPLIED
                return
            old, _ = fsutil.read_regular(a.config_path)
            home = home_directory(environ) or ""
            config = parse_project_config(old, name=a.project, project_dir=directory,
                                          config_path=a.config_path, home=home)
            if adopt_plan.listed(config, a.segment, a.reference):
                self.steps[Step.REGISTER] = StepStatus.SKIPPED
                return
            new, _parsed = adopt_plan.edited_config(config, old, a.reference, home, a.segment)
        raise StalePlanError(f"{a.config_path} kept changing while adopt tried to update it",
                             differences=(f"agent.toml changed: {a.config_path}",))

    # -- 5: link ----------------------------------------------------------------------

    def link(self, a: Adoption, locks: Locks, environ: Mapping[str, str] | None) -> None:
        from aikito_mem.api import Project
        from aikito_mem.executor.execute import execute

        signals.check()
        with signals.interruptible():
            project = Project.load(a.project, a.workspace, environ=environ)
            plan = project.plan(a.checkout, register=False)
        own = next((op for op in plan.operations if op.target == a.target), None)
        # [L5] instructions: every instruction target of the checkout the engine links.
        more = tuple(op for op in plan.operations if a.links and op.action is Action.CREATE
                     and op.segment is a.segment and op.checkout == a.checkout
                     and op is not own)
        if own is not None and own.action is Action.NOOP:
            self.steps[Step.LINK] = StepStatus.SKIPPED
            self.details[Step.LINK] = "already linked"
            return
        if own is None or own.action is not Action.CREATE:
            raise StalePlanError(
                f"the engine no longer plans to link {a.target}: "
                + (own.reason if own is not None else "no operation for it"),
                differences=(f"target {a.target} is no longer a CREATE",))
        signals.check()
        try:
            self.sync = execute(_only(plan, own, *more), locks=locks, environ=environ,
                                config=project.config, home=project.home)
        except InterruptedError_ as exc:
            self.sync = exc.result if isinstance(exc.result, SyncResult) else None
            raise
        self.steps[Step.LINK] = StepStatus.APPLIED

    # -- undo -------------------------------------------------------------------------

    def undo(self, a: Adoption, exc: AikitoError | OSError, step: Step) -> AdoptFailed:
        """Step ``step`` failed after the move: restore the memory list and move the
        content back where possible; the error says where the content is."""
        self.steps[step] = StepStatus.FAILED
        result = getattr(exc, "result", None)
        if isinstance(result, SyncResult):
            self.sync = result
        notes: list[str] = []
        listed = False
        if self.written is not None:
            old, new = self.written
            try:
                if not replace_config(a.config_path, new, old, before_rename=signals.check):
                    raise OSError(errno.ESTALE, "it was changed by someone else meanwhile")
                self.steps[Step.REGISTER] = StepStatus.UNDONE
                notes.append(f"{a.reference!r} was removed from the {_list(a)} list again")
            except (OSError, AikitoError) as undo_exc:
                listed = True
                notes.append(f"{a.reference!r} is still in the {_list(a)} list of "
                             f"{a.config_path} (restoring it failed: {_cause(undo_exc)})")
        where = a.destination
        if a.method is Method.REPLACE:
            notes.append(f"the identical copy at {a.target} was removed; the content is at "
                         f"{a.destination}")
        elif a.method is Method.RESUME:  # it was there before this run: it stays there
            notes.append(f"the content stays at {a.destination}, where it was")
        else:
            try:
                treemove.move(a.destination, a.target, signals.check)
                self.steps[Step.MOVE] = StepStatus.UNDONE
                self._remove_created()
                where = a.target
                notes.append(f"the content was moved back to {a.target}")
            except (OSError, treemove.OriginalKeptError, AikitoError) as move_exc:
                notes.append(f"moving it back failed ({_cause(move_exc)}): the content is at "
                             f"{a.destination}")
        restored = not listed and (where == a.target or a.method is Method.RESUME)
        drift = isinstance(exc, StalePlanError)
        add = ("" if a.segment is SegmentName.INSTRUCTIONS else
               f"add {a.reference!r} to {_list(a)} if needed and ")
        then = ("nothing changed" if restored else
                f"{add}run `aikito sync project {a.project} {a.checkout}`")
        return AdoptFailed(
            f"{step.value} failed: {_cause(exc)} — {'; '.join(notes)}; {then}",
            code=f"{step.value}_failed", content_at=where,
            exit_code=EXIT_STALE if drift else EXIT_FAILED,
            outcome=("stale" if drift else "failed") if restored else "partial")


def _swapped(a: Adoption, exc: treemove.SwappedError) -> AdoptFailed:
    """[H2]: the entry at TARGET when the move ran was not the one examined."""
    if exc.moved_back:
        return AdoptFailed(
            f"{a.target} is another entry than the one examined (it was replaced after the "
            "last check); nothing was adopted, what is there now is still there — run adopt "
            "again", code="stale", content_at=a.target, exit_code=EXIT_STALE, outcome="stale")
    return AdoptFailed(
        f"{a.target} was replaced after the last check, and the entry put there was moved to "
        f"{a.destination} before that was seen; it could not be moved back, {a.target} being "
        f"taken again — nothing was listed; compare {a.destination} with {a.target}, keep "
        "what you need", code="stale", content_at=a.destination, exit_code=EXIT_STALE,
        outcome="partial")


def _list(a: Adoption) -> str:
    """The ``agent.toml`` list TARGET's name goes to: ``memory`` or ``skills``."""
    return "skills" if a.segment is SegmentName.SKILLS else "memory"


def _only(plan: Plan, *ops: Operation) -> Plan:
    """The plan with exactly TARGET's CREATE (and, for an instruction target, the other
    instruction targets' CREATEs of that checkout)."""
    return attrs.evolve(plan, operations=ops)


def adopt(target: str, workspace: str | None = None, *, project: str | None = None,
          dry_run: bool = False, lock_timeout: float = 30.0,
          environ: Mapping[str, str] | None = None) -> AdoptReport:
    """Adopt TARGET (or, with ``dry_run``, check everything and write nothing); never
    raises :class:`AikitoError` — the report carries the error."""
    with signals.installed():
        run = _Run(target, dry_run)
        try:
            _sequence(run, target, workspace, project, dry_run, lock_timeout, environ)
        except AikitoError as exc:
            return run.report(exc)
        return run.report(None)


def _sequence(run: _Run, target: str, workspace: str | None, project: str | None,
              dry_run: bool, lock_timeout: float, environ: Mapping[str, str] | None) -> None:
    from aikito_mem.executor.lock import Locks

    a = run.validate(target, workspace, project, environ)
    if dry_run:
        return
    with Locks() as locks:
        with signals.interruptible():
            locks.acquire([a.checkout], lock_timeout)
        a = run.validate(target, workspace, project, environ)
        run.move(a)
        for step in (Step.REGISTER, Step.LINK):
            try:
                if step is Step.REGISTER:
                    run.register(a, environ)
                else:
                    run.link(a, locks, environ)
            except InterruptedError_ as exc:
                raise InterruptedError_(_interrupted(exc, a, run), signum=exc.signum) from None
            except (AikitoError, OSError) as exc:
                failure = run.undo(a, exc, step)
                signum = signals.received()
                if signum is not None:  # the signal stopped the undo: say what was left
                    run.content_at = failure.content_at
                    raise InterruptedError_(failure.message, signum=signum) from None
                raise failure from None


def _interrupted(exc: InterruptedError_, a: Adoption, run: _Run) -> str:
    if run.steps[Step.LINK] is StepStatus.APPLIED or (
            run.sync is not None and Status.APPLIED in run.sync.statuses):
        run.steps[Step.LINK] = StepStatus.APPLIED
        return f"{exc.message} — {a.reference} was adopted before the signal arrived"
    listed = "is" if run.steps[Step.REGISTER] in (StepStatus.APPLIED,
                                                  StepStatus.SKIPPED) else "is not yet"
    return (f"{exc.message} — the content is at {a.destination} and {a.reference!r} {listed} "
            f"in the {_list(a)} list; to finish, run `aikito adopt {quote(a.target)}` again "
            f"([E5]: it resumes), or add it if needed and run `aikito sync project "
            f"{quote(a.project)} {quote(a.checkout)}`")
