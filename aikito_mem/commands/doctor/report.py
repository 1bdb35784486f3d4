"""What ``aikito doctor`` found: one frozen :class:`Check` per finding and the
:class:`DoctorReport` of a run (its exit code decided here).  The checks and the
renderer import these values; of doctor's rooms this one imports only git's ``Fix``."""

from __future__ import annotations

import attrs

from aikito_mem.commands.doctor.git import Fix
from aikito_mem.errors import EXIT_CONFLICT, EXIT_OK, AikitoError, exit_code_for
from aikito_mem.model import Severity

__all__ = ["CONTRACT_VERSION", "Check", "DoctorReport", "literal"]

#: The ``aikito.doctor/1`` document's contract version.
CONTRACT_VERSION = 1


def literal(path: str) -> str:
    """``path`` in quotes, as a shell reads it back: a remedy's literal — a path to find in
    a file, or one that must stay absolute — which the text shows exactly ([U2])."""
    from shlex import quote

    quoted = quote(path)
    return quoted if quoted != path else f"'{path}'"


@attrs.frozen
class Check:
    """One finding of doctor."""

    id: str
    status: Severity
    message: str
    #: What to do, in words; when :attr:`commands` names the commands that do it, the
    #: words lead to them (``to add … to .git/info/exclude, run``).
    remedy: str | None = None
    path: str | None = None
    project: str | None = None
    #: [U2]: the commands the remedy names — the text prints each one whole on a line of
    #: its own, so that it pastes as one line; more than one are alternatives, and an
    #: alternative of several commands run in turn holds them ``\n``-separated (short
    #: lines, each of which pastes and fits, rather than one long one).
    commands: tuple[str, ...] = ()

    @property
    def remedy_text(self) -> str | None:
        """The remedy as one sentence (the document's ``remedy``): the words, then the
        commands, ``, or: ``-separated (the commands of one alternative ``; ``-joined)."""
        if not self.commands:
            return self.remedy
        return f"{self.remedy}: {', or: '.join(c.replace(chr(10), '; ') for c in self.commands)}"


@attrs.frozen
class DoctorReport:
    """Every check of one ``aikito doctor`` run."""

    workspace: str | None
    #: How the workspace was found: ``option``, ``AIKITO_DIR``, ``pointer file``, ``default``.
    workspace_source: str | None
    strict: bool
    checks: tuple[Check, ...] = ()
    #: The error that ended the command (workspace unusable, a signal).
    error: AikitoError | None = None
    #: ``--fix`` was given (with ``--dry-run``: the fixes are only planned).
    fix: bool = False
    dry_run: bool = False
    #: The fixes made (or planned), one per exclude file.
    fixes: tuple[Fix, ...] = ()

    def count(self, status: Severity) -> int:
        return sum(1 for c in self.checks if c.status is status)

    @property
    def failed_fixes(self) -> int:
        return sum(1 for f in self.fixes if f.status == "failed")

    @property
    def exit_code(self) -> int:
        """1 with an error (a warning too with ``--strict``) or a fix that failed."""
        if self.error is not None:
            return exit_code_for(self.error)
        failing = self.count(Severity.ERROR) + (self.count(Severity.WARNING) if self.strict else 0)
        return EXIT_CONFLICT if failing or self.failed_fixes else EXIT_OK
