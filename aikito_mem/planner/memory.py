"""The memory segment's planner: (resources, checkout observations) → frozen :class:`Plan`.

No I/O of any kind (an audit hook in ``tests/test_planner.py`` proves it).  The [P1]
table is the data :data:`TARGET_RULES`; the [P2] stale and pruning rules are
:meth:`_CheckoutPlanner.plan_stale` and :meth:`_CheckoutPlanner.plan_prunes`; ownership
([O1]/[O2]) is :func:`owns` (the rule lives in :mod:`aikito_mem.layout`, where
observation applies it too, [L1]) and :func:`history`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from aikito_mem.config.names import entry_problem
from aikito_mem.layout import (
    AGENTS_DIR,
    DESCRIPTOR,
    INDEX_NAME,
    MEMORY_DIR,
    NOTES,
    literal_resolves_to,
    memory_source,
    memory_target,
    moved_literal,
    owns,
    relink_target,
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
    ProjectConfig,
    Resource,
    ResourceSet,
    SourceCheck,
)
from aikito_mem.planner import R_MOVED, finding_order, offline_reason, planned_state
from aikito_mem.views import CheckoutView

__all__ = ["build_plan", "history", "literal_resolves_to", "owns"]

# Looked up once: reading an enum member off its class is slow (a lookup through the
# enum's metaclass), and the steady state reads these once per entry and per resource.
_CREATE, _NOOP, _UNLINK = Action.CREATE, Action.NOOP, Action.UNLINK
_LINK, _DIR = Kind.LINK, Kind.DIR

#: Rule ids (INV-MEM-xx of shared/reference/memory-runtime-invariants.txt).
R_CREATE = "INV-MEM-01"
R_UNSAFE = "INV-MEM-02"
R_NOTES = "INV-MEM-03"
R_OWNED = "INV-MEM-05"
R_STALE = "INV-MEM-06"
R_PRESERVE = "INV-MEM-07"
R_OFFLINE = "INV-MEM-08"
R_NOOP = "INV-MEM-10"
#: Shadowing has no invariant of its own: the rule is [S4].
R_SHADOW = "S4"


def history(workspace: str, rel: str, notes_history: tuple[str, ...]) -> tuple[str, ...]:
    """[O2]: the allowed historical canonical sources for runtime path ``rel``."""
    own = memory_source(workspace, rel)
    return (own, *notes_history) if rel == NOTES else (own,)


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _ancestors(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


_Wanted = tuple[dict[str, Resource], frozenset[str]]


def _wanted(resources: ResourceSet) -> _Wanted:
    """The desired targets (every resource not shadowed, by runtime path) and the
    directories on the way to them: the same for every checkout of a plan."""
    desired = {r.rel: r for r in resources.resources if not r.shadowed}
    return desired, frozenset(a for rel in desired if "/" in rel for a in _ancestors(rel))


class _CheckoutPlanner:
    """Plans one active checkout whose ``.agents`` and ``.agents/memory`` are usable."""

    def __init__(
        self, view: CheckoutView, resources: ResourceSet, workspace: str, config_path: str,
        moved_from: str | None = None, wanted: _Wanted | None = None,
    ) -> None:
        self.view = view
        self.moved_from = moved_from
        self.workspace = workspace
        self.config_path = config_path
        self.notes_history = resources.notes_history
        self.base = f"{view.path}/{MEMORY_DIR}"
        self.entries = dict(view.entries)
        #: The desired targets and the directories on the way to them (never changed).
        self.desired, self.ancestors = wanted or _wanted(resources)
        self.ops: list[Operation] = []
        self.findings: list[Finding] = []
        #: Entries the plan removes (unlinked links and pruned directories), and those
        #: at aikito's temporary names that it does not own (CONFLICTs, [L8]).
        self.removed: set[str] = set()
        self.blocked: set[str] = set()

    def target(self, rel: str) -> str:
        return f"{self.base}/{rel}"

    def link_dir(self, rel: str) -> str:
        parent = _parent(rel)
        return f"{self.base}/{parent}" if parent else self.base

    def op(self, action: Action, rule: str, rel: str, reason: str, **kw: object) -> None:
        self.ops.append(Operation(action, rule, self.view.path, self.target(rel), reason,
                                  **kw))  # type: ignore[arg-type]

    # -- [P2] stale entries and pruning ------------------------------------------------

    def plan_stale(self) -> None:
        """Every entry that is not a desired target: aikito's stale links unlinked, the
        rest preserved with a finding; then the directories the unlinks empty pruned."""
        for rel, obs in self.entries.items():
            if rel in self.desired or rel in self.ancestors:
                continue  # not stale ([P2]): a non-directory on the way is a CONFLICT ([O4])
            base = relink_target(rel)  # a relink's temporary name ([L4]): owned as base
            if obs.kind is _DIR and base is None:
                continue
            if obs.kind is _LINK and entry_problem(rel) is None:
                # [H3]: any name an owned link can have is unlinked (the guard's rule too).
                cand = self.former(obs.literal, base or rel)
                why = "no longer wanted: aikito's link for a reference that was removed"
                if cand is None and self.moved_from is not None:  # [L4]: into the old root
                    from aikito_mem.planner.moved import stale_owner

                    cand, why = stale_owner(obs.literal, self.moved_from, self.workspace,
                                            history(self.workspace, base or rel,
                                                    self.notes_history), "a reference")
                if cand is not None:
                    self.removed.add(rel)
                    self.op(Action.UNLINK, R_STALE, rel, why if base is None else
                            "the leftover of an interrupted relink", source=cand, observed=obs)
                    continue
            if base is not None:  # [L8]: not aikito's, at its own temporary name
                from aikito_mem.planner.remedies import relink_name_conflict

                self.blocked.add(rel)
                why, remedy = relink_name_conflict(self.target(rel), self.target(base), obs)
                self.op(Action.CONFLICT, R_PRESERVE, rel, why, remedy=remedy, observed=obs)
                continue
            from aikito_mem.planner import remedies  # a foreign entry only

            # The descriptor's anchor (see CheckoutView.index_anchor): not a stray file.
            self.findings.append(
                remedies.anchor_finding(self.target(rel), f"{self.view.path}/{DESCRIPTOR}")
                if rel == INDEX_NAME and obs.kind is Kind.FILE and self.view.index_anchor
                else remedies.foreign_finding(self.target(rel), obs))
        self.plan_prunes()

    def plan_prunes(self) -> None:
        """[P2]: a directory is pruned only when the planned unlinks empty it."""
        # A directory on the way to a desired target, or at one (a CONFLICT, [P1]), is
        # never pruned: only the others are looked at, and their children listed.
        dirs = [rel for rel, obs in self.entries.items() if obs.kind is _DIR
                and rel not in self.ancestors and rel not in self.desired
                and rel not in self.blocked]
        if not dirs:
            return
        dirs.sort(key=lambda r: (-r.count("/"), r))
        children: dict[str, list[str]] = {}
        for rel in self.entries:
            children.setdefault(_parent(rel), []).append(rel)
        for rel in dirs:
            kids = children.get(rel, [])
            if not kids:
                from aikito_mem.planner.remedies import empty_directory_finding

                self.findings.append(empty_directory_finding(self.target(rel)))
                continue
            if all(k in self.removed for k in kids):
                self.removed.add(rel)
                self.op(Action.UNLINK, R_STALE, rel,
                        "directory left empty by the planned unlinks",
                        entry="directory", observed=self.entries[rel])

    # -- [P1] desired targets ----------------------------------------------------------

    def plan_target(self, res: Resource) -> None:
        """[P1]: the operation at one desired target — the first row of
        :data:`TARGET_RULES` whose test holds decides it."""
        rel = res.rel
        obs = self.entries.get(rel, ABSENT)
        if (res.problem is None and obs.kind is _LINK and obs.literal == res.source
                and rel not in self.removed):
            # The steady state, paid once per resource per sync: built directly ([P6]).
            self.ops.append(Operation(_NOOP, R_NOOP, self.view.path,
                                      f"{self.base}/{rel}", "already linked", res.name,
                                      res.source, None, "link", obs))
            return
        for _row, applies, plan in TARGET_RULES:
            if applies(self, res, obs):
                plan(self, res, obs)
                return

    def blocking_ancestor(self, rel: str) -> tuple[str, Observed] | None:
        """[O4]: the first directory on the way to ``rel`` that exists and is not a real
        directory (a link, a file, a mount point), or ``None``."""
        for anc in _ancestors(rel) if "/" in rel else ():
            a_obs = self.entries.get(anc, ABSENT)
            if a_obs.exists and a_obs.kind is not Kind.DIR:
                return anc, a_obs
        return None

    def former(self, literal: str | None, rel: str) -> str | None:
        """[O2]: the former canonical source a link at ``rel`` names, if aikito's."""
        return owns(literal, self.link_dir(rel),
                    history(self.workspace, rel, self.notes_history))

    def replaces_legacy_notes(self, res: Resource, obs: Observed) -> bool:
        current, legacy = self.notes_history
        return (res.is_notes and res.source == current
                and owns(obs.literal, self.link_dir(res.rel), (legacy,)) is not None)

    def dirs(self) -> tuple[tuple[str, Observed], ...]:
        v = self.view
        out = [("", v.root), (AGENTS_DIR, v.agents), (MEMORY_DIR, v.memory)]
        for anc in sorted(self.ancestors):
            out.append((f"{MEMORY_DIR}/{anc}", self.entries.get(anc, ABSENT)))
        return tuple(out)


def _kw(res: Resource, obs: Observed) -> dict[str, object]:
    return {"resource": res.name, "source": res.source, "observed": obs}


def _source_conflict(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    """The source is missing or unsafe ([S3]): a CONFLICT, with the remedy that fits."""
    from aikito_mem.planner.remedies import quote

    if res.is_notes:
        remedy = (f"make {res.source} a real directory (or remove it); "
                  "project notes are exposed only as a directory")
    elif res.missing and obs.kind in (Kind.FILE, Kind.DIR):
        # The content is here, not in the workspace: adopt moves it there and links it back.
        remedy = (f"aikito adopt {quote(p.target(res.rel))} (moves it to {res.source} and "
                  f"links it back), or remove {res.name!r} from memory in {p.config_path}")
    elif res.missing:
        remedy = (f"create {res.source}, or remove {res.name!r} from memory "
                  f"in {p.config_path}")
    else:
        remedy = (f"make {res.source} a regular file or directory inside the "
                  f"workspace, or remove {res.name!r} from memory in {p.config_path}")
    p.op(Action.CONFLICT, R_PRESERVE if res.missing else R_UNSAFE, res.rel,
         res.problem or "", remedy=remedy, **_kw(res, obs))


def _ancestor_conflict(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    """[O4]: a CONFLICT for this resource — even when the directory on the way is
    aikito's own link for a former reference (then the remedy says it is safe to remove)."""
    from aikito_mem.planner.remedies import unmount_remedy

    found = p.blocking_ancestor(res.rel)
    assert found is not None
    anc, a_obs = found
    former = p.former(a_obs.literal, anc)
    if former is not None:
        remedy = (f"remove the link {p.target(anc)}: it is aikito's link to "
                  f"the former source {former}, nothing is lost — then run again")
    elif a_obs.kind is Kind.MOUNT:
        remedy = unmount_remedy(p.target(anc), res.name, p.config_path)
    else:
        remedy = (f"move {p.target(anc)} out of the way; aikito never removes "
                  "what it does not own")
    p.op(Action.CONFLICT, R_PRESERVE, res.rel,
         f"{p.target(anc)} is {a_obs.describe()}; expected a real directory "
         f"to hold {p.target(res.rel)}", remedy=remedy, **_kw(res, obs))


def _create(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    p.op(Action.CREATE, R_CREATE, res.rel, "target missing", **_kw(res, obs))


def _noop(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    p.op(Action.NOOP, R_NOOP, res.rel, "already linked", **_kw(res, obs))


def _replace_legacy_notes(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    """[P1]: the one replacement — aikito's link to the legacy notes while the notes are
    now current: UNLINK + CREATE on the same target."""
    legacy = p.notes_history[1]
    p.removed.add(res.rel)
    p.op(Action.UNLINK, R_STALE, res.rel,
         f"aikito's link to the legacy notes {legacy} is replaced",
         resource=res.name, source=legacy, observed=obs)
    p.op(Action.CREATE, R_NOTES, res.rel,
         f"link to the current notes replaces the link to the legacy notes {legacy}",
         **_kw(res, obs))


def _relink(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    """[L4]: the same resource under the workspace's old root, relinked in place."""
    p.op(Action.CREATE, R_MOVED, res.rel, f"relinked from {p.moved_from}", **_kw(res, obs))


def _link_conflict(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    """A link aikito does not own here (or its own, to a former source): a CONFLICT."""
    from aikito_mem.planner.remedies import foreign_link_remedy

    former = p.former(obs.literal, res.rel)
    remedy = (f"remove the link {p.target(res.rel)}: it is aikito's link to the "
              f"former source {former}, nothing is lost — then run again"
              if former is not None else
              foreign_link_remedy(p.target(res.rel)))
    p.op(Action.CONFLICT, R_PRESERVE, res.rel,
         f"found {obs.describe()}; expected a symlink to {res.source!r}", remedy=remedy,
         **_kw(res, obs))


def _entry_conflict(p: _CheckoutPlanner, res: Resource, obs: Observed) -> None:
    """A file, a directory, a mount point or anything else: never overwritten."""
    from aikito_mem.planner.remedies import adopt_remedy, unmount_remedy

    target = p.target(res.rel)
    p.op(Action.CONFLICT, R_PRESERVE, res.rel,
         f"found {obs.describe()}; expected a symlink to {res.source!r}",
         remedy=unmount_remedy(target, res.name, p.config_path) if obs.kind is Kind.MOUNT
         else adopt_remedy(target, res, obs, p.config_path), **_kw(res, obs))


_Test = Callable[[_CheckoutPlanner, Resource, Observed], bool]
_Plan = Callable[[_CheckoutPlanner, Resource, Observed], None]

#: The [P1] table, as data: ``(row, test, plan)`` in the order the rows are tried; the
#: first whose test holds plans the target (after the steady-state NOOP of
#: :meth:`_CheckoutPlanner.plan_target`).  The last row always holds.
TARGET_RULES: tuple[tuple[str, _Test, _Plan], ...] = (
    ("source missing or unsafe", lambda p, r, o: r.problem is not None, _source_conflict),
    ("a directory on the way is not one",
     lambda p, r, o: p.blocking_ancestor(r.rel) is not None, _ancestor_conflict),
    ("target missing", lambda p, r, o: o.kind is Kind.ABSENT, _create),
    ("aikito's link to the source",
     lambda p, r, o: o.kind is Kind.LINK and owns(o.literal, p.link_dir(r.rel),
                                                  (r.source,)) is not None, _noop),
    ("aikito's link to the legacy notes, notes now current",
     lambda p, r, o: o.kind is Kind.LINK and p.replaces_legacy_notes(r, o),
     _replace_legacy_notes),
    ("aikito's link under the workspace's old root ([L4])",
     lambda p, r, o: o.kind is Kind.LINK
     and o.literal == moved_literal(p.moved_from, p.workspace, r.source), _relink),
    ("any other link", lambda p, r, o: o.kind is Kind.LINK, _link_conflict),
    ("anything else", lambda p, r, o: True, _entry_conflict),
)


def _checkout_conflict(view: CheckoutView, rel: str, found: Observed, what: str) -> Operation:
    target = f"{view.path}/{rel}" if rel else view.path
    return Operation(
        Action.CONFLICT, R_PRESERVE, view.path, target,
        f"{target} is {found.describe()}; expected {what}",
        remedy=f"move {target} out of the way and run again; aikito never writes through "
        "or replaces it",
        observed=found,
    )


def _plan_checkout(
    view: CheckoutView, resources: ResourceSet, workspace: str, config_path: str,
    moved_from: str | None = None, wanted: _Wanted | None = None,
) -> tuple[CheckoutPlan, list[Operation], list[Finding]]:
    """One checkout's state, operations and findings: a SKIP per resource when offline,
    one CONFLICT when the checkout or its ``.agents`` / ``.agents/memory`` cannot hold
    links, else every stale entry and desired target planned."""
    ops: list[Operation] = []
    findings: list[Finding] = []
    dirs: tuple[tuple[str, Observed], ...] = (("", view.root),)
    state = planned_state(view.state, view.root)
    if state is CheckoutState.OFFLINE:
        path, reason = view.path, f"checkout offline: {offline_reason(view.reason)}"
        skip, base = Action.SKIP, memory_target(path, "")  # looked up once, not per resource
        ops = [Operation(skip, R_OFFLINE, path, base + res.rel, reason, res.name, res.source)
               for res in resources.resources]
    elif state is CheckoutState.INVALID:
        ops.append(_checkout_conflict(view, "", view.root, "a directory")
                   if view.reason is None else Operation(
                       Action.CONFLICT, R_PRESERVE, view.path, view.path, view.reason,
                       remedy="fix the checkout path in agent.toml or its permissions",
                       observed=view.root))
    elif view.agents.exists and view.agents.kind is not Kind.DIR:
        ops.append(_checkout_conflict(view, AGENTS_DIR, view.agents, "a real directory"))
        dirs = (("", view.root), (AGENTS_DIR, view.agents))
    elif view.memory.exists and view.memory.kind is not Kind.DIR:
        ops.append(_checkout_conflict(view, MEMORY_DIR, view.memory, "a real directory"))
        dirs = (("", view.root), (AGENTS_DIR, view.agents), (MEMORY_DIR, view.memory))
    else:
        cp = _CheckoutPlanner(view, resources, workspace, config_path, moved_from, wanted)
        cp.plan_stale()
        for res in resources.resources:
            if not res.shadowed:
                cp.plan_target(res)
        ops = [Operation(Action.SKIP, R_SHADOW, view.path, cp.target(res.rel),
                         "shadowed by project notes", resource=res.name, source=res.source)
               for res in resources.resources if res.shadowed]
        ops.extend(cp.ops)
        findings = cp.findings
        dirs = cp.dirs()
    findings.sort(key=finding_order)
    return CheckoutPlan(view.label, view.path, state, view.reason, dirs), ops, findings


def _target_order(op: Operation) -> tuple[str, bool]:
    """One checkout's operations in plan order: by target, an UNLINK first."""
    return op.target, op.action is not _UNLINK


def _source_checks(resources: ResourceSet, ops: Iterable[Operation]
                   ) -> tuple[SourceCheck, ...]:
    """What verification re-checks of the sources ([P5]): every check of a resource the
    plan uses (or reports), by identity for a source it links; the absent notes too."""
    used: set[str | None] = set()
    linked: set[str | None] = set()
    for op in ops:
        action = op.action
        if action is _NOOP:
            used.add(op.resource)
        elif action is _CREATE:
            used.add(op.resource)
            linked.add(op.resource)
    checks: dict[str, SourceCheck] = {}
    for res in resources.resources:
        if res.name in used or res.problem is not None:
            for check in res.checks:
                checks.setdefault(check.path, check)
            if res.name in linked and res.checks:
                # [P5]: a source the plan links is re-checked by identity, not just type.
                last = res.checks[-1]
                checks[last.path] = SourceCheck(last.path, last.observed, identity=True)
    for check in resources.absent_checks:
        checks.setdefault(check.path, check)
    return tuple(checks[p] for p in sorted(checks))


def build_plan(
    *,
    config: ProjectConfig,
    workspace: str,
    workspace_source: str,
    resources: ResourceSet,
    checkouts: tuple[CheckoutView, ...],
    explicit_path: str | None = None,
    register: str | None = None,
    home: str | None = None,
    moved_from: str | None = None,
) -> Plan:
    """Plan every checkout against every resource ([P1]–[P5]); ``moved_from`` is the
    workspace's old root of ``--moved-from`` ([L4]).  Pure."""
    ops: list[Operation] = []
    findings: list[Finding] = [*config.findings, *resources.findings]
    # The bytes are hashed only for a registration's compare-and-swap ([K4]).
    digest = config.sha256 if register is not None else None
    planned: list[CheckoutPlan] = []
    wanted = _wanted(resources)
    for view in checkouts:
        checkout, co_ops, co_findings = _plan_checkout(view, resources, workspace,
                                                       config.config_path, moved_from,
                                                       wanted)
        planned.append(checkout)
        # [P4]: checkout order, then target path (an UNLINK before a CREATE of its target).
        co_ops.sort(key=_target_order)
        ops += co_ops
        findings.extend(co_findings)
    return Plan(
        project=config.name,
        workspace=workspace,
        workspace_source=workspace_source,
        config_path=config.config_path,
        memory=config.memory,
        candidates=config.candidates,
        project_memory_exists=resources.project_memory_exists,
        notes_source=resources.notes_source,
        notes_location=resources.notes_location,
        sources=_source_checks(resources, ops),
        checkouts=tuple(planned),
        operations=tuple(ops),
        findings=tuple(findings),
        explicit_path=explicit_path,
        register=register,
        config_sha256=digest,
        config_digest=digest,
        home=home,
        worktrees=config.worktrees,
        moved_from=moved_from,
    )
