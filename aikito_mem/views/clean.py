"""What a clean observed of one checkout candidate ([L3]): the clean planner's input,
built only by ``aikito clean`` (``world/clean`` observes it, ``planner/clean`` plans
it), so a sync never builds its class ([§12]).  No I/O."""

from __future__ import annotations

from aikito_mem.model import ABSENT, CheckoutState, Observed
from aikito_mem.values import Record


class CleanCheckout(Record):
    """What observation found in one checkout candidate: the clean planner's input."""

    label: str
    path: str
    state: CheckoutState
    reason: str | None = None
    root: Observed = ABSENT
    agents: Observed = ABSENT
    #: The entries of ``.agents`` (one level), by name, sorted.
    agents_entries: tuple[tuple[str, Observed], ...] = ()
    memory: Observed = ABSENT
    #: Every entry under ``.agents/memory`` (recursive, never through links), sorted.
    memory_entries: tuple[tuple[str, Observed], ...] = ()
    skills: Observed = ABSENT
    skills_entries: tuple[tuple[str, Observed], ...] = ()
    #: Each instruction target of the registry (and the legacy ``.agents/AGENTS.md``
    #: when ``.agents`` is a real directory): path relative to the checkout → what is
    #: there (``ABSENT`` when a directory on the way is not a real directory); and each
    #: target's relink name where something is there ([L4] [L8]).
    targets: tuple[tuple[str, Observed], ...] = ()
    #: The directories on the way to an instruction target or a per-agent skills
    #: directory: relative path → (observation, names of its entries — listed only
    #: where a link is held below).
    parents: tuple[tuple[str, Observed, tuple[str, ...]], ...] = ()
    #: Each per-agent skills directory of the registry ([N1], e.g. ``.claude/skills``):
    #: relative path → what is there and, when a real directory, its entries (one
    #: level).  The directories on the way to it are in :attr:`parents`.
    agent_skills: tuple[tuple[str, Observed, tuple[tuple[str, Observed], ...]], ...] = ()
    #: The directories a clean may prune that are mount points ([L8]): relative paths,
    #: sorted.  One is never removed (``rmdir`` would fail, EBUSY): kept, and said so.
    mounts: tuple[str, ...] = ()
