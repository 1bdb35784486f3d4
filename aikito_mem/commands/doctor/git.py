"""Doctor's git room: what git says about each checkout, and the one fix doctor makes.

Questions (read-only, ``GIT_OPTIONAL_LOCKS=0``, no fsmonitor hook, each within
:data:`GIT_TIMEOUT` seconds): is the checkout a git work tree, which of the runtime
directories :data:`ENTRIES` git ignores there (``git check-ignore``), and which exclude
file the repository reads (``git rev-parse --git-path info/exclude``: the one file every
worktree of a repository shares).

The fix (``aikito doctor --fix``) appends the entries git does not ignore to that exclude
file — once per exclude file, however many checkouts share it:

- the file is opened ``O_APPEND`` (plus ``O_NOFOLLOW``, inside its ``info`` directory
  opened ``O_NOFOLLOW``): the lines already there are never rewritten, and a symlink —
  at ``info`` or at ``exclude`` — is refused, never written through; anything but a
  regular file is refused;
- the lines already present are read through the same descriptor just before the write,
  so a second run (or a line written meanwhile) appends nothing: idempotent;
- a file that does not end with a newline gets one first, so no existing line changes;
- ``info/`` and ``exclude`` are created when missing (``git init --template=`` leaves
  them out).
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Iterable

import attrs

from aikito_mem import signals
from aikito_mem.fsutil import read_regular, write_all
from aikito_mem.layout import IGNORED

#: The runtime directories of a checkout that git must ignore: their links name absolute
#: paths of this machine.  Instruction targets (``AGENTS.md``…) are the user's to decide.
ENTRIES = IGNORED
#: Seconds one git question may take; a git that blocks (a hung network filesystem, a
#: lock) is reported for its checkout instead of stopping doctor.
GIT_TIMEOUT = 10.0
#: The comment written above the lines the fix appends.
COMMENT = "# runtime links of aikito (paths of this machine): aikito doctor --fix"
#: Largest exclude file the fix reads (bytes).
MAX_EXCLUDE = 1 << 20


def git(args: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    """One read-only git question in ``cwd``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    # Reading the index runs a configured fsmonitor hook (any command): never ask for it.
    # Paths git prints are bytes: decode them as the os module does.
    return subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", cwd, *args],
                          capture_output=True, text=True, errors="surrogateescape",
                          env=env, timeout=GIT_TIMEOUT, check=False)


@attrs.frozen
class GitCheckout:
    """One checkout that is a git work tree, as git sees it."""

    checkout: str
    project: str
    label: str
    #: The absolute path of the exclude file the repository reads.
    exclude: str
    #: The :data:`ENTRIES` git does not ignore in this checkout.
    missing: tuple[str, ...]
    #: Those of ``missing`` that the exclude file lists already (a ``.gitignore`` rule
    #: re-includes them: appending again cannot help).
    overridden: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"checkout {self.label} ({self.checkout})"


@attrs.frozen
class Fix:
    """One exclude file the fix appends to."""

    path: str
    lines: tuple[str, ...]
    #: The checkouts that read this exclude file and miss a line.
    checkouts: tuple[str, ...]
    #: ``planned`` (``--dry-run``), ``applied``, ``unchanged`` (every line was there by
    #: the time of the write) or ``failed``.
    status: str = "planned"
    error: str | None = None

    @property
    def message(self) -> str:
        what = " and ".join(self.lines)
        n = len(self.checkouts)
        shared = f" (read by {n} checkouts)" if n > 1 else ""
        if self.status == "applied":
            return f"added {what} to {self.path}{shared}"
        if self.status == "failed":
            return f"could not add {what} to {self.path}: {self.error}"
        if self.status == "unchanged":
            return f"{self.path} lists {what} already"
        return f"would add {what} to {self.path}{shared}"


def _lines(data: bytes) -> set[str]:
    return {line.strip() for line in data.decode("utf-8", "surrogateescape").splitlines()}


def _present(exclude: str) -> set[str]:
    """The lines of ``exclude`` (none when it cannot be read: the fix will say why)."""
    try:
        data, _st = read_regular(exclude, limit=MAX_EXCLUDE)
    except (OSError, ValueError):
        return set()
    return _lines(data)


def inspect(checkout: str, project: str, label: str) -> GitCheckout | None:
    """What git says about ``checkout``; ``None`` outside a git work tree.  Raises
    ``FileNotFoundError`` (no git), ``subprocess.TimeoutExpired``, ``OSError``, or
    :class:`GitFailed` when git answers with an error."""
    inside = git(["rev-parse", "--is-inside-work-tree"], checkout)
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    # Trailing slashes: a directory pattern matches before the directory exists.
    asked = git(["check-ignore", *ENTRIES], checkout)
    if asked.returncode not in (0, 1):
        raise GitFailed(asked.stderr.strip() or f"exit {asked.returncode}")
    ignored = set(asked.stdout.splitlines())
    missing = tuple(e for e in ENTRIES if e not in ignored)
    found = git(["rev-parse", "--git-path", "info/exclude"], checkout)
    exclude = found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else \
        ".git/info/exclude"
    exclude = os.path.normpath(os.path.join(checkout, exclude))
    overridden = tuple(sorted(set(missing) & _present(exclude), key=ENTRIES.index)) \
        if missing else ()
    return GitCheckout(checkout, project, label, exclude, missing, overridden)


class GitFailed(Exception):
    """git answered a question with an error."""


def plan_fixes(states: Iterable[GitCheckout]) -> tuple[Fix, ...]:
    """One :class:`Fix` per exclude file some checkout needs lines in (the lines no
    checkout's exclude file lists already), in the order the files were first met."""
    lines: dict[str, list[str]] = {}
    users: dict[str, list[str]] = {}
    for state in states:
        wanted = [e for e in state.missing if e not in state.overridden]
        if not wanted:
            continue
        key = state.exclude
        have = lines.setdefault(key, [])
        have.extend(e for e in wanted if e not in have)
        if state.checkout not in users.setdefault(key, []):
            users[key].append(state.checkout)
    return tuple(Fix(path, tuple(sorted(found, key=ENTRIES.index)), tuple(users[path]))
                 for path, found in lines.items())


def apply_fix(fix: Fix) -> Fix:
    """Append ``fix.lines`` (those still missing) to ``fix.path``; the fix with its
    outcome.  Never raises an ``OSError``: a failure is the fix's ``error``.  Nothing is
    created or written once a signal was received ([E5])."""
    signals.check()
    try:
        added = _append(fix.path, fix.lines)
    except OSError as exc:
        # O_NOFOLLOW: ELOOP for a symlinked file; with O_DIRECTORY, ENOTDIR for a
        # symlinked directory.
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR
                                        and os.path.islink(os.path.dirname(fix.path))):
            why = "it (or its info directory) is a symlink; aikito never writes through one"
        else:
            why = exc.strerror or str(exc)
        return attrs.evolve(fix, status="failed", error=f"{why} — add the lines yourself")
    if not added:
        return attrs.evolve(fix, status="unchanged")
    return attrs.evolve(fix, status="applied", lines=added)


def _append(path: str, lines: tuple[str, ...]) -> tuple[str, ...]:
    """Append those of ``lines`` the file does not have; the lines appended."""
    info, name = os.path.split(path)
    nofollow_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(info, nofollow_dir)
    except FileNotFoundError:
        os.mkdir(info, 0o755)
        dir_fd = os.open(info, nofollow_dir)
    try:
        flags = (os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                 | os.O_CLOEXEC | os.O_NOCTTY)
        fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file", path)
        if st.st_size > MAX_EXCLUDE:
            raise OSError(errno.EFBIG, f"it is larger than {MAX_EXCLUDE} bytes", path)
        data = os.pread(fd, st.st_size, 0)
        present = _lines(data)
        todo = tuple(line for line in lines if line not in present)
        if not todo:
            return ()  # written meanwhile: nothing to add
        head = "\n" if data and not data.endswith(b"\n") else ""
        comment = () if COMMENT in present else (COMMENT,)
        payload = head + "".join(f"{line}\n" for line in (*comment, *todo))
        write_all(fd, payload.encode("utf-8"))
        os.fsync(fd)
        return todo
    finally:
        os.close(fd)
