"""Verification before the first write ([E2]): every observation the plan recorded ([P5])
is re-checked against the live world — ``agent.toml``, the project memory root, every
source, and per checkout its root, ``.agents``, ``.agents/memory``, every intermediate
directory and every target (NOOP targets included).  The result is the list of every
difference found, named; an empty list means the plan still describes the world.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable

from aikito_mem import observe
from aikito_mem.lock import Locks
from aikito_mem.model import (
    Action,
    CheckoutPlan,
    CheckoutState,
    Kind,
    Observed,
    Operation,
    Plan,
)


def _what(obs: Observed) -> str:
    return obs.describe()


def _same(recorded: Observed, live: Observed, *, identity: bool) -> bool:
    if recorded.kind is not live.kind:
        return False
    if recorded.kind is Kind.LINK and recorded.literal != live.literal:
        return False
    if identity and recorded.kind is not Kind.ABSENT:
        if (recorded.dev, recorded.ino) != (live.dev, live.ino):
            return False
        if recorded.gen is not None and live.gen is not None and recorded.gen != live.gen:
            return False
    return True


def _short(plan: Plan, path: str) -> str:
    prefix = plan.workspace + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def verify(plan: Plan, locks: Locks) -> list[str]:
    """Every difference between the recorded observations and the live world."""
    from aikito_mem.config import parse_project_config
    from aikito_mem.errors import ConfigError
    from aikito_mem.fsutil import sha256_hex
    from aikito_mem.projects import read_config_bytes

    diffs: list[str] = []
    # agent.toml: the memory list, the candidates, the bytes when registering.  Re-parsed
    # only when its bytes changed (a parse of 10,000 references is not free).
    try:
        data, project_dir, config_path = read_config_bytes(plan.workspace, plan.project)
    except ConfigError as exc:
        diffs.append(f"agent.toml can no longer be read: {exc.message}")
    else:
        digest = sha256_hex(data)
        if plan.config_sha256 is not None and digest != plan.config_sha256:
            diffs.append(f"agent.toml bytes changed since planning ({plan.config_path})")
        if digest != plan.config_digest:
            try:
                config = parse_project_config(
                    data, name=plan.project, project_dir=project_dir,
                    config_path=config_path, home=plan.home or "",
                )
            except ConfigError as exc:
                diffs.append(f"agent.toml can no longer be loaded: {exc.message}")
            else:
                if config.memory != plan.memory:
                    diffs.append(f"agent.toml memory list changed ({plan.config_path})")
                if config.candidates != plan.candidates:
                    diffs.append(f"agent.toml checkout paths changed ({plan.config_path})")
    pm = f"{plan.workspace}/projects/{plan.project}/memory"
    if observe.lstat(pm).exists != plan.project_memory_exists:
        diffs.append(
            f"project memory root {pm} "
            + ("appeared" if not plan.project_memory_exists else "disappeared")
            + " (the notes source changes)"
        )
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
    by_checkout = _by_checkout(plan)
    for co in plan.checkouts:
        if co.state is not CheckoutState.ACTIVE:
            continue
        fd = locks.fds.get(co.path)
        if fd is None:
            diffs.append(f"checkout {co.path} can no longer be opened")
            continue
        diffs.extend(_verify_checkout(co, fd, by_checkout.get(co.path, ())))
    return diffs


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


def _by_checkout(plan: Plan) -> dict[str, list[tuple[int, Operation]]]:
    """Operations grouped by checkout once, so per-checkout passes stay linear ([P6])."""
    groups: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        groups.setdefault(op.checkout, []).append((i, op))
    return groups


def _verify_checkout(
    co: CheckoutPlan, fd: int, ops: Iterable[tuple[int, Operation]]
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
        live = observe.lstat_link(rel, dir_fd=fd)
        if rec.gen is not None and live.kind is Kind.DIR:
            live = observe.with_identity(rel, live, dir_fd=fd)
        if not _same(rec, live, identity=True):
            diffs.append(f"{co.path}/{rel} is now {_what(live)} (was {_what(rec)})")
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
        if op.action not in (Action.CREATE, Action.NOOP, Action.UNLINK):
            continue
        rel = op.target[len(prefix):]
        if not_dirs and rel.startswith(not_dirs):
            continue
        live = observe.lstat_link(rel, dir_fd=fd)
        if not _same(op.observed, live, identity=True):
            diffs.append(f"target {op.target} is now {_what(live)} "
                         f"(was {_what(op.observed)})")
    return list(dict.fromkeys(diffs))
