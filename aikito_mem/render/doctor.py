"""The doctor report as the ``aikito.doctor/1`` document and as text.

Colour (when the display has it): the status word of each line — ``ok`` green,
``warning`` yellow, ``error`` red and bold — and the summary line in the colour of the
worst status; remedies stay plain.
"""

from __future__ import annotations

from typing import Any

from aikito_mem.commands.doctor.git import Fix
from aikito_mem.commands.doctor.report import CONTRACT_VERSION, Check, DoctorReport
from aikito_mem.model import Severity
from aikito_mem.render.paths import Paths
from aikito_mem.render.text import (
    HANGING,
    Display,
    Output,
    error_json,
    plural,
    printable,
    rendered,
)

SCHEMA = "aikito.doctor/1"
_OK, _WARNING, _ERROR = Severity.OK, Severity.WARNING, Severity.ERROR


def _check_json(check: Check) -> dict[str, Any]:
    return {"id": check.id, "status": str(check.status), "message": check.message,
            "remedy": check.remedy_text, "path": check.path, "project": check.project}


def _fix_json(fix: Fix) -> dict[str, Any]:
    return {"id": "git.ignore", "status": fix.status, "message": fix.message,
            "path": fix.path, "lines": list(fix.lines), "removed": list(fix.drop),
            "checkouts": list(fix.checkouts), "error": fix.error}


def document(report: DoctorReport) -> dict[str, Any]:
    """The ``aikito.doctor/1`` document (docs/commands.md)."""
    return {
        "schema": SCHEMA,
        "contract_version": CONTRACT_VERSION,
        "workspace": report.workspace,
        "workspace_source": report.workspace_source,
        "strict": report.strict,
        "exit_code": report.exit_code,
        "summary": {str(s): report.count(s) for s in (_OK, _WARNING, _ERROR)},
        "checks": [_check_json(c) for c in report.checks],
        "fix": report.fix,
        "dry_run": report.dry_run,
        "fixes": [_fix_json(f) for f in report.fixes],
        "error": error_json(report.error) if report.error is not None else None,
    }


_STYLE = {_OK: ("green", False), _WARNING: ("yellow", False), _ERROR: ("red", True)}
#: The status word of a fix line, and its colour.
_FIX_WORD = {"applied": ("fixed", "green"), "planned": ("to fix", "cyan"),
             "unchanged": ("ok", "green"), "failed": ("failed", "red")}


def _row(word: str, check_id: str, message: str, display: Display, fg: str | None,
         bold: bool = False) -> str:
    # Wrapped as one line, so the first line fits the width too ([U2]); only the status
    # word is coloured.
    text = display.line(f"{word:<8} {check_id:<17} {message}")
    if not display.color or (fg is None and not bold):
        return text
    import click

    return click.style(text[:8], fg=fg, bold=bold or None) + text[8:]


def _remedy(check: Check, paths: Paths, display: Display) -> list[str]:
    """``remedy: …`` on a line of its own from the fifth column (4 spaces), its further
    lines hanging four deeper — one layout at every width, whether or not the remedy
    would have fitted beside its check, so the remedies of one report line up ([U2]).
    Each command it names follows on a line of its own at the hanging indent, whole —
    never wrapped, even wider than the line (as a path is) — so that it pastes as one
    line where doctor ran ([U2])."""
    words = paths.remedy(check.remedy or "")
    if check.commands:
        words += ":"
    lines = [display.line(f"{'':<{HANGING}}remedy: {words}")]
    for n, alternative in enumerate(check.commands):
        if n:  # alternatives: an ``or:`` between them, each of its commands on a line
            lines.append(f"{'':<{HANGING}}or:")
        lines += [printable(f"{'':<{2 * HANGING}}{paths.remedy(command)}")
                  for command in alternative.split("\n")]
    return lines


def _summary(report: DoctorReport) -> str:
    strict = " (--strict: warnings count)" if report.strict else ""
    line = (f"doctor: {report.count(_OK)} ok, {plural(report.count(_WARNING), 'warning')}, "
            f"{plural(report.count(_ERROR), 'error')}{strict}")
    if report.fix:
        counts: dict[str, int] = {}
        for f in report.fixes:
            counts[f.status] = counts.get(f.status, 0) + 1
        words = {"applied": "applied", "planned": "to apply (--dry-run)",
                 "unchanged": "found done already", "failed": "failed"}
        done = [f"{plural(n, 'fix', 'fixes')} {words[status]}"
                for status, n in counts.items()]
        line += "; " + (", ".join(done) if done else "nothing to fix")
    return line


def text_report(report: DoctorReport, display: Display | None = None) -> list[str]:
    """The fixes first (``--fix``), then one line per check (``ok`` ones only with
    ``-v``), remedies indented, and a summary."""
    display = display or Display()
    # [U2]: a remedy's paths work where the command ran; its commands reach the same
    # workspace (``--workspace`` when it was named).
    paths = Paths(report.workspace, cwd=display.cwd, home=display.home,
                  named=report.workspace_source == "option", program=display.program)
    lines: list[str] = []
    if report.workspace is not None:
        lines.append(display.line(f"workspace {report.workspace} ({report.workspace_source})"))
    for fix in report.fixes:
        word, fg = _FIX_WORD.get(fix.status, (fix.status, None))
        lines.append(_row(word, "git.ignore", fix.message, display, fg,
                          bold=fix.status == "failed"))
    for check in report.checks:
        if check.status is _OK and not display.verbose:
            continue
        fg, bold = _STYLE.get(check.status, (None, False))
        lines.append(_row(str(check.status), check.id, check.message, display, fg, bold))
        if check.remedy and check.status is not _OK:
            lines.extend(_remedy(check, paths, display))
    worst = _ERROR if report.count(_ERROR) or report.failed_fixes else (
        _WARNING if report.count(_WARNING) else _OK)
    fg, bold = _STYLE[worst]
    lines.append(display.line(_summary(report), fg, bold=bold))
    return lines


def render(report: DoctorReport, display: Display) -> Output:
    """What ``aikito doctor`` prints for ``report``."""
    return rendered(report, display, document, text_report)
