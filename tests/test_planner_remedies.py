"""Conflict remedies name `aikito adopt TARGET` exactly where adopting resolves the
conflict ([P3]): a file or directory at a reference's target; never for the notes, a
symlink, or anything that is not content."""

from __future__ import annotations

import pytest

from aikito_mem.model import (
    Action,
    Candidate,
    CheckoutState,
    Kind,
    Observed,
    ProjectConfig,
    Resource,
    ResourceSet,
)
from aikito_mem.planner.memory import build_plan
from aikito_mem.views import CheckoutView

WS, CO = "/ws", "/co"
DIR = Observed(Kind.DIR, None, 1, 2)


def remedy(res: Resource, found: Observed) -> str:
    resources = ResourceSet((res,), False, None, None, ("/ws/projects/p/memory/notes",
                                                       "/ws/memory/p/notes"))
    view = CheckoutView("1", CO, CheckoutState.ACTIVE, None, DIR, DIR, DIR,
                        ((res.rel, found),))
    config = ProjectConfig("p", f"{WS}/projects/p", f"{WS}/projects/p/agent.toml",
                           (res.name,), (Candidate("1", CO, CO, True),), (), b"")
    plan = build_plan(config=config, workspace=WS, workspace_source="option",
                      resources=resources, checkouts=(view,))
    (op,) = [op for op in plan.operations if op.action is Action.CONFLICT]
    return op.remedy or ""


@pytest.mark.parametrize("kind", [Kind.FILE, Kind.DIR])
def test_content_at_a_reference_target_names_adopt(kind):
    text = remedy(Resource("a.md", "a.md", "/ws/memory/a.md"), Observed(kind, None, 1, 3))
    assert text.startswith("aikito adopt /co/.agents/memory/a.md ")


@pytest.mark.parametrize("kind", [Kind.FILE, Kind.DIR])
def test_content_at_a_reference_whose_source_is_missing_names_adopt(kind):
    res = Resource("a.md", "a.md", "/ws/memory/a.md", problem="source does not exist",
                   missing=True)
    assert remedy(res, Observed(kind, None, 1, 3)).startswith(
        "aikito adopt /co/.agents/memory/a.md (moves it to /ws/memory/a.md")


@pytest.mark.parametrize("found", [Observed(Kind.LINK, "/elsewhere", 1, 3),
                                   Observed(Kind.FIFO, None, 1, 3)])
def test_no_adopt_for_what_adopt_cannot_take(found):
    assert "adopt" not in remedy(Resource("a.md", "a.md", "/ws/memory/a.md"), found)


def test_no_adopt_for_the_notes():
    res = Resource("notes", "notes", "/ws/projects/p/memory/notes", is_notes=True)
    assert "adopt" not in remedy(res, Observed(Kind.DIR, None, 1, 3))
