"""How a text line names a path (SPEC §9, [U2]): short, and pasteable.

- a target is shown relative to its checkout, whose header line names the checkout's
  label and absolute path — every segment's alike: ``.agents/memory/style.md``,
  ``.agents/skills/review``, ``AGENTS.md`` ([U2]);
- a source, or any other path inside the workspace, relative to the workspace, whose
  absolute path the project header names;
- inside a reason, a remedy or a finding — text a person may paste — a path is written
  so that it works in the directory where the command was run ([U2]): relative to that
  directory when below it, else ``~/…`` when under the home directory (never inside
  quotes, where a shell would not expand ``~``), else absolute — the value of
  ``--moved-from``, which must be absolute, is never made relative;
- the checkout itself and every other path stay absolute.

``--json`` never goes through this module: documents carry absolute paths.  Pure: the
current directory and the home directory are given.
"""

from __future__ import annotations

import re

from aikito_mem.model import Operation


def _under(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` when it is strictly below it, else ``None``."""
    base = base.rstrip("/")
    if not base or not path.startswith(base + "/"):
        return None
    rest = path[len(base) + 1:]
    return rest or None


# A command of this tool a remedy names: ``aikito adopt …``, ``aikito sync …``.  The
# patterns of this module are compiled (and cached by ``re``) on first use ([§12]).
_COMMAND = r"(\baikito )(adopt|sync|clean|apply|init|doctor|status)\b"
# A base only where a path starts: not in the middle of another path.
_START = r"(?<![^\s'\"(\[=,:;`])"


# An option whose value must be an absolute path ([L4]: ``--moved-from OLD``): pasted
# relative it would be refused, so its path is written ``~/…`` or absolute, never
# relative to the current directory.
_ABSOLUTE_ONLY = ("--moved-from ", "--moved-from=")


def _absolute_only(match: re.Match[str]) -> bool:
    before = match.string[:match.start()]
    return before.endswith(_ABSOLUTE_ONLY)


#: What may follow a path's last character in a message: the path ended there.
_PATH_END = frozenset(" \t\n'\"`),;:]}")


def _dot(match: re.Match[str]) -> str:
    """``./`` before what is left of a path below the current directory when, bare, it
    would not paste as that path: nothing (the current directory itself, written with a
    trailing ``/``), a leading ``-`` (an option) or ``~`` (a home directory)."""
    rest = match.string[match.end():match.end() + 1]
    return "./" if rest in ("", "-", "~") or rest in _PATH_END else ""


class Paths:
    """The names of one block of text: a checkout (or none) in a workspace, printed in
    ``cwd`` by a user whose home is ``home``."""

    def __init__(self, workspace: str | None, checkout: str | None = None, *,
                 cwd: str | None = None, home: str | None = None,
                 named: bool = False, program: str = "aikito") -> None:
        self.workspace = workspace
        self.checkout = checkout
        #: The workspace was named on the command line (``--workspace``): a command a
        #: remedy names needs it too, to reach the same workspace.
        self._named = named and workspace is not None
        #: The name the command was called by: the commands a remedy names use it.
        self._program = program
        self._cwd = cwd.rstrip("/") if cwd and cwd.rstrip("/") else None
        self._home = home.rstrip("/") if home and home.rstrip("/") else None
        # The nearer base wins: the current directory when the home holds it, else home.
        # The filesystem root is never a base.
        bases = [b for b in (self._cwd, self._home) if b]
        bases.sort(key=len, reverse=True)
        self._bases = bases
        self._compiled: re.Pattern[str] | None = None

    def _pattern(self) -> re.Pattern[str] | None:
        """A base where a path starts, quoted or not (``None``: no base); compiled when
        a text is first located, so a run that shows no path compiles nothing."""
        if self._compiled is None and self._bases:
            self._compiled = re.compile(
                _START + "(['\"]?)(" + "|".join(re.escape(b + "/") for b in self._bases)
                + ")")
        return self._compiled

    def target(self, op: Operation) -> str:
        """``op.target`` as its line shows it: relative to its checkout."""
        rel = _under(op.target, self.checkout) if self.checkout else None
        return op.target if rel is None else rel

    def source(self, path: str) -> str:
        """A source (or any workspace path): relative to the workspace."""
        rel = _under(path, self.workspace) if self.workspace else None
        return path if rel is None else rel

    def pasteable(self, path: str) -> str:
        """One path as a person pastes it where the command ran ([U2]): the current
        directory itself is ``.``."""
        if self._cwd is not None and path.rstrip("/") == self._cwd:
            return "."
        return self._located(path)

    def text(self, message: str) -> str:
        """A remedy or finding with each path written to work where the command ran
        ([U2])."""
        return self._located(self._commands(message))

    def remedy(self, message: str) -> str:
        """A remedy whose quoted paths are literals — a path to find in a file, or one that
        must stay absolute — shown exactly, every other path written to work where the
        command ran ([U2]), and its commands as :meth:`text` writes them."""
        return self.reason(self._commands(message))

    def _commands(self, message: str) -> str:
        """The commands of this tool ``message`` names, called by the name the command was
        called by, with ``--workspace`` when the workspace was named."""
        if self._named or self._program != "aikito":
            option = f"--workspace {self._workspace()} " if self._named else ""
            message = re.sub(_COMMAND, lambda m: f"{self._program} {option}{m.group(2)}",
                             message)
        return message

    def _located(self, message: str) -> str:
        """``message`` with its paths relative to the current directory or home."""
        pattern = self._pattern()
        if pattern is None:
            return message
        return pattern.sub(self._replace, message)

    def _workspace(self) -> str:
        from shlex import quote

        assert self.workspace is not None
        return self.pasteable(quote(self.workspace))

    def reason(self, message: str) -> str:
        """A reason: like :meth:`text`, except that a quoted path is a literal — what a
        link holds or should hold — and is shown exactly ([U2]: "expected a symlink to
        '<the literal actually written>'")."""
        pattern = self._pattern()
        if pattern is None:
            return message
        return pattern.sub(lambda m: m.group() if m.group(1) else self._replace(m),
                                 message)

    def _replace(self, match: re.Match[str]) -> str:
        quote, base = match.group(1), match.group(2).rstrip("/")
        if base == self._cwd:
            if not _absolute_only(match):
                return quote + _dot(match)
            below = _under(base, self._home) if self._home is not None else None
            if base != self._home and below is None:
                return match.group()  # the current directory is not below home
            rest = "" if below is None else below + "/"
        else:
            rest = ""
        if quote:  # a shell expands no ``~`` inside quotes: keep it absolute
            return match.group()
        return "~/" + rest
