"""[H3] one rule for names (:func:`aikito_mem.config.names.entry_problem`): what a runtime
entry may be called, the rule the planners and the writer's guard share — a table, the
proof that they call the very same function, and a property: whatever name an owned link
has, the planner unlinks it exactly when the guard accepts that target."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aikito_mem.config import names
from aikito_mem.executor import guard
from aikito_mem.model import Action
from aikito_mem.planner import memory as memory_planner
from aikito_mem.planner import skills as skills_planner
from tests.helpers.pure import BASE, WS, link, plan_of, ref, resource_set, view

ACCEPTED = [
    "a.md", "team/a.md", "old.md ", " lead", "two\nlines", "tab\there",
    os.fsdecode(b"caf\xe9.md"), "esc\x1b[31m", "bidi\u202eevil", "x" * 255,
    "é" * 127, "a b/c d",
]
REFUSED = [
    ("", "is empty"),
    ("/abs", "is absolute"),
    ("a//b", "empty component"),
    ("a/", "empty component"),
    ("./a", "'.' component"),
    ("a/../b", "'..' component"),
    ("..", "'..' component"),
    ("nul\0byte", "NUL"),
    ("x" * 256, "longer than 255"),
    ("é" * 128, "longer than 255"),
    ("\ud800lone", "no byte of a file name"),
]


@pytest.mark.parametrize("name", ACCEPTED)
def test_any_name_a_directory_entry_can_have_is_accepted(name: str) -> None:
    assert names.entry_problem(name) is None


@pytest.mark.parametrize(("name", "why"), REFUSED)
def test_what_no_directory_entry_can_be_is_refused(name: str, why: str) -> None:
    problem = names.entry_problem(name)
    assert problem is not None and why in problem


def test_single_refuses_a_second_component() -> None:
    assert names.entry_problem("a/b") is None
    assert "more than one component" in (names.entry_problem("a/b", single=True) or "")


def test_the_planners_and_the_guard_call_the_same_function() -> None:
    assert memory_planner.entry_problem is names.entry_problem
    assert skills_planner.entry_problem is names.entry_problem
    assert guard.entry_problem is names.entry_problem


#: A file name as ``os.fsdecode`` gives it: any bytes but ``/`` and NUL.
_BYTES = st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b)


@given(raw=st.one_of(_BYTES.map(os.fsdecode), st.text(min_size=0, max_size=8)))
def test_the_planner_unlinks_an_owned_link_exactly_when_the_rule_accepts_it(
        raw: str) -> None:
    """An owned link at ``.agents/memory/<raw>``, no reference wanting it: UNLINK when
    :func:`entry_problem` accepts the name, else preserved with a finding — never a plan
    the guard refuses."""
    plan = plan_of(resource_set(ref("a.md")),
                   view({"a.md": link(f"{WS}/memory/a.md"),
                         raw: link(f"{WS}/memory/{raw}")}))
    target = f"{BASE}/{raw}"
    unlinks = [op.target for op in plan.operations if op.action is Action.UNLINK]
    if names.entry_problem(raw) is None and raw != "a.md":
        assert unlinks == [target]
    else:
        assert target not in unlinks


@given(raw=st.one_of(_BYTES.map(os.fsdecode), st.text(min_size=0, max_size=8)))
def test_the_skills_planner_unlinks_an_owned_link_exactly_when_the_rule_accepts_it(
        raw: str) -> None:
    from aikito_mem.model import Kind, Observed
    from aikito_mem.views import SkillsView

    root = Observed(Kind.DIR, dev=1, ino=2)
    base = "/co/a/.agents/skills"
    ops, _, _ = skills_planner.plan_checkout(
        "/co/a", root, SkillsView(root, ((raw, link(f"{WS}/skills/{raw}")),)), (), WS,
        f"{WS}/projects/demo/agent.toml")
    unlinks = [op.target for op in ops if op.action is Action.UNLINK]
    assert unlinks == ([f"{base}/{raw}"] if names.entry_problem(raw, single=True) is None
                       else [])


# --------------------------------------------------------------------------- no patterns
# The checks every run makes are written with string and set operations, so that a run
# compiles no pattern ([§12]); each must decide exactly what the pattern it replaced did.

_TRICKY = st.text(alphabet="aZ09_.+@=,~-/ \t\n\x00\x1f\x7f\x80\x9f\xa0é\u202e\ud800", max_size=12)


@given(ref=_TRICKY)
def test_plain_reference_decides_what_its_pattern_did(ref: str) -> None:
    import re

    pattern = r"[A-Za-z0-9_][A-Za-z0-9_.+@=,~-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+@=,~-]*)*"
    assert names.plain_reference(ref) is (re.fullmatch(pattern, ref) is not None)


@pytest.mark.parametrize(("ref", "plain"), [
    ("a.md", True), ("team/a/b.md", True), ("_x", True), ("a+b@c=d,e~f-g", True),
    ("", False), ("/a", False), ("a/", False), ("a//b", False), (".a", False),
    ("a/.b", False), ("a b", False), ("é", False), ("-a", False),
])
def test_plain_reference_table(ref: str, plain: bool) -> None:
    assert names.plain_reference(ref) is plain


@given(text=_TRICKY)
def test_control_character_finds_what_its_pattern_found(text: str) -> None:
    import re

    found = re.search("[\x00-\x1f\x7f-\x9f]", text)
    expected = None if found is None else f"U+{ord(found.group()):04X}"
    assert names.control_character(text) == expected


def test_control_character_names_the_first_one() -> None:
    assert names.control_character("a\u202eb\x85c\x01") == "U+0085"
    assert names.control_character("bidi\u202e é") is None
    assert names.control_character("del\x7f") == "U+007F"
