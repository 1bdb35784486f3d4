"""How a sync, a dry run or an apply ends: its outcome word and exit code, decided here.

One frozen :class:`SyncReport` carries everything the ``aikito.sync/2`` document and the
text report are made of.  The rules that turn a plan, a result or an error into an
outcome and an exit code (SPEC §9) live in this module and nowhere else; the command line
only renders a report and exits with its code.

- a dry run of a blocked plan is refused as a whole: :class:`ConflictError`, outcome
  ``blocked``, exit 1 — nothing would be written ([P3], [E1]);
- a dry run otherwise is ``planned``, exit 0 — or exit 7 with ``--check`` when the plan
  has changes to make (a registration included); ``--check`` with nothing pending is
  ``unchanged``, exit 0;
- a real run reports the executor's outcome (``applied`` / ``unchanged``), exit 0;
- an error reports its own outcome word and exit code (:mod:`aikito_mem.errors`);
- a signal noticed after the work turns any report into ``interrupted`` (exit 130/143),
  keeping the statuses of what was done ([E5]).
"""

from __future__ import annotations

from aikito_mem.errors import (
    EXIT_CONFLICT,
    EXIT_OK,
    EXIT_PENDING,
    AikitoError,
    ConflictError,
    InterruptedError_,
    NoProjectHereError,
    Outcome,
    exit_code_for,
)
from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    CheckoutState,
    Finding,
    Plan,
    Segment,
    SegmentName,
    SyncResult,
)
from aikito_mem.values import Record, replace


class SyncReport(Record):
    """What one ``sync project`` or ``apply`` came to: the one value that is rendered."""

    #: The project name, when known (a broken ``agent.toml`` still names its project).
    project: str | None
    #: The physical workspace root, when it was resolved.
    workspace: str | None
    dry_run: bool
    outcome: Outcome
    exit_code: int
    plan: Plan | None = None
    #: The executor's result (per-operation statuses); ``None`` for a dry run.
    result: SyncResult | None = None
    #: The error the command ended with (its message goes to stderr).
    error: AikitoError | None = None
    #: Findings of a run that made no plan: ``sync.no_workspace``, ``sync.no_project``
    #: ([U4]).
    findings: tuple[Finding, ...] = ()


#: The codes of a discovery that found no workspace on this machine ([W2]): none
#: configured (the default is missing), or the configured one missing or without
#: ``projects/``.
NO_WORKSPACE_CODES = ("config.workspace_missing", "config.workspace_no_projects")


def no_workspace_report(error: AikitoError, *, dry_run: bool) -> SyncReport:
    """[U4] (``--skip-without-workspace``, the pre-commit hook): no workspace on this
    machine is nothing to check — ``unchanged``, exit 0, one ``sync.no_workspace``
    notice naming the path looked at (absolute, as ``--json`` carries it; the text
    writes it where the command ran)."""
    message = (f"no aikito workspace on this machine ({error.path or '?'} "
               f"{'is not a workspace' if error.code.endswith('projects') else 'is missing'})"
               ": nothing to check")
    return SyncReport(None, None, dry_run, Outcome.UNCHANGED, EXIT_OK,
                      findings=(Finding("sync.no_workspace", "info", message,
                                        error.path),))


def no_project_report(error: NoProjectHereError, *, dry_run: bool) -> SyncReport:
    """[U4] (``--skip-without-workspace``, the pre-commit hook): a workspace none of whose
    projects has this checkout is nothing to check either — a teammate's workspace need
    not list every repository — ``unchanged``, exit 0, one ``sync.no_project`` notice
    naming the workspace (absolute)."""
    message = (f"no project of the workspace {error.workspace} has this checkout: "
               "nothing to check")
    return SyncReport(None, error.workspace, dry_run, Outcome.UNCHANGED, EXIT_OK,
                      findings=(Finding("sync.no_project", "info", message,
                                        error.directory),))


def dry_run_report(plan: Plan, *, check: bool = False) -> SyncReport:
    """The report of a plan that is only shown (``--dry-run``, ``--check``)."""
    if plan.blocked:
        n = len(plan.conflicts)
        names = [seg.value for seg in SEGMENT_ORDER if seg in plan.blocked_segments]
        what = (f"the {names[0]} segment" if len(names) == 1 else
                f"the {', '.join(names[:-1])} and {names[-1]} segments")
        others = any(op.segment not in plan.blocked_segments for op in plan.changes)
        it = "it" if len(names) == 1 else "them"
        rest = ("nothing would be written" if plan.refused else
                f"nothing of {it} would be written; the other segments would be applied"
                if others else
                f"nothing of {it} would be written; the other segments are already in sync")
        error = ConflictError(
            f"{n} conflict{'s' * (n != 1)} block{'s' * (n == 1)} {what}; {rest} — "
            "resolve each as it says and run again",
            conflicts=plan.conflicts, plan=plan,
        )
        return SyncReport(plan.project, plan.workspace, True, Outcome.BLOCKED, EXIT_CONFLICT,
                          plan=plan, error=error)
    if check and not plan.has_changes:  # SPEC §9: `--check` with nothing pending
        return SyncReport(plan.project, plan.workspace, True, Outcome.UNCHANGED, EXIT_OK,
                          plan=plan)
    code = EXIT_PENDING if check else EXIT_OK
    return SyncReport(plan.project, plan.workspace, True, Outcome.PLANNED, code, plan=plan)


def run_report(result: SyncResult) -> SyncReport:
    """The report of a plan the executor carried out."""
    plan = result.plan
    return SyncReport(plan.project, plan.workspace, False, Outcome(result.outcome), EXIT_OK,
                      plan=plan, result=result)


def error_report(error: AikitoError, *, project: str | None, workspace: str | None,
                 dry_run: bool) -> SyncReport:
    """The report of a run that ended with ``error``; the plan and the statuses it carries
    (a refused plan, a partial result) are kept."""
    result: SyncResult | None = getattr(error, "result", None)
    plan: Plan | None = result.plan if result is not None else getattr(error, "plan", None)
    if plan is not None:
        project = project if project is not None else plan.project
        workspace = workspace if workspace is not None else plan.workspace
    return SyncReport(project, workspace, dry_run, Outcome(error.outcome),
                      exit_code_for(error), plan=plan, result=result, error=error)


def interrupted(report: SyncReport, error: InterruptedError_) -> SyncReport:
    """``report`` ended by a signal noticed after its work: outcome ``interrupted``, exit
    130/143, every status it had kept."""
    if report.outcome is Outcome.INTERRUPTED:
        return report
    return replace(report, outcome=Outcome.INTERRUPTED, exit_code=exit_code_for(error),
                   error=error)


def segment_results(
    plan: Plan,
    *,
    dry_run: bool = False,
    applied: set[int] | frozenset[int] = frozenset(),
    stopped: tuple[SegmentName, str] | None = None,
    halted: str | None = None,
    blocked: frozenset[SegmentName] | None = None,
) -> tuple[Segment, ...]:
    """Each segment's own outcome and success ([E8], [G6]).

    A blocked segment is ``blocked``; a dry run's other segments are ``planned``; a real
    run's are ``applied`` when one of their writes was applied, else ``unchanged``.
    ``stopped`` is the segment whose write failed (or went stale, or was interrupted) and
    that outcome word: it and every later segment with writes get that word; the earlier
    ones keep theirs.  ``halted`` is the word of a run refused before its first write
    (stale, failed, interrupted): every segment with writes gets it.  An inactive
    segment is ``unchanged`` (``planned`` in a dry run) and successful.  ``blocked``:
    the plan's blocked segments, when the caller has them already.
    """
    if blocked is None:
        blocked = plan.blocked_segments
    #: The segments with an operation: active without a look at the findings ([G6]).
    present = {op.segment for op in plan.operations}
    writes: dict[SegmentName, list[int]] = {}
    if applied or halted is not None or stopped is not None:  # else no word reads them
        create, unlink = Action.CREATE, Action.UNLINK
        for i, op in enumerate(plan.operations):
            if op.action is create or op.action is unlink:
                writes.setdefault(op.segment, []).append(i)
    quiet = "planned" if dry_run else "unchanged"
    out = []
    for rank, seg in enumerate(SEGMENT_ORDER):
        name = seg.value
        active = seg in present
        if not active:  # Plan.segment_active, its operations already read: a finding?
            prefix = f"{name}."
            active = any(f.code.startswith(prefix) for f in plan.findings)
        own = writes.get(seg, ())
        if not active:
            word, ok = quiet, True
        elif blocked and seg in blocked:
            word, ok = "blocked", False
        elif halted is not None and own:
            word, ok = halted, False
        elif stopped is not None and rank >= SEGMENT_ORDER.index(stopped[0]) and (
                own or seg is stopped[0]):
            word, ok = stopped[1], False
        elif dry_run:
            word, ok = "planned", True
        elif any(i in applied for i in own):
            word, ok = "applied", True
        else:
            word, ok = quiet, True
        out.append(Segment(name, ok, active, word))
    return tuple(out)


def run_findings(plan: Plan, *, dry_run: bool) -> tuple[Finding, ...]:
    """The warnings a run adds to its plan's findings, in text and in JSON alike ([U3]):
    nothing was (or would be) synced because the project has no checkout registered
    (``sync.no_checkout``) or every checkout is offline (``sync.all_offline``)."""
    offline = CheckoutState.OFFLINE
    if any(c.state is not offline for c in plan.checkouts) or plan.has_changes:
        return ()
    was = "nothing would be synced" if dry_run else "nothing was synced"
    if not plan.checkouts:
        return (Finding("sync.no_checkout", "warning",
                        f"{was}: project {plan.project} has no checkout registered — add "
                        f"one with: aikito sync project {_quote(plan.project)} PATH", None),)
    n = len(plan.checkouts)
    counted = "its one checkout" if n == 1 else f"all {n} of its checkouts"
    return (Finding("sync.all_offline", "warning",
                    f"{was}: every checkout is offline (project {plan.project}, {counted}) "
                    "— plug in or clone a checkout, then sync again", None),)


def _quote(word: str) -> str:
    from shlex import quote

    return quote(word)
