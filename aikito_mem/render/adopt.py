"""Rendering of ``aikito adopt``: an :class:`~aikito_mem.commands.adopt.plan.AdoptReport` as the
``aikito.adopt/1`` JSON document or as text lines.  Pure: values in, values out; the CLI
decides where they go (the error message goes to stderr)."""

from __future__ import annotations

from typing import Any

from aikito_mem.commands.adopt.plan import (
    CONTRACT_VERSION,
    SCHEMA,
    Adoption,
    AdoptReport,
    Method,
    Step,
)
from aikito_mem.errors import AdoptRefused
from aikito_mem.model import Operation, SegmentName
from aikito_mem.render.paths import Paths

_HOW = {Method.RENAME: "rename", Method.COPY: "copy across filesystems, verify, remove",
        Method.REPLACE: "already there, identical: remove TARGET",
        Method.RESUME: "already there, moved by an adopt that was stopped: nothing to move"}


def _conflict(op: Operation) -> dict[str, Any]:
    doc: dict[str, Any] = {"target": op.target, "reason": op.reason}
    if op.remedy is not None:
        doc["remedy"] = op.remedy
    return doc


def next_command(a: Adoption, program: str = "aikito") -> str:
    """[L5] [N1]: the command that links the rest of an adopted skill — the sync of its
    project (with ``--workspace`` when the workspace was named so, to reach the same one),
    one shell word per argument so that it can be pasted."""
    from shlex import quote

    option = f"--workspace {quote(a.workspace)} " if a.found_via == "option" else ""
    return f"{program} {option}sync project {quote(a.project)}"


def _rest(report: AdoptReport) -> Adoption | None:
    """The adoption whose skill has other targets to link, when the report names them:
    a dry run that would adopt, or an adoption done."""
    a = report.adoption
    if a is None or not a.rest or report.error is not None:
        return None
    return a


def json_document(report: AdoptReport) -> dict[str, Any]:
    """The one ``aikito.adopt/1`` document, for every outcome."""
    from aikito_mem.render.sync_json import json_document as sync_document

    a = report.adoption
    error = report.error
    err: dict[str, Any] | None = None
    if error is not None:
        err = error.to_json()
        if error.path:
            err["path"] = error.path
    refused = error if isinstance(error, AdoptRefused) else None
    sync = None
    if report.sync is not None and a is not None:
        sync = sync_document(project=a.project, workspace=a.workspace, dry_run=False,
                             outcome=report.sync.outcome, exit_code=0, result=report.sync)
    return {
        "schema": SCHEMA,
        "contract_version": CONTRACT_VERSION,
        "workspace": a.workspace if a else None,
        "project": a.project if a else None,
        "checkout": a.checkout if a else None,
        "target": a.target if a else None,
        "reference": a.reference if a else None,
        "destination": a.destination if a else None,
        "kind": a.kind.value if a else None,
        "segment": a.segment.value if a else None,
        "method": report.method.value if report.method else None,
        "dry_run": report.dry_run,
        "outcome": report.outcome.value,
        "exit_code": report.exit_code,
        "content_at": report.content_at,
        "steps": [{"step": s.step.value, "status": s.status.value,
                   **({"detail": s.detail} if s.detail else {})} for s in report.steps],
        "conflicts": [_conflict(op) for op in report.conflicts],
        "differences": [{"path": d.rel, "what": d.what}
                        for d in (refused.differences if refused else ())],
        "diff": refused.diff if refused else None,
        "sync": sync,
        # [N1]: what adopt leaves to the next sync (the skill's other targets here).
        "next": ({"command": next_command(rest), "targets": [op.target for op in rest.rest]}
                 if (rest := _rest(report)) is not None else None),
        "error": err,
    }


def text_lines(report: AdoptReport, *, cwd: str | None = None, home: str | None = None,
               program: str = "aikito") -> list[str]:
    """Human lines for the report (the error message itself goes to stderr); ``cwd``,
    ``home`` and ``program``: where and as what the command runs ([U2]).  Every path is
    shown as a person pastes it there (:meth:`Paths.pasteable`: relative to ``cwd`` when
    below it, else ``~/…``, else absolute; shell-quoted when it must be); the other
    conflicts of the checkout alike."""
    lines: list[str] = []
    a = report.adoption
    paths = Paths(a.workspace if a else None, a.checkout if a else None, cwd=cwd,
                  home=home, program=program)
    refused = report.error if isinstance(report.error, AdoptRefused) else None
    if refused is not None and refused.differences:
        lines.append(f"how TARGET differs from {_shown(paths, refused.path)}:")
        lines.extend(f"  {d.rel}: {d.what}" if d.rel else f"  {d.what}"
                     for d in refused.differences)
        if refused.diff:
            lines.extend(refused.diff.rstrip("\n").split("\n"))
    if a is None:
        return lines
    steps = {s.step: s for s in report.steps}
    verb = "would move" if report.dry_run else "move"
    how = _HOW[report.method] if report.method else ""
    target, destination = _shown(paths, a.target), _shown(paths, a.destination)
    lines.append(f"adopt {target} (project {a.project}, checkout {_shown(paths, a.checkout)})")
    lines.append(f"  {verb}: {target} -> {destination} ({how}) "
                 f"[{steps[Step.MOVE].status.value}]")
    reg = steps[Step.REGISTER].status.value
    if a.segment is not SegmentName.INSTRUCTIONS:  # [L5]: an instruction target is in no list
        lines.append(f"  {a.segment.value} list: add {a.reference!r} "
                     f"[{'already listed' if reg == 'skipped' else reg}]")
    lines.append(f"  link: {target} -> {destination} [{steps[Step.LINK].status.value}]")
    lines.extend(f"  link: {_shown(paths, op.target)} -> {destination} (another instruction "
                 f"target) [{steps[Step.LINK].status.value}]" for op in a.links)
    lines.extend(_rest_lines(report, paths, program))
    if report.conflicts:
        n = len(report.conflicts)
        lines.append(f"note: the checkout has {n} other conflict{'s' * (n != 1)}, left for "
                     "`aikito sync project`:")
        lines.extend(f"  ! {_shown(paths, op.target)}: {paths.reason(op.reason)}"
                     for op in report.conflicts)
    if report.dry_run and report.error is None:
        lines.append("dry run: nothing was written")
    elif report.outcome.value == "adopted":
        lines.append(f"done: {a.reference} adopted; its content is at {destination}")
    elif report.content_at:
        lines.append(f"the content is at {_shown(paths, report.content_at)}")
    return lines


def _shown(paths: Paths, path: str | None) -> str:
    """[U2]: ``path`` as a person pastes it where adopt ran, one shell word."""
    from shlex import quote

    return "None" if path is None else paths.pasteable(quote(path))


def _rest_lines(report: AdoptReport, paths: Paths, program: str) -> list[str]:
    """[N1]: adopt links back only what it took; the skill's other targets in the
    checkout (relative to it) are the next sync's, whose command is printed alone on its
    line, to be pasted where adopt ran ([U2])."""
    a = _rest(report)
    if a is None:
        return []
    blocked = any(op.segment is SegmentName.SKILLS for op in report.conflicts)
    when = " once the other conflicts (below) are resolved" if blocked else ""
    return [f"  not linked by adopt: {', '.join(paths.target(op) for op in a.rest)} (the "
            f"skill's other targets here); the next sync links them{when}:",
            f"    {paths.text(next_command(a, program))}"]
