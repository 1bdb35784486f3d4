"""Where a new value goes in an ``agent.toml`` parsed by ``tomlkit`` (§11).

The placement rules of :mod:`aikito_mem.config.edit`, written on the parsed document: a
new top-level line after the last top-level key (without one, above the first section and
the comment lines attached to its header); a new entry of the ``paths`` table after its
last key, in its own form (section, inline table or dotted keys) and indentation; an
element appended to an array in the array's own layout (one line, or one element per
line, trailing comma or not).  Comments, blank lines, quoting, key order and line endings
stay as they were.

This is the only module that knows how ``tomlkit`` stores a document: a container's
``body`` (``(key, item)`` pairs, white space and comments included) and an array's raw
items (``Array._iter_items``, rebuilt with the public ``Array`` constructor).  ``tomlkit``
is imported inside the functions.  Nothing here decides whether an edit is right: the
caller re-parses the rendering with ``tomllib`` and refuses any difference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tomlkit.container import Container
    from tomlkit.items import Array, Item, Key

__all__ = [
    "Unsupported",
    "add_to_paths_table",
    "append_to_root_array",
    "appended",
    "insert_root_line",
    "newline",
    "path_to_paths",
]

#: One body entry of a ``tomlkit`` container: ``(key or None, item)``.
_Entry = tuple["Key | None", "Item"]


class Unsupported(Exception):
    """A layout this module does not edit (the caller refuses: add the value by hand)."""


def _is_section(key: Key, item: Item) -> bool:
    """A ``[table]`` or ``[[array]]`` section (a header), not a ``key = value`` line."""
    from tomlkit.items import AoT, Table

    return isinstance(item, AoT) or (isinstance(item, Table) and not key.is_dotted())


def _lines(body: list[_Entry]) -> list[int]:
    """Indices of the ``key = value`` lines (dotted keys included) of a body."""
    return [i for i, (k, v) in enumerate(body) if k is not None and not _is_section(k, v)]


def _indent(key: Key | None, item: Item) -> str:
    """The white space before the key of a ``key = value`` line."""
    from tomlkit.items import Table

    if isinstance(item, Table):  # a dotted key: the line is its first child's
        child = next(((k, v) for k, v in item.value.body if k is not None), None)
        return _indent(*child) if child is not None else ""
    indent = item.trivia.indent
    return indent[indent.rfind("\n") + 1 :]


def _root_entry(doc: Container, name: str) -> int:
    """The index of the top-level ``name = …`` line (not a dotted key, not a section)."""
    for i, (k, v) in enumerate(doc.body):
        if k is not None and k.key == name and not k.is_dotted() and not _is_section(k, v):
            return i
    raise Unsupported(f"the `{name}` key was not found at the top level")


def newline(text: str) -> str:
    """The line ending new lines get: CRLF when the file uses it, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def _splice_line(body: list[_Entry], pos: int, line: str, text: str, at_eof: bool) -> None:
    """Insert ``line`` (TOML source, parsed by tomlkit) as a whole line at ``pos`` of
    ``body``; ``at_eof``: ``pos`` is the end of the file (which may lack a last newline)."""
    import tomlkit

    nl = newline(text)
    lead = nl if at_eof and text and not text.endswith("\n") else ""
    body[pos:pos] = tomlkit.parse(f"{lead}{line}{nl}").body


def insert_root_line(doc: Container, text: str, line: str) -> None:
    """``line`` after the last top-level key; without one, above the first section and
    the comment lines attached to its header; in a file of comments only, at the end."""
    from tomlkit.items import Comment

    body = doc.body
    lines = _lines(body)
    if lines:
        pos = lines[-1] + 1
    else:
        pos = next((i for i, (k, _v) in enumerate(body) if k is not None), len(body))
        while 0 < pos < len(body) and isinstance(body[pos - 1][1], Comment):
            pos -= 1
    _splice_line(body, pos, line, text, pos == len(body))


def add_to_paths_table(doc: Container, text: str, label: str, element: str) -> None:
    """``label = element`` in the ``paths`` table: inline, dotted keys or a section."""
    from tomlkit.items import InlineTable, Table

    body = doc.body
    entry = f"{label} = {element}"
    for i, (key, item) in enumerate(body):
        if key is None or key.key != "paths":
            continue
        if isinstance(item, InlineTable):
            _add_to_inline_table(body, i, entry)
            return
        if key.is_dotted():
            last = max(j for j, (k, _v) in enumerate(body)
                       if k is not None and k.key == "paths" and k.is_dotted())
            line = f"{_indent(*body[last])}paths.{entry}"
            _splice_line(body, last + 1, line, text, last + 1 == len(body))
            return
        if isinstance(item, Table) and not item.is_super_table():
            inner = item.value.body
            lines = _lines(inner)
            pos = lines[-1] + 1 if lines else 0
            indent = _indent(*inner[lines[-1]]) if lines else ""
            at_eof = pos == len(inner) and i == len(body) - 1
            _splice_line(inner, pos, f"{indent}{entry}", text, at_eof)
            return
    raise Unsupported("the `paths` table has no [paths] header, inline table or dotted keys")


def _add_to_inline_table(body: list[_Entry], i: int, entry: str) -> None:
    """``entry`` after the last key of the inline table ``body[i]`` (``{ }`` keeps its
    spaces).  An inline table is one line without comments (TOML 1.0), so the new one is
    its rendering with the entry before the closing brace, parsed again by tomlkit."""
    import tomlkit

    key, table = body[i]
    assert key is not None
    rendered = table.as_string()
    inner = rendered[1:-1]
    if len(table.value):  # after the last entry, before the white space of "}"
        head = inner.rstrip(" \t")
        inner = f"{head}, {entry}{inner[len(head) :]}"
    else:
        inner = f" {entry}{inner}" if inner else entry
    trivia = table.trivia
    line = (f"{trivia.indent}{key.as_string()}{key.sep}{{{inner}}}{trivia.comment_ws}"
            f"{trivia.comment}{trivia.trail}")
    body[i] = tomlkit.parse(line).body[0]


def path_to_paths(doc: Container, text: str, element: str) -> None:
    """``path = X`` → ``paths = [X, element]``; ``path = [..]`` → ``paths = [.., element]``."""
    import tomlkit
    from tomlkit.items import Array, SingleKey, String, Whitespace

    body = doc.body
    i = _root_entry(doc, "path")
    key, item = body[i]
    assert key is not None
    written = key.as_string()  # `path`, `"path"` or `'path'`, and the blanks before `=`
    quote = written[0] if written[0] in "\"'" else ""
    blanks = written[len(written.rstrip(" \t")) :]
    renamed = SingleKey("paths", sep=key.sep, original=f"{quote}paths{quote}{blanks}")
    if isinstance(item, String):
        new: Item = Array([item, Whitespace(","), Whitespace(" "), tomlkit.value(element)],
                          item.trivia)
    elif isinstance(item, Array):
        new = appended(item, element, _indent(key, item), newline(text))
    else:
        raise Unsupported("`path` is neither a string nor an array")
    body[i] = (renamed, new)


def append_to_root_array(doc: Container, text: str, name: str, element: str) -> None:
    """``element`` appended to the top-level array ``name`` (see :func:`appended`)."""
    from tomlkit.items import Array

    i = _root_entry(doc, name)
    key, item = doc.body[i]
    if key is None or not isinstance(item, Array):
        raise Unsupported(f"`{name}` is not written as an array")
    doc.body[i] = (key, appended(item, element, _indent(key, item), newline(text)))


def _raw_items(array: Array) -> list[Item]:
    """The raw items of ``array`` — values, white space, commas, comments — with every
    comma ending its white-space item (what :func:`appended` splices into)."""
    from tomlkit.items import Null, Whitespace

    items: list[Item] = []
    for x in array._iter_items():
        if isinstance(x, Null):
            continue
        if isinstance(x, Whitespace) and "," in x.s and not x.s.endswith(","):
            cut = x.s.index(",") + 1  # a comma always ends its item
            items += [Whitespace(x.s[:cut]), Whitespace(x.s[cut:])]
        else:
            items.append(x)
    return items


def appended(array: Array, element: str, key_indent: str, nl: str) -> Array:
    """A copy of ``array`` with ``element`` appended in the array's own layout.

    On one line: ``, "new"`` after the last element (``"new",`` after a trailing comma).
    Over several lines: ``"new",`` on a line of its own right after the line of the last
    element (or of the ``[``), indented like that element, or one step (four spaces) past
    the key when the element shares the ``[`` line or there is none; an old last element
    without a trailing comma gets one, the new one then has none.
    """
    import tomlkit
    from tomlkit.items import Array, Comment, Whitespace

    items = _raw_items(array)
    value = tomlkit.value(element)
    values = [i for i, x in enumerate(items) if not isinstance(x, Whitespace | Comment)]
    last = values[-1] if values else -1
    commas = [i for i in range(last + 1, len(items))
              if isinstance(items[i], Whitespace) and "," in items[i].as_string()]
    trailing = last >= 0 and bool(commas)
    anchor = commas[-1] + 1 if commas else last + 1
    new: list[Item]
    for i in range(anchor, len(items)):
        x = items[i]
        if not (isinstance(x, Comment) or (isinstance(x, Whitespace) and "\n" in x.s)):
            continue
        # One element per line: after the line of the anchor.
        before = "".join(y.as_string() for y in items[: max(last, 0)])
        if last >= 0 and "\n" in before:
            line = before[before.rfind("\n") + 1 :]
            indent = line[: len(line) - len(line.lstrip(" \t"))]
        else:
            indent = key_indent + "    "
        tail = [] if last >= 0 and not trailing else [Whitespace(",")]
        if isinstance(x, Comment):  # the line ends after the comment
            new = [Whitespace(nl + indent), value, *tail]
            pos = i + 1
        else:
            cut = x.s.index("\n") + 1
            items[i : i + 1] = [Whitespace(x.s[:cut]), Whitespace(x.s[cut:])]
            new = [Whitespace(indent), value, *tail, Whitespace(nl)]
            pos = i + 1
        items[pos:pos] = new
        if last >= 0 and not trailing:
            items.insert(last + 1, Whitespace(","))
        break
    else:
        # On one line.
        if last < 0:
            inner = "".join(y.as_string() for y in items)
            pos, new = 0, ([Whitespace(" "), value] if inner else [value])
        elif trailing:
            pos, new = anchor, [Whitespace(" "), value, Whitespace(",")]
        else:
            pos, new = last + 1, [Whitespace(","), Whitespace(" "), value]
        items[pos:pos] = new
    return Array([y for y in items if not (isinstance(y, Whitespace) and not y.s)],
                 array.trivia)
