"""Format-preserving edits of ``agent.toml`` ([K4], §11): text in, text out.

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

Where the new value goes is decided by :mod:`aikito_mem.config.toml_layout`, not by ``tomlkit``'s
own ``append`` (which would put a key between a table header and the comment above it, or
drop a trailing comma).  A ``tomlkit`` release that changed what that module relies on is
caught by the re-parse check (a refusal, never a wrong file) and by the byte-preservation
tests.

The edited text is written by :mod:`aikito_mem.config.write`, the one compare-and-swap
writer of ``agent.toml``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from aikito_mem.config import toml_layout
from aikito_mem.errors import ConfigError

if TYPE_CHECKING:
    from tomlkit.container import Container

__all__ = [
    "add_checkout_path",
    "add_list_value",
    "add_memory_reference",
    "memory_edit_failed",
    "register_failed",
    "toml_basic_string",
]

#: A layout edit of :mod:`aikito_mem.config.toml_layout`: (document, the file's text).
_Change = Callable[["Container", str], None]


# ---------------------------------------------------------------------------------------
# Errors


def register_failed(filename: str, path: str, why: str) -> ConfigError:
    return ConfigError(
        f"could not register checkout {path!r} in {filename}: {why}; add it by hand "
        f"to the `paths` list (or table) of {filename} and run the sync again, "
        "or pass --no-register",
        code="config.register_failed",
        path=filename,
    )


def memory_edit_failed(filename: str, ref: str, why: str, key: str = "memory"
                       ) -> ConfigError:
    return ConfigError(
        f"could not add {ref!r} to the {key} list of {filename}: {why}; add it by hand and "
        "run `aikito sync project` again", code=f"config.{key}_edit_failed", path=filename,
    )


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
        if document.as_string() != text:
            raise fail("tomlkit does not reproduce its text byte for byte")
        change(document, text)
        edited = document.as_string()
        if not _inserted_only(text, edited):
            raise fail("the edit would have changed or removed some of its text")
        same = tomllib.loads(edited) == expected
    except toml_layout.Unsupported as exc:
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


def _inserted_only(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with characters inserted (``old`` a subsequence of it)."""
    rest = iter(new)
    return all(ch in rest for ch in old)


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
        return register_failed(filename, path, why)

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
    return add_list_value(text, "memory", ref, filename=filename)


def add_list_value(text: str, key: str, value: str, *, filename: str = "agent.toml") -> str:
    """``text`` with ``value`` appended to the top-level list ``key`` (``memory``, or
    ``skills`` for adopt [L5]), every other byte preserved; ``key = ["VALUE"]`` inserted
    when absent."""

    def fail(why: str) -> ConfigError:
        return memory_edit_failed(filename, value, why, key)

    element = _element(value, fail)

    def plan(data: dict[str, Any]) -> tuple[dict[str, Any], _Change]:
        old = data.get(key, [])
        if not isinstance(old, list):
            raise toml_layout.Unsupported(f"`{key}` is not a list")
        expected = {**data, key: [*old, value]}
        if key in data:
            return expected, partial(toml_layout.append_to_root_array, name=key,
                                     element=element)
        return expected, partial(toml_layout.insert_root_line, line=f"{key} = [{element}]")

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
            return expected, partial(toml_layout.append_to_root_array, name="paths",
                                     element=element)
        if isinstance(paths, dict):
            label = next(f"path_{n}" for n in range(1, len(paths) + 2)
                         if f"path_{n}" not in paths)
            expected["paths"] = {**paths, label: path}
            return expected, partial(toml_layout.add_to_paths_table, label=label,
                                     element=element)
        raise toml_layout.Unsupported("`paths` is neither a list nor a table")
    if "path" in data:
        old = data["path"]
        del expected["path"]
        if isinstance(old, str):
            expected["paths"] = [old, path]
        elif isinstance(old, list):
            expected["paths"] = [*old, path]
        else:
            raise toml_layout.Unsupported("`path` is neither a string nor a list")
        return expected, partial(toml_layout.path_to_paths, element=element)
    expected["paths"] = [path]
    return expected, partial(toml_layout.insert_root_line, line=f"paths = [{element}]")
