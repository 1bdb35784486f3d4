"""The one error hierarchy of aikito_mem, and the one place that maps errors to exit codes.

Every error carries its data as attributes and a message that names the path, what was
expected, what was found and the safe remedy ([A2]).  ``exit_code`` on each class is the
stable exit code of SPEC §9; ``code`` is the machine-readable ``error.code`` of the JSON
document.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

#: Stable exit codes (SPEC §9).  Keep in sync with the README table.
EXIT_OK = 0
EXIT_CONFLICT = 1
EXIT_USAGE = 2
EXIT_STALE = 3
EXIT_CONFIG = 4
EXIT_FAILED = 5
EXIT_BUSY = 6
EXIT_PENDING = 7
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class AikitoError(Exception):
    """Base of every error this package raises on purpose."""

    #: Exit code of the command line for this error.
    exit_code: int = EXIT_FAILED
    #: Outcome word of the JSON document for this error.
    outcome: str = "failed"

    def __init__(self, message: str, *, code: str = "error", path: str | None = None) -> None:
        super().__init__(message)
        #: Human message: path, expected, found, remedy.
        self.message = message
        #: Machine-readable code, e.g. ``config.memory_type``.
        self.code = code
        #: The path the error is about, when there is one.
        self.path = path

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


class ConfigError(AikitoError):
    """Workspace, project, ``agent.toml``, reference or plan-file problem (exit 4)."""

    exit_code = EXIT_CONFIG
    outcome = "config_error"

    def __init__(
        self, message: str, *, code: str = "config.invalid", path: str | None = None
    ) -> None:
        super().__init__(message, code=code, path=path)


class ProjectNotFoundError(ConfigError):
    """The project directory or its ``agent.toml`` does not exist ([C7])."""

    def __init__(self, message: str, *, project: str, path: str | None = None) -> None:
        super().__init__(message, code="config.project_not_found", path=path)
        #: The project name that was asked for.
        self.project = project


class NoProjectHereError(ConfigError):
    """No project of the workspace has an active checkout holding ``directory`` (NAME
    omitted or ``.``; exit 4 — or, with ``--skip-without-workspace``, a notice, [U4])."""

    def __init__(self, message: str, *, directory: str, workspace: str,
                 broken: tuple[str, ...] = ()) -> None:
        super().__init__(message, code="config.project_not_found", path=directory)
        #: The physical directory no checkout holds.
        self.directory = directory
        #: The workspace root that was searched.
        self.workspace = workspace
        #: The projects whose ``agent.toml`` did not load (one may list ``directory``).
        self.broken = broken


class PlanFileError(ConfigError):
    """A saved plan that is truncated, edited, of another version or workspace (exit 4)."""

    def __init__(
        self, message: str, *, path: str | None = None, code: str = "plan.invalid"
    ) -> None:
        super().__init__(message, code=code, path=path)


class ConflictError(AikitoError):
    """The plan has conflicts; nothing was written (exit 1)."""

    exit_code = EXIT_CONFLICT
    outcome = "blocked"

    def __init__(self, message: str, *, conflicts: tuple[Any, ...] = (), plan: Any = None) -> None:
        super().__init__(message, code="sync.conflict")
        #: The CONFLICT operations of the plan.
        self.conflicts = conflicts
        #: The refused plan.
        self.plan = plan
        #: The SyncResult when the segments without conflicts were applied ([E8]).
        self.result: Any = None


class ProjectPrepareConflictError(ConflictError):
    """``Project.prepare`` found conflicts or missing sources (INV-MEM-12)."""

    def __init__(
        self, message: str, *, project: str, conflicts: tuple[Any, ...] = (), plan: Any = None
    ) -> None:
        super().__init__(message, conflicts=conflicts, plan=plan)
        #: The project name.
        self.project = project


#: How many differences a stale plan's error lists, in its message, its text and its
#: JSON document; the rest are counted (``omitted``), so that a plan of many references
#: that all changed is a short document, not one sentence per path.
DIFFERENCES_LISTED = 20

#: What separates a message's head from its listed items (one per line of their own).
ITEM = "\n  - "


class StalePlanError(AikitoError):
    """The world changed between planning and execution; nothing was written (exit 3).

    ``differences`` holds the first :data:`DIFFERENCES_LISTED` differences found and
    ``omitted`` the number of the others; a message listing them is cut the same way."""

    exit_code = EXIT_STALE
    outcome = "stale"

    def __init__(self, message: str, *, differences: tuple[str, ...], result: Any = None) -> None:
        shown = tuple(differences[:DIFFERENCES_LISTED])
        omitted = len(differences) - len(shown)
        head, listed, _ = message.partition(ITEM)
        if listed and omitted:
            message = (head + ITEM + ITEM.join(shown)
                       + f"{ITEM}… and {omitted} more difference{'s' * (omitted != 1)}")
        super().__init__(message, code="sync.stale")
        #: One sentence per difference found (the first :data:`DIFFERENCES_LISTED`).
        self.differences = shown
        #: How many differences were found beyond those.
        self.omitted = omitted
        #: The result (operation statuses) when the drift was found mid-way.
        self.result = result


class ExecutionError(AikitoError):
    """An operation failed mid-way (exit 5); ``result`` has every operation's status."""

    exit_code = EXIT_FAILED
    outcome = "failed"

    def __init__(self, message: str, *, result: Any = None, path: str | None = None) -> None:
        super().__init__(message, code="sync.failed", path=path)
        #: The SyncResult with per-operation statuses.
        self.result = result


class InterruptedError_(AikitoError):
    """SIGINT/SIGTERM arrived; the operation in flight was finished, the rest not applied."""

    outcome = "interrupted"

    def __init__(self, message: str, *, signum: int, result: Any = None) -> None:
        super().__init__(message, code="sync.interrupted")
        #: The signal number received.
        self.signum = signum
        #: The SyncResult with per-operation statuses.
        self.result = result
        self.exit_code = 128 + signum


class LockBusyError(AikitoError):
    """Another process holds the checkout lock (exit 6)."""

    exit_code = EXIT_BUSY
    outcome = "busy"

    def __init__(self, message: str, *, path: str, timeout: float) -> None:
        super().__init__(message, code="sync.busy", path=path)
        #: Seconds waited.
        self.timeout = timeout


def exit_code_for(error: BaseException) -> int:
    """The one mapping from an exception to an exit code."""
    if isinstance(error, AikitoError):
        return error.exit_code
    return EXIT_FAILED


class Outcome(StrEnum):
    """How a sync, a dry run or an apply ended: the ``outcome`` word of its JSON document
    (SPEC §9).  A ``str`` enum, so it compares equal to the bare words used elsewhere."""

    APPLIED = "applied"
    UNCHANGED = "unchanged"
    PLANNED = "planned"
    BLOCKED = "blocked"
    STALE = "stale"
    FAILED = "failed"
    BUSY = "busy"
    CONFIG_ERROR = "config_error"
    INTERRUPTED = "interrupted"


class AdoptRefused(AikitoError):
    """``aikito adopt`` refused before writing anything (exit 1)."""

    exit_code = EXIT_CONFLICT
    outcome = "refused"

    def __init__(
        self,
        message: str,
        *,
        code: str,
        path: str | None = None,
        differences: tuple[Any, ...] = (),
        diff: str | None = None,
    ) -> None:
        super().__init__(message, code=f"adopt.{code}", path=path)
        #: How the entry at TARGET differs from the one already in the workspace
        #: (:class:`aikito_mem.commands.adopt.treecompare.Difference` values), when that is
        #: the refusal.
        self.differences = differences
        #: A unified diff of the differing small text files, when there are some.
        self.diff = diff


class AdoptUnsafe(AdoptRefused):
    """``aikito adopt`` refused because TARGET is, or reaches, the workspace's own copy
    ([H2]: the same object as its destination, inside the workspace, or behind a mount
    point): nothing was changed (exit 4)."""

    exit_code = EXIT_CONFIG


class AdoptFailed(AikitoError):
    """A step of ``aikito adopt`` failed (or was undone); ``content_at`` says where the
    complete content is now (exit 5, or 3 when the cause is that something changed)."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        content_at: str,
        exit_code: int = EXIT_FAILED,
        outcome: str = "failed",
    ) -> None:
        super().__init__(message, code=f"adopt.{code}", path=content_at)
        #: Where the complete content is now.
        self.content_at = content_at
        self.exit_code = exit_code
        self.outcome = outcome


class UnsafePlanError(ConfigError):
    """A plan that asks for a write the engine would never derive ([E9]): a target outside
    ``<checkout>/.agents/<segment root>/<clean path>`` of a listed or explicitly named
    checkout, a CREATE whose source is not the canonical one, an UNLINK of a link that
    [O2] does not prove owned, a registration elsewhere than the project's ``agent.toml``
    (exit 4).  Raised by the writer's own check before the first write; nothing was
    written.  Exit 4, not 3: the world did not change — the plan itself is not one the
    engine makes (it was edited, or built by hand)."""

    def __init__(self, message: str, *, refusals: tuple[str, ...], plan: Any = None) -> None:
        super().__init__(message, code="plan.unsafe")
        #: One sentence per refused write: path, what was expected, what was found.
        self.refusals = refusals
        #: The refused plan.
        self.plan = plan
