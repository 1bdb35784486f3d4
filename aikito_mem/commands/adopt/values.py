"""The frozen values of ``aikito adopt``: what an adoption moves where (:class:`Adoption`)
and what it reports (:class:`AdoptReport`), with the closed sets of words they use."""

from __future__ import annotations

from enum import Enum

import attrs

from aikito_mem.commands.adopt import treemove
from aikito_mem.errors import AdoptRefused, AikitoError
from aikito_mem.model import Operation, SegmentName, SyncResult

SCHEMA = "aikito.adopt/1"
CONTRACT_VERSION = 4


class EntryType(Enum):
    FILE = "file"
    DIRECTORY = "directory"


class Method(Enum):
    """How the content gets to ``<ws>/memory/REL``."""

    RENAME = "rename"
    #: Across filesystems: copy, verify, remove the original
    #: (:mod:`aikito_mem.commands.adopt.treemove`).
    COPY = "copy"
    #: The destination already holds identical content: TARGET is removed, not moved.
    REPLACE = "replace"
    #: [E5] TARGET is absent and the content already at the destination (an adopt killed
    #: after its move): nothing moves; the name is listed and TARGET linked back.
    RESUME = "resume"


def link_refused(target: str, own: Operation | None,
                 resumed_from: str | None = None) -> AdoptRefused:
    """``adopt.link_refused``: the engine's plan would not link TARGET back (``own`` what it
    would plan for it, ``None``: nothing).  ``resumed_from``: the destination an
    interrupted adopt left the content at ([E5]) — the message says so, and that it stays
    there; else TARGET has not moved yet, and will not."""
    why = ("the engine would plan nothing for it" if own is None else
           f"the engine would plan {own.action.value}: {own.reason}"
           + (f" ({own.remedy})" if own.remedy else ""))
    if resumed_from is None:
        message = (f"once moved, {target} could not be linked back — {why}; nothing was "
                   "written")
    else:
        message = (f"{target} could not be linked back to {resumed_from}, where an "
                   f"interrupted adopt left its content — {why}; nothing was written: the "
                   "content stays there")
    return AdoptRefused(message, code="link_refused", path=target)


class Step(Enum):
    MOVE = "move"
    REGISTER = "register"
    LINK = "link"


class StepStatus(Enum):
    PLANNED = "planned"
    APPLIED = "applied"
    #: register: ``REL`` already listed.
    SKIPPED = "skipped"
    NOT_APPLIED = "not_applied"
    FAILED = "failed"
    #: applied, then undone because a later step failed.
    UNDONE = "undone"


class AdoptOutcome(Enum):
    ADOPTED = "adopted"
    PLANNED = "planned"
    REFUSED = "refused"
    PARTIAL = "partial"
    FAILED = "failed"
    STALE = "stale"
    BUSY = "busy"
    CONFIG_ERROR = "config_error"
    INTERRUPTED = "interrupted"


@attrs.frozen
class Adoption:
    """Everything validation found: what moves where, and the new ``agent.toml``."""

    workspace: str
    project: str
    #: Physical path of the checkout root.
    checkout: str
    #: Physical path of TARGET.
    target: str
    reference: str
    destination: str
    kind: EntryType
    #: ``(dev, ino, generation)`` of TARGET when validated (the generation tells a file
    #: deleted and re-created with a reused inode number; ``None`` where unsupported).
    identity: tuple[int, int, int | None]
    config_path: str
    #: Bytes of ``agent.toml`` the edit was computed from, and the edited bytes
    #: (``None`` when ``REL`` is already listed).
    config_bytes: bytes
    new_config: bytes | None
    #: Ancestors of the destination that do not exist yet (created, shallowest first).
    missing_dirs: tuple[str, ...]
    #: ``rename`` when TARGET and the destination are on one device, ``copy`` when not,
    #: ``replace`` when the destination already holds identical content.
    method: Method
    #: The CREATE the engine will execute to link TARGET back.
    link: Operation
    #: The other conflicts of this checkout (reported; they do not stop the adoption).
    conflicts: tuple[Operation, ...] = ()
    #: ``replace``: the inventory of TARGET found identical to the destination.
    entries: tuple[treemove.Entry, ...] = ()
    #: [L5] The segment TARGET belongs to: ``memory``, ``skills`` or ``instructions``.
    segment: SegmentName = SegmentName.MEMORY
    #: [L5] instructions: the other CREATEs of the checkout's instruction targets, linked
    #: with TARGET's.
    links: tuple[Operation, ...] = ()
    #: [L5] instructions: the empty ``AGENTS.md`` the content moves over, as validated
    #: (``st_dev``, ``st_ino``, size, ``mtime_ns``); re-checked before it is removed.
    empty_destination: tuple[int, int, int, int] | None = None
    #: [L5] [N1] skills: the other targets of the skill in this checkout the engine would
    #: link once it is adopted (``.agents/skills/NAME``, each agent's own directory) —
    #: never linked by adopt, which links back exactly what it took: the next sync does.
    rest: tuple[Operation, ...] = ()
    #: How the workspace was found (``option``: ``--workspace``, which a command the
    #: report names needs too).
    found_via: str = "default"


@attrs.frozen
class StepResult:
    step: Step
    status: StepStatus
    detail: str | None = None


@attrs.frozen
class AdoptReport:
    """The result of ``aikito adopt`` (rendered by :mod:`aikito_mem.render.adopt`)."""

    dry_run: bool
    outcome: AdoptOutcome
    exit_code: int
    #: ``None`` when validation did not complete.
    adoption: Adoption | None
    #: The method used (or expected, in a dry run).
    method: Method | None
    #: Where the complete content is now (``None`` when TARGET does not exist).
    content_at: str | None
    steps: tuple[StepResult, ...]
    conflicts: tuple[Operation, ...] = ()
    #: The result of the engine's link-back run.
    sync: SyncResult | None = None
    error: AikitoError | None = attrs.field(default=None, eq=False)

    @classmethod
    def from_error(cls, error: AikitoError, *, dry_run: bool) -> AdoptReport:
        """The report of a command that ended by ``error`` before adopt could report."""
        return cls(dry_run=dry_run, outcome=outcome_of(error), exit_code=error.exit_code,
                   adoption=None, method=None, content_at=None,
                   steps=tuple(StepResult(s, StepStatus.NOT_APPLIED) for s in Step),
                   error=error)

    def ended_by(self, error: AikitoError) -> AdoptReport:
        """This report ended by ``error`` noticed after the work (a signal): what was done
        is kept, what was only planned is not applied."""
        steps = tuple(attrs.evolve(s, status=StepStatus.NOT_APPLIED)
                      if s.status is StepStatus.PLANNED else s for s in self.steps)
        return attrs.evolve(self, outcome=outcome_of(error), exit_code=error.exit_code,
                            steps=steps, error=error)


def outcome_of(error: AikitoError) -> AdoptOutcome:
    """The ``outcome`` word of ``error`` (``failed`` for one adopt has no word for)."""
    try:
        return AdoptOutcome(error.outcome)
    except ValueError:
        return AdoptOutcome.FAILED
