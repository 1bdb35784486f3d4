"""The executor: the only room that writes ([E1]–[E6]).

Sequence: refuse a blocked plan → take the per-checkout locks (unless the caller already
holds them) → re-check every recorded observation → register the checkout (compare-and-
swap) → per checkout: unlinks and pruning, directory creation, links.

Every write goes through a directory descriptor opened with ``O_NOFOLLOW`` from the
checkout root's descriptor, is preceded by its own just-in-time check, and uses only
no-clobber primitives (``symlinkat`` fails on an existing entry; ``unlinkat`` is preceded by
a ``readlinkat`` proving ownership; ``rmdir`` refuses a non-empty directory).
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType

from aikito_mem import observe
from aikito_mem.errors import (
    ConflictError,
    ExecutionError,
    InterruptedError_,
    LockBusyError,
    StalePlanError,
)
from aikito_mem.model import (
    Action,
    CheckoutPlan,
    CheckoutState,
    Kind,
    Observed,
    Operation,
    Plan,
    Segment,
    Status,
    SyncResult,
)
from aikito_mem.planner import MEMORY_DIR

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

#: Test seam (issue 4): called as ``hook(op)`` just before each write syscall.
before_write: Callable[[Operation], None] | None = None


class _Drift(Exception):
    """A just-in-time check found the world changed: stop, exit 3."""


# -- locking ([E3]) ---------------------------------------------------------------------


def open_root(path: str) -> int:
    return os.open(path, _DIR_FLAGS)


def lock_fd(fd: int, path: str, timeout: float) -> None:
    """``flock(LOCK_EX)`` on the checkout root descriptor, waiting up to ``timeout``."""
    deadline = time.monotonic() + max(timeout, 0.0)
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockBusyError(
                    f"checkout {path} is busy: another sync holds its lock (flock on the "
                    f"checkout directory) and did not release it within {timeout:g} s — "
                    "wait for it to finish, or raise --lock-timeout",
                    path=path, timeout=timeout,
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


class Locks:
    """Held checkout locks: physical path → root descriptor.  Taken in sorted order."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}

    def acquire(self, paths: list[str], timeout: float) -> list[str]:
        """Lock every path that can be opened; return the paths that could not be."""
        failed: list[str] = []
        for path in sorted(set(paths)):
            if path in self.fds:
                continue
            try:
                fd = open_root(path)
            except OSError:
                failed.append(path)
                continue
            try:
                lock_fd(fd, path, timeout)
            except BaseException:
                os.close(fd)
                raise
            self.fds[path] = fd
        return failed

    def release(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def __enter__(self) -> Locks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# -- verification ([E2]) ---------------------------------------------------------------


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
    from aikito_mem.config import parse_project_config, read_config_bytes, sha256_hex
    from aikito_mem.errors import ConfigError

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


# -- writes ([E4], [E5]) -----------------------------------------------------------------


class _Signals:
    """SIGINT/SIGTERM: finish the operation in flight, then stop ([E5])."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._old: dict[int, object] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum

    @contextmanager
    def installed(self) -> Iterator[_Signals]:
        import threading

        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handler)
        try:
            yield self
        finally:
            for num, old in self._old.items():
                signal.signal(num, old)  # type: ignore[arg-type]


class _Writer:
    """Writes one checkout through ``O_NOFOLLOW`` directory descriptors."""

    def __init__(self, co: CheckoutPlan, root_fd: int) -> None:
        self.co = co
        self.root_fd = root_fd
        self.fds: dict[str, int] = {}
        #: (dev, ino) of each held descriptor, by descriptor.
        self.ids: dict[int, tuple[int, int]] = {}
        self.recorded = dict(co.dirs)
        #: Entries this run removed (so a directory may be created in their place).
        self.removed: set[str] = set()

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()
        self.ids.clear()

    def dir_fd(self, rel: str, *, create: bool) -> int:
        """Descriptor of directory ``rel`` (relative to the checkout root)."""
        if not rel:
            return self.root_fd
        fd = self.fds.get(rel)
        if fd is not None:
            return fd
        parent, _, name = rel.rpartition("/")
        pfd = self.dir_fd(parent, create=create)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
        except FileNotFoundError:
            was = self.recorded.get(rel, Observed(Kind.ABSENT))
            if not create or (was.exists and rel not in self.removed):
                raise _Drift(f"{self.co.path}/{rel} vanished") from None
            try:
                os.mkdir(name, dir_fd=pfd)
            except FileExistsError:
                raise _Drift(f"{self.co.path}/{rel} appeared while being created") from None
            fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Drift(f"{self.co.path}/{rel} is no longer a real directory") from None
            raise
        self.fds[rel] = fd
        return fd

    def forget(self, rel: str) -> None:
        fd = self.fds.pop(rel, None)
        if fd is not None:
            self.ids.pop(fd, None)
            os.close(fd)

    def split(self, op: Operation) -> tuple[int, str, str]:
        rel = op.target[len(self.co.path) + 1:]
        parent, _, name = rel.rpartition("/")
        pfd = self.dir_fd(parent, create=op.action is Action.CREATE)
        self.attached(parent)
        return pfd, name, rel

    def _fd_id(self, fd: int) -> tuple[int, int]:
        ident = self.ids.get(fd)
        if ident is None:
            st = os.fstat(fd)
            ident = self.ids[fd] = (st.st_dev, st.st_ino)
        return ident

    def attached(self, rel: str) -> None:
        """Prove the held descriptors still sit where the plan put them: the checkout root
        at its path, and each directory down to ``rel`` under its parent.  A directory
        moved elsewhere (the checkout renamed, ``.agents/memory`` moved out) is drift, so
        no write follows a moved directory (issue 4)."""
        try:
            st = os.stat(self.co.path, follow_symlinks=False)
            live = (st.st_dev, st.st_ino)
        except OSError:
            live = None
        if live != self._fd_id(self.root_fd):
            raise _Drift(f"checkout {self.co.path} was moved or replaced during execution")
        if not rel:
            return
        parts = rel.split("/")
        pfd = self.root_fd
        for i, part in enumerate(parts):
            sub = "/".join(parts[: i + 1])
            fd = self.fds[sub]
            try:
                st = os.stat(part, dir_fd=pfd, follow_symlinks=False)
                live = (st.st_dev, st.st_ino)
            except OSError:
                live = None
            if live != self._fd_id(fd):
                raise _Drift(f"{self.co.path}/{sub} was moved or replaced during execution")
            pfd = fd

    def unlink(self, op: Operation) -> None:
        pfd, name, _ = self.split(op)
        live = observe.lstat_link(name, dir_fd=pfd)
        if live.kind is not Kind.LINK or live.literal != op.observed.literal:
            raise _Drift(f"target {op.target} is now {live.describe()} "
                         f"(was {op.observed.describe()})")
        if before_write is not None:
            before_write(op)
        os.unlink(name, dir_fd=pfd)
        self.removed.add(op.target[len(self.co.path) + 1:])

    def rmdir(self, op: Operation) -> None:
        pfd, name, rel = self.split(op)
        self.forget(rel)
        live = observe.lstat(name, dir_fd=pfd)
        if live.kind is not Kind.DIR or live.ino != op.observed.ino:
            raise _Drift(f"directory {op.target} is now {live.describe()}")
        if before_write is not None:
            before_write(op)
        try:
            os.rmdir(name, dir_fd=pfd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise _Drift(f"directory {op.target} is no longer empty") from None
            raise
        self.removed.add(rel)

    def symlink(self, op: Operation) -> None:
        pfd, name, _ = self.split(op)
        live = observe.lstat(name, dir_fd=pfd)
        if live.exists:
            raise _Drift(f"target {op.target} appeared ({live.describe()})")
        if before_write is not None:
            before_write(op)
        assert op.source is not None
        try:
            os.symlink(op.source, name, dir_fd=pfd)
        except FileExistsError:
            raise _Drift(f"target {op.target} appeared") from None


def _write_order(plan: Plan, ops: Iterable[tuple[int, Operation]]) -> list[int]:
    """Indices of ``co``'s writes in [E4] order: unlinks, prunes (deepest first), links."""
    unlinks: list[int] = []
    prunes: list[int] = []
    links: list[int] = []
    for i, op in ops:
        if op.action is Action.UNLINK:
            (prunes if op.entry == "directory" else unlinks).append(i)
        elif op.action is Action.CREATE:
            links.append(i)
    prunes.sort(key=lambda i: -plan.operations[i].target.count("/"))
    return unlinks + prunes + links


def _final_statuses(plan: Plan, applied: set[int], unknown: set[int],
                    dry_run: bool = False) -> tuple[Status, ...]:
    out = []
    for i, op in enumerate(plan.operations):
        if dry_run:
            out.append(Status.PLANNED)
        elif op.action is Action.NOOP:
            out.append(Status.UNCHANGED)
        elif op.action is Action.SKIP:
            out.append(Status.SKIPPED)
        elif i in applied:
            out.append(Status.APPLIED)
        elif i in unknown:
            out.append(Status.UNKNOWN)
        else:
            out.append(Status.NOT_APPLIED)
    return tuple(out)


def refused(plan: Plan, outcome: str) -> SyncResult:
    """The result of a plan nothing was done for: every operation ``not_applied``."""
    return SyncResult(
        plan, tuple(Status.NOT_APPLIED for _ in plan.operations), outcome,
        segments=(Segment("memory", False),),
    )


def execute(
    plan: Plan,
    *,
    locks: Locks | None = None,
    lock_timeout: float = 30.0,
    always_verify: bool = False,
) -> SyncResult:
    """Execute ``plan`` exactly; raise on conflict, drift, failure or signal."""
    if plan.blocked:
        n = len(plan.conflicts)
        raise ConflictError(
            f"plan for project {plan.project!r} has {n} conflict{'s' * (n != 1)}; "
            "nothing was written — resolve them as each one says and run again",
            conflicts=plan.conflicts, plan=plan,
        )
    own_locks = locks is None
    held = locks if locks is not None else Locks()
    signals = _Signals()
    with signals.installed():
        return _locked(plan, held, own_locks, lock_timeout, always_verify, signals)


def _locked(plan: Plan, held: Locks, own_locks: bool, lock_timeout: float,
            always_verify: bool, signals: _Signals) -> SyncResult:
    try:
        active = [co.path for co in plan.checkouts if co.state is CheckoutState.ACTIVE]
        if own_locks:
            held.acquire(active, lock_timeout)
        if plan.has_changes or always_verify:
            diffs = verify(plan, held)
            if diffs:
                raise StalePlanError(
                    "the plan is stale — the world changed since it was made; nothing was "
                    "written. Run the sync again to plan afresh:\n  - " + "\n  - ".join(diffs),
                    differences=tuple(diffs), result=refused(plan, "stale"),
                )
        return _apply(plan, held, signals)
    finally:
        if own_locks:
            held.release()


def _apply(plan: Plan, locks: Locks, signals: _Signals) -> SyncResult:
    applied: set[int] = set()
    unknown: set[int] = set()
    registered = False

    def result(outcome: str, success: bool, errors: dict[int, str] | None = None) -> SyncResult:
        errs = errors or {}
        return SyncResult(
            plan, _final_statuses(plan, applied, unknown), outcome,
            errors=tuple(errs.get(i) for i in range(len(plan.operations))),
            segments=(Segment("memory", success),), registered=registered,
        )

    if plan.register is not None:
        from aikito_mem.register import register_checkout

        assert plan.config_sha256 is not None
        try:
            register_checkout(plan.config_path, plan.register,
                              expected_sha256=plan.config_sha256)
        except StalePlanError as exc:
            exc.result = refused(plan, "stale")
            raise
        except OSError as exc:
            raise ExecutionError(
                f"could not register {plan.register} in {plan.config_path}: {exc.strerror}; "
                "nothing else was written — fix the cause and run again",
                result=refused(plan, "failed"), path=plan.config_path,
            ) from None
        registered = True

    by_checkout = _by_checkout(plan) if plan.changes else {}
    for co in plan.checkouts:
        if co.state is not CheckoutState.ACTIVE:
            continue
        order = _write_order(plan, by_checkout.get(co.path, ()))
        if not order:
            continue
        writer = _Writer(co, locks.fds[co.path])
        try:
            for i in order:
                if signals.received is not None:
                    signum = signals.received
                    name = signal.Signals(signum).name
                    raise InterruptedError_(
                        f"interrupted by {name}: the operation in flight was finished, "
                        "the rest was not applied — run the sync again to converge",
                        signum=signum, result=result("interrupted", False),
                    )
                op = plan.operations[i]
                try:
                    if op.action is Action.CREATE:
                        writer.dir_fd(MEMORY_DIR, create=True)
                        writer.symlink(op)
                    elif op.entry == "directory":
                        writer.rmdir(op)
                    else:
                        writer.unlink(op)
                except _Drift as exc:
                    msg = str(exc)
                    raise StalePlanError(
                        f"the plan went stale during execution: {msg}; stopped — "
                        "run the sync again to converge",
                        differences=(msg,),
                        result=result("stale", False, {i: msg}),
                    ) from None
                except OSError as exc:
                    if exc.errno == errno.EIO:
                        unknown.add(i)
                    text = f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno or 0, '?')})"
                    raise ExecutionError(
                        f"{op.action.value} {op.target} failed: {text}; stopped — "
                        f"{len(applied)} operation(s) applied, the rest not applied. Fix "
                        "the cause and run again; the next run converges",
                        result=result("failed", False, {i: text}), path=op.target,
                    ) from None
                applied.add(i)
        finally:
            writer.close()
    if signals.received is not None:
        # The signal arrived during the last operation: it was finished, and the run
        # still reports the interruption ([E5]).
        signum = signals.received
        raise InterruptedError_(
            f"interrupted by {signal.Signals(signum).name} after the last operation "
            "finished; every operation was applied",
            signum=signum, result=result("interrupted", False),
        )
    changed = bool(applied) or registered
    return result("applied" if changed else "unchanged", True)


def planned_result(plan: Plan) -> SyncResult:
    """The result document of a dry run: every operation ``planned``."""
    return SyncResult(
        plan, _final_statuses(plan, set(), set(), dry_run=True),
        "blocked" if plan.blocked else "planned",
        segments=(Segment("memory", not plan.blocked),), dry_run=True,
    )
