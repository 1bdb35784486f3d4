"""Byte-preserving registration of an explicit checkout path in ``agent.toml`` ([K4]).

:func:`add_checkout_path` is a pure text edit: it locates the ``paths``/``path`` key with a
small TOML scanner (strings, comments, arrays and inline tables are understood, so a ``]``
inside a string or a comment is never mistaken for the end of an array), inserts the new
path and leaves every other byte where it was.  The result is re-parsed with ``tomllib``
and must equal the old data plus the new path, else nothing is written.

:func:`register_checkout` applies that edit as a compare-and-swap on the file: the live
bytes must still hash to what the plan recorded; the new text goes to a temporary file in
the same directory (same permission bits, fsynced) that is renamed over ``agent.toml``.
The caller holds the checkout lock; this module takes none.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import tomllib
from typing import Any

from aikito_mem.errors import ConfigError, ExecutionError, StalePlanError

__all__ = ["add_checkout_path", "register_checkout", "toml_basic_string"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_WS = " \t"
_SCALAR_STOP = " \t\r\n,]}#"


# ---------------------------------------------------------------------------------------
# TOML basic-string escaping


def toml_basic_string(value: str) -> str:
    """``value`` as a TOML basic string (``"..."``), escaping what TOML requires.

    Backslash and quote are escaped, as are C0 controls, DEL and C1 controls (tab, newline
    and friends by their short escapes).  Everything else is written as is (UTF-8).
    """
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"{value!r} is not valid Unicode text and cannot be written to TOML")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------------------------
# A minimal statement-level TOML scanner (input is already known to be valid TOML)


class _ScanError(Exception):
    """The scanner met something it does not understand (never valid TOML it was given)."""


class _Array:
    """Layout of one array (or inline table) value: its brackets, elements and commas."""

    __slots__ = ("close", "commas", "items", "open")

    def __init__(self, open_: int) -> None:
        #: Offset of ``[`` / ``{``.
        self.open = open_
        #: Offset of ``]`` / ``}``.
        self.close = -1
        #: (start, end) of each element.
        self.items: list[tuple[int, int]] = []
        #: Offsets of the separating commas.
        self.commas: list[int] = []


class _KeyValue:
    """One ``key = value`` statement (offsets into the text)."""

    __slots__ = ("array", "key", "key_end", "line_end", "start", "table", "value_end",
                 "value_start")

    def __init__(
        self,
        key: tuple[str, ...],
        start: int,
        key_end: int,
        value_start: int,
        value_end: int,
        line_end: int,
        table: tuple[str, ...],
        array: _Array | None,
    ) -> None:
        self.key = key
        #: Offset of the first character of the key.
        self.start = start
        self.key_end = key_end
        self.value_start = value_start
        self.value_end = value_end
        #: Offset just after the statement's line (after its newline, or EOF).
        self.line_end = line_end
        #: The header path of the table this statement is in (``()`` for the root).
        self.table = table
        #: Array or inline-table layout, when the value is one.
        self.array = array


class _Header:
    """One ``[table]`` or ``[[array]]`` header."""

    __slots__ = ("is_array", "key", "line_end", "line_start")

    def __init__(
        self, key: tuple[str, ...], line_start: int, line_end: int, is_array: bool
    ) -> None:
        self.key = key
        #: Offset of the start of the header's line.
        self.line_start = line_start
        self.line_end = line_end
        self.is_array = is_array


class _Scanner:
    """Walks a TOML document statement by statement, recording offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.statements: list[_KeyValue | _Header] = []

    # -- low level --------------------------------------------------------------------
    def _peek(self, pos: int, s: str) -> bool:
        return self.text.startswith(s, pos)

    def _skip_ws(self, pos: int) -> int:
        while pos < self.n and self.text[pos] in _WS:
            pos += 1
        return pos

    def _skip_comment(self, pos: int) -> int:
        if pos < self.n and self.text[pos] == "#":
            while pos < self.n and self.text[pos] != "\n":
                pos += 1
        return pos

    def _skip_ws_comments_newlines(self, pos: int) -> int:
        while pos < self.n:
            ch = self.text[pos]
            if ch in " \t\r\n":
                pos += 1
            elif ch == "#":
                pos = self._skip_comment(pos)
            else:
                break
        return pos

    def _line_end(self, pos: int) -> int:
        """After a statement: skip blanks and a comment, then one newline."""
        pos = self._skip_comment(self._skip_ws(pos))
        if self._peek(pos, "\r\n"):
            return pos + 2
        if pos < self.n and self.text[pos] == "\n":
            return pos + 1
        if pos >= self.n:
            return pos
        raise _ScanError(f"unexpected {self.text[pos]!r} at offset {pos}")

    def _line_start(self, pos: int) -> int:
        return self.text.rfind("\n", 0, pos) + 1

    # -- strings and keys ---------------------------------------------------------------
    def _string(self, pos: int) -> int:
        """End offset of the string starting at ``pos``."""
        text = self.text
        if self._peek(pos, '"""') or self._peek(pos, "'''"):
            quote = text[pos]
            i = pos + 3
            while i < self.n:
                ch = text[i]
                if ch == "\\" and quote == '"':
                    i += 2
                    continue
                if ch == quote and self._peek(i, quote * 3):
                    j = i
                    while j < self.n and text[j] == quote and j - i < 5:
                        j += 1
                    return j
                i += 1
            raise _ScanError("unterminated multi-line string")
        quote = text[pos]
        i = pos + 1
        while i < self.n:
            ch = text[i]
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                return i + 1
            if ch == "\n":
                break
            i += 1
        raise _ScanError("unterminated string")

    def _key(self, pos: int) -> tuple[tuple[str, ...], int]:
        """A dotted key starting at ``pos``: its parts and the offset after it."""
        parts: list[str] = []
        while True:
            pos = self._skip_ws(pos)
            if pos < self.n and self.text[pos] in "\"'":
                end = self._string(pos)
                raw = self.text[pos:end]
                try:
                    parts.append(str(tomllib.loads(f"k = {raw}")["k"]))
                except tomllib.TOMLDecodeError as exc:
                    raise _ScanError(f"bad quoted key {raw!r}") from exc
                pos = end
            else:
                match = _BARE_KEY.match(self.text, pos)
                if match is None:
                    raise _ScanError(f"expected a key at offset {pos}")
                parts.append(match.group())
                pos = match.end()
            after = self._skip_ws(pos)
            if after < self.n and self.text[after] == ".":
                pos = after + 1
                continue
            return tuple(parts), pos

    # -- values -------------------------------------------------------------------------
    def _value(self, pos: int) -> tuple[int, _Array | None]:
        """End offset of the value at ``pos`` (and its layout for arrays/inline tables)."""
        if pos >= self.n:
            raise _ScanError("missing value")
        ch = self.text[pos]
        if ch in "\"'":
            return self._string(pos), None
        if ch == "[":
            return self._array(pos)
        if ch == "{":
            return self._inline_table(pos)
        end = pos
        while end < self.n and self.text[end] not in _SCALAR_STOP:
            end += 1
        # A local date-time may separate date and time with a space.
        if (
            _DATE.fullmatch(self.text, pos, end)
            and end + 1 < self.n
            and self.text[end] == " "
            and self.text[end + 1].isdigit()
        ):
            end += 1
            while end < self.n and self.text[end] not in _SCALAR_STOP:
                end += 1
        if end == pos:
            raise _ScanError(f"expected a value at offset {pos}")
        return end, None

    def _array(self, pos: int) -> tuple[int, _Array]:
        layout = _Array(pos)
        pos += 1
        while True:
            pos = self._skip_ws_comments_newlines(pos)
            if pos >= self.n:
                raise _ScanError("unterminated array")
            ch = self.text[pos]
            if ch == "]":
                layout.close = pos
                return pos + 1, layout
            if ch == ",":
                layout.commas.append(pos)
                pos += 1
                continue
            end, _ = self._value(pos)
            layout.items.append((pos, end))
            pos = end

    def _inline_table(self, pos: int) -> tuple[int, _Array]:
        layout = _Array(pos)
        pos += 1
        while True:
            pos = self._skip_ws(pos)
            if pos >= self.n:
                raise _ScanError("unterminated inline table")
            ch = self.text[pos]
            if ch == "}":
                layout.close = pos
                return pos + 1, layout
            if ch == ",":
                layout.commas.append(pos)
                pos += 1
                continue
            start = pos
            _, pos = self._key(pos)
            pos = self._skip_ws(pos)
            if pos >= self.n or self.text[pos] != "=":
                raise _ScanError(f"expected '=' at offset {pos}")
            pos = self._skip_ws(pos + 1)
            end, _ = self._value(pos)
            layout.items.append((start, end))
            pos = end

    # -- statements ---------------------------------------------------------------------
    def scan(self) -> list[_KeyValue | _Header]:
        """Every statement of the document, in order."""
        pos = 0
        table: tuple[str, ...] = ()
        if self._peek(0, "\ufeff"):
            raise _ScanError("byte order mark")
        while True:
            pos = self._skip_ws_comments_newlines(pos)
            if pos >= self.n:
                return self.statements
            if self.text[pos] == "[":
                is_array = self._peek(pos, "[[")
                key, after = self._key(pos + (2 if is_array else 1))
                after = self._skip_ws(after)
                closing = "]]" if is_array else "]"
                if not self._peek(after, closing):
                    raise _ScanError(f"bad table header at offset {pos}")
                line_end = self._line_end(after + len(closing))
                self.statements.append(
                    _Header(key, self._line_start(pos), line_end, is_array)
                )
                table = key
                pos = line_end
                continue
            start = pos
            key, key_end = self._key(pos)
            pos = self._skip_ws(key_end)
            if pos >= self.n or self.text[pos] != "=":
                raise _ScanError(f"expected '=' at offset {pos}")
            value_start = self._skip_ws(pos + 1)
            value_end, layout = self._value(value_start)
            line_end = self._line_end(value_end)
            self.statements.append(
                _KeyValue(key, start, key_end, value_start, value_end, line_end, table, layout)
            )
            pos = line_end


# ---------------------------------------------------------------------------------------
# The edit


def _failed(filename: str, path: str, why: str) -> ConfigError:
    return ConfigError(
        f"could not register checkout {path!r} in {filename}: {why}; add it by hand "
        f"to the `paths` list (or table) of {filename} and run the sync again, "
        "or pass --no-register",
        code="config.register_failed",
        path=filename,
    )


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _indent_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = start
    while end < len(text) and text[end] in _WS:
        end += 1
    return text[start:end]


def _insert_lines_at(text: str, pos: int, line: str) -> str:
    """Insert ``line`` (without newline) as its own line at ``pos`` (a line start or EOF)."""
    nl = _newline_of(text)
    prefix = "" if pos == 0 or text[pos - 1] == "\n" else nl
    return text[:pos] + prefix + line + nl + text[pos:]


def _append_to_array(text: str, layout: _Array, element: str) -> str:
    """Append ``element`` (source text) to the array ``layout`` describes."""
    last_item = layout.items[-1][1] if layout.items else -1
    last_comma = layout.commas[-1] if layout.commas else -1
    trailing_comma = last_comma >= last_item >= 0
    anchor_end = max(last_item, last_comma + 1, layout.open + 1)
    multiline = "\n" in text[anchor_end : layout.close]
    if not multiline:
        if not layout.items:
            inner = text[layout.open + 1 : layout.close]
            insert = f" {element}" if inner and inner.strip(_WS) == "" else element
            return text[:anchor_end] + insert + text[anchor_end:]
        insert = f" {element}," if trailing_comma else f", {element}"
        return text[:anchor_end] + insert + text[anchor_end:]
    # One element per line: the new one goes on its own line after the last element's line,
    # indented like that element (or one step deeper than the key when the array is empty).
    nl = _newline_of(text)
    line_end = text.index("\n", anchor_end) + 1
    if layout.items and "\n" in text[layout.open : layout.items[-1][0]]:
        indent = _indent_of(text, layout.items[-1][0])
    else:
        # Empty, or the last element shares the opening line: one step past the key line.
        indent = _indent_of(text, layout.open) + "    "
    new_line = f"{indent}{element},{nl}"
    if layout.items and not trailing_comma:
        # Separate the old last element from the new one; do not add a trailing comma the
        # file did not use.
        new_line = f"{indent}{element}{nl}"
        return text[:last_item] + "," + text[last_item:line_end] + new_line + text[line_end:]
    return text[:line_end] + new_line + text[line_end:]


def _append_to_inline_table(text: str, layout: _Array, entry: str) -> str:
    """Add ``entry`` (``key = value``) before the closing brace of an inline table."""
    if not layout.items:
        inner = text[layout.open + 1 : layout.close]
        insert = f" {entry}" if inner.strip(_WS) == "" and inner else entry
        return text[: layout.open + 1] + insert + text[layout.open + 1 :]
    end = layout.items[-1][1]
    return text[:end] + f", {entry}" + text[end:]


def _first_free_label(table: dict[str, Any]) -> str:
    n = 1
    while f"path_{n}" in table:
        n += 1
    return f"path_{n}"


def _edit(text: str, data: dict[str, Any], element: str) -> tuple[str, dict[str, Any]]:
    """The edited text and the data it must parse to (``element`` is the TOML string)."""
    path = tomllib.loads(f"p = {element}")["p"]
    statements = _Scanner(text).scan()
    root = [s for s in statements if isinstance(s, _KeyValue) and s.table == ()]
    headers = [s for s in statements if isinstance(s, _Header)]
    expected = dict(data)

    if "paths" in data:
        paths = data["paths"]
        if isinstance(paths, list):
            kv = next((s for s in root if s.key == ("paths",)), None)
            if kv is None or kv.array is None or text[kv.value_start] != "[":
                raise _ScanError("the `paths` array was not found")
            expected["paths"] = [*paths, path]
            return _append_to_array(text, kv.array, element), expected
        if isinstance(paths, dict):
            label = _first_free_label(paths)
            expected["paths"] = {**paths, label: path}
            kv = next((s for s in root if s.key == ("paths",)), None)
            if kv is not None:
                if kv.array is None or text[kv.value_start] != "{":
                    raise _ScanError("the `paths` inline table was not found")
                return _append_to_inline_table(text, kv.array, f"{label} = {element}"), expected
            dotted = [s for s in root if s.key[:1] == ("paths",)]
            if dotted:
                line = f"{_indent_of(text, dotted[-1].start)}paths.{label} = {element}"
                return _insert_lines_at(text, dotted[-1].line_end, line), expected
            index = next(
                (
                    i
                    for i, s in enumerate(statements)
                    if isinstance(s, _Header) and s.key == ("paths",) and not s.is_array
                ),
                None,
            )
            if index is None:
                raise _ScanError("the [paths] table was not found")
            header = statements[index]
            assert isinstance(header, _Header)
            anchor = header.line_end
            indent = ""
            for statement in statements[index + 1 :]:
                if isinstance(statement, _Header):
                    break
                anchor = statement.line_end
                indent = _indent_of(text, statement.start)
            return _insert_lines_at(text, anchor, f"{indent}{label} = {element}"), expected
        raise _ScanError("`paths` is neither a list nor a table")

    if "path" in data:
        old = data["path"]
        kv = next((s for s in root if s.key == ("path",)), None)
        if kv is None:
            raise _ScanError("the `path` key was not found")
        del expected["path"]
        if isinstance(old, str):
            expected["paths"] = [old, path]
            value = text[kv.value_start : kv.value_end]
            new_value = f"[{value}, {element}]"
            edited = text[: kv.value_start] + new_value + text[kv.value_end :]
        elif isinstance(old, list):
            expected["paths"] = [*old, path]
            if kv.array is None:
                raise _ScanError("the `path` array was not found")
            edited = _append_to_array(text, kv.array, element)
        else:
            raise _ScanError("`path` is neither a string nor a list")
        return edited[: kv.start] + "paths" + edited[kv.key_end :], expected

    expected["paths"] = [path]
    line = f"paths = [{element}]"
    if root:
        return _insert_lines_at(text, root[-1].line_end, line), expected
    if headers:
        # Before the first table, above the comment lines attached to its header.
        pos = headers[0].line_start
        while pos > 0:
            prev = text.rfind("\n", 0, pos - 1) + 1
            if not text[prev:pos].lstrip(_WS).startswith("#"):
                break
            pos = prev
        return _insert_lines_at(text, pos, line), expected
    return _insert_lines_at(text, len(text), line), expected


def add_checkout_path(text: str, path: str, *, filename: str = "agent.toml") -> str:
    """``text`` (an ``agent.toml``) with ``path`` registered as a checkout candidate ([K4]).

    - a ``paths`` list: ``path`` is appended (single-line or one-per-line layout kept);
    - a ``paths`` table (``[paths]`` section, inline table or dotted keys): a new entry
      ``path_N = "PATH"`` with the first free ``N`` from 1;
    - only ``path`` (string or list): that key becomes ``paths = [<old values>, "PATH"]``;
    - neither: ``paths = ["PATH"]`` on its own line after the last top-level key (before
      the first table), or above the first table's header when there is no top-level key.

    Every other byte is preserved.  The result is re-parsed and must equal the old data
    plus the new path; otherwise :class:`ConfigError` ``config.register_failed`` naming
    ``filename`` is raised and the caller writes nothing.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _failed(filename, path, f"the file is not valid TOML ({exc})") from exc
    try:
        element = toml_basic_string(path)
    except ValueError as exc:
        raise _failed(filename, path, "the path is not valid Unicode text") from exc
    try:
        edited, expected = _edit(text, data, element)
    except (_ScanError, ValueError, IndexError) as exc:
        raise _failed(filename, path, f"its layout was not understood ({exc})") from exc
    try:
        reparsed = tomllib.loads(edited)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - defensive
        raise _failed(filename, path, f"the edited file did not parse ({exc})") from exc
    if reparsed != expected:  # pragma: no cover - defensive
        raise _failed(filename, path, "the edited file did not parse to the old data plus the path")
    return edited


# ---------------------------------------------------------------------------------------
# Compare-and-swap on the file


def _stale(config_path: str, why: str = "") -> StalePlanError:
    difference = f"agent.toml changed since planning: {config_path}"
    return StalePlanError(
        f"{difference}{why} — nothing was written; run the sync again to plan against it",
        differences=(difference,),
    )


def _read_exact(dir_fd: int, name: str, config_path: str) -> tuple[bytes, os.stat_result]:
    """The bytes and ``fstat`` of ``name`` in ``dir_fd`` (never through a symlink)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError as exc:
        raise _stale(config_path, " (it no longer exists)") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(
                f"{config_path} is a symlink; aikito does not replace a symlinked agent.toml "
                "— add the checkout path to its `paths` by hand, or pass --no-register",
                code="config.register_failed",
                path=config_path,
            ) from exc
        raise ExecutionError(
            f"cannot read {config_path}: {exc.strerror}", path=config_path
        ) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(
                f"{config_path} is not a regular file; add the checkout path by hand",
                code="config.register_failed",
                path=config_path,
            )
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), st
    except OSError as exc:
        raise ExecutionError(
            f"cannot read {config_path}: {exc.strerror}", path=config_path
        ) from exc
    finally:
        os.close(fd)


def _random_token() -> str:
    return os.urandom(4).hex()


def _create_temp(dir_fd: int, name: str) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(16):
        temp = f".{name}.aikito-{os.getpid()}-{_random_token()}.tmp"
        try:
            return os.open(temp, flags, 0o600, dir_fd=dir_fd), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def memory_edit_failed(filename: str, ref: str, why: str) -> ConfigError:
    return ConfigError(
        f"could not add {ref!r} to the memory list of {filename}: {why}; add it by hand and "
        "run `aikito sync project` again", code="config.memory_edit_failed", path=filename,
    )


def add_memory_reference(text: str, ref: str, *, filename: str = "agent.toml") -> str:
    """``text`` with ``ref`` appended to its top-level ``memory`` list, every other byte
    preserved (same spirit as :func:`aikito_mem.register.add_checkout_path`).

    Without a ``memory`` key, ``memory = ["REF"]`` is inserted on its own line after the
    last top-level key (or above the first table).  The result must re-parse to the old
    data with ``memory`` = old list + ``ref``; otherwise :class:`ConfigError` is raised and
    nothing should be written.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise memory_edit_failed(filename, ref, f"the file is not valid TOML ({exc})") from exc
    old = data.get("memory", [])
    if not isinstance(old, list):
        raise memory_edit_failed(filename, ref, "`memory` is not a list")
    try:
        element = toml_basic_string(ref)
        statements = _Scanner(text).scan()
        root = [s for s in statements if isinstance(s, _KeyValue) and s.table == ()]
        if "memory" in data:
            kv = next((s for s in root if s.key == ("memory",)), None)
            if kv is None or kv.array is None or text[kv.value_start] != "[":
                raise _ScanError("the `memory` array was not found at the top level")
            edited = _append_to_array(text, kv.array, element)
        else:
            line = f"memory = [{element}]"
            headers = [s for s in statements if not isinstance(s, _KeyValue)]
            if root:
                edited = _insert_lines_at(text, root[-1].line_end, line)
            elif headers:
                pos = headers[0].line_start
                while pos > 0:  # above the comment lines attached to the first header
                    prev = text.rfind("\n", 0, pos - 1) + 1
                    if not text[prev:pos].lstrip(" \t").startswith("#"):
                        break
                    pos = prev
                edited = _insert_lines_at(text, pos, line)
            else:
                edited = _insert_lines_at(text, len(text), line)
    except (_ScanError, ValueError, IndexError) as exc:
        raise memory_edit_failed(filename, ref, f"its layout was not understood ({exc})") from exc
    expected = {**data, "memory": [*old, ref]}
    try:
        reparsed = tomllib.loads(edited)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - defensive
        raise memory_edit_failed(filename, ref, f"the edited file did not parse ({exc})") from exc
    if reparsed != expected:  # pragma: no cover - defensive
        raise memory_edit_failed(filename, ref, "the edited file did not parse to the old data "
                                          "plus the reference")
    return edited


def register_checkout(config_path: str, path: str, *, expected_sha256: str) -> None:
    """Register ``path`` in ``config_path`` iff its bytes still hash to ``expected_sha256``.

    Raises :class:`StalePlanError` (nothing written) when the live bytes differ or the file
    is gone, :class:`ConfigError` ``config.register_failed`` when the edit cannot be made
    safely (symlinked or non-regular file, unknown layout, owner not preservable), and
    :class:`ExecutionError` on an I/O failure.  The temporary file is removed on every
    failure before the rename.  The caller holds the checkout lock.
    """
    directory, name = os.path.split(config_path)
    try:
        dir_fd = os.open(
            directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        )
    except FileNotFoundError as exc:
        raise _stale(config_path, " (its directory no longer exists)") from exc
    except OSError as exc:
        raise ExecutionError(
            f"cannot open the directory of {config_path}: {exc.strerror}", path=config_path
        ) from exc
    try:
        data, st = _read_exact(dir_fd, name, config_path)
        if hashlib.sha256(data).hexdigest() != expected_sha256.lower().removeprefix("sha256:"):
            raise _stale(config_path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _failed(config_path, path, "the file is not valid UTF-8") from exc
        new = add_checkout_path(text, path, filename=config_path).encode("utf-8")
        swap_config(dir_fd, name, config_path, new, st, data)
    finally:
        os.close(dir_fd)


def swap_config(
    dir_fd: int, name: str, config_path: str, new: bytes, st: os.stat_result, old: bytes
) -> None:
    """Write ``new`` to a temporary file and rename it over ``name`` (old bytes re-checked)."""
    temp: str | None = None
    fd = -1
    try:
        fd, temp = _create_temp(dir_fd, name)
        created = os.fstat(fd)
        if (st.st_uid, st.st_gid) != (created.st_uid, created.st_gid):
            try:
                os.fchown(fd, st.st_uid, st.st_gid)
            except OSError as exc:
                raise ConfigError(
                    f"cannot keep the owner and group of {config_path} when rewriting it "
                    f"({exc.strerror}); add the checkout path to its `paths` by hand, "
                    "or pass --no-register",
                    code="config.register_failed",
                    path=config_path,
                ) from exc
        # The same permission bits as the original (never wider; set-id bits dropped).
        os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)
        view = memoryview(new)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        # Narrow the window: the live file must still be what was compared.
        live, _ = _read_exact(dir_fd, name, config_path)
        if live != old:
            raise _stale(config_path)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        temp = None
    except OSError as exc:
        raise ExecutionError(
            f"cannot write {config_path}: {exc.strerror or exc}; it was left unchanged",
            path=config_path,
        ) from exc
    finally:
        if fd >= 0:
            os.close(fd)
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        raise ExecutionError(
            f"{config_path} was rewritten but its directory could not be synced to disk "
            f"({exc.strerror})",
            path=config_path,
        ) from exc
