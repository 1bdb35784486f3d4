"""Frozen value types the rooms hand each other: observations, resources, plans, results.

Nothing here performs I/O.  Every type is frozen — an ``attrs`` frozen class ([A1]: the
plan and its operations) or a :class:`~aikito_mem.values.Record` (the checkout plans, the
observations, resources and configuration they are made from, the findings and the
results) — or an enum, and every collection is a tuple, so a :class:`Plan` can be handed
around (and saved) without anyone being able to change what it was planned against ([A1]).
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Any

import attrs
from attrs import frozen

from aikito_mem.values import PlanKind, Record, Value


class Action(Enum):
    """The closed set of things a plan can say about one runtime path ([P1])."""

    CREATE = "CREATE"
    NOOP = "NOOP"
    CONFLICT = "CONFLICT"
    UNLINK = "UNLINK"
    SKIP = "SKIP"


class Kind(Enum):
    """What ``lstat`` found at a path."""

    ABSENT = "absent"
    LINK = "symlink"
    FILE = "regular file"
    DIR = "directory"
    FIFO = "FIFO"
    SOCKET = "socket"
    CHAR = "character device"
    BLOCK = "block device"
    OTHER = "unknown file type"
    #: The root of another mounted filesystem (or a bind mount) below ``.agents/memory``:
    #: a foreign entry, never looked into, written through or removed ([E5]).
    MOUNT = "mount point"


class Status(Enum):
    """What became of one operation ([E5], SPEC §9)."""

    PLANNED = "planned"
    APPLIED = "applied"
    NOT_APPLIED = "not_applied"
    UNKNOWN = "unknown"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"


class CheckoutState(Enum):
    ACTIVE = "active"
    OFFLINE = "offline"
    INVALID = "invalid"


class SegmentName(Enum):
    """The engines of one project sync, in execution order ([E8], §13)."""

    SKILLS = "skills"
    INSTRUCTIONS = "instructions"
    MEMORY = "memory"


#: Segments in the order they are planned, listed and executed ([G6]).
SEGMENT_ORDER = (SegmentName.SKILLS, SegmentName.INSTRUCTIONS, SegmentName.MEMORY)


class Observed(Record):
    """One observation of one path: its type and, where it matters, its identity.

    ``dev``/``ino`` are zero when the identity was not taken (an existence-and-type
    check).  ``gen`` is the inode generation number (``FS_IOC_GETVERSION``) when the
    filesystem supports it, else ``None`` (see docs/design.md, "source identity").
    """

    kind: Kind
    #: The literal of a symlink (``readlink``), else ``None``.
    literal: str | None = None
    dev: int = 0
    ino: int = 0
    gen: int | None = None

    @property
    def exists(self) -> bool:
        return self.kind is not Kind.ABSENT

    def describe(self) -> str:
        """Words for a message: ``a symlink to '/x'``, ``a regular file``, ``nothing``."""
        if self.kind is Kind.ABSENT:
            return "nothing"
        if self.kind is Kind.LINK:
            return f"a symlink to {self.literal!r}"
        article = "an" if self.kind.value[0] in "aeiou" else "a"
        return f"{article} {self.kind.value}"


#: The observation of a path where nothing exists.
ABSENT = Observed(Kind.ABSENT)


class Finding(Record):
    """A diagnostic that is not an operation: warnings never block a plan ([P3])."""

    code: str
    severity: str
    message: str
    path: str | None = None


class Candidate(Record):
    """One checkout candidate from ``paths``/``path`` ([C5], [K1])."""

    label: str
    #: The string as written in ``agent.toml``.
    raw: str
    #: ``~`` expanded and, when absolute, without repeated ``/``, ``.`` or a trailing
    #: ``/``; ``..`` is kept for the kernel to resolve ([K1]).
    path: str
    #: Whether ``path`` is absolute on this system ([K2]).
    absolute: bool


class ProjectConfig(Record):
    """A validated ``agent.toml`` ([C1]–[C7])."""

    name: str
    #: ``<ws>/projects/<name>``.
    project_dir: str
    #: ``<ws>/projects/<name>/agent.toml``.
    config_path: str
    memory: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    #: Warnings found while loading (did-you-mean keys, non-absolute paths…).
    findings: tuple[Finding, ...]
    #: The exact bytes parsed: a sync compares the live bytes with them, it hashes none.
    data: bytes
    #: The ``skills`` list, as written ([G1]).
    skills: tuple[str, ...] = ()
    #: ``worktrees = true``: every linked git worktree of each active registered
    #: checkout is a checkout too ([L6]).
    worktrees: bool = False

    @property
    def sha256(self) -> str:
        """The sha256 hex digest of :attr:`data`: what a registration's compare-and-swap
        and a saved plan record ([K4]); computed when asked, never on a plain sync."""
        from aikito_mem.fsutil import sha256_hex

        return sha256_hex(self.data)


class SourceCheck(Record):
    """What execution re-checks about one source path ([P5]).

    With ``identity`` false only existence and type are compared (NOOP sources and the
    directories a source is reached through); with it true, ``dev``/``ino``/``gen`` too.
    """

    path: str
    observed: Observed
    identity: bool = False


@frozen(repr=False, eq=False)
class Operation(Value):
    """One planned operation and the observation it was planned against."""

    action: Action
    #: The invariant this operation applies (``INV-MEM-01`` …).
    rule: str
    #: Physical path of the checkout root (or the candidate path when offline/invalid).
    checkout: str
    #: Absolute runtime path this operation is about.
    target: str
    reason: str
    #: The reference (``team/a.md``) or ``notes``; ``None`` for stale entries.
    resource: str | None = None
    #: Canonical source path (the literal a CREATE writes).
    source: str | None = None
    #: Safe remedy for a CONFLICT.
    remedy: str | None = None
    #: ``link`` for symlinks, ``directory`` for the rmdir of a pruned directory.
    entry: str = "link"
    #: What was at ``target`` when planned.
    observed: Observed = ABSENT
    #: The segment this operation belongs to ([G6]).
    segment: SegmentName = SegmentName.MEMORY


class CheckoutPlan(Record):
    """One checkout as planned: its state and the directories the plan relies on."""

    label: str
    #: Physical path when active; the normalised candidate path otherwise.
    path: str
    state: CheckoutState
    #: Why the checkout is offline or invalid.
    reason: str | None = None
    #: Observations of the root (``""``), ``.agents``, ``.agents/memory`` and every
    #: intermediate directory, by path relative to the checkout root.
    dirs: tuple[tuple[str, Observed], ...] = ()


class PlannedTarget(Record):
    """One instruction target as planned: its path, its agents and their detection."""

    #: Relative to each checkout root.
    rel: str
    agents: tuple[str, ...] = ()
    #: Whether one of ``agents`` was detected; ``None`` when no checkout needed to know
    #: (detection matters only where the target's directory is missing, [G4]).
    detected: bool | None = None


@frozen(repr=False, eq=False)
class Plan(Value):
    """The frozen plan: everything execution does and everything it was decided from."""

    project: str
    workspace: str
    #: How the workspace was found: ``option``, ``AIKITO_DIR``, ``pointer file``, ``default``.
    workspace_source: str
    config_path: str
    #: The parsed ``memory`` list, as written.
    memory: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    #: Whether ``<ws>/projects/<p>/memory`` existed (lstat) at planning time.
    project_memory_exists: bool
    #: The selected notes source, and ``current``/``legacy`` (``None`` without notes).
    notes_source: str | None
    notes_location: str | None
    sources: tuple[SourceCheck, ...]
    checkouts: tuple[CheckoutPlan, ...]
    operations: tuple[Operation, ...]
    findings: tuple[Finding, ...]
    #: The explicit checkout path of ``sync project NAME PATH`` ([K4]).
    explicit_path: str | None = None
    #: The path registration will append to ``agent.toml`` at execution ([K4]).
    register: str | None = None
    #: sha256 of ``agent.toml`` bytes, recorded when registration is planned.
    config_sha256: str | None = None
    #: sha256 of the ``agent.toml`` bytes the plan was made from, when recorded (a
    #: registration's plan, a clean's): when the live bytes still match, the memory list
    #: and candidates cannot have changed.  Without it, verification parses the live
    #: bytes and compares what the plan read of them.
    config_digest: str | None = None
    #: ``HOME`` used to expand ``~`` in checkout paths (re-used when re-parsing).
    home: str | None = None
    #: The parsed ``skills`` list ([G1]), sorted.
    skills: tuple[str, ...] = ()
    #: The project instructions source as planned (state and re-checks) ([G3], [P5]).
    instructions: InstructionSource | None = None
    #: Each instruction target planned: path, agents and detection ([G6]).
    instruction_targets: tuple[PlannedTarget, ...] = ()
    #: ``Project.prepare(agent)``: the agent whose instruction targets only were planned.
    agent: str | None = None
    #: ``worktrees`` of ``agent.toml`` as planned: the linked worktrees were checkouts.
    worktrees: bool = False
    #: Each per-agent skills directory planned: path, agents and detection ([N1]).
    skill_dirs: tuple[PlannedTarget, ...] = ()
    #: A sync, or a clean ([L3]): no CREATE, only owned links and emptied directories.
    kind: PlanKind = PlanKind.SYNC
    #: ``--moved-from OLD`` ([L4]): links into that old root are relinked (rule ``L4``).
    moved_from: str | None = None

    @property
    def conflicts(self) -> tuple[Operation, ...]:
        return tuple(op for op in self.operations if op.action is Action.CONFLICT)

    @property
    def blocked(self) -> bool:
        return any(op.action is Action.CONFLICT for op in self.operations)

    @property
    def changes(self) -> tuple[Operation, ...]:
        """The operations that write: CREATE and UNLINK."""
        writes = (Action.CREATE, Action.UNLINK)
        return tuple(op for op in self.operations if op.action in writes)

    @property
    def has_changes(self) -> bool:
        return bool(self.changes) or self.register is not None

    def summary(self, segment: SegmentName | None = None) -> dict[str, int]:
        """Counts per action word, of every segment or of ``segment`` only ([G6])."""
        order = (Action.CREATE, Action.NOOP, Action.UNLINK, Action.CONFLICT, Action.SKIP)
        counts = dict.fromkeys(order, 0)
        for op in self.operations:
            if segment is None or op.segment is segment:
                counts[op.action] += 1
        return {action.value.lower(): n for action, n in counts.items()}

    def segment_active(self, segment: SegmentName) -> bool:
        """[G6]: a segment is active when it has at least one operation or finding."""
        if any(op.segment is segment for op in self.operations):
            return True
        prefix = f"{segment.value}."
        return any(f.code.startswith(prefix) for f in self.findings)

    @property
    def blocked_segments(self) -> frozenset[SegmentName]:
        """Segments with a CONFLICT: nothing of them is written ([E1], [P3])."""
        return frozenset(op.segment for op in self.operations if op.action is Action.CONFLICT)

    @property
    def refused(self) -> bool:
        """Blocked as a whole: every active segment has a conflict ([G6])."""
        blocked = self.blocked_segments
        if not blocked:
            return False
        return all(s in blocked for s in SEGMENT_ORDER if self.segment_active(s))

    def evolve(self, **changes: Any) -> Plan:
        return attrs.evolve(self, **changes)


class Segment(Record):
    """One engine's part of a project sync result ([E8], INV-MEM-11, [G6])."""

    name: str
    success: bool
    #: Whether the segment has at least one operation or finding ([G6]).
    active: bool = True
    #: The segment's own outcome word (the top-level words of SPEC §9).
    outcome: str = ""


class SyncResult(Record):
    """The result of executing (or refusing) a plan: a status per operation."""

    plan: Plan
    #: One status per ``plan.operations`` entry, in the same order.
    statuses: tuple[Status, ...]
    #: ``applied``, ``unchanged``, ``planned``, ``blocked``, ``stale``, ``failed``,
    #: ``busy``, ``config_error`` or ``interrupted``.
    outcome: str
    #: Per-operation error text (``None`` where the operation did not fail).
    errors: tuple[str | None, ...] = ()
    segments: tuple[Segment, ...] = ()
    dry_run: bool = False
    #: Whether ``agent.toml`` registration was applied.
    registered: bool = False

    @property
    def success(self) -> bool:
        """The conjunction of the active segments ([E8])."""
        return all(s.success for s in self.segments)


class Resource(Record):
    """One desired resource: a workspace reference or the project notes ([S1]–[S4])."""

    #: The reference as written, or ``notes`` for the project notes.
    name: str
    #: Runtime path relative to ``.agents/memory``.
    rel: str
    #: Canonical source: the exact literal a CREATE writes.
    source: str
    is_notes: bool = False
    #: Why the source is unusable (``None`` when it is safe).
    problem: str | None = None
    #: The source does not exist (INV-MEM-07) rather than being unsafe (INV-MEM-02).
    missing: bool = False
    #: Shadowed by the project notes ([S4]): planned as SKIP.
    shadowed: bool = False
    #: What execution re-checks about this source if the plan links it.
    checks: tuple[SourceCheck, ...] = ()


class ResourceSet(Record):
    """Every resource of a project plus the notes decision it was derived from."""

    resources: tuple[Resource, ...]
    project_memory_exists: bool
    notes_source: str | None
    notes_location: str | None
    #: Historical canonical sources for the runtime path ``notes`` ([O2]).
    notes_history: tuple[str, ...]
    findings: tuple[Finding, ...] = ()
    #: Paths recorded as absent (a notes source that did not exist), re-checked at
    #: execution so that their appearance makes the plan stale.
    absent_checks: tuple[SourceCheck, ...] = ()


# -- skills and project instructions (§13) -----------------------------------------------


class InstructionState(Enum):
    """What ``<ws>/projects/<p>/AGENTS.md`` is, as far as a sync may know ([G3])."""

    ABSENT = "absent"
    #: Only white space (space, tab, CR, LF), or size 0.
    EMPTY = "empty"
    CONTENT = "content"
    #: A symlink leaving the workspace, a broken one, or not a regular file.
    UNSAFE = "unsafe"


class InstructionSource(Record):
    """The project instructions source and what execution re-checks about it ([P5])."""

    #: ``<ws>/projects/<p>/AGENTS.md``: the literal every instruction link names.
    path: str
    state: InstructionState
    problem: str | None = None
    checks: tuple[SourceCheck, ...] = ()


class Severity(StrEnum):
    """How serious a finding or a doctor check is.  A ``str`` enum: ``Finding.severity``
    may hold the bare word or the member alike."""

    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
