"""Verification before the first write ([E2]): every observation the plan recorded ([P5])
is re-checked against the live world — ``agent.toml``, the project memory root, every
source, and per checkout its root (its path still naming the locked directory, [E3]),
``.agents``, ``.agents/memory``, every intermediate directory and every target (NOOP
targets included).  The result is the list of every difference found, named; an empty
list means the plan still describes the world.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterable, Iterator, Mapping

from aikito_mem import layout
from aikito_mem.executor.lock import Locks
from aikito_mem.fsutil import DIR_NOFOLLOW
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutPlan,
    CheckoutState,
    Kind,
    Observed,
    Operation,
    Plan,
)
from aikito_mem.planner.skills import R_TRACKED
from aikito_mem.values import PlanKind
from aikito_mem.world import observe

#: A path that vanished, or whose directory is now a non-directory or a symlink.
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


def _what(obs: Observed, was: Observed | None = None) -> str:
    """Words for ``obs``; ``another directory`` when it replaced the directory ``was``."""
    if (was is not None and obs.kind is was.kind and obs.kind is not Kind.ABSENT
            and obs.literal == was.literal):
        what = "symlink with the same literal" if obs.kind is Kind.LINK else obs.kind.value
        return f"another {what} (replaced, moved or mounted over since planning)"
    return obs.describe()


def _same(recorded: Observed, live: Observed, *, identity: bool, entry: bool = False
          ) -> bool:
    """Whether ``live`` is what was recorded.

    With ``identity`` the identity is compared too, observed the same way it was recorded:
    a directory by ``lstat`` (``st_dev``, ``st_ino``; the generation when recorded).  For
    an ``entry`` under ``.agents/memory`` that is not a directory, by its inode number
    alone: it was recorded from ``getdents`` (``d_ino``, equal to ``st_ino`` for every
    non-directory on every Linux filesystem) inside a directory whose own identity is
    verified — overlayfs may report another ``st_dev`` for a non-directory than for its
    directory.
    """
    if recorded.kind is not live.kind:
        return False
    if recorded.kind is Kind.LINK and recorded.literal != live.literal:
        return False
    if identity and recorded.kind is not Kind.ABSENT:
        if recorded.ino != live.ino:
            return False
        if not entry or recorded.kind in (Kind.DIR, Kind.MOUNT):
            if recorded.dev != live.dev:
                return False
            if (recorded.gen is not None and live.gen is not None
                    and recorded.gen != live.gen):
                return False
    return True


def _short(plan: Plan, path: str) -> str:
    prefix = plan.workspace + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def verify(plan: Plan, locks: Locks, *, environ: Mapping[str, str] | None = None
           ) -> list[str]:
    """Every difference between the recorded observations and the live world.

    ``environ`` is the environment the plan was made with ([H5]: the agent detection it
    recorded is re-checked with the same ``PATH``; ``None``: the process's)."""
    if environ is None:
        environ = os.environ
    if plan.kind is PlanKind.CLEAN:
        return _verify_clean(plan, locks, environ)
    diffs = _config_differences(plan)
    # Skills and instructions ([G7]): the instructions source and the agent registry.
    diffs.extend(segment_differences(plan, environ, plan.home or None))
    pm = layout.project_memory(plan.workspace, plan.project)
    if observe.lstat(pm).exists != plan.project_memory_exists:
        diffs.append(
            f"project memory root {pm} "
            + ("appeared" if not plan.project_memory_exists else "disappeared")
            + " (the notes source changes)"
        )
    diffs.extend(_source_differences(plan))
    diffs.extend(_checkout_differences(plan, locks))
    return diffs


def _config_differences(plan: Plan) -> list[str]:
    """agent.toml: the memory list, the candidates, the skills, worktrees, the bytes when
    registering.  Re-parsed only when its bytes changed (a parse of 10,000 references is
    not free)."""
    from aikito_mem.config.agent_toml import parse_project_config
    from aikito_mem.config.projects import read_config_bytes
    from aikito_mem.errors import ConfigError
    from aikito_mem.fsutil import sha256_hex

    try:
        data, project_dir, config_path = read_config_bytes(plan.workspace, plan.project)
    except ConfigError as exc:
        return [f"agent.toml can no longer be read: {exc.message}"]
    diffs: list[str] = []
    recorded = plan.config_sha256 is not None or plan.config_digest is not None
    digest = sha256_hex(data) if recorded else None
    if plan.config_sha256 is not None and digest != plan.config_sha256:
        diffs.append(f"agent.toml bytes changed since planning ({plan.config_path})")
    if digest is not None and digest == plan.config_digest:
        return diffs
    try:
        config = parse_project_config(data, name=plan.project, project_dir=project_dir,
                                      config_path=config_path, home=plan.home or "")
    except ConfigError as exc:
        return [*diffs, f"agent.toml can no longer be loaded: {exc.message}"]
    if config.memory != plan.memory:
        diffs.append(f"agent.toml memory list changed ({plan.config_path})")
    if config.candidates != plan.candidates:
        diffs.append(f"agent.toml checkout paths changed ({plan.config_path})")
    if tuple(sorted(config.skills)) != plan.skills:
        diffs.append(f"agent.toml skills list changed ({plan.config_path})")
    if config.worktrees != plan.worktrees:
        diffs.append(f"agent.toml worktrees changed ({plan.config_path})")
    return diffs


def _source_differences(plan: Plan) -> list[str]:
    """Every source the plan recorded, by type (and identity for one it links, [P5])."""
    diffs: list[str] = []
    for check in plan.sources:
        live = observe.lstat_link(check.path)
        if check.identity and live.kind in (Kind.FILE, Kind.DIR):
            live = observe.with_identity(check.path, live)
        if _same(check.observed, live, identity=check.identity):
            continue
        name = _short(plan, check.path)
        rec = check.observed
        if rec.kind is live.kind and check.identity:
            diffs.append(f"source {name} was deleted and recreated")
        elif live.kind is Kind.ABSENT:
            diffs.append(f"source {name} was deleted (was {_what(rec)})")
        elif rec.kind is Kind.ABSENT:
            diffs.append(f"source {name} appeared ({_what(live)})")
        else:
            diffs.append(f"source {name} is now {_what(live)} (was {_what(rec)})")
    return diffs


def _verify_clean(plan: Plan, locks: Locks, environ: Mapping[str, str]) -> list[str]:
    """[E2] for a clean plan ([L3]): the project's checkout paths (when it names a
    project), the instruction targets and the per-agent skills directories ([N1]) of the
    agent registry, and per checkout every directory and every target it was planned
    against."""
    from aikito_mem.config.registry_read import load_registry
    from aikito_mem.errors import ConfigError

    diffs: list[str] = []
    if plan.project:
        from aikito_mem.config.projects import load_project_config

        try:
            config = load_project_config(plan.workspace, plan.project)
        except ConfigError as exc:
            diffs.append(f"agent.toml can no longer be loaded: {exc.message}")
        else:
            if config.sha256 != plan.config_digest:
                diffs.append(f"agent.toml changed since planning ({plan.config_path})")
    try:
        registry = load_registry(plan.workspace)
    except ConfigError as exc:
        diffs.append(f"the agent registry can no longer be loaded: {exc.message}")
    else:
        live = tuple(t.path for t in registry.targets)
        planned = tuple(t.rel for t in plan.instruction_targets)
        if live != planned:
            diffs.append("instruction targets of the agent registry changed "
                         f"(now {list(live) or 'none'}, were {list(planned) or 'none'})")
        from aikito_mem.world import agent_skills
        from aikito_mem.world.segments import Detection

        # [N1]: the per-agent skills directories the clean looked in, as for a sync (a
        # clean records no detection, so none is asked again).
        diffs.extend(agent_skills.differences(plan, registry,
                                              Detection(registry, environ, plan.home or None)))
    diffs.extend(_checkout_differences(plan, locks))
    return diffs


def _checkout_differences(plan: Plan, locks: Locks) -> list[str]:
    """Every active checkout of ``plan`` re-checked through its locked descriptor: a sync's
    and a clean's verification alike ([E2])."""
    diffs: list[str] = []
    by_checkout = operations_by_checkout(plan)
    for co in plan.checkouts:
        if co.state is not CheckoutState.ACTIVE:
            continue
        fd = locks.fds.get(co.path)
        if fd is None:
            diffs.append(f"checkout {co.path} can no longer be opened")
            continue
        moved = _root_moved(co.path, fd)
        if moved is not None:
            diffs.append(moved)
            continue
        diffs.extend(_verify_checkout(co, fd, by_checkout.get(co.path, ())))
    return diffs


def _root_moved(path: str, fd: int) -> str | None:
    """[E2]/[E3]: the checkout path as recorded must still name the locked directory.

    The descriptor keeps the directory it opened, even once that directory is renamed
    away or removed (``mv``, ``rm -rf``, ``git worktree remove``): the path is looked at
    again as the plan did (``lstat``: a final symlink is never followed) and compared
    with the descriptor's ``fstat``.  While the descriptor is open its inode number
    cannot be reused, so (``st_dev``, ``st_ino``) is proof enough."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in _GONE:
            raise
        return f"checkout {path} no longer exists"
    held = os.fstat(fd)
    if (observe.kind_of(st.st_mode) is not Kind.DIR
            or (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino)):
        return f"checkout {path} was moved or replaced since planning"
    return None


def _fd_observed(fd: int) -> Observed:
    st = os.fstat(fd)
    obs = observe.from_stat(st)
    gen = None
    try:
        buf = fcntl.ioctl(fd, observe.FS_IOC_GETVERSION, b"\0" * 8)
        gen = int.from_bytes(buf[:4], "little")
    except OSError:
        pass
    return Observed(obs.kind, None, obs.dev, obs.ino, gen)


def operations_by_checkout(plan: Plan) -> dict[str, list[tuple[int, Operation]]]:
    """Operations grouped by checkout once, so per-checkout passes stay linear ([P6])."""
    groups: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        groups.setdefault(op.checkout, []).append((i, op))
    return groups


class _Tree:
    """Observes paths of one checkout relative to its root descriptor, one directory level
    at a time through ``O_NOFOLLOW`` descriptors: no path argument is longer than one name
    (a tree deeper than ``PATH_MAX`` verifies like any other, [E5]) and no intermediate
    symlink is ever followed."""

    def __init__(self, root_fd: int) -> None:
        #: Directory (relative path) → descriptor, or ``None`` when it cannot be reached.
        self.fds: dict[str, int | None] = {"": root_fd}
        self.root_fd = root_fd

    def close(self) -> None:
        for fd in self.fds.values():
            if fd is not None and fd != self.root_fd:
                os.close(fd)
        self.fds.clear()

    def dir(self, rel: str) -> int | None:
        """A descriptor of directory ``rel``; ``None`` when it is missing or not a real
        directory (its own observation names that difference)."""
        chain: list[str] = []
        cur = rel
        while cur not in self.fds:
            chain.append(cur)
            cur = cur.rpartition("/")[0]
        fd = self.fds[cur]
        for sub in reversed(chain):
            if fd is not None:
                try:
                    fd = os.open(sub.rpartition("/")[2], DIR_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in _GONE:
                        raise
                    fd = None
            self.fds[sub] = fd
        return fd

    def observe(self, rel: str, *, identity: bool = False) -> Observed:
        """``lstat`` (plus the literal of a link; plus the generation of a directory when
        ``identity``) of ``rel``; :data:`~aikito_mem.model.ABSENT` when unreachable."""
        parent, _, name = rel.rpartition("/")
        pfd = self.dir(parent)
        if pfd is None:
            return ABSENT
        live = observe.lstat_link(name, dir_fd=pfd)
        if identity and live.kind is Kind.DIR:
            live = observe.with_identity(name, live, dir_fd=pfd)
        return live


def _verify_checkout(
    co: CheckoutPlan, fd: int, ops: Iterable[tuple[int, Operation]]
) -> list[str]:
    tree = _Tree(fd)
    try:
        return _verify_tree(co, fd, tree, ops)
    finally:
        tree.close()


def _verify_tree(
    co: CheckoutPlan, fd: int, tree: _Tree, ops: Iterable[tuple[int, Operation]]
) -> list[str]:
    diffs: list[str] = []
    dirs = dict(co.dirs)
    root = dirs.get("")
    if root is not None and not _same(root, _fd_observed(fd), identity=True):
        return [f"checkout {co.path} was removed or replaced"]
    unsafe = False
    for rel, rec in co.dirs:
        if not rel:
            continue
        live = tree.observe(rel, identity=rec.gen is not None)
        if not _same(rec, live, identity=True):
            diffs.append(f"{co.path}/{rel} is now {_what(live, rec)} (was {_what(rec)})")
            unsafe = unsafe or live.kind not in (Kind.DIR, Kind.ABSENT)
    if unsafe:
        # A directory became something else (a symlink…): looking at targets below it
        # would look through it.  What was found is already a difference.
        return diffs
    prefix = f"{co.path}/"
    # Ancestors recorded as non-directories (an owned link the plan unlinks to make room
    # for a directory): a target below one is verified through that entry above, never
    # by following it (which would observe the source behind the link).
    not_dirs = tuple(f"{rel}/" for rel, rec in co.dirs
                     if rel and rec.exists and rec.kind is not Kind.DIR)
    for _, op in ops:
        if op.action not in (Action.CREATE, Action.NOOP, Action.UNLINK) and not (
                op.action is Action.SKIP and op.rule == R_TRACKED):
            # A target git tracks ([L1]) is re-checked by its entry's identity, never by
            # asking git again: the SKIP writes nothing, so what matters is that the
            # entry it was planned against is still the one there.
            continue
        rel = op.target[len(prefix):]
        if not_dirs and rel.startswith(not_dirs):
            continue
        live = tree.observe(rel)
        if not _same(op.observed, live, identity=True, entry=True):
            diffs.append(f"target {op.target} is now {_what(live, op.observed)} "
                         f"(was {_what(op.observed)})")
    return list(dict.fromkeys(diffs))


def prune_differences(plan: Plan, locks: Locks) -> list[str]:
    """[E2] for the directories ``plan`` prunes ([P2], [L3]): each was planned empty once
    the plan's own removals inside it are done, so an entry that appeared in one since is
    a difference — named before the first write rather than found by the ``rmdir`` after
    other writes.  Listed only where a prune is planned (never on a steady-state sync);
    run after the writer's guard, so a plan that prunes a directory aikito never prunes
    is refused as such ([E9])."""
    diffs: list[str] = []
    by_checkout = operations_by_checkout(plan)
    for co in plan.checkouts:
        ops = [op for _, op in by_checkout.get(co.path, ()) if op.action is Action.UNLINK]
        fd = locks.fds.get(co.path)
        if fd is None or not any(op.entry == "directory" for op in ops):
            continue
        tree = _Tree(fd)
        try:
            diffs.extend(_kept_entries(f"{co.path}/", tree, ops))
        finally:
            tree.close()
    return diffs


def _kept_entries(prefix: str, tree: _Tree, unlinks: list[Operation]) -> Iterator[str]:
    removed = {op.target[len(prefix):] for op in unlinks}
    for op in unlinks:
        if op.entry != "directory":
            continue
        rel = op.target[len(prefix):]
        fd = tree.dir(rel)
        if fd is None:
            continue  # gone or replaced: verification named that
        kept = sorted(n for n in os.listdir(fd) if f"{rel}/{n}" not in removed)
        if kept:
            yield (f"directory {op.target} now holds {', '.join(map(repr, kept))}, which "
                   "the plan does not remove (it was to be pruned, left empty)")


def segment_differences(plan: Plan, environ: Mapping[str, str],
                        home: str | None) -> list[str]:
    """[E2]/[G7]: what changed, since ``plan`` was made, in what the skills and
    instructions segments were planned from — the project instructions source (its state:
    absent, empty, with content, unsafe; and its identity) and the agent registry (each
    target's path and agents, and the detection the plan relied on).  A registry edit
    that changes neither is not a difference ([G6])."""
    from aikito_mem.config.registry_read import load_registry
    from aikito_mem.errors import ConfigError
    from aikito_mem.world.segments import Detection, instruction_source

    out: list[str] = []
    recorded = plan.instructions
    if recorded is None:
        return out
    live = instruction_source(plan.workspace, plan.project, observe.Observer())
    if live.state is not recorded.state:
        out.append(f"project instructions {recorded.path} are now {live.state.value} "
                   f"(were {recorded.state.value})")
    else:
        for rec_check, live_check in zip(recorded.checks, live.checks, strict=False):
            a, b = rec_check.observed, live_check.observed
            if (a.kind, a.literal) != (b.kind, b.literal) or (
                    rec_check.identity and (a.dev, a.ino, a.gen) != (b.dev, b.ino, b.gen)):
                out.append(f"project instructions {recorded.path} were replaced "
                           f"(now {b.describe()}, was {a.describe()})")
                break
    try:
        registry = load_registry(plan.workspace)
    except ConfigError as exc:
        out.append(f"the agent registry can no longer be loaded: {exc.message}")
        return out
    from aikito_mem.world import agent_skills

    out.extend(agent_skills.differences(plan, registry, Detection(registry, environ, home)))
    targets = registry.targets if plan.agent is None else registry.targets_for(plan.agent)
    live_targets = [(t.path, t.agents) for t in targets]
    planned_targets = [(t.rel, t.agents) for t in plan.instruction_targets]
    if live_targets != planned_targets:
        out.append("instruction targets of the agent registry changed "
                   f"(now {live_targets or 'none'}, were {planned_targets or 'none'})")
        return out
    detect = Detection(registry, environ, home)
    for target, planned in zip(targets, plan.instruction_targets, strict=True):
        if planned.detected is not None and detect(target) is not planned.detected:
            word = "detected" if planned.detected else "not detected"
            out.append(f"agents of instruction target {target.path} "
                       f"({', '.join(target.agents)}) were {word} when planned; no longer")
    return out
