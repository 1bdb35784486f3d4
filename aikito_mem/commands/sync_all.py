"""``aikito sync`` with no subcommand: every project of the workspace, one after another.

Each project is synced exactly as ``aikito sync project NAME`` syncs it — its active
checkouts, its own locks taken before planning ([E3]), nothing registered — or planned
as ``--dry-run`` / ``--check`` plan it.  A project that cannot be loaded or synced (a
broken ``agent.toml``, a conflict, a busy checkout…) is reported with its error and the
next project still runs.  A signal stops the run after the project in flight: the
projects not reached are not listed.

The exit code is the first of 5, 3, 6, 4, 1, 7 that any project returned (an
environment failure outranks a stale plan, which outranks a busy lock, a configuration
error, a conflict and pending changes), else 0; an interruption ends the run with
130 / 143.  :func:`sync_all` returns a frozen :class:`SyncAllReport`;
:mod:`aikito_mem.render.sync_all` renders it.
"""

from __future__ import annotations

import attrs

from aikito_mem.errors import (
    EXIT_OK,
    AikitoError,
    ConfigError,
    ExecutionError,
    InterruptedError_,
    exit_code_for,
)
from aikito_mem.outcome import SyncReport

#: Which project exit code the whole run reports: the first of these any project had.
PRECEDENCE = (5, 3, 6, 4, 1, 7)


def combined_exit_code(codes: list[int] | tuple[int, ...]) -> int:
    """The first of :data:`PRECEDENCE` found in ``codes`` (an interruption first of all),
    else 0."""
    for code in codes:
        if code >= 128:
            return code
    for code in PRECEDENCE:
        if code in codes:
            return code
    return EXIT_OK


@attrs.frozen
class SyncAllReport:
    """What ``aikito sync`` came to: one :class:`SyncReport` per project reached."""

    workspace: str | None
    #: How the workspace was found: ``option``, ``AIKITO_DIR``, ``pointer file``, ``default``.
    workspace_source: str | None
    dry_run: bool
    check: bool
    projects: tuple[SyncReport, ...] = ()
    #: The error that ended the whole run (the workspace unusable, a signal).
    error: AikitoError | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return exit_code_for(self.error)
        return combined_exit_code([p.exit_code for p in self.projects])


def _environment_error(error: OSError) -> ExecutionError:
    where = f" on {error.filename}" if error.filename else ""
    return ExecutionError(
        f"{error.strerror or error}{where}; nothing more was attempted in this project — "
        "fix the cause (permissions, disk, mounts) and run again", path=error.filename,
    )


def _one(name: str, ws: object, *, dry_run: bool, check: bool,
         lock_timeout: float, moved_from: str | None = None) -> SyncReport:
    from aikito_mem import signals
    from aikito_mem.api import Project
    from aikito_mem.outcome import dry_run_report, error_report, run_report

    try:
        with signals.interruptible():  # nothing is written while loading and planning
            project = Project.load(name, ws)  # type: ignore[arg-type]
            if dry_run:
                return dry_run_report(project.plan(identify=False, moved_from=moved_from),
                                      check=check)
        return run_report(project.sync(None, register=False, lock_timeout=lock_timeout,
                                       moved_from=moved_from))
    except InterruptedError_:
        raise
    except AikitoError as exc:
        error: AikitoError = exc
    except OSError as exc:
        error = _environment_error(exc)
    return error_report(error, project=name, workspace=getattr(ws, "root", None),
                        dry_run=dry_run)


def sync_all(workspace: str | None, *, dry_run: bool = False, check: bool = False,
             lock_timeout: float = 30.0, moved_from: str | None = None) -> SyncAllReport:
    """Sync (or plan, with ``dry_run``) every project of ``workspace`` (``None``:
    discovery), in name order.  A signal ends the run with the projects done so far and
    the interruption as the report's error."""
    from aikito_mem import signals
    from aikito_mem.config.discovery import resolve_workspace
    from aikito_mem.config.projects import list_projects
    from aikito_mem.outcome import error_report

    dry_run = dry_run or check
    try:
        with signals.interruptible():
            ws = resolve_workspace(workspace)
            names = list_projects(ws.root)
    except ConfigError as exc:
        return SyncAllReport(None, None, dry_run, check, error=exc)
    done: list[SyncReport] = []
    for name in names:
        try:
            done.append(_one(name, ws, dry_run=dry_run, check=check,
                             lock_timeout=lock_timeout, moved_from=moved_from))
        except InterruptedError_ as exc:
            done.append(error_report(exc, project=name, workspace=ws.root, dry_run=dry_run))
            return SyncAllReport(ws.root, ws.found_via, dry_run, check, tuple(done),
                                 error=exc)
    return SyncAllReport(ws.root, ws.found_via, dry_run, check, tuple(done))
