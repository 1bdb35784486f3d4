"""What every planner decides of one checkout before planning its segments: the state it
is planned in and the words of an offline one ([K1]–[K3], INV-MEM-08).  No I/O."""

from __future__ import annotations

from aikito_mem.model import CheckoutState, Finding, Kind, Observed

__all__ = ["OFFLINE_REASON", "finding_order", "offline_reason", "planned_state"]

#: Why a checkout is offline when observation gave no reason.
OFFLINE_REASON = "path does not exist"


def planned_state(state: CheckoutState, root: Observed) -> CheckoutState:
    """The state a checkout is planned in: an active one whose root is not a directory
    is invalid; every other keeps the state observation gave it."""
    if state is CheckoutState.ACTIVE and root.kind is not Kind.DIR:
        return CheckoutState.INVALID
    return state


def offline_reason(reason: str | None) -> str:
    """The reason an offline checkout is skipped for."""
    return reason or OFFLINE_REASON


def finding_order(finding: Finding) -> tuple[str, str]:
    """The order of one checkout's findings: by path, then code."""
    return finding.path or "", finding.code
