"""Which workspace, and how it was found ([W1], [W2]).

Resolution order, first match wins:

1. ``option`` — the ``--workspace PATH`` option or the ``workspace=`` API argument.  ``~``
   and ``~/…`` are expanded; a relative path is resolved against the current directory
   (like any CLI path).  This is the only place the current directory is ever used.
2. ``AIKITO_DIR`` — when set and not empty.
3. The pointer file ``$XDG_CONFIG_HOME/aikito/workspace`` (``XDG_CONFIG_HOME`` defaults to
   ``~/.config``; a relative ``XDG_CONFIG_HOME`` is ignored, as the XDG spec asks).  Its
   first line, stripped of white space, is the path.
4. ``~/aikito``.

Decisions where SPEC §2 is silent:

- ``~`` is expanded with ``HOME`` from the given ``environ`` (falling back to the password
  database only when ``HOME`` is unset or empty).  ``~user`` forms are not expanded.
- A pointer file that does not exist is skipped.  A pointer file whose first line is empty
  (an empty file, or a blank first line) is skipped too: it points nowhere.  A pointer
  file that exists but cannot be used is a configuration error
  (``config.workspace_pointer``, naming the file) rather than a silent fall-through to
  ``~/aikito``: the user asked for a workspace there, and using another one instead would
  sync the wrong memory.  Unusable means: not a regular file (a directory, a FIFO — read
  without blocking, so it never hangs —, a device), unreadable, larger than 64 KiB, not
  UTF-8, a NUL anywhere, or another control character in the first line ([C6]).  The
  first line is stripped of ASCII white space only (a CR of a CRLF file included).
  Reading that file is the only file content read here.
- A deleted current directory is a configuration error (``config.cwd_missing``, exit 4)
  wherever the current directory is needed (:func:`current_directory`).
- ``AIKITO_DIR`` or a pointer-file path that is relative after ``~`` expansion is a
  configuration error (``config.workspace_not_absolute``): resolving it against the current
  directory would make the workspace depend on where the command was run ([W1]).
- An empty ``option`` string is a configuration error (``config.workspace_not_absolute``).
- A workspace path that exists but is not a directory, or cannot be searched, is reported
  with code ``config.workspace_missing`` (the message says what was found).

Only stat-family calls are made on the workspace itself, and ``realpath`` is taken once.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from aikito_mem import layout
from aikito_mem.errors import ConfigError
from aikito_mem.values import Record

__all__ = [
    "FOUND_VIA",
    "Workspace",
    "current_directory",
    "expand_home",
    "home_directory",
    "resolve_workspace",
]

#: The four ways a workspace can be found, in resolution order.
FOUND_VIA = ("option", "AIKITO_DIR", "pointer file", "default")

#: The default workspace location, before ``~`` expansion.
DEFAULT_WORKSPACE = "~/aikito"


class Workspace(Record):
    """A resolved workspace."""

    #: Absolute and physical (``os.path.realpath``), computed once.
    root: str
    #: Exactly one of ``option``, ``AIKITO_DIR``, ``pointer file``, ``default``.
    found_via: str
    #: The raw string as found, before ``~`` expansion.
    given: str


def home_directory(environ: Mapping[str, str] | None = None) -> str | None:
    """The user's home directory: ``HOME`` from ``environ``, else the password database.

    Returns ``None`` when no absolute home directory can be found.
    """
    env = os.environ if environ is None else environ
    home = env.get("HOME", "")
    if not home:
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError, OSError):
            return None
    if not os.path.isabs(home):
        return None
    return home


def expand_home(raw: str, home: str | None) -> str:
    """Expand a leading ``~`` or ``~/`` with ``home``; anything else is returned unchanged.

    ``~user`` is never expanded.  Without a home directory nothing is expanded.
    """
    if home is None or not (raw == "~" or raw.startswith("~/")):
        return raw
    if raw == "~":
        return home
    return home.rstrip("/") + raw[1:]


def _describe_origin(found_via: str, pointer: str | None) -> str:
    if found_via == "option":
        return "from --workspace"
    if found_via == "AIKITO_DIR":
        return "from AIKITO_DIR"
    if found_via == "pointer file":
        return f"from pointer file {pointer!r}"
    return "the default ~/aikito"


def _remedy(found_via: str, pointer: str | None) -> str:
    if found_via == "option":
        return "pass --workspace an existing workspace directory"
    if found_via == "AIKITO_DIR":
        return "set AIKITO_DIR to an existing workspace or pass --workspace"
    if found_via == "pointer file":
        return (
            f"edit the pointer file {pointer!r} to name an existing workspace, "
            "set AIKITO_DIR, or pass --workspace"
        )
    return "set AIKITO_DIR or pass --workspace to an existing workspace"


#: Largest pointer file read ([W1]: one line naming a directory).
POINTER_LIMIT = 64 * 1024


def _pointer_error(pointer: str, found: str) -> ConfigError:
    return ConfigError(
        f"workspace pointer file {pointer!r} {found}; expected a text file whose first "
        "line is the workspace path — rewrite or remove the pointer file, "
        "set AIKITO_DIR, or pass --workspace",
        code="config.workspace_pointer",
        path=pointer,
    )


def _read_pointer(pointer: str) -> str | None:
    """The first line of the pointer file, stripped; ``None`` when absent or empty.

    Read through :func:`~aikito_mem.fsutil.read_regular` (a FIFO there can never hang a
    command; a directory, a device or a file over 64 KiB is refused).  Invalid UTF-8 or
    a NUL anywhere, or another control character in the first line, is an error ([C6]).
    """
    from aikito_mem.fsutil import FileTooLargeError, NotRegularFileError, read_regular

    try:
        data, _st = read_regular(pointer, follow=True, limit=POINTER_LIMIT)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except NotRegularFileError as exc:
        from aikito_mem.fsutil import describe_mode

        raise _pointer_error(pointer, f"is {describe_mode(exc.st.st_mode)}, not a regular "
                             "file") from None
    except FileTooLargeError as exc:
        raise _pointer_error(pointer, f"is {exc.size} bytes, larger than the "
                             f"{exc.limit} bytes a pointer file may hold") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise _pointer_error(pointer, f"cannot be read ({reason})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _pointer_error(pointer, f"is not valid UTF-8 (byte offset {exc.start})") \
            from None
    if "\x00" in text:
        raise _pointer_error(pointer, "contains a NUL character (U+0000)")
    line = text.split("\n", 1)[0].removeprefix("\ufeff").strip(" \t\r\f\v")
    for ch in line:
        if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F:
            raise _pointer_error(pointer, f"has the control character U+{ord(ch):04X} in "
                                 "its first line")
    return line or None


def current_directory() -> str:
    """``os.getcwd()``, or a :class:`ConfigError` when the current directory is gone.

    A deleted current directory is a configuration problem (exit 4), not a failure: the
    command was asked to work relative to a directory that no longer exists.
    """
    try:
        return os.getcwd()
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            found = "no longer exists (it was deleted or moved away)"
        else:
            found = f"cannot be determined ({exc.strerror or type(exc).__name__})"
        raise ConfigError(
            f"the current directory {found}; expected to run from an existing directory, "
            "since a relative path or a missing project NAME is taken from it — cd into "
            "an existing directory (e.g. your checkout) and run again, or give absolute "
            "paths and the project NAME",
            code="config.cwd_missing",
        ) from None


def _pointer_path(env: Mapping[str, str], home: str | None) -> str | None:
    xdg = env.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(xdg):
        if home is None:
            return None
        xdg = os.path.join(home, ".config")
    return os.path.join(xdg, "aikito", "workspace")


def resolve_workspace(
    option: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Workspace:
    """Resolve the workspace root per [W1] and check it per [W2].

    Raises :class:`~aikito_mem.errors.ConfigError` (codes ``config.workspace_missing``,
    ``config.workspace_no_projects``, ``config.workspace_not_absolute``,
    ``config.workspace_pointer``).
    """
    env = os.environ if environ is None else environ
    home = home_directory(env)
    pointer: str | None = None

    if option is not None:
        found_via, given = "option", option
    elif env.get("AIKITO_DIR", ""):
        found_via, given = "AIKITO_DIR", env["AIKITO_DIR"]
    else:
        pointer = _pointer_path(env, home)
        line = _read_pointer(pointer) if pointer is not None else None
        if line is not None:
            found_via, given = "pointer file", line
        else:
            found_via, given = "default", DEFAULT_WORKSPACE

    origin = _describe_origin(found_via, pointer)
    remedy = _remedy(found_via, pointer)
    if "\x00" in given:  # only the API can pass one: argv and environ cannot hold NUL
        raise ConfigError(
            f"workspace {given!r} ({origin}) contains a NUL character; expected the path "
            f"of a directory containing projects/ — {remedy}",
            code="config.workspace_not_absolute",
            path=given,
        )
    path = expand_home(given, home)
    if not os.path.isabs(path):
        if found_via == "option" and path:
            path = os.path.join(current_directory(), path)
        else:
            if path.startswith("~"):
                why = "'~' cannot be expanded (HOME is not set) or names another user"
            elif not path:
                why = "it is empty"
            else:
                why = "it is relative and would depend on the current directory"
            raise ConfigError(
                f"workspace {given!r} ({origin}) is not an absolute path: {why}; "
                f"expected the absolute path of a directory containing projects/ — {remedy}",
                code="config.workspace_not_absolute",
                path=given,
            )

    try:
        st = os.stat(path)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            found = "does not exist"
        else:
            found = f"cannot be accessed ({exc.strerror or type(exc).__name__})"
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            # [L4]: a workspace that moved is pointed at again with init, then relinked.
            remedy = (f"if the workspace moved, point aikito at it with: aikito init NEWPATH "
                      f"(then aikito sync --moved-from {path} relinks the checkouts); to "
                      f"start a new one here: aikito init {path}; or {remedy}")
        elif found_via == "default":
            remedy = f"create {os.path.join(path, layout.PROJECTS_ROOT)}/, or {remedy}"
        raise ConfigError(
            f"workspace {path!r} ({origin}) {found}; expected a directory containing "
            f"projects/ — {remedy}",
            code="config.workspace_missing",
            path=path,
        ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            f"workspace {path!r} ({origin}) is not a directory; expected a directory "
            f"containing projects/ — {remedy}",
            code="config.workspace_missing",
            path=path,
        )

    root = os.path.realpath(path)
    projects = os.path.join(root, layout.PROJECTS_ROOT)
    try:
        pst: os.stat_result | None = os.stat(projects)
    except OSError:
        pst = None
    if pst is None or not stat.S_ISDIR(pst.st_mode):
        found = "does not exist" if pst is None else "is not a directory"
        shown = repr(path) if root == path else f"{path!r} (physically {root!r})"
        raise ConfigError(
            f"workspace {shown} ({origin}) has no projects/ directory: {projects} {found}; "
            f"expected a workspace with projects/<name>/agent.toml — create {projects}/ "
            f"or {remedy}",
            code="config.workspace_no_projects",
            path=root,
        )
    return Workspace(root=root, found_via=found_via, given=given)


def pointer_path(environ: Mapping[str, str] | None = None) -> str | None:
    """Where the pointer file of [W1] is for ``environ``; ``None`` when no home is known."""
    env = os.environ if environ is None else environ
    return _pointer_path(env, home_directory(env))
