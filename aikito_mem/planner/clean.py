"""The clean planner ([L3]): what ``aikito clean`` removes from a checkout.  Pure.

A clean removes every link this workspace owns ([O1]) in all three segments — below
``.agents/memory`` (recursively), in ``.agents/skills``, at the instruction targets of
the current registry and at the legacy ``.agents/AGENTS.md`` — then prunes the
directories that leaves empty, deepest first.  A link is owned when its literal names the
canonical path its own place names (:func:`owner`): ``.agents/memory/R`` →
``<ws>/memory/R``; ``.agents/memory/notes`` → the project's notes (current or legacy;
for ``aikito clean PATH``, some project's); ``.agents/skills/N`` → ``<ws>/skills/N``; an
instruction target → ``<ws>/projects/<p>/AGENTS.md``.  Everything else is foreign: a
finding, never an operation.  No CREATE is ever planned.

The writer's guard ([E9]) judges a clean plan with the same two functions, :func:`place`
and :func:`owner` (and :func:`prune_segment` for directories; names judged by
:func:`~aikito_mem.config.names.entry_problem`, whatever their bytes), so whatever this
planner plans the guard accepts, and nothing else ([H3]).  No I/O happens here.
"""

from __future__ import annotations

import posixpath

from aikito_mem.config.names import component_problem, entry_problem
from aikito_mem.layout import (
    AGENTS_DIR,
    LEGACY_INSTRUCTIONS,
    MEMORY_DIR,
    NOTES,
    SKILLS_DIR,
    instructions_source,
    memory_source,
    moved_owner,
    notes_sources,
    relink_target,
    skill_source,
)
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutPlan,
    CheckoutState,
    Finding,
    Kind,
    Observed,
    Operation,
    Plan,
    PlannedTarget,
    SegmentName,
)
from aikito_mem.planner import finding_order, offline_reason, planned_state
from aikito_mem.planner.memory import owns
from aikito_mem.values import PlanKind
from aikito_mem.views.clean import CleanCheckout

__all__ = [
    "R_CLEAN",
    "build_clean_plan",
    "owner",
    "place",
    "prune_segment",
]

R_CLEAN = "L3"
_MEM, _SKILLS, _INSTR = SegmentName.MEMORY, SegmentName.SKILLS, SegmentName.INSTRUCTIONS
#: aikito's own runtime directories ([O3]): pruned whenever the clean leaves them empty.
RUNTIME_DIRS = {AGENTS_DIR: _MEM, MEMORY_DIR: _MEM, SKILLS_DIR: _SKILLS}


# -- the one rule of ownership, shared with the guard ([H3]) ---------------------------


def _resolved(literal: str, link_dir: str) -> str | None:
    if not literal:
        return None
    return literal if literal.startswith("/") else posixpath.normpath(
        posixpath.join(link_dir, literal))


#: Stands for a project name in a layout path, to read the name back out of a literal.
_ANY = "\0"


def _project_in(path: str | None, template: str) -> str | None:
    """The project name ``p`` when ``path`` is ``template`` (a layout path made for the
    project ``_ANY``) with ``p`` one clean component in its place, else ``None``."""
    head, _, tail = template.partition(_ANY)
    if path is None or not path.startswith(head) or not path.endswith(tail):
        return None
    name = path[len(head):len(path) - len(tail)]
    return name if name and component_problem(name) is None else None


def owner(segment: SegmentName, rel: str, literal: str | None, link_dir: str,
          workspace: str, project: str | None, moved_from: str | None = None
          ) -> str | None:
    """The canonical path the link at ``rel`` (relative to its segment's root: below
    ``.agents/memory``, a skill name, or an instruction target relative to the checkout)
    names by ``literal`` — or ``None`` when the link is not this workspace's ([O1],
    [O2]).  ``project`` ``None`` is ``aikito clean PATH``: the notes and instructions of
    any project of the workspace count.

    At a relink name (``.NAME.aikito-relink``, [L4]) the link is judged as one at NAME:
    a killed relink's leftover is the engine's ([L8]).  With ``moved_from`` (``clean
    --moved-from OLD``), a literal that is byte-exactly ``OLD`` + the remainder of one of
    those canonical paths is the engine's too ([L4])."""
    if literal is None:
        return None
    rel = relink_target(rel) or rel
    found = _owner(segment, rel, literal, link_dir, workspace, project)
    old = moved_from.rstrip("/") if moved_from is not None else None
    if found is None and old and literal.startswith(old + "/"):
        # The old root's literal read as the same path under this workspace ([L4]).
        cand = _owner(segment, rel, workspace + literal[len(old):], link_dir, workspace,
                      project)
        if cand is not None and moved_owner(literal, old, workspace, (cand,)) is not None:
            return cand
    return found


def _owner(segment: SegmentName, rel: str, literal: str, link_dir: str, workspace: str,
           project: str | None) -> str | None:
    """:func:`owner` of a link at NAME itself, without the old root."""
    candidates: list[str] = []
    resolved = _resolved(literal, link_dir)
    if segment is _MEM:
        candidates.append(memory_source(workspace, rel))
        if rel == NOTES:
            # Those of the project, or (``clean PATH``) of the one the literal names.
            names = [project] if project is not None else [
                p for p in (_project_in(resolved, t) for t in notes_sources(workspace, _ANY))
                if p is not None]
            for found in names:
                candidates.extend(notes_sources(workspace, found))
    elif segment is _SKILLS:
        candidates.append(skill_source(workspace, rel))
    else:
        name = project if project is not None else _project_in(
            resolved, instructions_source(workspace, _ANY))
        if name is not None:
            candidates.append(instructions_source(workspace, name))
    return owns(literal, link_dir, candidates)


def place(rel: str, targets: frozenset[str], skill_dirs: frozenset[str] = frozenset()
          ) -> tuple[SegmentName, str] | None:
    """The segment a link at ``rel`` (relative to the checkout root) belongs to and its
    path relative to that segment's root — ``None`` when a clean may not look there.
    ``skill_dirs``: the per-agent skills directories of the registry ([N1]); a link in
    one is a skill, named by its own name."""
    if rel.startswith(f"{MEMORY_DIR}/"):
        sub = rel[len(MEMORY_DIR) + 1:]
        return (_MEM, sub) if entry_problem(sub) is None else None
    if rel.startswith(f"{SKILLS_DIR}/"):
        sub = rel[len(SKILLS_DIR) + 1:]
        return (_SKILLS, sub) if entry_problem(sub, single=True) is None else None
    if rel == LEGACY_INSTRUCTIONS or rel in targets or relink_target(rel) in targets:
        return _INSTR, rel  # a target, or its relink name ([L4] [L8])
    folder, _, name = rel.rpartition("/")
    if folder in skill_dirs and entry_problem(name, single=True) is None:
        return _SKILLS, name
    return None


def prune_segment(rel: str, targets: frozenset[str],
                  skill_dirs: frozenset[str] = frozenset()) -> tuple[SegmentName, bool] | None:
    """Whether a clean may prune the directory ``rel`` (relative to the checkout root):
    its segment, and whether only when the plan removes something inside it (``True``
    for every directory but aikito's own runtime directories).  ``None``: never."""
    fixed = RUNTIME_DIRS.get(rel)
    if fixed is not None:
        return fixed, False
    if rel.startswith(f"{MEMORY_DIR}/") and entry_problem(rel[len(MEMORY_DIR) + 1:]) is None:
        return _MEM, True
    if entry_problem(rel) is None and any(t.startswith(f"{rel}/") for t in targets):
        return _INSTR, True
    # A per-agent skills directory ([N1]) and its parents (``.claude``), once emptied.
    if entry_problem(rel) is None and any(d == rel or d.startswith(f"{rel}/")
                                          for d in skill_dirs):
        return _SKILLS, True
    return None


# -- planning --------------------------------------------------------------------------


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


class _Planner:
    """Plans one active checkout whose root is a directory."""

    def __init__(self, co: CleanCheckout, workspace: str, project: str | None,
                 skill_dirs: frozenset[str] = frozenset(),
                 moved_from: str | None = None) -> None:
        self.co = co
        self.moved_from = moved_from
        self.mounts = frozenset(co.mounts)
        self.targets = frozenset(rel for rel, _ in co.targets)
        self.skill_dirs = skill_dirs
        self.workspace = workspace
        self.project = project
        self.ops: list[Operation] = []
        self.findings: list[Finding] = []
        #: Entries the plan removes, relative to the checkout root.
        self.removed: set[str] = set()
        self.dirs: dict[str, Observed] = {"": co.root}

    def at(self, rel: str) -> str:
        return f"{self.co.path}/{rel}"

    def foreign(self, rel: str, obs: Observed) -> None:
        what = ("a mount point (another filesystem is mounted there)"
                if obs.kind is Kind.MOUNT else obs.describe())
        self.findings.append(Finding(
            "clean.foreign_entry", "warning",
            f"kept {self.at(rel)}: {what}, not a link this workspace owns; clean leaves "
            "it untouched", self.at(rel)))

    def unlink(self, segment: SegmentName, rel: str, seg_rel: str, obs: Observed) -> bool:
        """An UNLINK of the link at ``rel`` when this workspace owns it; else a finding."""
        link_dir = self.at(_parent(rel)) if _parent(rel) else self.co.path
        source = (owner(segment, seg_rel, obs.literal, link_dir, self.workspace,
                        self.project, self.moved_from) if obs.kind is Kind.LINK else None)
        if source is None:
            self.foreign(rel, obs)
            return False
        self.removed.add(rel)
        self.ops.append(Operation(
            Action.UNLINK, R_CLEAN, self.co.path, self.at(rel),
            "the leftover of an interrupted relink, removed by clean"
            if relink_target(rel) is not None else "aikito's link, removed by clean",
            resource=seg_rel, source=source, observed=obs, segment=segment))
        return True

    def prune(self, segment: SegmentName, rel: str, obs: Observed,
              names: tuple[str, ...]) -> None:
        """An rmdir of ``rel`` when every entry in it (``names``) is removed — unless it
        is a mount point ([L8]): kept, with a finding (a second clean is a NOOP)."""
        if all(f"{rel}/{n}" in self.removed for n in names):
            if rel in self.mounts:
                self.findings.append(Finding(
                    "clean.mount_point", "warning",
                    f"kept {self.at(rel)}: a mount point (another filesystem is mounted "
                    "there), which aikito never removes (only its own links in it) — "
                    "unmount it and remove the directory yourself if it is not needed",
                    self.at(rel)))
                return
            self.removed.add(rel)
            self.ops.append(Operation(
                Action.UNLINK, R_CLEAN, self.co.path, self.at(rel),
                "directory left empty by clean", entry="directory", observed=obs,
                segment=segment))

    def tree(self, segment: SegmentName, root: str, obs: Observed,
             entries: tuple[tuple[str, Observed], ...], *, own: bool = True) -> None:
        """A segment root (``.agents/memory``, ``.agents/skills`` or a per-agent skills
        directory): its links, then its directories deepest first, then itself — a
        directory not aikito's own (``own`` false) only when the clean emptied it."""
        self.dirs[root] = obs  # whatever it is, nothing included: re-checked ([E2])
        if not obs.exists:
            return
        if obs.kind is not Kind.DIR:
            self.foreign(root, obs)
            return
        by_rel = dict(entries)
        children: dict[str, list[str]] = {}
        for rel, _ in entries:
            children.setdefault(_parent(rel), []).append(rel.rpartition("/")[2])
        for rel, found in entries:
            if found.kind is not Kind.DIR and self.unlink(segment, f"{root}/{rel}", rel,
                                                          found):
                # The directories the link was reached through are re-checked ([E2]).
                parent = _parent(rel)
                while parent:
                    self.dirs.setdefault(f"{root}/{parent}", by_rel.get(parent, ABSENT))
                    parent = _parent(parent)
        subdirs = sorted((rel for rel, found in entries if found.kind is Kind.DIR),
                         key=lambda r: (-r.count("/"), r))
        for rel in subdirs:
            kids = tuple(children.get(rel, ()))
            if kids:
                self.prune(segment, f"{root}/{rel}", by_rel[rel], kids)
            else:
                self.foreign(f"{root}/{rel}", by_rel[rel])
        top = tuple(children.get("", ()))
        if own or top:
            self.prune(segment, root, obs, top)

    def instructions(self) -> None:
        """The instruction targets (and the legacy link), then their emptied parents."""
        for rel, obs in self.co.targets:
            if obs.kind is Kind.LINK:
                self.unlink(_INSTR, rel, rel, obs)
            elif obs.exists:
                self.foreign(rel, obs)
        for rel, obs, names in sorted(self.co.parents, key=lambda p: (-p[0].count("/"),
                                                                      p[0])):
            self.dirs[rel] = obs
            allowed = prune_segment(rel, self.targets, self.skill_dirs)
            if allowed is not None and any(n.startswith(f"{rel}/") for n in self.removed):
                self.prune(allowed[0], rel, obs, names)

    def plan(self) -> None:
        co = self.co
        agents = co.agents
        self.dirs[AGENTS_DIR] = agents  # whatever it is, nothing included ([E2])
        if agents.exists and agents.kind is not Kind.DIR:
            self.foreign(AGENTS_DIR, agents)
        elif agents.kind is Kind.DIR:
            self.tree(_SKILLS, SKILLS_DIR, co.skills, co.skills_entries)
            self.tree(_MEM, MEMORY_DIR, co.memory, co.memory_entries)
        for rel, obs, entries in co.agent_skills:
            if rel in self.skill_dirs:
                self.tree(_SKILLS, rel, obs, entries, own=False)
        self.instructions()
        if agents.kind is Kind.DIR:
            self.prune(_MEM, AGENTS_DIR, agents, tuple(n for n, _ in co.agents_entries))


def _skipped(co: CleanCheckout, state: CheckoutState) -> tuple[Operation, list[Finding]]:
    """The SKIP of a checkout that is offline or not usable, and the warning of the
    latter."""
    word = "offline" if state is CheckoutState.OFFLINE else "not usable"
    reason = (offline_reason(co.reason) if state is CheckoutState.OFFLINE
              else co.reason or f"{co.path} is not a directory")
    skip = Operation(Action.SKIP, R_CLEAN, co.path, co.path, f"checkout {word}: {reason}",
                     segment=_MEM)
    if state is not CheckoutState.INVALID:
        return skip, []
    return skip, [Finding("clean.invalid_checkout", "warning",
                          f"checkout {co.path} was not cleaned: {reason}", co.path)]


def build_clean_plan(
    *,
    workspace: str,
    workspace_source: str,
    project: str | None,
    config_path: str,
    checkouts: tuple[CleanCheckout, ...],
    targets: tuple[PlannedTarget, ...],
    explicit_path: str | None = None,
    config_digest: str | None = None,
    findings: tuple[Finding, ...] = (),
    skill_dirs: tuple[PlannedTarget, ...] = (),
    moved_from: str | None = None,
) -> Plan:
    """The clean plan of every checkout ([L3]): UNLINKs and prunes only — in the
    per-agent skills directories ``skill_dirs`` too ([N1]); ``moved_from``: the old root
    of ``clean --moved-from OLD``, whose links are this workspace's too ([L4]).  Pure."""
    dirs_of_skills = frozenset(d.rel for d in skill_dirs)
    keyed: list[tuple[tuple[int, int, str], Operation]] = []
    all_findings: list[Finding] = list(findings)
    planned: list[CheckoutPlan] = []
    rank = {SegmentName.SKILLS: 0, SegmentName.INSTRUCTIONS: 1, SegmentName.MEMORY: 2}
    for index, co in enumerate(checkouts):
        dirs: tuple[tuple[str, Observed], ...] = (("", co.root),)
        state = planned_state(co.state, co.root)
        if state is CheckoutState.ACTIVE:
            p = _Planner(co, workspace, project, dirs_of_skills, moved_from)
            p.plan()
            keyed.extend(((rank[op.segment], index, op.target), op) for op in p.ops)
            all_findings.extend(sorted(p.findings, key=finding_order))
            dirs = tuple(sorted(p.dirs.items()))
        else:
            skip, finding = _skipped(co, state)
            keyed.append(((rank[_MEM], index, co.path), skip))
            all_findings.extend(finding)
        planned.append(CheckoutPlan(co.label, co.path, state, co.reason, dirs))
    # Stable: within one target an UNLINK of a link comes as planned.
    ordered = [op for _, op in sorted(keyed, key=lambda pair: pair[0])]
    return Plan(
        project=project or "",
        workspace=workspace,
        workspace_source=workspace_source,
        config_path=config_path,
        memory=(),
        candidates=(),
        project_memory_exists=False,
        notes_source=None,
        notes_location=None,
        sources=(),
        checkouts=tuple(planned),
        operations=tuple(ordered),
        findings=tuple(all_findings),
        explicit_path=explicit_path,
        config_digest=config_digest,
        instruction_targets=targets,
        skill_dirs=skill_dirs,
        moved_from=moved_from,
        kind=PlanKind.CLEAN,
    )
