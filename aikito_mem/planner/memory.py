"""The pure planner: (resources, checkout observations) → frozen :class:`Plan`.

No I/O of any kind happens here — no ``os`` call, no ``pathlib`` access; ``posixpath``
is used for lexical joins only.  ``tests/test_planner.py`` proves it with an audit hook.

The [P1] table lives in :func:`_plan_target`, the [P2] stale and pruning rules in
:func:`_plan_stale`; ownership ([O1]/[O2]) in :func:`owns`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from aikito_mem.config.names import entry_problem
from aikito_mem.layout import (
    AGENTS_DIR,
    DESCRIPTOR,
    INDEX_NAME,
    MEMORY_DIR,
    NOTES,
    memory_source,
    memory_target,
)
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutPlan,
    CheckoutState,
    CheckoutView,
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
from aikito_mem.planner.moved import R_MOVED, moved_literal, relink_target

__all__ = ["build_plan", "history", "literal_resolves_to", "owns"]

_CREATE, _NOOP, _UNLINK = Action.CREATE, Action.NOOP, Action.UNLINK

#: Rule ids (INV-MEM-xx of shared/reference/memory-runtime-invariants.txt).
R_CREATE = "INV-MEM-01"
R_UNSAFE = "INV-MEM-02"
R_NOTES = "INV-MEM-03"
R_OWNED = "INV-MEM-05"
R_STALE = "INV-MEM-06"
R_PRESERVE = "INV-MEM-07"
R_OFFLINE = "INV-MEM-08"
R_NOOP = "INV-MEM-10"
#: Shadowing has no invariant of its own: SPEC [S4].
R_SHADOW = "S4"


def literal_resolves_to(literal: str, link_dir: str, expected: str) -> bool:
    """[O1]: the literal names ``expected`` byte for byte, or is a relative literal that,
    joined to the link's directory and normalised lexically, equals it."""
    if literal == expected:
        return True
    if literal.startswith("/") or not literal:
        return False
    return posixpath.normpath(posixpath.join(link_dir, literal)) == expected


def history(workspace: str, rel: str, notes_history: tuple[str, ...]) -> tuple[str, ...]:
    """[O2]: the allowed historical canonical sources for runtime path ``rel``."""
    own = memory_source(workspace, rel)
    return (own, *notes_history) if rel == NOTES else (own,)


def owns(literal: str | None, link_dir: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``literal`` names, or ``None`` when the link is not ours."""
    if literal is None:
        return None
    for cand in candidates:
        if literal_resolves_to(literal, link_dir, cand):
            return cand
    return None


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _ancestors(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


class _CheckoutPlanner:
    """Plans one active checkout whose ``.agents`` and ``.agents/memory`` are usable."""

    def __init__(
        self, view: CheckoutView, resources: ResourceSet, workspace: str, config_path: str,
        moved_from: str | None = None,
    ) -> None:
        self.view = view
        self.moved_from = moved_from
        self.workspace = workspace
        self.config_path = config_path
        self.notes_history = resources.notes_history
        self.base = f"{view.path}/{MEMORY_DIR}"
        self.entries = dict(view.entries)
        self.desired = {r.rel: r for r in resources.resources if not r.shadowed}
        self.ancestors: set[str] = set()
        for rel in self.desired:
            if "/" in rel:
                self.ancestors.update(_ancestors(rel))
        self.ops: list[Operation] = []
        self.findings: list[Finding] = []
        #: Entries the plan removes (unlinked links and pruned directories).
        self.removed: set[str] = set()

    def target(self, rel: str) -> str:
        return f"{self.base}/{rel}"

    def link_dir(self, rel: str) -> str:
        parent = _parent(rel)
        return f"{self.base}/{parent}" if parent else self.base

    def op(self, action: Action, rule: str, rel: str, reason: str, **kw: object) -> None:
        self.ops.append(
            Operation(action, rule, self.view.path, self.target(rel), reason, **kw)  # type: ignore[arg-type]
        )

    # -- [P2] stale entries and pruning ------------------------------------------------

    def plan_stale(self) -> None:
        children: dict[str, list[str]] = {}
        for rel in self.entries:
            children.setdefault(_parent(rel), []).append(rel)
        for rel, obs in self.entries.items():
            if rel in self.desired or obs.kind is Kind.DIR:
                continue
            if rel in self.ancestors:
                # Not a stale entry ([P2]): an intermediate that is not a real directory is
                # a CONFLICT of the resource below it ([O4]), even when it is aikito's link.
                continue
            if obs.kind is Kind.LINK and entry_problem(rel) is None:
                # [H3]: any name an owned link can have on disk is unlinked — the rule
                # the writer's guard applies to the same target.
                # A relink's temporary name ([L4]) is owned as the entry it stands for.
                base = relink_target(rel)
                cand = owns(obs.literal, self.link_dir(rel),
                            history(self.workspace, base or rel, self.notes_history))
                if cand is not None:
                    self.removed.add(rel)
                    self.op(Action.UNLINK, R_STALE, rel,
                            "no longer wanted: aikito's link for a reference that was removed"
                            if base is None else
                            "the leftover of an interrupted relink", source=cand, observed=obs)
                    continue
            if rel == INDEX_NAME and obs.kind is Kind.FILE and self.view.index_anchor:
                # The descriptor's anchor (see CheckoutView.index_anchor): not a stray file.
                self.findings.append(Finding(
                    "memory.index_anchor", "info",
                    f"kept {self.target(rel)}: the memory index of this checkout's memory "
                    f"descriptor ({self.view.path}/{DESCRIPTOR} has a memory: block)",
                    self.target(rel),
                ))
                continue
            self.findings.append(Finding(
                "memory.foreign_entry", "warning",
                f"preserved {self.target(rel)}: a mount point (another filesystem is "
                "mounted there); aikito never looks into, writes into or removes a mount — "
                "unmount it yourself if it is not needed"
                if obs.kind is Kind.MOUNT else
                f"preserved {self.target(rel)}: {obs.describe()} that aikito did not create; "
                "it is left untouched — to share it with every checkout: aikito adopt "
                f"{quote(self.target(rel))} (moves it into the workspace and links it back); "
                "else remove it yourself if it is not needed"
                if obs.kind is Kind.FILE else
                f"preserved {self.target(rel)}: {obs.describe()} that aikito did not create; "
                "it is left untouched (remove it yourself if it is not needed)",
                self.target(rel),
            ))
        dirs = [rel for rel, obs in self.entries.items() if obs.kind is Kind.DIR]
        dirs.sort(key=lambda r: (-r.count("/"), r))
        for rel in dirs:
            if rel in self.ancestors or rel in self.desired:
                # A directory at a desired target is a CONFLICT ([P1]), never pruned.
                continue
            kids = children.get(rel, [])
            if not kids:
                if rel not in self.desired:
                    self.findings.append(Finding(
                        "memory.empty_directory", "warning",
                        f"preserved empty directory {self.target(rel)}: aikito removes only "
                        "directories its own unlinks empty (an interrupted run can leave "
                        "one behind) — rmdir it yourself if it is not needed",
                        self.target(rel),
                    ))
                continue
            if all(k in self.removed for k in kids):
                self.removed.add(rel)
                self.op(Action.UNLINK, R_STALE, rel,
                        "directory left empty by the planned unlinks",
                        entry="directory", observed=self.entries[rel])

    # -- [P1] desired targets ----------------------------------------------------------

    def plan_target(self, res: Resource) -> None:
        rel = res.rel
        obs = self.entries.get(rel, ABSENT)
        if (res.problem is None and obs.kind is Kind.LINK and obs.literal == res.source
                and rel not in self.removed):
            # The steady state, paid once per resource per sync: built directly ([P6]).
            self.ops.append(Operation(Action.NOOP, R_NOOP, self.view.path,
                                      f"{self.base}/{rel}", "already linked", res.name,
                                      res.source, None, "link", obs))
            return
        kw: dict[str, object] = {"resource": res.name, "source": res.source, "observed": obs}
        if res.problem is not None:
            if res.missing and not res.is_notes and obs.kind in (Kind.FILE, Kind.DIR):
                # The content is here, not in the workspace: adopt moves it there and
                # links it back.
                remedy = (f"aikito adopt {quote(self.target(rel))} (moves it to {res.source} and "
                          f"links it back), or remove {res.name!r} from memory in "
                          f"{self.config_path}")
            elif res.missing:
                remedy = (f"create {res.source}, or remove {res.name!r} from memory "
                          f"in {self.config_path}")
            else:
                remedy = (f"make {res.source} a regular file or directory inside the "
                          f"workspace, or remove {res.name!r} from memory in {self.config_path}")
            if res.is_notes:
                remedy = (f"make {res.source} a real directory (or remove it); "
                          "project notes are exposed only as a directory")
            self.op(Action.CONFLICT, R_PRESERVE if res.missing else R_UNSAFE, rel,
                    res.problem, remedy=remedy, **kw)
            return
        for anc in _ancestors(rel) if "/" in rel else ():
            a_obs = self.entries.get(anc, ABSENT)
            if a_obs.exists and a_obs.kind is not Kind.DIR:
                # [O4]: a CONFLICT for this resource — even when it is aikito's own link
                # for a former reference (then the remedy says it is safe to remove).
                former = owns(a_obs.literal, self.link_dir(anc),
                              history(self.workspace, anc, self.notes_history))
                if former is not None:
                    remedy = (f"remove the link {self.target(anc)}: it is aikito's link to "
                              f"the former source {former}, nothing is lost — then run again")
                elif a_obs.kind is Kind.MOUNT:
                    remedy = _unmount(self.target(anc), res.name, self.config_path)
                else:
                    remedy = (f"move {self.target(anc)} out of the way; aikito never removes "
                              "what it does not own")
                self.op(
                    Action.CONFLICT, R_PRESERVE, rel,
                    f"{self.target(anc)} is {a_obs.describe()}; expected a real directory "
                    f"to hold {self.target(rel)}",
                    remedy=remedy, **kw,
                )
                return
        expected = f"a symlink to {res.source!r}"
        if obs.kind is Kind.ABSENT:
            self.op(Action.CREATE, R_CREATE, rel, "target missing", **kw)
            return
        if obs.kind is Kind.LINK:
            link_dir = self.link_dir(rel)
            if owns(obs.literal, link_dir, (res.source,)):
                self.op(Action.NOOP, R_NOOP, rel, "already linked", **kw)
                return
            current, legacy = self.notes_history
            if res.is_notes and res.source == current and owns(obs.literal, link_dir,
                                                                 (legacy,)):
                # [P1]: the one replacement — aikito's link to the legacy notes while the
                # notes are now current: UNLINK + CREATE on the same target.
                self.removed.add(rel)
                self.op(Action.UNLINK, R_STALE, rel,
                        f"aikito's link to the legacy notes {legacy} is replaced",
                        resource=res.name, source=legacy, observed=obs)
                self.op(Action.CREATE, R_NOTES, rel,
                        f"link to the current notes replaces the link to the legacy notes "
                        f"{legacy}",
                        **kw)
                return
            if obs.literal == moved_literal(self.moved_from, self.workspace, res.source):
                # [L4]: the same resource under the workspace's old root.
                self.op(Action.CREATE, R_MOVED, rel, f"relinked from {self.moved_from}", **kw)
                return
            former = owns(obs.literal, link_dir,
                          history(self.workspace, rel, self.notes_history))
            remedy = (f"remove the link {self.target(rel)}: it is aikito's link to the "
                      f"former source {former}, nothing is lost — then run again"
                      if former is not None else
                      f"remove the link {self.target(rel)} if you no longer need it "
                      "(aikito never replaces links it does not own)")
            self.op(
                Action.CONFLICT, R_PRESERVE, rel,
                f"found {obs.describe()}; expected {expected}", remedy=remedy, **kw,
            )
            return
        self.op(
            Action.CONFLICT, R_PRESERVE, rel,
            f"found {obs.describe()}; expected {expected}",
            remedy=_unmount(self.target(rel), res.name, self.config_path)
            if obs.kind is Kind.MOUNT else
            _adopt_remedy(self.target(rel), res, obs, self.config_path),
            **kw,
        )

    def dirs(self) -> tuple[tuple[str, Observed], ...]:
        v = self.view
        out = [("", v.root), (AGENTS_DIR, v.agents), (MEMORY_DIR, v.memory)]
        for anc in sorted(self.ancestors):
            out.append((f"{MEMORY_DIR}/{anc}", self.entries.get(anc, ABSENT)))
        return tuple(out)


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def quote(word: str) -> str:
    """``word`` as one shell word (what ``shlex.quote`` writes, without importing it:
    the planner imports nothing but the model), so a remedy can be pasted ([U2])."""
    if word and all(ch in _SAFE for ch in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _unmount(target: str, name: str, config_path: str) -> str:
    """The remedy for a mount point where a link or a real directory is needed ([E5])."""
    return (f"unmount {target} (aikito never writes into, looks into or removes another "
            f"mounted filesystem), or remove {name!r} from memory in {config_path}")


def _adopt_remedy(target: str, res: Resource, obs: Observed, config_path: str) -> str:
    """The remedy for a file or directory at a desired memory target: ``aikito adopt``
    where adopting resolves it (a reference: the content moves into the workspace, or an
    identical copy is replaced by the link), else moving it out of the way."""
    if not res.is_notes and obs.kind in (Kind.FILE, Kind.DIR):
        return (f"aikito adopt {quote(target)} (replaces it with the link when it is an "
                "identical "
                f"copy of {res.source}; shows the differences otherwise), or move it out of "
                f"the way, or remove {res.name!r} from memory in {config_path}")
    return (f"move {target} out of the way (aikito never overwrites it), or remove "
            f"{res.name!r} from memory in {config_path}")


def _checkout_conflict(view: CheckoutView, rel: str, found: Observed, what: str) -> Operation:
    target = f"{view.path}/{rel}" if rel else view.path
    return Operation(
        Action.CONFLICT, R_PRESERVE, view.path, target,
        f"{target} is {found.describe()}; expected {what}",
        remedy=f"move {target} out of the way and run again; aikito never writes through "
        "or replaces it",
        observed=found,
    )


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
    ops: list[tuple[tuple[int, str, int], Operation]] = []
    findings: list[Finding] = [*config.findings, *resources.findings]
    planned: list[CheckoutPlan] = []
    shadowed = [r for r in resources.resources if r.shadowed]
    for index, view in enumerate(checkouts):
        co_ops: list[Operation] = []
        co_findings: list[Finding] = []
        dirs: tuple[tuple[str, Observed], ...] = (("", view.root),)
        state = view.state
        if state is CheckoutState.OFFLINE:
            for res in resources.resources:
                co_ops.append(Operation(
                    Action.SKIP, R_OFFLINE, view.path, memory_target(view.path, res.rel),
                    f"checkout offline: {view.reason or 'path does not exist'}",
                    resource=res.name, source=res.source,
                ))
        elif state is CheckoutState.INVALID or view.root.kind is not Kind.DIR:
            state = CheckoutState.INVALID
            co_ops.append(_checkout_conflict(view, "", view.root, "a directory")
                          if view.reason is None else Operation(
                              Action.CONFLICT, R_PRESERVE, view.path, view.path, view.reason,
                              remedy="fix the checkout path in agent.toml or its permissions",
                              observed=view.root))
        elif view.agents.exists and view.agents.kind is not Kind.DIR:
            co_ops.append(_checkout_conflict(view, AGENTS_DIR, view.agents, "a real directory"))
            dirs = (("", view.root), (AGENTS_DIR, view.agents))
        elif view.memory.exists and view.memory.kind is not Kind.DIR:
            co_ops.append(_checkout_conflict(view, MEMORY_DIR, view.memory, "a real directory"))
            dirs = (("", view.root), (AGENTS_DIR, view.agents), (MEMORY_DIR, view.memory))
        else:
            cp = _CheckoutPlanner(view, resources, workspace, config.config_path, moved_from)
            cp.plan_stale()
            for res in resources.resources:
                if res.shadowed:
                    continue
                cp.plan_target(res)
            for res in shadowed:
                co_ops.append(Operation(
                    Action.SKIP, R_SHADOW, view.path, cp.target(res.rel),
                    "shadowed by project notes", resource=res.name, source=res.source,
                ))
            co_ops.extend(cp.ops)
            co_findings.extend(cp.findings)
            dirs = cp.dirs()
        planned.append(CheckoutPlan(view.label, view.path, state, view.reason, dirs))
        for op in co_ops:
            ops.append(((index, op.target, 0 if op.action is _UNLINK else 1), op))
        co_findings.sort(key=lambda f: (f.path or "", f.code))
        findings.extend(co_findings)
    ops.sort(key=lambda pair: pair[0])

    used: set[str | None] = set()
    linked: set[str | None] = set()
    for _, op in ops:
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
        sources=tuple(checks[p] for p in sorted(checks)),
        checkouts=tuple(planned),
        operations=tuple(op for _, op in ops),
        findings=tuple(findings),
        explicit_path=explicit_path,
        register=register,
        config_sha256=config.sha256 if register is not None else None,
        config_digest=config.sha256,
        home=home,
        worktrees=config.worktrees,
        moved_from=moved_from,
    )
