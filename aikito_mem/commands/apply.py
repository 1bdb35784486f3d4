"""``aikito apply PLANFILE``: a saved plan is untrusted input ([E9]).

Its checksum catches accidents, not tampering: anyone can recompute it.  So a saved plan
is never executed as it is.  :func:`apply_plan`

1. checks the workspace: the plan names one; ``--workspace`` / ``AIKITO_DIR`` naming
   another is a configuration error (exit 4);
2. loads the plan's project and takes the locks of the checkouts the live ``agent.toml``
   (or the plan's explicit path) selects ([E3]);
3. plans afresh, under the locks, with the same engine — the plan's project, explicit path
   and registration choice;
4. compares: the fresh plan must equal the saved one checkout for checkout (label, path,
   state) and operation for operation (segment, action, target, source, entry, rule,
   resource), with the same header (workspace, ``agent.toml`` path, memory list,
   candidates, notes source, explicit path, registration and its digest) and the same
   recorded checks (source paths and whether each is checked by identity; the directories
   of each checkout).  A saved plan blocked by conflicts and otherwise equal is refused as
   blocked (exit 1);
5. verifies the saved plan's recorded observations ([E2]) — restricted to the paths the
   fresh plan also has, so no path that only the file names is ever looked at;
6. any difference from 4 or 5 → :class:`~aikito_mem.errors.StalePlanError` (exit 3), every
   difference named, nothing written; otherwise the *fresh* plan — equal to the saved one
   in every field that writes, and made by the engine — is executed (verification again,
   the writer's own check of :mod:`aikito_mem.executor.guard`, then the writes).

Texts of a saved plan (reasons, remedies, findings) are never shown: the result is the
fresh plan's.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from aikito_mem import layout
from aikito_mem.errors import ConfigError, PlanFileError, StalePlanError
from aikito_mem.model import Action, CheckoutState, Operation, Plan, SyncResult
from aikito_mem.values import PlanKind, replace

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.api import Project

__all__ = ["apply_plan", "apply_plan_file", "compare", "read_saved"]


def read_saved(path: str) -> Plan:
    """The plan saved at ``path``: size-limited, regular file only, strictly decoded
    (:func:`aikito_mem.executor.planfile.read_plan`); any defect is a ``PlanFileError`` (exit 4)."""
    from aikito_mem.executor.planfile import read_plan

    return read_plan(path)


def apply_plan_file(
    path: str,
    *,
    workspace: str | None = None,
    environ: Mapping[str, str] | None = None,
    lock_timeout: float = 30.0,
) -> SyncResult:
    """Read the plan saved at ``path`` and apply it (:func:`apply_plan`)."""
    return apply_plan(read_saved(path), workspace=workspace, environ=environ,
                      lock_timeout=lock_timeout, planfile=path)


def _remedy(saved: Plan, planfile: str | None) -> str:
    out = f" --out {shlex.quote(planfile)}" if planfile else ""
    explicit = f" {shlex.quote(saved.explicit_path)}" if saved.explicit_path else ""
    return f"aikito sync project {shlex.quote(saved.project)}{explicit} --dry-run{out}"


def _workspace(saved: Plan, option: str | None, environ: Mapping[str, str] | None,
               planfile: str | None) -> Any:
    """The workspace to apply in: the plan's own, which ``--workspace``/``AIKITO_DIR``
    must not contradict (SPEC §9)."""
    from aikito_mem.config.discovery import Workspace, resolve_workspace

    env = os.environ if environ is None else environ
    label = f"plan file {planfile!r}" if planfile else "the plan"
    if option is not None or env.get("AIKITO_DIR"):
        ws = resolve_workspace(option, environ=environ)
        if ws.root != saved.workspace:
            raise PlanFileError(
                f"{label} is for workspace {saved.workspace}, but the workspace given "
                f"({ws.found_via}) is {ws.root} — apply it without --workspace/AIKITO_DIR, "
                "or plan again for this workspace",
                path=planfile, code="plan.foreign",
            )
        return ws
    root = os.path.realpath(saved.workspace)
    if not os.path.isdir(os.path.join(root, layout.PROJECTS_ROOT)):
        raise PlanFileError(
            f"{label} is for workspace {saved.workspace}, which has no projects/ directory "
            f"now; expected the workspace the plan was made in — plan again: "
            f"{_remedy(saved, planfile)}",
            path=planfile, code="plan.workspace",
        )
    # A workspace path that no longer is physical is a difference the comparison names.
    return Workspace(root=root, found_via="plan file", given=saved.workspace)


def apply_plan(
    saved: Plan,
    *,
    workspace: str | None = None,
    environ: Mapping[str, str] | None = None,
    lock_timeout: float = 30.0,
    planfile: str | None = None,
) -> SyncResult:
    """Apply a plan from an untrusted place: re-plan under the locks, compare, verify,
    then execute the fresh plan (see the module documentation).

    ``workspace`` is the ``--workspace`` option (``None``: not given); ``planfile`` only
    names the file in messages.  Raises ``ConfigError``/``PlanFileError`` (4),
    ``ConflictError`` (1), ``StalePlanError`` (3), ``LockBusyError`` (6),
    ``ExecutionError`` (5) like a sync.
    """
    from aikito_mem import signals
    from aikito_mem.executor.execute import execute
    from aikito_mem.executor.lock import Locks

    with Locks() as locks:
        # Nothing is written before execution: a signal stops the run at once ([E5]).
        with signals.interruptible():
            project, fresh = _fresh_and_equal(saved, workspace, environ, lock_timeout,
                                              planfile, locks)
        # A blocked plan is refused here (exit 1).
        return execute(fresh, locks=locks, environ=environ, config=project.config,
                       home=project.home)


def _fresh_and_equal(saved: Plan, workspace: str | None, environ: Mapping[str, str] | None,
                     lock_timeout: float, planfile: str | None, locks: Any
                     ) -> tuple[Project, Plan]:
    """The project and its fresh plan, made under ``locks``; raises unless the plan equals
    ``saved`` and the saved observations verify (a blocked plan equal to the saved one is
    returned as it is: it is refused as blocked before verification)."""
    from aikito_mem.api import Project
    from aikito_mem.executor.execute import refused

    if saved.kind is not PlanKind.SYNC:
        label = f"plan file {planfile!r}" if planfile else "the plan"
        raise PlanFileError(
            f"{label} says it is a {saved.kind.value} plan; expected a sync plan (only "
            "`aikito sync project --dry-run --out` saves plans) — plan again: "
            f"{_remedy(saved, planfile)}", path=planfile, code="plan.kind")
    ws = _workspace(saved, workspace, environ, planfile)
    project = Project.load(saved.project, ws, environ=environ)
    try:
        fresh = project.plan_locked(saved.explicit_path, register=saved.register is not None,
                                    locks=locks, lock_timeout=lock_timeout,
                                    moved_from=saved.moved_from)
    except ConfigError as exc:
        if exc.code != "config.checkout_path":
            raise
        # The explicit checkout is gone or no longer a directory: the world changed.
        diff = f"checkout {saved.explicit_path} can no longer be opened: {exc.message}"
        raise StalePlanError(_stale_message([diff], saved, planfile),
                             differences=(diff,), result=refused(saved, "stale")) from None
    differences = compare(saved, fresh)
    if not differences and fresh.blocked:
        return project, fresh
    diffs = list(dict.fromkeys([*_verify(saved, fresh, locks, environ), *differences]))
    if diffs:
        raise StalePlanError(_stale_message(diffs, saved, planfile),
                             differences=tuple(diffs), result=refused(saved, "stale"))
    return project, fresh


def _stale_message(diffs: list[str], saved: Plan, planfile: str | None) -> str:
    return ("the plan is stale — it is not what the engine plans now (the world changed "
            "since it was made, or the plan was edited); nothing was written. Plan again: "
            f"{_remedy(saved, planfile)}\n  - " + "\n  - ".join(diffs))


# -- verification of the saved plan, on engine-derived paths only ([E2]) -----------------


def _verify(saved: Plan, fresh: Plan, locks: Any, environ: Mapping[str, str] | None
            ) -> list[str]:
    """[E2] for the saved plan's recorded observations, restricted to the paths the fresh
    plan derives too — its checkouts, their directories and targets, and source paths
    inside the workspace (the comparison names everything else)."""
    if saved.workspace != fresh.workspace or saved.project != fresh.project:
        return []
    from aikito_mem.executor.verify import verify

    sources = {c.path for c in fresh.sources}
    inside = fresh.workspace.rstrip("/") + "/"

    def derived(path: str) -> bool:
        # A source check the fresh plan has, or any clean path inside the workspace (a
        # source that vanished is not in the fresh plan's checks, and is named so).
        return path in sources or (path.startswith(inside) and posixpath.normpath(path) == path)

    dirs = {co.path: {rel for rel, _ in co.dirs} for co in fresh.checkouts}
    targets = {(op.checkout, op.target) for op in fresh.operations}
    restricted = attrs.evolve(
        saved,
        sources=tuple(c for c in saved.sources if derived(c.path)),
        checkouts=tuple(
            replace(co, dirs=tuple((rel, obs) for rel, obs in co.dirs
                                   if rel in dirs[co.path]))
            for co in saved.checkouts if co.path in dirs
        ),
        operations=tuple(op for op in saved.operations
                         if (op.checkout, op.target) in targets),
    )
    return verify(restricted, locks, environ=environ)


# -- comparison ([E9]) -------------------------------------------------------------------


def _op_key(op: Operation) -> tuple[object, ...]:
    return (op.segment, op.action, op.target, op.source, op.entry, op.rule, op.resource)


def _op_words(op: Operation) -> str:
    words = f"{op.segment.value} {op.action.value} {op.target}"
    if op.action is Action.UNLINK and op.entry == "directory":
        words += " (directory)"
    elif op.source is not None and op.action is not Action.UNLINK:
        words += f" -> {op.source}"
    return words + f" [{op.rule}]"


def _header(saved: Plan, fresh: Plan) -> Iterable[str]:
    config = fresh.config_path
    if saved.workspace != fresh.workspace:
        yield f"workspace: the plan names {saved.workspace!r}, it is {fresh.workspace} now"
    if saved.config_path != fresh.config_path:
        yield (f"agent.toml: the plan names {saved.config_path!r}, the project's is "
               f"{fresh.config_path}")
    if saved.memory != fresh.memory:
        yield f"agent.toml memory list changed ({config})"
    if saved.candidates != fresh.candidates:
        yield f"agent.toml checkout paths changed ({config})"
    if saved.explicit_path != fresh.explicit_path:
        yield (f"explicit checkout: the plan names {saved.explicit_path!r}, planning afresh "
               f"gives {fresh.explicit_path!r}")
    if saved.register != fresh.register:
        yield (f"registration: the plan registers {saved.register!r}, planning afresh "
               f"registers {fresh.register!r}")
    elif saved.config_sha256 != fresh.config_sha256:
        yield f"agent.toml bytes changed since planning ({config})"
    if saved.project_memory_exists != fresh.project_memory_exists:
        yield (f"project memory root {layout.project_memory(fresh.workspace, fresh.project)}: the "
               f"plan says it {'exists' if saved.project_memory_exists else 'is absent'}, "
               f"it {'exists' if fresh.project_memory_exists else 'is absent'} now")
    if (saved.notes_source, saved.notes_location) != (fresh.notes_source,
                                                      fresh.notes_location):
        yield (f"notes source: the plan says {saved.notes_source!r} "
               f"({saved.notes_location}), planning afresh gives {fresh.notes_source!r} "
               f"({fresh.notes_location})")
    if saved.skills != fresh.skills:
        yield (f"agent.toml skills list: the plan says {list(saved.skills)}, it is "
               f"{list(fresh.skills)} now ({config})")
    if _instructions(saved) != _instructions(fresh):
        yield (f"project instructions: the plan says {_instructions(saved)}, planning "
               f"afresh gives {_instructions(fresh)}")
    if saved.instruction_targets != fresh.instruction_targets:
        yield ("instruction targets (paths, agents, detection) differ from the agent "
               "registry's now")
    if saved.agent != fresh.agent:
        yield f"agent: the plan is for {saved.agent!r}, planning afresh for {fresh.agent!r}"
    if saved.worktrees != fresh.worktrees:
        yield (f"agent.toml worktrees: the plan says {saved.worktrees}, it is "
               f"{fresh.worktrees} now ({config})")


def _instructions(plan: Plan) -> object:
    """The instructions source as compared: path, state, problem and which paths are
    checked how (the observations themselves are verified, [E2])."""
    src = plan.instructions
    if src is None:
        return None
    checks = [(c.path, c.identity) for c in src.checks]
    return (src.path, src.state.value, src.problem, checks)


def _checkouts(saved: Plan, fresh: Plan) -> Iterable[str]:
    old = {co.path: co for co in saved.checkouts}
    new = {co.path: co for co in fresh.checkouts}
    if len(old) != len(saved.checkouts):
        yield "the plan lists a checkout more than once"
    for co in saved.checkouts:
        now = new.get(co.path)
        if now is None:
            yield (f"checkout {co.path} ({co.label}, {co.state.value}) is in the plan but "
                   "not among the checkouts planned afresh")
        elif (co.label, co.state) != (now.label, now.state):
            yield (f"checkout {co.path}: the plan says {co.label} {co.state.value}, it is "
                   f"{now.label} {now.state.value} now")
        elif co.state is CheckoutState.ACTIVE:
            rels = [rel for rel, _ in co.dirs]
            fresh_rels = [rel for rel, _ in now.dirs]
            if rels != fresh_rels:
                extra = sorted(set(rels) - set(fresh_rels))
                missing = sorted(set(fresh_rels) - set(rels))
                yield (f"checkout {co.path}: the plan records the directories {rels!r}, "
                       f"planning afresh relies on {fresh_rels!r}"
                       + (f" (not derived: {extra!r})" if extra else "")
                       + (f" (not recorded: {missing!r})" if missing else ""))
    for co in fresh.checkouts:
        if co.path not in old:
            yield (f"checkout {co.path} ({co.label}, {co.state.value}) is not in the plan")
    common = [c.path for c in saved.checkouts if c.path in new]
    if common != [c.path for c in fresh.checkouts if c.path in old]:
        yield "the checkouts are in another order than planning afresh gives"


def _sources(saved: Plan, fresh: Plan) -> Iterable[str]:
    old = {c.path: c.identity for c in saved.sources}
    new = {c.path: c.identity for c in fresh.sources}
    for path, identity in old.items():
        if path not in new:
            yield f"the plan checks {path}, which is no source planning afresh derives"
        elif identity != new[path]:
            if new[path]:
                yield (f"source {path} needs a link created now, which the plan does not "
                       "create (the plan checks only its type)")
            else:
                yield (f"source {path} needs no link created now, but the plan creates one "
                       "(the plan checks its identity)")
    for path in new:
        if path not in old:
            yield f"source {path} is not checked by the plan"
    if len(old) != len(saved.sources):
        yield "the plan checks a source more than once"


def _operations(saved: Plan, fresh: Plan) -> Iterable[str]:
    def grouped(plan: Plan) -> dict[str, list[Operation]]:
        out: dict[str, list[Operation]] = {}
        for op in plan.operations:
            out.setdefault(op.checkout, []).append(op)
        return out

    old, new = grouped(saved), grouped(fresh)
    for checkout in dict.fromkeys([*old, *new]):
        mine, theirs = old.get(checkout, []), new.get(checkout, [])
        if [_op_key(o) for o in mine] == [_op_key(o) for o in theirs]:
            continue
        by_target: dict[str, tuple[list[Operation], list[Operation]]] = {}
        for op in mine:
            by_target.setdefault(op.target, ([], []))[0].append(op)
        for op in theirs:
            by_target.setdefault(op.target, ([], []))[1].append(op)
        named = False
        for target, (a, b) in by_target.items():
            if [_op_key(o) for o in a] == [_op_key(o) for o in b]:
                continue
            named = True
            if not b:
                yield (f"the plan has {'; '.join(map(_op_words, a))}, which planning "
                       "afresh does not give")
            elif not a:
                yield (f"planning afresh gives {'; '.join(map(_op_words, b))} "
                       f"({b[-1].reason}), which the plan does not have")
            else:
                yield (f"{target}: the plan has {'; '.join(map(_op_words, a))}, planning "
                       f"afresh gives {'; '.join(map(_op_words, b))} ({b[-1].reason})")
        if not named:
            yield f"the operations of checkout {checkout} are in another order"


def compare(saved: Plan, fresh: Plan) -> list[str]:
    """Every way ``saved`` differs from ``fresh`` in what it writes or relies on ([E9]);
    texts (reasons, remedies, findings) and observations are not compared here (the
    observations are verified, [E2])."""
    return list(dict.fromkeys([
        *_header(saved, fresh),
        *_checkouts(saved, fresh),
        *_sources(saved, fresh),
        *_operations(saved, fresh),
    ]))
