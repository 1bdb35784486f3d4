"""``aikito status``: every project of the workspace at once, as a dry run of each.

The sync state of every checkout comes from :meth:`Project.plan` — the one planner — so a
status can never disagree with what ``aikito sync project --dry-run`` would print.  Nothing
is written and no lock is taken ([E7]).

Decisions where issue 6 is silent (also in docs/commands.md):

- ``in_sync`` is true when the plan has nothing to create or unlink and no conflict for
  that checkout.  Foreign entries are warnings: they are counted but do not make a
  checkout out of sync (a sync would not change them either).
- An offline checkout has no sync state: its ``sync`` is ``null`` and it never affects the
  exit code (offline checkouts never block active ones, INV-MEM-08).
- An invalid checkout (exists but is not a directory, or cannot be examined) counts its
  conflict, exactly as the sync plan does.
- A project whose ``agent.toml`` is broken (or whose plan cannot be made) is listed with an
  ``error`` object and makes the exit code 1: the listing succeeded but not everything is
  known to be in sync.  Exit 4 is kept for the workspace itself (not found, no
  ``projects/``, unlistable).
- ``unlink`` counts every planned UNLINK, links and emptied directories alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aikito_mem.errors import EXIT_CONFIG, EXIT_CONFLICT, EXIT_OK, AikitoError, ConfigError
from aikito_mem.model import Action, CheckoutState, Plan

SCHEMA = "aikito.status/1"
CONTRACT_VERSION = 1
ANCHOR = ".agents/memory"


def _error_json(error: AikitoError | OSError) -> dict[str, Any]:
    if isinstance(error, AikitoError):
        doc: dict[str, Any] = error.to_json()
        if error.path:
            doc["path"] = error.path
        return doc
    return {"code": "status.os_error", "message": f"{error.filename}: {error.strerror}"}


def _checkout_sync(plan: Plan) -> list[dict[str, Any]]:
    counts: dict[str, dict[str, int]] = {
        co.path: {"create": 0, "unlink": 0, "conflict": 0, "foreign": 0}
        for co in plan.checkouts
    }
    for op in plan.operations:
        bucket = counts.get(op.checkout)
        if bucket is None:  # pragma: no cover - every op belongs to a planned checkout
            continue
        if op.action is Action.CREATE:
            bucket["create"] += 1
        elif op.action is Action.UNLINK:
            bucket["unlink"] += 1
        elif op.action is Action.CONFLICT:
            bucket["conflict"] += 1
    prefixes = [(f"{co.path.rstrip('/')}/{ANCHOR}/", co.path) for co in plan.checkouts]
    for finding in plan.findings:
        if finding.code != "memory.foreign_entry" or not finding.path:
            continue
        for prefix, path in prefixes:
            if finding.path.startswith(prefix):
                counts[path]["foreign"] += 1
                break
    out: list[dict[str, Any]] = []
    for co in plan.checkouts:
        entry: dict[str, Any] = {"label": co.label, "path": co.path, "state": co.state.value}
        if co.reason:
            entry["reason"] = co.reason
        if co.state is CheckoutState.OFFLINE:
            entry["sync"] = None
        else:
            c = counts[co.path]
            entry["sync"] = {
                "in_sync": c["create"] == 0 and c["unlink"] == 0 and c["conflict"] == 0,
                **c,
            }
        out.append(entry)
    return out


def project_status(plan: Plan) -> dict[str, Any]:
    """The ``projects[]`` entry of one project, from its dry-run plan."""
    checkouts = _checkout_sync(plan)
    return {
        "name": plan.project,
        "memory": {
            "anchor": ANCHOR,
            "references": list(plan.memory),
            "notes": {"source": plan.notes_source, "location": plan.notes_location},
        },
        "checkouts": checkouts,
        "blocked": plan.blocked,
        "warnings": sum(1 for f in plan.findings if f.severity == "warning"),
    }


def _in_sync(project: dict[str, Any]) -> bool:
    if project.get("error") is not None:
        return False
    return all(
        co["sync"] is None or co["sync"]["in_sync"] for co in project.get("checkouts", ())
    )


def collect(
    workspace: str | None, *, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The whole ``aikito.status/1`` document (``exit_code`` included).  Writes nothing."""
    from aikito_mem.api import Project
    from aikito_mem.discovery import resolve_workspace
    from aikito_mem.projects import list_projects, load_project_config

    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "contract_version": CONTRACT_VERSION,
        "workspace": None,
        "workspace_source": None,
        "projects": [],
        "exit_code": EXIT_OK,
        "error": None,
    }
    try:
        ws = resolve_workspace(workspace, environ=environ)
        doc["workspace"], doc["workspace_source"] = ws.root, ws.found_via
        names = list_projects(ws.root)
    except ConfigError as exc:
        doc["error"] = _error_json(exc)
        doc["exit_code"] = EXIT_CONFIG
        return doc
    projects: list[dict[str, Any]] = []
    for name in names:
        try:
            config = load_project_config(ws.root, name, environ=environ)
            plan = Project(config=config, workspace=ws).plan()
        except (AikitoError, OSError) as exc:
            projects.append({"name": name, "error": _error_json(exc)})
            continue
        projects.append(project_status(plan))
    doc["projects"] = projects
    doc["exit_code"] = EXIT_OK if all(_in_sync(p) for p in projects) else EXIT_CONFLICT
    return doc


def _sync_words(sync: dict[str, Any] | None, state: str) -> str:
    if sync is None:
        return "offline (not checked)" if state == "offline" else "-"
    if sync["in_sync"]:
        words = "in sync"
    else:
        parts = []
        if sync["create"]:
            parts.append(f"{sync['create']} to create")
        if sync["unlink"]:
            parts.append(f"{sync['unlink']} to unlink")
        if sync["conflict"]:
            n = sync["conflict"]
            parts.append(f"{n} conflict{'s' * (n != 1)}")
        words = ", ".join(parts)
    if sync["foreign"]:
        n = sync["foreign"]
        words += f", {n} foreign entr{'ies' if n != 1 else 'y'}"
    return words


def text_table(doc: dict[str, Any]) -> list[str]:
    """One row per project/checkout, then a summary line."""
    rows: list[tuple[str, str, str, str, str]] = []
    for project in doc["projects"]:
        name = project["name"]
        if project.get("error") is not None:
            rows.append((name, "-", "error", "cannot be read (see below)", ""))
            continue
        if not project["checkouts"]:
            rows.append((name, "-", "-", "no checkout registered", ""))
        for co in project["checkouts"]:
            rows.append((name, co["label"], co["state"], _sync_words(co["sync"], co["state"]),
                         co["path"]))
    header = ("PROJECT", "CHECKOUT", "STATE", "SYNC", "PATH")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = [f"workspace {doc['workspace']} ({doc['workspace_source']})"]
    for row in [header, *rows]:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    projects = doc["projects"]
    for project in projects:
        if project.get("error") is not None:
            lines.append(f"error: project {project['name']}: {project['error']['message']}")
    broken = sum(1 for p in projects if p.get("error") is not None)
    pending = sum(1 for p in projects if p.get("error") is None and not _in_sync(p))
    n = len(projects)
    summary = f"status: {n} project{'s' * (n != 1)}"
    if pending or broken:
        extra = [f"{pending} not in sync"] if pending else []
        if broken:
            extra.append(f"{broken} with errors")
        summary += ", " + ", ".join(extra)
    else:
        summary += ", all in sync"
    lines.append(summary)
    return lines
