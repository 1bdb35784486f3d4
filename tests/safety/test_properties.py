"""Hypothesis properties of planning, over the pure planner (hand-built observations from
:func:`tests.helpers.strategies.worlds`) and over the same worlds built in real temporary
directories (``Project.load(...).plan()`` / ``.sync()``).

- [P4] determinism: equal plans and byte-identical JSON, whatever the reference order;
- [P1] coverage: each desired target of a usable active checkout gets exactly one
  non-UNLINK operation (CREATE/NOOP unless it conflicts), each shadowed one a SKIP,
  every resource of an offline checkout a SKIP;
- [O1]/[O2]/[P2] UNLINK only ever removes owned links or directories the plan empties;
- the pure model and the real filesystem agree on every operation;
- [E6] convergence: after ``sync()`` a new plan is only NOOP/SKIP; a blocked plan writes
  nothing.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aikito_mem.errors import ConflictError
from aikito_mem.model import Action, CheckoutState, Kind, Plan
from aikito_mem.planner.memory import build_plan
from aikito_mem.render.sync_json import json_document
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.strategies import MEMORY_DIR, PURE_WS, World, fs_examples, worlds
from tests.helpers.workspace import WS

FS = settings(max_examples=fs_examples(30), deadline=None)


def pure_plan(world: World) -> Plan:
    return build_plan(**world.planner_inputs())


def plan_json(plan: Plan) -> str:
    doc = json_document(project=None, workspace=None, dry_run=True, outcome="planned",
                        exit_code=0, plan=plan)
    return json.dumps(doc, ensure_ascii=False)


def without_memory_order(plan: Plan) -> Plan:
    """The plan minus what records ``agent.toml`` as written: the ``memory`` list in its
    order and the digest of the file's bytes."""
    return plan.evolve(memory=tuple(sorted(plan.memory)), config_digest=None)


def checkout_index(plan: Plan) -> dict[str, int]:
    return {c.path: i for i, c in enumerate(plan.checkouts)}


def shape(plan: Plan) -> list[tuple[Any, ...]]:
    """Operations with checkout paths replaced by their index: comparable across worlds
    realised at different places."""
    index = checkout_index(plan)
    out = []
    for op in plan.operations:
        i = index[op.checkout]
        rel = op.target.removeprefix(op.checkout).lstrip("/")
        out.append((i, op.action.value, op.rule, rel, op.entry, op.resource,
                    op.observed.kind.value))
    return out


def finding_shape(plan: Plan) -> Counter[tuple[str, int | None, str | None]]:
    out: Counter[tuple[str, int | None, str | None]] = Counter()
    for f in plan.findings:
        where: tuple[int | None, str | None] = (None, None)
        for i, c in enumerate(plan.checkouts):
            if f.path is not None and f.path.startswith(c.path + "/"):
                where = (i, f.path.removeprefix(c.path + "/"))
        out[(f.code, *where)] += 1
    return out


def usable(plan: Plan, index: int) -> bool:
    """Active and without a checkout-level conflict (on the root, .agents or memory)."""
    co = plan.checkouts[index]
    if co.state is not CheckoutState.ACTIVE:
        return False
    roots = {co.path, f"{co.path}/.agents", f"{co.path}/{MEMORY_DIR}"}
    return not any(op.checkout == co.path and op.target in roots for op in plan.operations)


def owned_literal(target: str, literal: str, candidates: set[str]) -> bool:
    """[O1], written independently of the planner."""
    if literal.startswith("/"):
        return literal in candidates
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(target), literal))
    return resolved in candidates


# =========================================================================== pure planner


@given(worlds())
def test_pure_plan_is_deterministic(world: World) -> None:
    a, b = pure_plan(world), pure_plan(world)
    assert a == b
    assert plan_json(a) == plan_json(b)


@given(st.data())
def test_pure_plan_is_independent_of_reference_order(data: st.DataObject) -> None:
    world = data.draw(worlds())
    permuted = data.draw(st.permutations(world.refs).map(world.with_refs))
    a, b = pure_plan(world), pure_plan(permuted)
    assert without_memory_order(a) == without_memory_order(b)
    assert plan_json(a) == plan_json(b)


@given(worlds())
def test_pure_ops_sorted_by_checkout_then_target(world: World) -> None:
    plan = pure_plan(world)
    index = checkout_index(plan)
    keys = [(index[op.checkout], op.target) for op in plan.operations]
    assert keys == sorted(keys)
    # On a shared target the UNLINK of the old link comes before anything else.
    for prev, op in zip(plan.operations, plan.operations[1:], strict=False):
        if prev.target == op.target and prev.checkout == op.checkout:
            assert not (op.action is Action.UNLINK and prev.action is not Action.UNLINK)


@given(worlds())
def test_pure_every_desired_target_has_exactly_one_decision(world: World) -> None:
    plan = pure_plan(world)
    desired = set(world.desired)
    shadowed = {r for r in world.refs if world.shadowed(r)}
    for i, co in enumerate(plan.checkouts):
        ops = [op for op in plan.operations if op.checkout == co.path]
        if co.state is CheckoutState.OFFLINE:
            assert {op.action for op in ops} <= {Action.SKIP}
            assert Counter(op.resource for op in ops) == Counter([*desired, *shadowed])
            continue
        if not usable(plan, i):
            assert len(ops) == 1 and ops[0].action is Action.CONFLICT
            continue
        for rel in desired:
            target = f"{co.path}/{MEMORY_DIR}/{rel}"
            decisions = [op for op in ops if op.target == target
                         and op.action is not Action.UNLINK and op.rule != "S4"]
            assert len(decisions) == 1, (rel, decisions)
            assert decisions[0].action in (Action.CREATE, Action.NOOP, Action.CONFLICT)
            if not plan.blocked:
                assert decisions[0].action in (Action.CREATE, Action.NOOP)
        for rel in shadowed:
            target = f"{co.path}/{MEMORY_DIR}/{rel}"
            assert [op.action for op in ops if op.target == target and op.rule == "S4"] == [
                Action.SKIP]
        # Nothing but SKIP for shadowed refs, and a decision for every desired target.
        for op in ops:
            if op.action is not Action.UNLINK:
                assert op.resource in desired | shadowed


@given(worlds())
def test_pure_unlink_only_owned_links_or_emptied_directories(world: World) -> None:
    plan = pure_plan(world)
    current, legacy = world.notes_paths(PURE_WS)
    unlinked = {op.target for op in plan.operations if op.action is Action.UNLINK}
    for op in plan.operations:
        if op.action is not Action.UNLINK:
            continue
        base = f"{op.checkout}/{MEMORY_DIR}"
        rel = op.target.removeprefix(base + "/")
        assert op.target.startswith(base + "/"), "never .agents/memory itself"
        if op.entry == "link":
            assert op.observed.kind is Kind.LINK
            assert op.observed.literal is not None
            allowed = {f"{PURE_WS}/memory/{rel}"}
            if rel == "notes":
                allowed |= {current, legacy}
            assert owned_literal(op.target, op.observed.literal, allowed), op
            assert op.source in allowed
        else:
            assert op.entry == "directory"
            assert op.observed.kind is Kind.DIR
            # Everything found under it is removed by the plan too.
            view = next(v for v in world.planner_inputs()["checkouts"]  # type: ignore[attr-defined]
                        if v.path == op.checkout)
            inside = [f"{base}/{r}" for r, _ in view.entries if r.startswith(rel + "/")]
            assert inside and all(t in unlinked for t in inside)
            # Never an ancestor of a desired target.
            assert not any(d.startswith(rel + "/") for d in world.desired)


@given(worlds())
def test_pure_blocked_iff_some_conflict(world: World) -> None:
    plan = pure_plan(world)
    assert plan.blocked == any(op.action is Action.CONFLICT for op in plan.operations)
    assert all(f.severity == "warning" for f in plan.findings)
    for op in plan.conflicts:
        assert op.reason and op.remedy


# =========================================================================== real dirs


@pytest.fixture(scope="module")
def fs_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("props")


class _Counter:
    n = 0


def fresh(base: Path) -> WS:
    _Counter.n += 1
    return WS(base / f"ex{_Counter.n}")


@FS
@given(worlds(max_refs=4))
def test_real_plan_matches_the_pure_model(fs_base: Path, world: World) -> None:
    ws = fresh(fs_base)
    world.materialise(ws)
    real = ws.project(world.project).plan()
    pure = pure_plan(world)
    assert shape(real) == shape(pure)
    assert finding_shape(real) == finding_shape(pure)
    assert real.blocked == pure.blocked


@FS
@given(st.data())
def test_real_plan_is_deterministic_and_order_independent(
    fs_base: Path, data: st.DataObject
) -> None:
    world = data.draw(worlds(max_refs=4))
    permuted = data.draw(st.permutations(world.refs).map(world.with_refs))
    ws = fresh(fs_base)
    world.materialise(ws)
    before = snapshot(ws.base)
    first = ws.project(world.project).plan()
    second = ws.project(world.project).plan()
    assert first == second
    assert plan_json(first) == plan_json(second)
    # Same world, references listed in another order in agent.toml.
    ws.write_config(world.project, memory=list(permuted.refs),
                    paths=[c.path for c in first.candidates])
    third = ws.project(world.project).plan()
    assert plan_json(third) == plan_json(first)
    assert without_memory_order(third).evolve(sources=()) == \
        without_memory_order(first).evolve(sources=())
    # Planning wrote nothing ([E7]) — apart from our own agent.toml rewrite.
    assert changed(before, snapshot(ws.base)) <= {ws.config_path(world.project)}


@FS
@given(worlds(max_refs=4))
def test_real_sync_converges_or_writes_nothing(fs_base: Path, world: World) -> None:
    ws = fresh(fs_base)
    world.materialise(ws)
    plan = ws.project(world.project).plan()
    if plan.blocked:
        before = snapshot(ws.base)
        with pytest.raises(ConflictError):
            ws.project(world.project).sync()
        assert snapshot(ws.base) == before
        return
    _sync_and_check_convergence(ws, world)


@FS
@given(worlds(max_refs=5, clean=True))
def test_real_clean_world_syncs_and_converges(fs_base: Path, world: World) -> None:
    ws = fresh(fs_base)
    world.materialise(ws)
    plan = ws.project(world.project).plan()
    assert not plan.blocked, [(op.target, op.reason) for op in plan.conflicts]
    assert shape(plan) == shape(pure_plan(world))
    _sync_and_check_convergence(ws, world)


def test_shadow_findings_do_not_depend_on_reference_order(ws: WS) -> None:
    """Regression: shadowing warnings came out in agent.toml order ([P4])."""
    ws.add_notes("demo")
    co = ws.checkout("c")
    ws.write_config("demo", memory=["notes/a", "notes/b", "x"], paths=[co])
    ws.add_file("x")
    first = ws.project("demo").plan()
    ws.write_config("demo", memory=["x", "notes/b", "notes/a"], paths=[co])
    second = ws.project("demo").plan()
    assert [f.code for f in first.findings] == ["memory.shadowed"] * 2
    assert plan_json(first) == plan_json(second)


def _sync_and_check_convergence(ws: WS, world: World) -> None:
    result = ws.project(world.project).sync()
    assert result.success
    again = ws.project(world.project).plan()
    assert {op.action for op in again.operations} <= {Action.NOOP, Action.SKIP}, [
        (op.action, op.target, op.reason) for op in again.operations
        if op.action not in (Action.NOOP, Action.SKIP)]
    # Every desired target of every usable checkout is now an owned link.
    for i, co in enumerate(again.checkouts):
        if not usable(again, i):
            continue
        for rel in world.desired:
            target = f"{co.path}/{MEMORY_DIR}/{rel}"
            assert owned_literal(target, os.readlink(target), {world.source_of(ws.root, rel)})
    # A second sync is a no-op down to inode and timestamps ([E6]).
    settled = snapshot(ws.base)
    second = ws.project(world.project).sync()
    assert second.outcome == "unchanged"
    assert snapshot(ws.base) == settled
