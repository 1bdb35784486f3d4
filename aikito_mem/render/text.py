"""Text rules shared by every command's output: printable names, colour, the JSON text,
what a stream can encode, and the :class:`Output` value the command line writes.

Pure: functions from values to strings.  The one rule for names: whatever a name holds —
a newline, an escape sequence, a bidi override, the raw byte of a name that is not UTF-8 —
a text line shows it as an escape (``\\n``, ``\\x1b``, ``\\u202e``, ``\\xff``), so a name
can never start a fake line, move the cursor or colour the terminal; JSON escapes the same
characters its own way.  Every text line is made printable *before* it is coloured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from aikito_mem.errors import AikitoError
from aikito_mem.values import Value

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


@attrs.frozen(repr=False, eq=False)
class Display(Value):
    """How a command was asked to print: the options every renderer reads."""

    as_json: bool = False
    verbose: bool = False
    quiet: bool = False
    color: bool = False

    def line(self, text: str, fg: str | None = None, *, bold: bool = False) -> str:
        """``text`` made printable, then coloured when colour is on."""
        text = printable(text)
        if not self.color or (fg is None and not bold):
            return text
        import click

        return click.style(text, fg=fg, bold=bold or None)


@attrs.frozen(repr=False, eq=False)
class Output(Value):
    """What a command prints and its exit code: the JSON document (``--json``), or the text
    lines for stdout and the error lines for stderr — each line already printable."""

    exit_code: int
    document: Mapping[str, Any] | None = None
    lines: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


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
    newline in a message is escaped like every other control character."""
    prefix = display.line("aikito:", "red", bold=True)
    if differences and "\n" in message:
        head = message.split("\n", 1)[0]
        return (f"{prefix} {printable(head)}",
                *(f"  - {printable(d)}" for d in differences))
    return (f"{prefix} {printable(message)}",)
