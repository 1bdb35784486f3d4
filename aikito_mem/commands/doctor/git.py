"""Doctor's git checks and its one fix: git excludes for every segment ([L2]).

What it asks (through :mod:`aikito_mem.world.git`: read-only, bounded, never raising),
per checkout that is a git work tree: which runtime paths of every segment —
``.agents/memory/``, ``.agents/skills/`` and each instruction target aikito links there
— git neither ignores (``git check-ignore``) nor tracks (``git ls-files``), and which
exclude file the repository reads (``git rev-parse --git-path info/exclude``: right in
linked worktrees, which share their repository's, and with ``--separate-git-dir``).
Where something under a runtime directory is tracked, the directory is never excluded:
the paths of aikito's own links there are, one by one.

The fix (``aikito doctor --fix``) writes anchored patterns (``/.agents/memory/``,
``/AGENTS.md``, ``/svc/.claude/CLAUDE.md`` for a checkout in a subdirectory) into that
file, once per exclude file however many checkouts share it:

- inside one marked block (:data:`BEGIN` … :data:`END`), rewritten in place on later
  runs; the lines outside it are never touched, and a pattern an earlier version wrote
  outside any block (``.agents/memory/``) counts as present; no line is ever duplicated;
- a directory pattern of the block that now covers a tracked path is dropped (replaced by
  the link patterns);
- through :func:`aikito_mem.fsutil.atomic_replace` in the ``info`` directory opened
  ``O_NOFOLLOW``; the file is read ``O_NOFOLLOW`` and re-read just before the rename
  (changed meanwhile: nothing is written); a symlink at ``info`` or ``exclude``, or
  anything but a regular file, is refused; ``info/`` and ``exclude`` are created when
  missing (``git init --template=`` leaves them out);
- never ``.gitignore``.

Doctor asks git again afterwards (``git check-ignore``) to confirm.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Mapping, Sequence

import attrs

from aikito_mem import signals
from aikito_mem.fsutil import atomic_replace
from aikito_mem.layout import IGNORED
from aikito_mem.world import git as git_room

#: The runtime directories of a checkout: their links name absolute paths of this
#: machine, so git must ignore them ([L2]).
ENTRIES = IGNORED
#: Seconds one git question may take (the git room's limit).
GIT_TIMEOUT = git_room.GIT_TIMEOUT
#: The lines that open and close the block the fix owns in an exclude file.
BEGIN = "# >>> aikito: runtime links of this machine (rewritten by aikito doctor --fix)"
END = "# <<< aikito"
#: Largest exclude file the fix reads (bytes).
MAX_EXCLUDE = 1 << 20


class GitUnavailable(Exception):
    """git could not answer about a checkout (missing, failing, too slow)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class GitCheckout:
    """One checkout that is a git work tree, as git sees it."""

    checkout: str
    project: str
    label: str
    #: The absolute path of the exclude file the repository reads.
    exclude: str
    #: The runtime paths (relative to the checkout) git neither ignores nor tracks.
    missing: tuple[str, ...]
    #: The anchored pattern of each of ``missing`` (relative to the work tree's top).
    patterns: tuple[str, ...] = ()
    #: Those of ``missing`` that the exclude file lists already (a ``.gitignore`` rule
    #: re-includes them: writing them again cannot help).
    overridden: tuple[str, ...] = ()
    #: Runtime directories holding a path git tracks: never excluded as a whole.
    tracked_dirs: tuple[str, ...] = ()
    #: The directory pattern of each of ``tracked_dirs`` (dropped from the block).
    tracked_patterns: tuple[str, ...] = ()
    #: Every runtime path asked about (for the "ok" message).
    asked: tuple[str, ...] = ENTRIES

    @property
    def where(self) -> str:
        return f"checkout {self.label} ({self.checkout})"


@attrs.frozen
class Fix:
    """One exclude file the fix writes."""

    path: str
    #: The patterns the block must hold.
    lines: tuple[str, ...]
    #: The checkouts that read this exclude file and miss a pattern.
    checkouts: tuple[str, ...]
    #: ``planned`` (``--dry-run``), ``applied``, ``unchanged`` (every pattern was there by
    #: the time of the write) or ``failed``.
    status: str = "planned"
    error: str | None = None
    #: Directory patterns to drop from the block: they would cover a tracked path.
    drop: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        what = words(self.lines)
        dropped = words(self.drop)
        n = len(self.checkouts)
        shared = f" (read by {n} checkouts)" if n > 1 else ""
        if self.status == "failed":
            return f"could not add {what or 'patterns'} to {self.path}: {self.error}"
        if self.status == "unchanged":
            return f"{self.path} lists {what or 'every pattern'} already"
        verb = ("added", "removed") if self.status == "applied" else (
            "would add", "would remove")
        parts = [f"{verb[0]} {what} to" if what else "", f"{verb[1]} {dropped} (it would "
                 "cover a path git tracks) from" if dropped else ""]
        return " and ".join(p for p in parts if p) + f" {self.path}{shared}"


# ------------------------------------------------------------------------ patterns


def words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def anchored(prefix: str, rel: str) -> str:
    """The pattern that ignores exactly ``rel`` of a checkout at ``prefix`` of its work
    tree: anchored with a leading ``/`` (``AGENTS.md`` alone would also ignore
    ``.agents/AGENTS.md`` and every nested ``AGENTS.md``), glob characters escaped."""
    escaped = "".join(f"\\{c}" if c in "*?[\\" else c for c in prefix + rel)
    if escaped.startswith(("#", "!")) or escaped[:1].isspace():
        escaped = "\\" + escaped
    return "/" + escaped


def normalised(line: str) -> str:
    """A pattern as git reads it for comparison: a slash at the start or in the middle
    anchors it, so ``.agents/memory/`` (what an earlier version wrote) is
    ``/.agents/memory/``."""
    text = line.strip()
    if text and not text.startswith(("/", "#", "!")) and "/" in text.rstrip("/"):
        return "/" + text
    return text


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "surrogateescape").splitlines()


# ------------------------------------------------------------------------ questions


def _answer(value: object) -> object:
    if isinstance(value, git_room.Unavailable):
        raise GitUnavailable(value.reason)
    return value


def inspect(checkout: str, project: str, label: str, *,
            instruction_targets: Sequence[str] = (),
            links: Mapping[str, Sequence[str]] | None = None) -> GitCheckout | None:
    """What git says about ``checkout``'s runtime paths; ``None`` outside a git work
    tree.  ``instruction_targets``: the instruction targets aikito links there;
    ``links``: per runtime directory (an entry of :data:`ENTRIES`), the paths of
    aikito's links in it (relative to the checkout).  Raises :class:`GitUnavailable`."""
    tree = _answer(git_room.work_tree(checkout))
    if not isinstance(tree, git_room.WorkTree):
        return None
    exclude = _answer(git_room.git_path(checkout, "info/exclude"))
    if not isinstance(exclude, str):
        return None
    dirs = [e.rstrip("/") for e in ENTRIES]
    tracked = _answer(git_room.tracked(checkout, [*dirs, *instruction_targets]))
    if not isinstance(tracked, frozenset):
        return None
    links = links or {}
    wanted: list[str] = []
    tracked_dirs: list[str] = []
    for entry in ENTRIES:
        if entry.rstrip("/") in tracked:
            tracked_dirs.append(entry)
            wanted.extend(links.get(entry, ()))
        else:
            wanted.append(entry)
    wanted.extend(instruction_targets)
    if tracked_dirs:  # a link's own path that git tracks (a committed link) is its own
        inside = _answer(git_room.tracked(checkout, [w for w in wanted
                                                     if not w.endswith("/")]))
        if isinstance(inside, frozenset):
            tracked = tracked | inside
    untracked = [w for w in dict.fromkeys(wanted) if w not in tracked]
    ignored = _answer(git_room.ignored(checkout, untracked))
    if not isinstance(ignored, dict):
        return None
    # A link ignored only by the directory pattern the fix drops (it would cover a
    # tracked path) needs a pattern of its own.
    dropped = {anchored(tree.prefix, d) for d in tracked_dirs}
    missing = tuple(w for w in untracked
                    if w not in ignored or normalised(ignored[w]) in dropped)
    patterns = tuple(anchored(tree.prefix, w) for w in missing)
    present = {normalised(line) for line in _present(exclude)}
    overridden = tuple(w for w, p in zip(missing, patterns, strict=True) if p in present)
    return GitCheckout(
        checkout, project, label, exclude, missing, patterns, overridden,
        tuple(tracked_dirs), tuple(anchored(tree.prefix, d) for d in tracked_dirs),
        tuple(dict.fromkeys(wanted)),
    )


def _present(exclude: str) -> list[str]:
    """The lines of ``exclude`` (none when it cannot be read: the fix will say why)."""
    try:
        data = _read(exclude)[0]
    except OSError:
        return []
    return _lines(data)


# ------------------------------------------------------------------------ the fix


def plan_fixes(states: Iterable[GitCheckout]) -> tuple[Fix, ...]:
    """One :class:`Fix` per exclude file some checkout needs patterns in (or whose block
    holds a directory pattern that covers a tracked path), in the order first met."""
    lines: dict[str, list[str]] = {}
    drop: dict[str, list[str]] = {}
    users: dict[str, list[str]] = {}
    for state in states:
        skip = set(state.overridden)
        wanted = [p for m, p in zip(state.missing, state.patterns, strict=True)
                  if m not in skip]
        block = _block(_present(state.exclude))[1] if state.tracked_patterns else []
        dropping = [p for p in state.tracked_patterns if p in {normalised(b) for b in block}]
        if not wanted and not dropping:
            continue
        key = state.exclude
        have = lines.setdefault(key, [])
        have.extend(p for p in wanted if p not in have)
        gone = drop.setdefault(key, [])
        gone.extend(p for p in dropping if p not in gone)
        if state.checkout not in users.setdefault(key, []):
            users[key].append(state.checkout)
    return tuple(Fix(path, tuple(found), tuple(users[path]), drop=tuple(drop[path]))
                 for path, found in lines.items())


def _block(lines: list[str]) -> tuple[int, list[str], int] | tuple[None, list[str], None]:
    """(index of :data:`BEGIN`, the lines between, index of :data:`END`) of the first
    complete block; ``(None, [], None)`` without one."""
    for i, line in enumerate(lines):
        if line.strip() == BEGIN:
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == END:
                    return i, lines[i + 1:j], j
            break
    return None, [], None


def rewrite(data: bytes, wanted: Sequence[str], drop: Sequence[str] = ()) -> bytes:
    """``data`` (an exclude file) with its block holding ``wanted`` as well: the block's
    lines kept (minus ``drop``), the patterns not present anywhere added; every line
    outside the block byte-identical.  Pure."""
    lines = _lines(data)
    start, block, end = _block(lines)
    gone = set(drop)
    kept = [line for line in block if normalised(line) not in gone]
    outside = lines if start is None or end is None else [*lines[:start], *lines[end + 1:]]
    present = {normalised(line) for line in (*outside, *kept)}
    added = [p for p in dict.fromkeys(wanted) if normalised(p) not in present]
    new_block = [*kept, *added]
    if start is not None and end is not None:
        if new_block == block:
            return data
        inner = [BEGIN, *new_block, END] if new_block else []
        text = "\n".join([*lines[:start], *inner, *lines[end + 1:]])
        return (text + "\n").encode("utf-8", "surrogateescape") if text else b""
    if not added:
        return data
    head = data if not data or data.endswith(b"\n") else data + b"\n"
    return head + "\n".join([BEGIN, *added, END, ""]).encode("utf-8", "surrogateescape")


def _read(path: str, dir_fd: int | None = None) -> tuple[bytes, os.stat_result | None]:
    """The bytes of the exclude file (``b""``, ``None`` when it does not exist), read
    without following a symlink and without blocking; anything but a regular file, or
    a file over :data:`MAX_EXCLUDE`, is refused (``OSError``)."""
    name = os.path.basename(path) if dir_fd is not None else path
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return b"", None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file", path)
        if st.st_size > MAX_EXCLUDE:
            raise OSError(errno.EFBIG, f"it is larger than {MAX_EXCLUDE} bytes", path)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def apply_fix(fix: Fix) -> Fix:
    """Write ``fix`` into its exclude file; the fix with its outcome.  Never raises an
    ``OSError``: a failure is the fix's ``error``.  Nothing is created or written once a
    signal was received ([E5])."""
    signals.check()
    try:
        added = _write(fix.path, fix.lines, fix.drop)
    except OSError as exc:
        # O_NOFOLLOW: ELOOP for a symlinked file; with O_DIRECTORY, ENOTDIR for a
        # symlinked directory.
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR
                                        and os.path.islink(os.path.dirname(fix.path))):
            why = "it (or its info directory) is a symlink; aikito never writes through one"
        else:
            why = exc.strerror or str(exc)
        return attrs.evolve(fix, status="failed", error=f"{why} — add the lines yourself")
    if added is None:
        return attrs.evolve(fix, status="unchanged")
    return attrs.evolve(fix, status="applied", lines=added)


class _Changed(OSError):
    pass


def _write(path: str, lines: tuple[str, ...], drop: tuple[str, ...]
           ) -> tuple[str, ...] | None:
    """Rewrite the block of ``path``; the patterns added (``None``: nothing to do)."""
    info = os.path.dirname(path)
    nofollow_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(info, nofollow_dir)
    except FileNotFoundError:
        os.mkdir(info, 0o755)
        dir_fd = os.open(info, nofollow_dir)
    try:
        data, st = _read(path, dir_fd)
        new = rewrite(data, lines, drop)
        if new == data:
            return None  # written meanwhile: nothing to add
        before = {normalised(line) for line in _lines(data)}
        added = tuple(p for p in lines if normalised(p) not in before)

        def unchanged() -> None:  # the check just before the rename
            signals.check()
            if _read(path, dir_fd)[0] != data:
                raise _Changed(errno.EAGAIN, "it changed while being fixed; run again", path)

        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o644 & ~_umask()
        owner = (st.st_uid, st.st_gid) if st is not None else None
        atomic_replace(dir_fd, os.path.basename(path), new, mode=mode, owner=owner,
                       before_rename=unchanged)
        return added
    finally:
        os.close(dir_fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
