"""The git room: every question the engine asks git, and only here (§15).

Each question is one ``git`` subprocess, read-only and bounded:

- run in the directory asked about (``git -C DIR``), with ``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_INDEX_FILE`` and ``GIT_COMMON_DIR`` removed from its environment (a hook runs us
  with them set for another directory), ``GIT_OPTIONAL_LOCKS=0`` (no index refresh is
  written), ``core.fsmonitor=false`` (reading the index never runs a configured hook),
  ``GIT_TERMINAL_PROMPT=0``, no standard input (``/dev/null``, read-only), the ``C``
  locale (its messages are parsed); ``ls-files`` with literal pathspecs (a file named
  ``*`` is that file);
- within :data:`GIT_TIMEOUT` seconds;
- never raising: git missing, failing or slow is an :class:`Unavailable` answer naming
  what happened, for the caller to turn into a finding.  "Not a git work tree" is an
  answer of its own (:data:`NOT_A_WORK_TREE`), not a failure.

Paths git prints are read in its ``-z`` formats where it has one and decoded as the
``os`` module decodes file names (``surrogateescape``).  Nothing here writes; the sync
engine asks git only where §15 says ([L1], [L6]) and never needs it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from enum import Enum

import attrs

#: Seconds one git question may take ([L1]): a git that blocks (a hung network
#: filesystem, a lock) is reported, never waited for.
GIT_TIMEOUT = 2.0
_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
            "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE", "GIT_PREFIX")
#: What git prints (in the C locale) when asked about a directory outside any work tree.
_OUTSIDE = ("not a git repository", "must be run in a work tree")


@attrs.frozen
class Unavailable:
    """git could not answer: not installed, failed, or did not answer in time."""

    #: Words for a message: ``git is not installed``, ``git ls-files failed: …``.
    reason: str
    #: ``False`` when git could not be started at all (not installed, not executable):
    #: a caller with another way to find out may take it.
    started: bool = attrs.field(default=True, kw_only=True)


class _Outside(Enum):
    NOT_A_WORK_TREE = "not a git work tree"


#: The answer for a directory that is not inside a git work tree.
NOT_A_WORK_TREE = _Outside.NOT_A_WORK_TREE


@attrs.frozen
class WorkTree:
    """A directory inside a git work tree, as git sees it."""

    #: The top level of the work tree (``rev-parse --show-toplevel``).
    top: str
    #: The directory asked about relative to ``top``, with a trailing ``/`` (``""`` at
    #: the top level; ``rev-parse --show-prefix``).
    prefix: str


@attrs.frozen
class Worktree:
    """One entry of ``git worktree list --porcelain -z``."""

    path: str
    #: The main worktree of the repository (listed first).
    main: bool = False
    bare: bool = False
    #: Its directory is missing (``prunable``): an offline checkout ([L6]).
    prunable: bool = False


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C",
               LANGUAGE="C")
    return env


def run(args: Sequence[str], cwd: str, *, stdin: bytes | None = None
        ) -> subprocess.CompletedProcess[bytes] | Unavailable:
    """One read-only git question in ``cwd`` (``stdin``: what it reads, else nothing):
    the finished process (whatever its exit status), or :class:`Unavailable` when git is
    missing, cannot start or is too slow."""
    question = _question(args)
    argv = ["git", "-c", "core.fsmonitor=false", "-C", cwd, *args]
    null: int | None = None
    try:
        if stdin is None:
            # ``/dev/null`` opened read-only (``subprocess.DEVNULL`` opens it for writing
            # too): a sync's question opens nothing for writing ([E7]).  Else a pipe
            # (doctor's check-ignore).
            null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        return subprocess.run(argv, stdin=null, input=stdin, capture_output=True,
                              env=_env(), timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError:
        return Unavailable("git is not installed", started=False)
    except subprocess.TimeoutExpired:
        return Unavailable(f"git did not answer within {GIT_TIMEOUT:g} s (git {question})")
    except (OSError, ValueError) as exc:  # not executable, a NUL in a path…
        return Unavailable(f"git {question} could not be run ({exc})", started=False)
    finally:
        if null is not None:
            os.close(null)


def _question(args: Sequence[str]) -> str:
    """The git command of ``args`` for a message (``ls-files``, ``rev-parse …``)."""
    words = [a for a in args if not a.startswith("-")][:1]
    if words == ["rev-parse"]:
        words += [a for a in args if a.startswith("--") and a != "--"][:1]
    return " ".join(words)


def _decode(raw: bytes) -> str:
    return os.fsdecode(raw)


def _failed(args: Sequence[str], proc: subprocess.CompletedProcess[bytes]) -> Unavailable:
    err = _decode(proc.stderr).strip().splitlines()
    why = err[-1] if err else f"exit status {proc.returncode}"
    return Unavailable(f"git {_question(args)} failed: {why}")


def _outside(proc: subprocess.CompletedProcess[bytes]) -> bool:
    err = _decode(proc.stderr)
    return proc.returncode == 128 and any(words in err for words in _OUTSIDE)


def _ask(args: Sequence[str], path: str, *, stdin: bytes | None = None,
         ok: tuple[int, ...] = (0,)) -> bytes | _Outside | Unavailable:
    """What one question prints on its standard output when it exits with a status in
    ``ok``; :data:`NOT_A_WORK_TREE` outside a work tree; else :class:`Unavailable`."""
    proc = run(args, path, stdin=stdin)
    if isinstance(proc, Unavailable):
        return proc
    if _outside(proc):
        return NOT_A_WORK_TREE
    if proc.returncode not in ok:
        return _failed(args, proc)
    return proc.stdout


def work_tree(path: str) -> WorkTree | _Outside | Unavailable:
    """Whether ``path`` is inside a git work tree, and where its top level is."""
    args = ["rev-parse", "--is-inside-work-tree", "--show-toplevel", "--show-prefix"]
    printed = _ask(args, path)
    if not isinstance(printed, bytes):
        return printed
    lines = [*_decode(printed).split("\n"), "", ""]
    if lines[0] != "true":
        return NOT_A_WORK_TREE  # inside a .git directory or a bare repository
    return WorkTree(lines[1] or path, lines[2])


def tracked(path: str, rels: Iterable[str]) -> frozenset[str] | _Outside | Unavailable:
    """Those of ``rels`` (relative to ``path``) that git tracks: a file in the index, or
    a directory holding one — one ``git ls-files -z`` with every path at once ([L1])."""
    asked = sorted(set(rels))
    if not asked:
        return frozenset()
    args = ["ls-files", "-z", "--", *asked]
    # A file named ``*`` or ``:x`` is that file: literal pathspecs (``ls-files`` only;
    # ``check-ignore`` refuses the magic).
    args = ["--literal-pathspecs", *args]
    printed = _ask(args, path)
    if not isinstance(printed, bytes):
        return printed
    listed = [_decode(raw) for raw in printed.split(b"\0") if raw]
    return frozenset(rel for rel in asked if _covers(rel, listed))


def _covers(rel: str, listed: Sequence[str]) -> bool:
    inside = rel.rstrip("/") + "/"
    return any(name == rel or name.startswith(inside) for name in listed)


def ignored(path: str, rels: Iterable[str]) -> dict[str, str] | _Outside | Unavailable:
    """Those of ``rels`` (relative to ``path``; a trailing ``/`` asks about a directory)
    that git ignores, each with the pattern that ignores it (``git check-ignore -v -z``;
    a tracked path is never ignored)."""
    asked = sorted(set(rels))
    if not asked:
        return {}
    args = ["check-ignore", "-v", "-z", "--stdin"]
    names = b"".join(os.fsencode(rel) + b"\0" for rel in asked)
    printed = _ask(args, path, stdin=names, ok=(0, 1))  # 1: none of them is ignored
    if not isinstance(printed, bytes):
        return printed
    # Records of four fields: source, line number, pattern, path.  A path matched by a
    # negated pattern (``!x``) is listed too, and is not ignored.
    fields = [_decode(raw) for raw in printed.split(b"\0")]
    out: dict[str, str] = {}
    for i in range(0, len(fields) - 3, 4):
        _source, _line, pattern, name = fields[i:i + 4]
        if pattern and not pattern.startswith("!"):
            out[name] = pattern
    return out


def git_path(path: str, name: str) -> str | _Outside | Unavailable:
    """The absolute path git uses for ``name`` in ``path``'s repository
    (``git rev-parse --git-path NAME``: the common directory's ``info/exclude`` in a
    linked worktree, ``core.hooksPath`` for ``hooks``, a ``--separate-git-dir``)."""
    args = ["rev-parse", "--git-path", name]
    printed = _ask(args, path)
    if not isinstance(printed, bytes):
        return printed
    out = _decode(printed).removesuffix("\n")
    if not out or "\n" in out:
        return Unavailable(f"git rev-parse --git-path {name} printed no single path")
    return os.path.normpath(os.path.join(path, out))


def worktrees(path: str) -> tuple[Worktree, ...] | _Outside | Unavailable:
    """Every worktree of ``path``'s repository (``git worktree list --porcelain -z``),
    the main one first."""
    args = ["worktree", "list", "--porcelain", "-z"]
    printed = _ask(args, path)
    if not isinstance(printed, bytes):
        return printed
    return parse_worktrees(printed)


class WorktreeAnswers:
    """[L6]: the ``git worktree list`` answers of one sync call — each directory asked
    once, so planning and the writer's guard of that call share one subprocess per
    registered checkout.

    An answer gets in only by asking git (:meth:`worktrees`), which also records the
    identity (device, inode, generation) of each worktree directory it lists, observed
    right after git answered.  The guard re-uses them (:meth:`for_plan`) only for the plan
    they were bound to (:meth:`made`, by identity: the very plan object the same call made
    with them, never a saved plan, [E9]) and only while every listed worktree directory is
    still the one git listed — a worktree removed or replaced since makes the guard ask git
    afresh; whatever it wrote goes through the descriptor [E2] verified."""

    __slots__ = ("_answers", "_plan", "_seen")

    def __init__(self) -> None:
        self._answers: dict[str, tuple[Worktree, ...] | _Outside | Unavailable] = {}
        self._seen: dict[str, tuple[int, int, int | None] | None] = {}
        self._plan: object | None = None

    def worktrees(self, path: str) -> tuple[Worktree, ...] | _Outside | Unavailable:
        """:func:`worktrees` of ``path``, asked once."""
        if path not in self._answers:
            found = self._answers[path] = worktrees(path)
            if isinstance(found, tuple):
                for wt in found:
                    if not wt.bare:
                        self._seen[wt.path] = _identity(wt.path)
        return self._answers[path]

    def forget(self) -> None:
        """Drop every answer (the configuration was re-read: ask again)."""
        self._answers.clear()
        self._seen.clear()

    def made(self, plan: object) -> None:
        """Bind these answers to the plan made with them; only the first binding counts."""
        if self._plan is None:
            self._plan = plan

    def for_plan(self, plan: object) -> WorktreeAnswers | None:
        """``self`` for the plan they were bound to while every worktree directory they
        list is still the one git listed, else ``None`` (ask git afresh)."""
        if self._plan is None or self._plan is not plan:
            return None
        if any(_identity(path) != seen for path, seen in self._seen.items()):
            return None
        return self


def _identity(path: str) -> tuple[int, int, int | None] | None:
    """(device, inode, generation) of the directory ``path`` reaches; ``None`` when none."""
    from aikito_mem.model import Kind
    from aikito_mem.world.observe import from_stat, with_identity

    try:
        obs = from_stat(os.stat(path))
    except OSError:
        return None
    if obs.kind is not Kind.DIR:
        return None
    obs = with_identity(path, obs)
    return obs.dev, obs.ino, obs.gen


def parse_worktrees(data: bytes) -> tuple[Worktree, ...]:
    """The records of ``worktree list --porcelain -z``: attribute fields ending in NUL,
    a record ending in an empty field.  Pure."""
    out: list[Worktree] = []
    fields: dict[str, str] = {}
    for raw in [*data.split(b"\0"), b""]:  # an unterminated last record ends too
        if raw:
            key, _, value = _decode(raw).partition(" ")
            fields.setdefault(key, value)
            continue
        if "worktree" in fields:
            out.append(Worktree(fields["worktree"], main=not out, bare="bare" in fields,
                                prunable="prunable" in fields))
        fields = {}
    return tuple(out)
