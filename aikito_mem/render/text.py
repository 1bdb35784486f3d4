"""Text rules shared by every command's output: printable names, colour, the JSON text,
what a stream can encode, and the :class:`Output` value the command line writes.

Pure: functions from values to strings.  The one rule for names: whatever a name holds —
a newline, an escape sequence, a bidi override, the raw byte of a name that is not UTF-8 —
a text line shows it as an escape (``\\n``, ``\\x1b``, ``\\u202e``, ``\\xff``), so a name
can never start a fake line, move the cursor or colour the terminal; JSON escapes the same
characters its own way.  Every text line is made printable *before* it is coloured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aikito_mem.values import Record

if TYPE_CHECKING:  # pragma: no cover — annotations only: no Protocol class built at import
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Protocol, TypeVar

    from aikito_mem.errors import AikitoError

    class Reported(Protocol):
        """A command's report as its renderer reads it: the exit code, and the error it
        ended with (``None``: none)."""

        @property
        def exit_code(self) -> int: ...

        @property
        def error(self) -> AikitoError | None: ...

    _R = TypeVar("_R", bound=Reported)

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the raw byte 0x80…0xff
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` as one line of a terminal: every character Python does not call printable
    (C0 and C1 controls, DEL, format characters such as bidi overrides, separators other
    than the space, lone surrogates) is shown as an escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def _spaced(text: str) -> bool:
    """Whether a component of the path ``text`` starts or ends with white space."""
    return any(part[:1].isspace() or part[-1:].isspace() for part in text.split("/"))


def shown_name(text: str) -> str:
    """A path or name as an operation line shows it ([H3]): as it is when it reads
    unambiguously; quoted the way a shell reads it back when it has a component with
    leading or trailing white space (``'b.md '``) or a character a terminal would not show
    (``$'n\\nl'``, ``$'x\\xff'`` for a byte that is not UTF-8) — so the name can be told
    apart, and pasted."""
    if text.isprintable():
        if not _spaced(text):
            return text
        if "'" not in text:
            return f"'{text}'"
    body = "".join("\\\\" if ch == "\\" else "\\'" if ch == "'" else
                   ch if ch.isprintable() else _shell_escape(ch) for ch in text)
    return f"$'{body}'"


def _shell_escape(ch: str) -> str:
    """``ch`` inside ``$'…'``: as :func:`_escape`, but a character of U+0080–U+00FF as
    ``\\u00XX`` (``\\xXX`` is the raw byte there, which is what a surrogate stands for)."""
    if 0x80 <= ord(ch) < 0x100:
        return f"\\u{ord(ch):04x}"
    return _escape(ch)


def for_stream(text: str, encoding: str | None) -> str:
    """``text`` with what ``encoding`` cannot represent shown as ``\\u2014``-style escapes:
    a terminal in ISO-8859-15 (or ASCII) gets every line, never an encoding error."""
    if text.isascii():
        return text
    codec = encoding or "utf-8"
    try:
        return text.encode(codec, "backslashreplace").decode(codec)
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")


def json_text(doc: Mapping[str, Any], encoding: str | None = "utf-8") -> str:
    """One JSON document as printed: UTF-8 text when the stream can take it, else (a name
    that is not UTF-8, a stream in another encoding) ASCII with ``\\uXXXX`` escapes — valid
    JSON either way.  (``json`` is imported here, for ``--json`` runs only: [§12].)"""
    import json

    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode(encoding or "utf-8")
        except (UnicodeEncodeError, LookupError):
            text = json.dumps(doc, indent=2, ensure_ascii=True)
    return text


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 conflict``, ``2 conflicts`` (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


#: The width of text output when the command line knows no other ([U2]).
DEFAULT_WIDTH = 100
#: How much deeper than its first line a wrapped line is indented ([U2]).
HANGING = 4

# A quoted argument holding a path (``'/a b/c'``, as ``shlex.quote`` writes it): its
# spaces are not places to break a line.  Its quotes stand at the edges of a word, so the
# apostrophes of ``project's … project's`` never make one, nor the closing quote of one
# quoted word and the opening quote of the next (``'..' component … memory/ … '.'``): an
# opening quote starts the text or follows a space or an opening bracket, ``=`` or ``:``.
# Compiled on the first long line ([§12]).
_QUOTED_PATH = r"(?<![^\s(\[{=:])'[^'\n]*/[^'\n]*'(?!\w)"
# A command of this tool that text names ([U2]: it pastes as one line): the program (as
# it was called), ``--workspace`` and its value, the command words, then its arguments —
# options, quoted arguments, paths (a word with ``/``, ``.`` or ``~``), placeholders
# (``NAME``, ``PLANFILE``) and the name after ``project`` — up to the first word of prose
# or a bracket, comma, semicolon, colon or backquote.  Its spaces are not places to break
# a line: it moves to the next line whole, and stands whole on a line of its own when it
# is wider than the line, as a path does.
_ARG = (r"(?:'[^'\n]*'|\$'[^'\n]*'|-[\w-]+(?:=[^\s(),;`]+)?|[A-Z][A-Z_]+\b"
        r"|[^\s(),;:`']*[/.~][^\s(),;:`']*)")
_TOOL_COMMAND = (r"(?<![\w/-])aikito(?:-mem)?(?: --workspace " + _ARG + r")?"
                 r" (?:adopt|sync|clean|apply|init|doctor|status|hook|agents)\b"
                 r"(?: (?:project(?: [\w.-]+(?![/.~\w]))?|install|uninstall|add|workspace|"
                 + _ARG + r"))*")
# What stands for a space that must not break while wrapping: printable() escapes every
# no-break space of the text itself, so none is left to be confused with it.
_KEEP = "\xa0"


def wrap(text: str, width: int, indent: int | None = None) -> list[str]:
    """``text`` (one printable line) as lines of at most ``width`` columns ([U2]): broken
    only at spaces — never inside a word, a path, a quoted path or a command of this tool
    (it pastes as one line) — each further line
    indented ``indent`` columns (default: the first line's indentation plus
    :data:`HANGING`).  A word wider than the line stands whole on a line of its own.
    The one place text is wrapped; ``textwrap`` does the work."""
    if len(text) <= width:
        return [text]
    import re
    import textwrap

    body = text.lstrip(" ")
    lead = len(text) - len(body)
    hang = lead + HANGING if indent is None else indent
    body = re.sub(_QUOTED_PATH, lambda m: m.group().replace(" ", _KEEP), body)
    body = re.sub(_TOOL_COMMAND, lambda m: m.group().replace(" ", _KEEP), body)
    lines = textwrap.wrap(body, width=max(width, hang + 20), initial_indent=" " * lead,
                          subsequent_indent=" " * hang, break_long_words=False,
                          break_on_hyphens=False)
    return [line.replace(_KEEP, " ") for line in lines] or [text]


class Display(Record):
    """How a command was asked to print: the options every renderer reads, and where it
    prints — the width of a line ([U2]), and the directory the command runs in and the
    home directory, which a pasteable path is written relative to (``None``: absolute)."""

    as_json: bool = False
    verbose: bool = False
    quiet: bool = False
    color: bool = False
    width: int = DEFAULT_WIDTH
    cwd: str | None = None
    home: str | None = None
    #: The name the command was called by (``aikito-mem`` beside the reference tool):
    #: the commands a remedy names are written with it.
    program: str = "aikito"

    def line(self, text: str, fg: str | None = None, *, bold: bool = False,
             indent: int | None = None) -> str:
        """``text`` made printable, wrapped to the width (:func:`wrap`; the lines joined
        with newlines), then coloured — line by line — when colour is on."""
        lines = wrap(printable(text), self.width, indent)
        if self.color and (fg is not None or bold):
            import click

            lines = [click.style(line, fg=fg, bold=bold or None) for line in lines]
        return "\n".join(lines)


class Output(Record):
    """What a command prints and its exit code: the JSON document (``--json``), or the text
    lines for stdout and the error lines for stderr — each line already printable."""

    exit_code: int
    document: Mapping[str, Any] | None = None
    lines: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


def rendered(report: _R, display: Display, document: Callable[[_R], Mapping[str, Any]],
             text: Callable[[_R, Display], Iterable[str]]) -> Output:
    """The :class:`Output` of a report that is either a text or an error: its JSON
    ``document`` (``--json``), else the error's lines on stderr, else its ``text``."""
    if display.as_json:
        return Output(report.exit_code, document=document(report))
    if report.error is not None:
        return Output(report.exit_code, errors=error_lines(report.error, display))
    return Output(report.exit_code, lines=tuple(text(report, display)))


def error_json(error: AikitoError) -> dict[str, Any]:
    """The ``error`` object of every document: ``code``, ``message``, and ``differences``
    (stale plans) and ``path`` when the error has them."""
    doc: dict[str, Any] = error.to_json()
    differences = getattr(error, "differences", None)
    if differences:
        doc["differences"] = list(differences)
        omitted = getattr(error, "omitted", 0)
        if omitted:
            doc["differences_omitted"] = omitted
    if error.path:
        doc["path"] = error.path
    return doc


def error_lines(error: AikitoError, display: Display) -> tuple[str, ...]:
    """The error message for stderr (see :func:`message_lines`)."""
    return message_lines(error.message, display, listed(error))


def listed(error: BaseException) -> tuple[str, ...]:
    """The items an error lists on lines of their own: a stale plan's differences (and a
    line counting those left out), a refused plan's refusals."""
    differences = tuple(getattr(error, "differences", None) or ())
    if differences and all(isinstance(d, str) for d in differences):
        omitted = getattr(error, "omitted", 0)
        more = (f"… and {omitted} more difference{'s' * (omitted != 1)}",) if omitted else ()
        return differences + more
    return tuple(getattr(error, "refusals", None) or ())


def message_lines(message: str, display: Display,
                  differences: Sequence[str] = ()) -> tuple[str, ...]:
    """A message for stderr, ``aikito:``-prefixed.  A message that lists its differences
    (or refusals) on lines of their own keeps those lines (each one printable); any other
    newline in a message is escaped like every other control character.  The paths the
    message names are written so that they work where the command ran
    (:func:`pasted`); the error itself keeps them absolute."""
    if differences and "\n" in message:
        head = message.split("\n", 1)[0]
        return (_prefixed(pasted(head, display), display),
                *(display.line(f"  - {pasted(d, display)}") for d in differences))
    return (_prefixed(pasted(message, display), display),)


def pasted(message: str, display: Display) -> str:
    """[U2]: an error message as printed — every path its remedy names (the argument of a
    command to run, a file to edit) relative to the directory the command ran in when
    below it, else ``~/…``, else absolute; a quoted path (what a link holds, a name
    being reported) shown exactly; the commands it names called as this one was
    (:meth:`aikito_mem.render.paths.Paths.remedy`).  Done at print time: the error's
    message, its attributes and ``--json`` stay absolute."""
    if display.cwd is None and display.home is None and display.program == "aikito":
        return message
    from aikito_mem.render.paths import Paths

    return Paths(None, cwd=display.cwd, home=display.home,
                 program=display.program).remedy(message)


def _prefixed(message: str, display: Display) -> str:
    """``aikito: MESSAGE`` wrapped to the width, the prefix coloured."""
    lines = wrap(f"aikito: {printable(message)}", display.width, 2)
    if display.color:
        import click

        lines[0] = click.style("aikito:", fg="red", bold=True) + lines[0][len("aikito:"):]
    return "\n".join(lines)
