"""Checkout candidates → active / offline / invalid, and their observation ([K1]–[K4]).

The active/offline split is decided here once, at plan time, and frozen in the plan.  An
offline candidate costs exactly one ``stat``; nothing below it is looked at ([K3]).
"""

from __future__ import annotations

import os

import attrs

from aikito_mem.errors import ConfigError
from aikito_mem.model import (
    ABSENT,
    Candidate,
    CheckoutState,
    CheckoutView,
    Kind,
    Observed,
    ProjectConfig,
)
from aikito_mem.observe import Observer


@attrs.frozen
class Slot:
    """A classified candidate, before its runtime tree is observed."""

    label: str
    #: Physical path when active; the candidate path otherwise.
    path: str
    state: CheckoutState
    reason: str | None = None
    root: Observed = ABSENT


def classify(candidate: Candidate, observer: Observer) -> Slot:
    if not candidate.absolute:
        return Slot(candidate.label, candidate.path, CheckoutState.OFFLINE,
                    f"{candidate.raw!r} is not an absolute path on this system")
    try:
        obs = observer.stat_follow(candidate.path)
    except OSError as exc:
        return Slot(candidate.label, candidate.path, CheckoutState.INVALID,
                    f"checkout {candidate.path} cannot be examined: {exc.strerror}")
    if obs.kind is Kind.ABSENT:
        return Slot(candidate.label, candidate.path, CheckoutState.OFFLINE,
                    "path does not exist")
    if obs.kind is not Kind.DIR:
        return Slot(candidate.label, candidate.path, CheckoutState.INVALID,
                    f"checkout {candidate.path} is {obs.describe()}; expected a directory",
                    obs)
    physical = os.path.realpath(candidate.path)
    return Slot(candidate.label, physical, CheckoutState.ACTIVE)


def slots(config: ProjectConfig, observer: Observer) -> tuple[Slot, ...]:
    """Every candidate of ``config``, de-duplicated by physical path ([K1])."""
    out: list[Slot] = []
    seen: set[str] = set()
    for cand in config.candidates:
        slot = classify(cand, observer)
        key = slot.path if slot.state is CheckoutState.ACTIVE else f"\0{cand.path}"
        if key in seen:
            continue
        seen.add(key)
        out.append(slot)
    return tuple(out)


def explicit_slot(
    config: ProjectConfig, path: str, observer: Observer
) -> tuple[Slot, bool]:
    """The one checkout of ``sync project NAME PATH`` and whether it is registered ([K4])."""
    given = os.path.abspath(os.path.expanduser(path))
    try:
        obs = observer.stat_follow(given)
    except OSError as exc:
        raise ConfigError(
            f"checkout {given} cannot be examined: {exc.strerror}; expected an existing "
            "directory", code="config.checkout_path", path=given,
        ) from None
    if obs.kind is not Kind.DIR:
        found = "nothing" if obs.kind is Kind.ABSENT else obs.describe()
        raise ConfigError(
            f"checkout {given} is {found}; expected an existing directory "
            "(aikito never creates a checkout) — clone or create it first, or fix the path",
            code="config.checkout_path", path=given,
        )
    physical = os.path.realpath(given)
    for cand in config.candidates:
        if not cand.absolute:
            continue
        if cand.path == given or cand.path == physical:
            return Slot(cand.label, physical, CheckoutState.ACTIVE), True
        try:
            if observer.stat_follow(cand.path).kind is Kind.DIR and \
                    os.path.realpath(cand.path) == physical:
                return Slot(cand.label, physical, CheckoutState.ACTIVE), True
        except OSError:
            continue
    return Slot("explicit", physical, CheckoutState.ACTIVE), False


def observe(slot: Slot, observer: Observer) -> CheckoutView:
    """Observe the runtime tree of one slot: root, ``.agents``, ``.agents/memory`` and
    every entry below it.  Offline and invalid slots cost nothing more."""
    if slot.state is not CheckoutState.ACTIVE:
        return CheckoutView(slot.label, slot.path, slot.state, slot.reason, root=slot.root)
    root_path = slot.path
    try:
        root = observer.lstat(root_path)
        if root.kind is not Kind.DIR:
            return CheckoutView(slot.label, slot.path, CheckoutState.INVALID,
                                f"checkout {root_path} is {root.describe()}; expected a "
                                "directory", root=root)
        root = observer.identity(root_path, root)
        agents_path = f"{root_path}/.agents"
        agents = observer.lstat(agents_path)
        if agents.kind is Kind.LINK:
            agents = Observed(Kind.LINK, observer.readlink(agents_path), agents.dev, agents.ino)
        memory = ABSENT
        entries: tuple[tuple[str, Observed], ...] = ()
        if agents.kind is Kind.DIR:
            agents = observer.identity(agents_path, agents)
            memory_path = f"{agents_path}/memory"
            memory = observer.lstat(memory_path)
            if memory.kind is Kind.LINK:
                memory = Observed(Kind.LINK, observer.readlink(memory_path), memory.dev,
                                  memory.ino)
            elif memory.kind is Kind.DIR:
                memory = observer.identity(memory_path, memory)
                entries = observer.scan(memory_path, memory)
    except OSError as exc:
        return CheckoutView(slot.label, slot.path, CheckoutState.INVALID,
                            f"checkout {root_path} cannot be examined: {exc.strerror}",
                            root=Observed(Kind.OTHER))
    return CheckoutView(slot.label, slot.path, CheckoutState.ACTIVE, None,
                        root, agents, memory, entries)
