"""Inputs of the pure planner built by hand (no filesystem): values of
:mod:`aikito_mem.model` for a workspace ``/ws`` with project ``demo`` and one checkout
``/co/a``; :func:`plan_of` runs :func:`aikito_mem.planner.memory.build_plan` on them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aikito_mem import model, views
from aikito_mem.planner.memory import build_plan

if TYPE_CHECKING:
    from aikito_mem.model import Finding, Plan

WS = "/ws"
P = "demo"
CO = "/co/a"
BASE = f"{CO}/.agents/memory"
CFG = f"{WS}/projects/{P}/agent.toml"
CURRENT_NOTES = f"{WS}/projects/{P}/memory/notes"
LEGACY_NOTES = f"{WS}/memory/{P}/notes"

DIR = model.Observed(model.Kind.DIR, None, 1, 2)


def link(literal: str) -> model.Observed:
    return model.Observed(model.Kind.LINK, literal, 1, 99)


def ref(name: str, **kw: Any) -> model.Resource:
    return model.Resource(name, name, f"{WS}/memory/{name}", **kw)


def notes(location: str = "current", **kw: Any) -> model.Resource:
    src = CURRENT_NOTES if location == "current" else LEGACY_NOTES
    return model.Resource("notes", "notes", src, is_notes=True, **kw)


def resource_set(*resources: model.Resource, location: str | None = None,
                 findings: tuple[Finding, ...] = ()) -> model.ResourceSet:
    has_notes = any(r.is_notes for r in resources)
    loc = location if location is not None else ("current" if has_notes else None)
    src = None
    if has_notes:
        src = CURRENT_NOTES if loc == "current" else LEGACY_NOTES
    return model.ResourceSet(
        tuple(sorted(resources, key=lambda r: (r.rel, r.shadowed))),
        project_memory_exists=loc == "current",
        notes_source=src,
        notes_location=loc,
        notes_history=(CURRENT_NOTES, LEGACY_NOTES),
        findings=findings,
    )


def view(
    entries: dict[str, model.Observed] | None = None, *, path: str = CO, label: str = "1",
    state: model.CheckoutState = model.CheckoutState.ACTIVE, agents: model.Observed = DIR,
    memory: model.Observed = DIR, root: model.Observed = DIR, reason: str | None = None,
) -> views.CheckoutView:
    if state is model.CheckoutState.OFFLINE:
        return views.CheckoutView(label, path, state, reason or "path does not exist")
    return views.CheckoutView(label, path, state, reason, root, agents, memory,
                              tuple(sorted((entries or {}).items())))


def config(memory: tuple[str, ...] = (), paths: tuple[str, ...] = (CO,)) -> model.ProjectConfig:
    cands = tuple(model.Candidate(str(i + 1), p, p, True) for i, p in enumerate(paths))
    return model.ProjectConfig(P, f"{WS}/projects/{P}", CFG, memory, cands, (), b"")


def plan_of(resources: model.ResourceSet, *views: views.CheckoutView) -> Plan:
    memory = tuple(r.name for r in resources.resources if not r.is_notes)
    return build_plan(
        config=config(memory, tuple(v.path for v in views)),
        workspace=WS,
        workspace_source="option",
        resources=resources,
        checkouts=views,
    )


def brief(plan: Plan) -> list[tuple[str, str, str, str]]:
    """(action, rule, target relative to the checkout, entry) of every operation."""
    return [(op.action.value, op.rule, op.target.removeprefix(f"{op.checkout}/"), op.entry)
            for op in plan.operations]



def load_planner() -> None:
    """Import every module of the planner package: a planner imports a room only on the
    branch that needs it (a remedy's words, the per-agent skills directories: [§12]), and a
    test that records the planner's events loads them first — the hook then sees what the
    planner does, not the loading of its own code (what each module imports, lazily or
    not, is checked apart: ``test_every_planner_module_imports_no_io_module``)."""
    import importlib
    import pkgutil

    import aikito_mem.planner as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
