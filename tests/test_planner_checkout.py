"""What every planner decides of one checkout first: the state it is planned in and the
words of an offline one ([K1]–[K3], INV-MEM-08)."""

from __future__ import annotations

from aikito_mem.model import ABSENT, CheckoutState, Finding, Kind, Observed
from aikito_mem.planner import finding_order, offline_reason, planned_state

DIR = Observed(Kind.DIR, None, 1, 2)
FILE = Observed(Kind.FILE, None, 1, 3)


def test_an_active_checkout_whose_root_is_not_a_directory_is_planned_invalid() -> None:
    assert planned_state(CheckoutState.ACTIVE, DIR) is CheckoutState.ACTIVE
    assert planned_state(CheckoutState.ACTIVE, FILE) is CheckoutState.INVALID
    assert planned_state(CheckoutState.ACTIVE, ABSENT) is CheckoutState.INVALID
    assert planned_state(CheckoutState.OFFLINE, ABSENT) is CheckoutState.OFFLINE
    assert planned_state(CheckoutState.INVALID, DIR) is CheckoutState.INVALID


def test_offline_reason_and_finding_order() -> None:
    assert offline_reason(None) == "path does not exist"
    assert offline_reason("gone") == "gone"
    found = [Finding("b", "warning", "m", "/x"), Finding("a", "warning", "m", "/x"),
             Finding("c", "warning", "m", None)]
    assert [f.code for f in sorted(found, key=finding_order)] == ["c", "a", "b"]
