"""[E8]/[G6]/§9, drawn: each segment's outcome and each operation's status, as the rules
read literally — the written-for-speed code of ``outcome.segment_results`` and of the
executor's final statuses ([§12]) against a plain transcription of the rules, on drawn
plans (segments, actions, findings) and every way a run can end."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from aikito_mem.executor import execute as execute_mod
from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    Finding,
    Operation,
    Plan,
    Segment,
    SegmentName,
    Status,
)
from aikito_mem.outcome import segment_results
from tests.helpers.pure import CO, plan_of, ref, resource_set, view


def _active(plan: Plan, seg: SegmentName) -> bool:
    return plan.segment_active(seg)


def _reference_segments(plan: Plan, *, dry_run: bool, applied: set[int],
                        stopped: tuple[SegmentName, str] | None,
                        halted: str | None) -> tuple[Segment, ...]:
    blocked = plan.blocked_segments
    writes = {seg: [i for i, op in enumerate(plan.operations) if op.segment is seg
                    and op.action in (Action.CREATE, Action.UNLINK)] for seg in SEGMENT_ORDER}
    rank = {seg: n for n, seg in enumerate(SEGMENT_ORDER)}
    out = []
    for seg in SEGMENT_ORDER:
        quiet = "planned" if dry_run else "unchanged"
        if not _active(plan, seg):
            word, ok = quiet, True
        elif seg in blocked:
            word, ok = "blocked", False
        elif halted is not None and writes[seg]:
            word, ok = halted, False
        elif stopped is not None and rank[seg] >= rank[stopped[0]] and (
                writes[seg] or seg is stopped[0]):
            word, ok = stopped[1], False
        elif dry_run:
            word, ok = "planned", True
        elif any(i in applied for i in writes[seg]):
            word, ok = "applied", True
        else:
            word, ok = quiet, True
        out.append(Segment(seg.value, ok, _active(plan, seg), word))
    return tuple(out)


def _reference_statuses(plan: Plan, applied: set[int], unknown: set[int]
                        ) -> tuple[Status, ...]:
    blocked = plan.blocked_segments
    out = []
    for i, op in enumerate(plan.operations):
        if op.segment in blocked:
            out.append(Status.NOT_APPLIED)
        elif op.action is Action.NOOP:
            out.append(Status.UNCHANGED)
        elif op.action is Action.SKIP:
            out.append(Status.SKIPPED)
        elif i in applied:
            out.append(Status.APPLIED)
        elif i in unknown:
            out.append(Status.UNKNOWN)
        else:
            out.append(Status.NOT_APPLIED)
    return tuple(out)


_BASE = plan_of(resource_set(ref("a.md")), view())


@st.composite
def _plans(draw: st.DrawFn) -> Plan:
    ops = draw(st.lists(st.tuples(st.sampled_from(list(Action)),
                                  st.sampled_from(list(SegmentName))), max_size=8))
    codes = draw(st.lists(st.sampled_from(["skills.x", "instructions.y", "memory.z",
                                           "config.w", "skillsx"]), max_size=3))
    return attrs.evolve(
        _BASE,
        operations=tuple(Operation(a, "R", CO, f"{CO}/t{i}", "why", segment=s)
                         for i, (a, s) in enumerate(ops)),
        findings=tuple(Finding(c, "warning", "m") for c in codes))


@settings(max_examples=300, deadline=None)
@given(plan=_plans(), data=st.data())
def test_segment_outcomes_and_statuses_follow_the_rules(plan: Plan, data: st.DataObject
                                                        ) -> None:
    n = len(plan.operations)
    indices = st.sets(st.integers(0, max(n - 1, 0))) if n else st.just(set())
    applied, unknown = data.draw(indices), data.draw(indices)
    dry_run = data.draw(st.booleans())
    stopped = data.draw(st.none() | st.tuples(st.sampled_from(SEGMENT_ORDER),
                                             st.sampled_from(["failed", "stale"])))
    halted = data.draw(st.none() | st.sampled_from(["stale", "failed", "interrupted"]))
    expected = _reference_segments(plan, dry_run=dry_run, applied=applied,
                                   stopped=stopped, halted=halted)
    for blocked in (None, plan.blocked_segments):
        assert segment_results(plan, dry_run=dry_run, applied=applied, stopped=stopped,
                               halted=halted, blocked=blocked) == expected
    assert execute_mod.final_statuses(plan, applied, unknown) == _reference_statuses(
        plan, applied, unknown)
    assert execute_mod.final_statuses(plan, applied, unknown,
                                      blocked=plan.blocked_segments) == _reference_statuses(
        plan, applied, unknown)
    assert execute_mod.final_statuses(plan, applied, unknown, dry_run=True) == (
        (Status.PLANNED,) * n)
