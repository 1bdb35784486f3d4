"""``aikito sync`` (every project) as text and as the ``aikito.sync-all/1`` document.

Text: the workspace once, then one block per project — exactly what
``aikito sync project NAME`` prints for it, under a ``project NAME`` line — separated by
blank lines, then one summary line.  Each project's error goes to stderr, prefixed with
the project's name.  JSON: one document holding every project's own sync document
(docs/commands.md).
"""

from __future__ import annotations

from typing import Any

from aikito_mem.commands.sync_all import SyncAllReport
from aikito_mem.errors import EXIT_PENDING, Outcome
from aikito_mem.model import CheckoutState
from aikito_mem.outcome import SyncReport
from aikito_mem.render.sync import compact_lines, text_lines
from aikito_mem.render.sync_json import document as sync_document
from aikito_mem.render.text import Display, Output, error_json, listed, message_lines, plural

SCHEMA = "aikito.sync-all/1"

#: Outcome words in the order the summary line lists them.
_ORDER = ("applied", "unchanged", "planned", "blocked", "stale", "failed", "busy",
          "config_error", "interrupted")
_COLOUR = {"applied": "green", "unchanged": "green", "planned": None, "blocked": "red",
           "stale": "red", "failed": "red", "busy": "yellow", "config_error": "red",
           "interrupted": "red"}


def outcome_counts(report: SyncAllReport) -> dict[str, int]:
    counts: dict[str, int] = {}
    for project in report.projects:
        word = str(project.outcome)
        counts[word] = counts.get(word, 0) + 1
    return {word: counts[word] for word in sorted(counts, key=_rank)}


def _rank(word: str) -> int:
    return _ORDER.index(word) if word in _ORDER else len(_ORDER)


def document(report: SyncAllReport) -> dict[str, Any]:
    """The ``aikito.sync-all/1`` document (docs/commands.md)."""
    return {
        "schema": SCHEMA,
        "workspace": report.workspace,
        "workspace_source": report.workspace_source,
        "dry_run": report.dry_run,
        "check": report.check,
        "exit_code": report.exit_code,
        "outcomes": outcome_counts(report),
        "projects": [sync_document(p) for p in report.projects],
        "error": error_json(report.error) if report.error is not None else None,
    }


def _block(project: SyncReport, display: Display) -> tuple[list[str], bool]:
    """A project's lines, and whether they are the one line of a project with nothing
    to do ([U3])."""
    name = project.project or "?"
    if project.plan is None:
        word = str(project.outcome).replace("_", " ")
        return [display.line(f"project {name}: not synced ({word}; see the message below)",
                             "red", bold=True)], False
    compact = compact_lines(project, display)
    if compact is not None:
        return compact, True
    lines = [display.line(f"project {name}", "blue", bold=True)]
    lines.extend(text_lines(project, display, header=False))
    return lines, False


#: The words of a project with nothing to change, in the summary line's order: in sync,
#: or not synced because no checkout could be (its own line says ``not synced``, [U3]).
_IN_SYNC = "in sync"
_QUIET_WORDS = (_IN_SYNC, "not synced (every checkout offline)",
                "not synced (no checkout registered)")


def _word(project: SyncReport) -> str:
    """What became of one project, in the words of the summary line: a project with
    nothing to change is ``in sync``, whether the run was real or dry — unless no
    checkout of it could be synced (none registered, or every one offline), which is
    counted apart, as its own line says ``not synced``."""
    plan = project.plan
    if (project.outcome in (Outcome.UNCHANGED, Outcome.PLANNED) and plan is not None
            and not plan.has_changes and not plan.blocked):
        if not plan.checkouts:
            return _QUIET_WORDS[2]
        if all(c.state is CheckoutState.OFFLINE for c in plan.checkouts):
            return _QUIET_WORDS[1]
        return _IN_SYNC
    return str(project.outcome).replace("_", " ")


def _order(project: SyncReport) -> tuple[int, int]:
    word = _word(project)
    return _rank(str(project.outcome)), (_QUIET_WORDS.index(word) if word in _QUIET_WORDS
                                         else 0)


def summary_line(report: SyncAllReport) -> str:
    """``sync: 3 projects: 1 applied, 1 in sync, 1 config error`` (``1 not synced (every
    checkout offline)`` beside them when a project could not be synced at all)."""
    if not report.projects:
        return "sync: no project in this workspace, nothing was synced"
    counts: dict[str, int] = {}
    for project in sorted(report.projects, key=_order):
        word = _word(project)
        counts[word] = counts.get(word, 0) + 1
    words = ", ".join(f"{n} {word}" for word, n in counts.items())
    return f"sync: {plural(len(report.projects), 'project')}: {words}"


def text(report: SyncAllReport, display: Display) -> tuple[list[str], list[str]]:
    """The stdout lines and the stderr lines: projects with nothing to do one line each,
    the others in a block of their own between blank lines."""
    blocks = [_block(project, display) for project in report.projects]
    worst = next((w for w in reversed(_ORDER) if w in outcome_counts(report)), None)
    colour = "yellow" if not report.projects else _COLOUR.get(worst or "")
    if colour == "green" and any(_word(p) in _QUIET_WORDS[1:] for p in report.projects):
        colour = "yellow"  # a project not synced at all is no success to colour green
    if blocks and report.error is None and all(one for _, one in blocks):
        # [U3]: nothing changed anywhere: a line per project and the total line.
        quiet = [line for block, _ in blocks for line in block]
        return [*quiet, display.line(summary_line(report), colour)], []
    lines = [display.line(f"workspace {report.workspace} ({report.workspace_source})")]
    errors: list[str] = []
    compact = False
    for project, (block, one) in zip(report.projects, blocks, strict=True):
        if not (one and compact):
            lines.append("")
        lines.extend(block)
        compact = one
        if project.error is not None and project.error is not report.error:
            errors.extend(message_lines(
                f"project {project.project}: {project.error.message}", display,
                listed(project.error)))
    lines.append("")
    lines.append(display.line(summary_line(report), colour))
    if report.check and report.exit_code == EXIT_PENDING and report.error is None:
        # [U3]: --check with changes pending ends with the command that applies them.
        lines.append(display.line(f"to apply: {_apply_command(report, display)}"))
    if report.error is not None:
        errors.extend(message_lines(report.error.message, display, listed(report.error)))
    return lines, errors


def _apply_command(report: SyncAllReport, display: Display) -> str:
    """``aikito sync`` (and the ``--moved-from`` it was given), with the ``--workspace`` it
    was given, pasteable where it ran."""
    from shlex import quote

    from aikito_mem.render.paths import Paths

    paths = Paths(report.workspace, cwd=display.cwd, home=display.home,
                  named=report.workspace_source == "option", program=display.program)
    moved = {p.plan.moved_from for p in report.projects
             if p.plan is not None and p.plan.moved_from is not None}
    words = ["aikito", "sync", *(f"--moved-from {quote(m)}" for m in sorted(moved))]
    return paths.text(" ".join(words))


def render(report: SyncAllReport, display: Display) -> Output:
    """What ``aikito sync`` prints for ``report``."""
    if display.as_json:
        return Output(report.exit_code, document=document(report))
    if report.workspace is None:  # the workspace itself failed: the message only
        failure = message_lines(report.error.message, display) if report.error else ()
        return Output(report.exit_code, errors=failure)
    lines, errors = text(report, display)
    return Output(report.exit_code, lines=tuple(lines), errors=tuple(errors))
