"""Format-preserving edits of ``agent.toml`` and their compare-and-swap ([K4], §11).

Two pure edits, text in → text out:

- :func:`add_checkout_path` registers an explicit checkout ([K4]);
- :func:`add_memory_reference` appends a reference to the ``memory`` list (``aikito adopt``).

Both run the one edit sequence of :func:`_edit`: the text is parsed by ``tomllib`` (the
data) and by ``tomlkit`` (the layout: comments, blank lines, quoting, key order, line
endings), the new value is spliced into the ``tomlkit`` document where a person would have
written it, the document is rendered, and the rendering must parse with ``tomllib`` to the
old data plus exactly the new value — otherwise :class:`ConfigError` and nothing is
written.  ``tomlkit`` is imported only inside the functions that edit, so a sync that
registers nothing (and ``aikito --version``) never loads it.

Where the new value goes is decided here, not by ``tomlkit``'s own ``append`` (which would
put a key between a table header and the comment above it, or drop a trailing comma): the
placement works on the parsed document's body (``Container.body``) and an array's raw items
(``Array._iter_items``, rebuilt with the public ``Array`` constructor).  Those two
``tomlkit`` details are used only in this module; a ``tomlkit`` release that changed them
is caught by the re-parse check (a refusal, never a wrong file) and by the byte-preservation
tests.

:func:`register_checkout` applies the edit as a compare-and-swap on the file, through
:mod:`aikito_mem.fsutil`: the live bytes (read without following a symlink) must still
hash to what the plan recorded; the new bytes go to a temporary file in the same directory
(same permission bits and owner, fsynced) that is renamed over ``agent.toml`` only if a
last re-read still finds the compared bytes.  :func:`plan_registration` makes, at planning
time, every check the registration will make ([E9]), so a dry run, ``--check`` and the real
run refuse alike.  The caller holds the checkout lock; this module takes none.
"""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aikito_mem import fsutil, signals
from aikito_mem.errors import ConfigError, ExecutionError, StalePlanError

if TYPE_CHECKING:
    from tomlkit.container import Container
    from tomlkit.items import Array, Item, Key

    from aikito_mem.model import ProjectConfig
    from aikito_mem.observe import Observer

__all__ = [
    "add_checkout_path",
    "add_memory_reference",
    "check_registration",
    "memory_edit_failed",
    "plan_registration",
    "register_checkout",
    "registered_form",
    "swap_config",
    "toml_basic_string",
]

#: One body entry of a ``tomlkit`` container: ``(key or None, item)``.
_Entry = tuple["Key | None", "Item"]
#: A layout edit: (document, newline of the file, the file's text).
_Change = Callable[["Container", str, str], None]


# ---------------------------------------------------------------------------------------
# Errors


def _failed(filename: str, path: str, why: str) -> ConfigError:
    return ConfigError(
        f"could not register checkout {path!r} in {filename}: {why}; add it by hand "
        f"to the `paths` list (or table) of {filename} and run the sync again, "
        "or pass --no-register",
        code="config.register_failed",
        path=filename,
    )


def memory_edit_failed(filename: str, ref: str, why: str) -> ConfigError:
    return ConfigError(
        f"could not add {ref!r} to the memory list of {filename}: {why}; add it by hand and "
        "run `aikito sync project` again", code="config.memory_edit_failed", path=filename,
    )


class _Unsupported(Exception):
    """A layout this module does not edit (the caller refuses: add the value by hand)."""


# ---------------------------------------------------------------------------------------
# TOML basic-string escaping


def toml_basic_string(value: str) -> str:
    """``value`` as a TOML basic string (``"..."``), escaping what TOML requires.

    Backslash and quote are escaped, as are C0 controls, DEL and C1 controls (tab, newline
    and friends by their short escapes).  Everything else is written as is (UTF-8).  A lone
    surrogate (a file name that is not valid UTF-8, decoded with ``surrogateescape``)
    cannot be written to TOML: :class:`ValueError`.
    """
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"{value!r} is not valid Unicode text and cannot be written to TOML")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


# ---------------------------------------------------------------------------------------
# The one edit sequence


def _edit(
    text: str,
    plan: Callable[[dict[str, Any]], tuple[dict[str, Any], _Change]],
    fail: Callable[[str], ConfigError],
) -> str:
    """``text`` changed by the layout edit ``plan`` returns, proven by a re-parse.

    ``plan(data)`` gets the parsed data and returns the data the result must parse to and
    the layout edit that makes it.  Any failure — invalid TOML, a layout not supported,
    ``tomlkit`` refusing the text (it nests at most 100 levels), a recursion limit, a
    rendering that does not re-parse to exactly the expected data — raises ``fail(why)``.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise fail(f"the file is not valid TOML ({exc})") from None
    except RecursionError:
        raise fail("its values are nested too deeply to parse") from None
    try:
        expected, change = plan(data)
        import tomlkit

        document = tomlkit.parse(text)
        change(document, "\r\n" if "\r\n" in text else "\n", text)
        edited = document.as_string()
        reparsed = tomllib.loads(edited)
        same = reparsed == expected
    except _Unsupported as exc:
        raise fail(f"its layout is not supported ({exc})") from None
    except RecursionError:
        raise fail("its values are nested too deeply to edit safely") from None
    except tomllib.TOMLDecodeError as exc:
        raise fail(f"the edited text did not parse ({exc})") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # tomlkit's ParseError is a ValueError ("nested more than 100 levels", …).
        raise fail(f"its layout was not understood ({exc})") from None
    if not same:
        raise fail("the edited text did not parse to the old data plus the new value")
    return edited


def _element(value: str, fail: Callable[[str], ConfigError]) -> str:
    try:
        return toml_basic_string(value)
    except ValueError:
        raise fail("the path is not valid Unicode text (a file name that is not UTF-8) "
                   "and cannot be written to TOML") from None


def add_checkout_path(text: str, path: str, *, filename: str = "agent.toml") -> str:
    """``text`` (an ``agent.toml``) with ``path`` registered as a checkout candidate ([K4]).

    - a ``paths`` list: ``path`` is appended (single-line or one-per-line layout kept);
    - a ``paths`` table (``[paths]`` section, inline table or dotted keys): a new entry
      ``path_N = "PATH"`` with the first free ``N`` from 1;
    - only ``path`` (string or list): that key becomes ``paths = [<old values>, "PATH"]``;
    - neither: ``paths = ["PATH"]`` on its own line after the last top-level key (before
      the first table), or above the first table's header (and the comment lines attached
      to it) when there is no top-level key.

    Every other byte is preserved.  The result is re-parsed and must equal the old data
    plus the new path; otherwise :class:`ConfigError` ``config.register_failed`` naming
    ``filename`` is raised and the caller writes nothing.
    """

    def fail(why: str) -> ConfigError:
        return _failed(filename, path, why)

    element = _element(path, fail)
    return _edit(text, lambda data: _checkout_plan(data, path, element), fail)


def add_memory_reference(text: str, ref: str, *, filename: str = "agent.toml") -> str:
    """``text`` with ``ref`` appended to its top-level ``memory`` list, every other byte
    preserved (the same edit sequence as :func:`add_checkout_path`).

    Without a ``memory`` key, ``memory = ["REF"]`` is inserted on its own line after the
    last top-level key (or above the first table).  The result must re-parse to the old
    data with ``memory`` = old list + ``ref``; otherwise :class:`ConfigError` is raised and
    nothing should be written.
    """

    def fail(why: str) -> ConfigError:
        return memory_edit_failed(filename, ref, why)

    element = _element(ref, fail)

    def plan(data: dict[str, Any]) -> tuple[dict[str, Any], _Change]:
        old = data.get("memory", [])
        if not isinstance(old, list):
            raise _Unsupported("`memory` is not a list")
        expected = {**data, "memory": [*old, ref]}
        if "memory" in data:
            return expected, lambda doc, nl, _t: _append_to_root_array(doc, "memory",
                                                                       element, nl)
        return expected, lambda doc, nl, t: _insert_root_line(doc, f"memory = [{element}]",
                                                              nl, t)

    return _edit(text, plan, fail)


def _checkout_plan(
    data: dict[str, Any], path: str, element: str
) -> tuple[dict[str, Any], _Change]:
    """The data ``add_checkout_path`` must produce, and the layout edit that makes it."""
    expected = dict(data)
    if "paths" in data:
        paths = data["paths"]
        if isinstance(paths, list):
            expected["paths"] = [*paths, path]
            return expected, lambda doc, nl, _t: _append_to_root_array(doc, "paths",
                                                                       element, nl)
        if isinstance(paths, dict):
            label = next(f"path_{n}" for n in range(1, len(paths) + 2)
                         if f"path_{n}" not in paths)
            expected["paths"] = {**paths, label: path}
            return expected, lambda doc, nl, t: _add_to_paths_table(doc, label, element,
                                                                    nl, t)
        raise _Unsupported("`paths` is neither a list nor a table")
    if "path" in data:
        old = data["path"]
        del expected["path"]
        if isinstance(old, str):
            expected["paths"] = [old, path]
        elif isinstance(old, list):
            expected["paths"] = [*old, path]
        else:
            raise _Unsupported("`path` is neither a string nor a list")
        return expected, lambda doc, nl, _t: _path_to_paths(doc, element, nl)
    expected["paths"] = [path]
    return expected, lambda doc, nl, t: _insert_root_line(doc, f"paths = [{element}]", nl, t)


# ---------------------------------------------------------------------------------------
# Placement in the tomlkit document


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
    raise _Unsupported(f"the `{name}` key was not found at the top level")


def _splice_lines(body: list[_Entry], pos: int, lines: str, nl: str, at_eof: bool,
                  text: str) -> None:
    """Insert ``lines`` (TOML source, parsed by tomlkit) as whole lines at ``pos``."""
    import tomlkit

    lead = nl if at_eof and text and not text.endswith("\n") else ""
    body[pos:pos] = tomlkit.parse(f"{lead}{lines}{nl}").body


def _insert_root_line(doc: Container, line: str, nl: str, text: str) -> None:
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
    _splice_lines(body, pos, line, nl, pos == len(body), text)


def _add_to_paths_table(doc: Container, label: str, element: str, nl: str,
                        text: str) -> None:
    """``label = element`` in the ``paths`` table: inline, dotted keys or a section."""
    from tomlkit.items import InlineTable, Table

    body = doc.body
    entry = f"{label} = {element}"
    for i, (key, item) in enumerate(body):
        if key is None or key.key != "paths":
            continue
        if isinstance(item, InlineTable):
            _add_to_inline_table(item, entry)
            return
        if key.is_dotted():
            last = max(j for j, (k, _v) in enumerate(body)
                       if k is not None and k.key == "paths" and k.is_dotted())
            line = f"{_indent(*body[last])}paths.{entry}"
            _splice_lines(body, last + 1, line, nl, last + 1 == len(body), text)
            return
        if isinstance(item, Table) and not item.is_super_table():
            inner = item.value.body
            lines = _lines(inner)
            pos = lines[-1] + 1 if lines else 0
            indent = _indent(*inner[lines[-1]]) if lines else ""
            at_eof = pos == len(inner) and i == len(body) - 1
            _splice_lines(inner, pos, f"{indent}{entry}", nl, at_eof, text)
            return
    raise _Unsupported("the `paths` table has no [paths] header, inline table or dotted keys")


def _add_to_inline_table(table: Item, entry: str) -> None:
    """``entry`` after the last key of an inline table (``{ }`` keeps its spaces)."""
    import tomlkit
    from tomlkit.items import InlineTable, Whitespace

    assert isinstance(table, InlineTable)
    body = table.value.body
    key, item = tomlkit.parse(entry).body[0]
    item.trivia.trail = ""
    keys = [i for i, (k, _v) in enumerate(body) if k is not None]
    if keys:
        body[keys[-1] + 1 : keys[-1] + 1] = [(None, Whitespace(",")), (None, Whitespace(" ")),
                                             (key, item)]
        return
    inner = "".join(v.as_string() for _k, v in body)
    lead = [(None, Whitespace(" "))] if inner and not inner.strip(" \t") else []
    body[0:0] = [*lead, (key, item)]


def _path_to_paths(doc: Container, element: str, nl: str) -> None:
    """``path = X`` → ``paths = [X, element]``; ``path = [..]`` → ``paths = [.., element]``."""
    import tomlkit
    from tomlkit.items import Array, SingleKey, String, Whitespace

    body = doc.body
    i = _root_entry(doc, "path")
    key, item = body[i]
    assert key is not None
    written = key.as_string()
    renamed = SingleKey("paths", sep=key.sep,
                        original="paths" + written[len(written.rstrip(" \t")) :])
    if isinstance(item, String):
        new: Item = Array([item, Whitespace(","), Whitespace(" "), tomlkit.value(element)],
                          item.trivia)
    elif isinstance(item, Array):
        new = _appended(item, element, _indent(key, item), nl)
    else:
        raise _Unsupported("`path` is neither a string nor an array")
    body[i] = (renamed, new)


def _append_to_root_array(doc: Container, name: str, element: str, nl: str) -> None:
    from tomlkit.items import Array

    i = _root_entry(doc, name)
    key, item = doc.body[i]
    if key is None or not isinstance(item, Array):
        raise _Unsupported(f"`{name}` is not written as an array")
    doc.body[i] = (key, _appended(item, element, _indent(key, item), nl))


def _appended(array: Array, element: str, key_indent: str, nl: str) -> Array:
    """A copy of ``array`` with ``element`` appended in the array's own layout.

    On one line: ``, "new"`` after the last element (``"new",`` after a trailing comma).
    Over several lines: ``"new",`` on a line of its own right after the line of the last
    element (or of the ``[``), indented like that element, or one step (four spaces) past
    the key when the element shares the ``[`` line or there is none; an old last element
    without a trailing comma gets one, the new one then has none.
    """
    import tomlkit
    from tomlkit.items import Array, Comment, Null, Whitespace

    items: list[Item] = []
    for x in array._iter_items():  # the raw items: values, white space, commas, comments
        if isinstance(x, Null):
            continue
        if isinstance(x, Whitespace) and "," in x.s and not x.s.endswith(","):
            cut = x.s.index(",") + 1  # a comma always ends its item
            items += [Whitespace(x.s[:cut]), Whitespace(x.s[cut:])]
        else:
            items.append(x)

    def comma(x: Item) -> bool:
        return isinstance(x, Whitespace) and "," in x.s

    value = tomlkit.value(element)
    values = [i for i, x in enumerate(items) if not isinstance(x, Whitespace | Comment)]
    last = values[-1] if values else -1
    commas = [i for i in range(last + 1, len(items)) if comma(items[i])]
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


# ---------------------------------------------------------------------------------------
# Reading and replacing the file


def _stale(config_path: str, why: str = "") -> StalePlanError:
    difference = f"agent.toml changed since planning: {config_path}"
    return StalePlanError(
        f"{difference}{why} — nothing was written; run the sync again to plan against it",
        differences=(difference,),
    )


def _read(dir_fd: int, name: str, config_path: str) -> tuple[bytes, os.stat_result]:
    """The bytes and ``fstat`` of ``agent.toml``: a regular file, never through a symlink."""
    try:
        return fsutil.read_regular(name, dir_fd=dir_fd)
    except FileNotFoundError:
        raise _stale(config_path, " (it no longer exists)") from None
    except fsutil.NotRegularFileError as exc:
        raise ConfigError(
            f"cannot register a checkout in {config_path}: it is "
            f"{fsutil.describe_mode(exc.st.st_mode)}; expected a regular file — replace it "
            "with a regular file, or pass --no-register",
            code="config.register_failed", path=config_path,
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _symlinked(dir_fd, name, config_path) from None
        if isinstance(exc, fsutil.FileTooLargeError):
            raise ConfigError(
                f"cannot register a checkout in {config_path}: it is {exc.strerror}; "
                "expected a small text file — add the checkout path by hand, or pass "
                "--no-register", code="config.register_failed", path=config_path,
            ) from None
        raise ExecutionError(
            f"cannot read {config_path}: {exc.strerror or exc}", path=config_path
        ) from None


def _symlinked(dir_fd: int, name: str, config_path: str) -> ConfigError:
    try:
        target = f" (to {os.readlink(name, dir_fd=dir_fd)!r})"
    except OSError:
        target = ""
    return ConfigError(
        f"cannot register a checkout in {config_path}: it is a symlink{target}, and "
        "registration replaces agent.toml by renaming a new file over it, which would "
        "replace the link itself; expected a regular file — add the checkout path to "
        "`paths` in the file the link points to by hand, or pass --no-register",
        code="config.register_failed", path=config_path,
    )


def _check_owner(dir_fd: int, st: os.stat_result, config_path: str) -> None:
    """Refuse (before any write) when the rewritten file could not keep its owner."""
    euid = os.geteuid()
    if euid == 0:
        return
    if st.st_uid == euid:
        directory = os.fstat(dir_fd)
        inherited = directory.st_gid if directory.st_mode & stat.S_ISGID else os.getegid()
        if st.st_gid in (inherited, os.getegid(), *os.getgroups()):
            return
    raise ConfigError(
        f"cannot keep the owner and group ({st.st_uid}:{st.st_gid}) of {config_path} when "
        f"rewriting it as user {euid}; expected a file this user owns — add the "
        "change to it by hand, or pass --no-register",
        code="config.register_failed", path=config_path,
    )


def swap_config(
    dir_fd: int, name: str, config_path: str, new: bytes, st: os.stat_result, old: bytes
) -> None:
    """Replace ``name`` (in ``dir_fd``) with ``new``, iff it still holds exactly ``old``.

    ``st`` is the ``stat`` of the file ``old`` was read from: the new file keeps its
    permission bits and owner.  The temporary file is written and synced, the live bytes
    re-read, and the rename made only if they are still ``old`` (else
    :class:`StalePlanError`, nothing written).  An I/O failure is an
    :class:`ExecutionError` saying whether the file was replaced.
    """
    _check_owner(dir_fd, st, config_path)

    def unchanged() -> None:
        live, _ = _read(dir_fd, name, config_path)
        if live != old:
            raise _stale(config_path)

    signals.check()
    try:
        fsutil.atomic_replace(dir_fd, name, new, mode=stat.S_IMODE(st.st_mode),
                              owner=(st.st_uid, st.st_gid), before_rename=unchanged)
    except OSError as exc:
        try:
            replaced = fsutil.read_regular(name, dir_fd=dir_fd)[0] == new
        except OSError:
            replaced = False
        state = ("it was rewritten but could not be synced to disk" if replaced
                 else "it was left unchanged")
        raise ExecutionError(
            f"cannot write {config_path}: {exc.strerror or exc}; {state}", path=config_path
        ) from None


def _open_parent(config_path: str) -> tuple[int, str]:
    directory, name = os.path.split(config_path)
    try:
        return fsutil.open_dir(directory), name
    except FileNotFoundError:
        raise _stale(config_path, " (its directory no longer exists)") from None
    except OSError as exc:
        raise ExecutionError(
            f"cannot open the directory of {config_path}: {exc.strerror}", path=config_path
        ) from None


def _edited(data: bytes, config_path: str, path: str) -> bytes:
    """``agent.toml``'s bytes with ``path`` registered (every check of the edit)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _failed(config_path, path, "the file is not valid UTF-8") from None
    return add_checkout_path(text, path, filename=config_path).encode("utf-8")


def register_checkout(config_path: str, path: str, *, expected_sha256: str) -> None:
    """Register ``path`` in ``config_path`` iff its bytes still hash to ``expected_sha256``.

    Raises :class:`StalePlanError` (nothing written) when the live bytes differ or the file
    is gone, :class:`ConfigError` ``config.register_failed`` when the edit cannot be made
    safely (symlinked or non-regular file, invalid UTF-8, unsupported layout, owner not
    preservable), and :class:`ExecutionError` on an I/O failure.  The caller holds the
    checkout lock.
    """
    dir_fd, name = _open_parent(config_path)
    try:
        data, st = _read(dir_fd, name, config_path)
        if fsutil.sha256_hex(data) != expected_sha256.lower().removeprefix("sha256:"):
            raise _stale(config_path)
        swap_config(dir_fd, name, config_path, _edited(data, config_path, path), st, data)
    finally:
        os.close(dir_fd)


# ---------------------------------------------------------------------------------------
# Planning a registration ([K4], [E9])


def registered_form(path: str, home: str | None) -> str:
    """How checkout ``path`` (absolute) is written to ``agent.toml``: ``~/REL`` when it is
    under the home directory ``home``, so one ``agent.toml`` serves every machine; the
    absolute path otherwise.  ``~/REL`` expands back to exactly ``path`` ([K1])."""
    if home and os.path.isabs(home):
        base = home.rstrip("/")
        if base and path == base:
            return "~"
        if base and path.startswith(base + "/"):
            return "~/" + path[len(base) + 1 :]
    return path


def check_registration(config_path: str, path: str) -> bytes:
    """Every check :func:`register_checkout` will make, without writing ([E9]).

    ``agent.toml`` is read as the registration will read it (a regular file, never through
    a symlink), decoded, edited with ``path`` and re-parsed, and its owner checked; the
    edited bytes are returned.  Raises what the registration would raise.
    """
    dir_fd, name = _open_parent(config_path)
    try:
        data, st = _read(dir_fd, name, config_path)
        new = _edited(data, config_path, path)
        _check_owner(dir_fd, st, config_path)
        return new
    except StalePlanError:
        raise ConfigError(
            f"{config_path} disappeared while the registration was being planned; "
            "expected the project's agent.toml — run the sync again",
            code="config.register_failed", path=config_path,
        ) from None
    finally:
        os.close(dir_fd)


def plan_registration(config: ProjectConfig, given: str, physical: str, *,
                      home: str | None, observer: Observer) -> str:
    """The string a sync of the unregistered checkout ``given`` will add to
    ``agent.toml``, after every check the registration makes ([K4], [E9]).

    ``physical`` is ``given`` resolved.  A checkout inside, or containing, an active
    checkout of the same project is refused (its sync would nest one ``.agents`` tree in
    another); then :func:`check_registration` runs on the value :func:`registered_form`
    gives.  Raises :class:`ConfigError` (nothing written, exit 4) — the same error the
    real run raises, so a dry run, ``--check`` and the sync agree.
    """
    from aikito_mem import checkouts
    from aikito_mem.model import CheckoutState

    for slot in checkouts.slots(config, observer):
        if slot.state is not CheckoutState.ACTIVE or slot.path == physical:
            continue
        inside = physical.startswith(slot.path.rstrip("/") + "/")
        if inside or slot.path.startswith(physical.rstrip("/") + "/"):
            where = "inside" if inside else "contains"
            raise ConfigError(
                f"cannot register {given}: it {'is ' * inside}{where} checkout {slot.path} "
                f"(label {slot.label!r}) of project {config.name!r}, listed in "
                f"{config.config_path}; expected a directory that is neither inside nor "
                f"around a registered checkout — sync that checkout instead (aikito sync "
                f"project {config.name} {slot.path}), or pass --no-register to sync "
                f"{given} once without registering it",
                code="config.checkout_nested", path=config.config_path,
            )
    value = registered_form(given, home)
    check_registration(config.config_path, value)
    return value
