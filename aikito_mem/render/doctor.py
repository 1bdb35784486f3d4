"""The doctor report as the ``aikito.doctor/1`` document and as text."""

from __future__ import annotations

from typing import Any

from aikito_mem.doctor import CONTRACT_VERSION, Check, DoctorReport
from aikito_mem.model import Severity
from aikito_mem.render.text import Display, Output, error_json, error_lines, plural, printable

SCHEMA = "aikito.doctor/1"
_OK, _WARNING, _ERROR = Severity.OK, Severity.WARNING, Severity.ERROR


def _check_json(check: Check) -> dict[str, Any]:
    return {"id": check.id, "status": str(check.status), "message": check.message,
            "remedy": check.remedy, "path": check.path, "project": check.project}


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
        "error": error_json(report.error) if report.error is not None else None,
    }


def text_report(report: DoctorReport, *, verbose: bool = False) -> list[str]:
    """One line per check (``ok`` ones only with ``-v``), remedies indented, a summary."""
    lines: list[str] = []
    if report.workspace is not None:
        lines.append(printable(f"workspace {report.workspace} ({report.workspace_source})"))
    for check in report.checks:
        if check.status is _OK and not verbose:
            continue
        lines.append(printable(f"{check.status:<8} {check.id:<17} {check.message}"))
        if check.remedy and check.status is not _OK:
            lines.append(printable(f"{'':<8} {'':<17} remedy: {check.remedy}"))
    strict = " (--strict: warnings count)" if report.strict else ""
    lines.append(f"doctor: {report.count(_OK)} ok, {plural(report.count(_WARNING), 'warning')}, "
                 f"{plural(report.count(_ERROR), 'error')}{strict}")
    return lines


def render(report: DoctorReport, display: Display) -> Output:
    """What ``aikito doctor`` prints for ``report``."""
    if display.as_json:
        return Output(report.exit_code, document=document(report))
    if report.error is not None:
        return Output(report.exit_code, errors=error_lines(report.error, display))
    return Output(report.exit_code, lines=tuple(text_report(report, verbose=display.verbose)))
