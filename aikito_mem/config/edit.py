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

Where the new value goes is decided by :mod:`aikito_mem.config.toml_layout`, not by ``tomlkit``'s
own ``append`` (which would put a key between a table header and the comment above it, or
drop a trailing comma).  A ``tomlkit`` release that changed what that module relies on is
caught by the re-parse check (a refusal, never a wrong file) and by the byte-preservation
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
from functools import partial
from typing import TYPE_CHECKING, Any

from aikito_mem import fsutil, signals
from aikito_mem.config import toml_layout
from aikito_mem.errors import ConfigError, ExecutionError, StalePlanError

if TYPE_CHECKING:
    from tomlkit.container import Container

    from aikito_mem.model import ProjectConfig
    from aikito_mem.world.observe import Observer

__all__ = [
    "add_checkout_path",
    "add_list_value",
    "add_memory_reference",
    "check_registration",
    "memory_edit_failed",
    "plan_registration",
    "register_checkout",
    "registered_form",
    "swap_config",
    "toml_basic_string",
]

#: A layout edit of :mod:`aikito_mem.config.toml_layout`: (document, the file's text).
_Change = Callable[["Container", str], None]


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
    try:
        dir_fd, name = _open_parent(config_path)
    except StalePlanError:
        raise _vanished(config_path) from None
    try:
        data, st = _read(dir_fd, name, config_path)
        new = _edited(data, config_path, path)
        _check_owner(dir_fd, st, config_path)
        return new
    except StalePlanError:
        raise _vanished(config_path) from None
    finally:
        os.close(dir_fd)


def _vanished(config_path: str) -> ConfigError:
    return ConfigError(
        f"{config_path} disappeared while the registration was being planned; expected "
        "the project's agent.toml — run the sync again",
        code="config.register_failed", path=config_path,
    )


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
    from aikito_mem.model import CheckoutState
    from aikito_mem.world import checkouts

    for slot in checkouts.slots(config, observer, home=home or ""):
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
