"""The pure planner: observations in, one frozen Plan out (memory, skills,
instructions, and the project ordering).

The package holds what every planner reads of a checkout before planning its segments —
the state it is planned in, the words of an offline one, the order of its findings
([K1]–[K3], INV-MEM-08) — and the rule id of a relink ([L4]), which the executor and the
renderer read too: written once, loaded with the first planner, no module of their own
to import ([§12]).  No I/O.
"""

from __future__ import annotations

from aikito_mem.model import CheckoutState, Finding, Kind, Observed

__all__ = ["OFFLINE_REASON", "R_MOVED", "finding_order", "offline_reason", "planned_state"]

#: The rule id of a relink CREATE ([L4]): the one CREATE that renames over an entry.  A
#: run without ``--moved-from`` or a conflict never imports :mod:`aikito_mem.planner.moved`.
R_MOVED = "L4"

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
