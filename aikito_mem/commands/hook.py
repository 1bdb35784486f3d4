"""``aikito hook install|uninstall [PATH]``: the ``post-checkout`` hook that syncs a new
git worktree ([L6]).

The hook goes into the repository's hooks directory as git names it
(``git rev-parse --git-path hooks``: ``core.hooksPath`` respected, one directory for
every worktree).  Run by git after ``git worktree add`` (its first argument the null
commit, its third ``1``), it runs ``aikito sync project --quiet`` in the new worktree
(which finds its project and workspace as any command does, [W1]) and never fails git:
exit 0 always, one line on stderr when aikito is missing or the sync failed.

- ``install`` creates the hook (executable, ``O_EXCL``: never replacing anything);
  its own byte-identical hook there already is a NOOP (exit 0); any other
  ``post-checkout`` is never overwritten: the report gives the one line to add to it,
  exit 1.  ``--dry-run`` says what it would do and writes nothing.
- ``uninstall`` removes the hook only when it is byte-identical to the one ``install``
  writes (re-read just before the unlink); anything else there is left, exit 1.

Plain values in, a frozen :class:`HookReport` out; git is asked through
:mod:`aikito_mem.world.git`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from enum import Enum

import attrs

from aikito_mem import fsutil, signals
from aikito_mem.errors import EXIT_CONFLICT, EXIT_OK, AikitoError, ConfigError, exit_code_for

HOOK_NAME = "post-checkout"
#: Largest hook file read to compare it (bytes).
MAX_HOOK = 1 << 20

#: The one line that does the hook's job, for an existing hook to add.
HOOK_LINE = ('[ "$3" = 1 ] && [ -z "$(printf %s "$1" | tr -d 0)" ] && '
             '{ aikito sync project --quiet || echo "aikito: the new worktree was not '
             'synced; run: aikito sync project" >&2; }; true')

#: The hook ``install`` writes (and the only one ``uninstall`` removes).
HOOK = b"""#!/bin/sh
# aikito: sync the links of a new git worktree (written by aikito hook install;
# removed by aikito hook uninstall).  It never fails git: it always exits 0.
# post-checkout arguments: the previous HEAD (the null commit for a new worktree),
# the new HEAD, and 1 for a branch checkout.
[ "$3" = 1 ] || exit 0
case "$1" in *[!0]*) exit 0 ;; esac
if ! command -v aikito >/dev/null 2>&1; then
  echo "aikito: not found on PATH; the new worktree was not synced" >&2
  exit 0
fi
# COLUMNS: the message unwrapped, so its one line below is all of it.
if ! out=$(COLUMNS=10000 aikito sync project --quiet 2>&1); then
  echo "aikito: the new worktree was not synced: $(printf '%s\\n' "$out" | head -n 1)" >&2
fi
exit 0
"""


class HookAction(Enum):
    INSTALL = "install"
    UNINSTALL = "uninstall"


class HookOutcome(Enum):
    """What became of the hook."""

    CREATED = "created"
    PLANNED = "planned"  # --dry-run: would be created / removed
    UNCHANGED = "unchanged"  # install: ours already; uninstall: none there
    REMOVED = "removed"
    REFUSED = "refused"  # another hook there: never overwritten nor removed


@attrs.frozen
class HookReport:
    action: HookAction
    #: The work tree the command was given (absolute).
    path: str | None
    #: ``<hooks>/post-checkout``.
    hook: str | None = None
    outcome: HookOutcome | None = None
    dry_run: bool = False
    error: AikitoError | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return exit_code_for(self.error)
        return EXIT_CONFLICT if self.outcome is HookOutcome.REFUSED else EXIT_OK


def _hooks_dir(path: str) -> str:
    from aikito_mem.world import git

    tree = git.work_tree(path)
    if isinstance(tree, git.Unavailable):
        raise ConfigError(f"{path}: {tree.reason}; the hook cannot be placed — check that "
                          f"git works there: git -C '{path}' status", code="hook.git",
                          path=path)
    if not isinstance(tree, git.WorkTree):
        raise ConfigError(f"{path} is not inside a git work tree; expected a checkout of a "
                          "git repository (aikito hook install PATH)",
                          code="hook.not_a_work_tree", path=path)
    hooks = git.git_path(path, "hooks")
    if not isinstance(hooks, str):
        reason = hooks.reason if isinstance(hooks, git.Unavailable) else "no hooks directory"
        raise ConfigError(f"{path}: {reason}", code="hook.git", path=path)
    return hooks


def _given(path: str | None) -> str:
    from aikito_mem.config.discovery import current_directory, expand_home, home_directory

    if path is None:
        return current_directory()
    expanded = expand_home(path, home_directory())
    full = expanded if os.path.isabs(expanded) else os.path.join(current_directory(), expanded)
    if not os.path.isdir(full):
        raise ConfigError(f"{full} is not a directory; expected a git checkout",
                          code="hook.not_a_directory", path=full)
    return os.path.normpath(full)


def _open_hooks(hooks: str, *, create: bool) -> int | None:
    """A descriptor of the hooks directory (``O_NOFOLLOW``); ``None`` when it is missing
    and ``create`` is false.  A missing one is made (one level) when ``create``."""
    try:
        return fsutil.open_dir(hooks)
    except FileNotFoundError:
        if not create:
            return None
    signals.check()
    os.mkdir(hooks, 0o755)
    return fsutil.open_dir(hooks)


def _read_hook(dir_fd: int) -> bytes | None:
    """The bytes of the hook (``None``: none there); a symlink or non-regular file reads
    as ``b"\\0"`` (never aikito's, never followed)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(HOOK_NAME, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            return b"\0"
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HOOK:
            return b"\0"
        return os.read(fd, MAX_HOOK + 1)
    finally:
        os.close(fd)


def _create(dir_fd: int) -> None:
    """Write :data:`HOOK`, executable, never over anything ([L6])."""
    fd, temp = fsutil.create_temp(dir_fd, HOOK_NAME, mode=0o777)
    done = False
    try:
        fsutil.write_all(fd, HOOK)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        signals.check()
        fsutil.rename_noreplace(temp, HOOK_NAME, dir_fd=dir_fd)
        done = True
    finally:
        if fd >= 0:
            os.close(fd)
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
    fsutil.fsync_dir(dir_fd)


def _report(action: HookAction, path: str | None, dry_run: bool) -> tuple[HookReport, str]:
    """The report of ``aikito hook ACTION [PATH]`` before anything is looked at, and the
    hooks directory of PATH's repository."""
    where = _given(path)
    hooks = _hooks_dir(where)
    return HookReport(action, where, f"{hooks}/{HOOK_NAME}", dry_run=dry_run), hooks


def install(path: str | None, *, dry_run: bool = False) -> HookReport:
    """``aikito hook install [PATH] [--dry-run]``."""
    report, hooks = _report(HookAction.INSTALL, path, dry_run)
    dir_fd = _open_hooks(hooks, create=not dry_run)
    if dir_fd is None:
        return attrs.evolve(report, outcome=HookOutcome.PLANNED)
    try:
        found = _read_hook(dir_fd)
        if found == HOOK:
            return attrs.evolve(report, outcome=HookOutcome.UNCHANGED)
        if found is not None:
            return attrs.evolve(report, outcome=HookOutcome.REFUSED)
        if dry_run:
            return attrs.evolve(report, outcome=HookOutcome.PLANNED)
        signals.check()
        try:
            _create(dir_fd)
        except FileExistsError:  # one appeared meanwhile: never replaced
            return attrs.evolve(report, outcome=HookOutcome.REFUSED)
        return attrs.evolve(report, outcome=HookOutcome.CREATED)
    finally:
        os.close(dir_fd)


def uninstall(path: str | None, *, dry_run: bool = False) -> HookReport:
    """``aikito hook uninstall [PATH] [--dry-run]``."""
    report, hooks = _report(HookAction.UNINSTALL, path, dry_run)
    dir_fd = _open_hooks(hooks, create=False)
    if dir_fd is None:
        return attrs.evolve(report, outcome=HookOutcome.UNCHANGED)
    try:
        found = _read_hook(dir_fd)
        if found is None:
            return attrs.evolve(report, outcome=HookOutcome.UNCHANGED)
        if found != HOOK:
            return attrs.evolve(report, outcome=HookOutcome.REFUSED)
        if dry_run:
            return attrs.evolve(report, outcome=HookOutcome.PLANNED)
        signals.check()
        if _read_hook(dir_fd) != HOOK:  # the check just before the unlink
            return attrs.evolve(report, outcome=HookOutcome.REFUSED)
        os.unlink(HOOK_NAME, dir_fd=dir_fd)
        fsutil.fsync_dir(dir_fd)
        return attrs.evolve(report, outcome=HookOutcome.REMOVED)
    finally:
        os.close(dir_fd)
