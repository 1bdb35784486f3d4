"""The projects of a workspace: reading ``agent.toml``, listing projects, and finding the
project checkout that contains a path.

The imperative half of configuration: :mod:`aikito_mem.config.agent_toml` parses bytes; this room
finds and reads them.  ``agent.toml`` is read through
:func:`aikito_mem.fsutil.read_regular`, following a final symlink (dotfile managers link
it), never blocking (a FIFO is refused at once) and only as a regular file ([C7]).

Decisions where SPEC §2/§3 is silent:

- ``agent.toml`` that is not a regular file (a directory, a FIFO…), a dangling symlink,
  larger than :data:`~aikito_mem.fsutil.MAX_READ`, or unreadable, is
  ``config.unreadable``; a project directory without one is "project not found"
  (``config.project_not_found``), never "no resources wanted".
- A project is listed when anything is at ``projects/<name>/agent.toml`` (``lstat``), so a
  broken one is listed and then reported, never silently skipped.
- :func:`find_checkouts` matches a path against the *active* checkouts of every project
  (or one), by physical path and, for other spellings such as a bind mount, by the
  identity (``st_dev``, ``st_ino``) of each of its ancestors.  Projects whose
  ``agent.toml`` cannot be loaded are returned by name, so the caller can say which were
  not searched.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import NoReturn

import attrs

from aikito_mem import layout
from aikito_mem.config.agent_toml import parse_project_config
from aikito_mem.config.discovery import home_directory
from aikito_mem.errors import ConfigError, ProjectNotFoundError
from aikito_mem.fsutil import FileTooLargeError, NotRegularFileError, read_regular
from aikito_mem.model import CheckoutState, ProjectConfig
from aikito_mem.values import Value
from aikito_mem.world import checkouts as _checkouts
from aikito_mem.world.observe import Observer

__all__ = [
    "CheckoutMatch",
    "CheckoutSearch",
    "check_project_name",
    "find_checkouts",
    "list_projects",
    "load_project_config",
    "read_config_bytes",
]


# --------------------------------------------------------------------------- reading


def check_project_name(name: str) -> None:
    """A project name is one directory name under ``<ws>/projects/``."""
    if not name:
        why = "it is empty"
    elif "/" in name:
        why = "it contains '/'"
    elif name in (".", ".."):
        why = f"{name!r} names no project"
    elif "\x00" in name:
        why = "it contains a NUL character"
    else:
        return
    raise ConfigError(
        f"project name {name!r} is not valid: {why}; expected the name of one directory "
        "under <workspace>/projects/ — pass just the project name, e.g. 'demo'",
        code="config.project_name",
    )


def _unreadable(config_path: str, found: str, remedy: str) -> ConfigError:
    return ConfigError(
        f"{config_path}: {found}; expected a readable regular file holding the project's "
        f"TOML configuration — {remedy}",
        code="config.unreadable",
        path=config_path,
    )


def _read_config_bytes(name: str, project_dir: str, config_path: str) -> bytes:
    """Read ``agent.toml`` once, without blocking, as a regular file only ([C7])."""
    try:
        data, _st = read_regular(config_path, follow=True)
    except (FileNotFoundError, NotADirectoryError):
        _raise_not_found(name, project_dir, config_path)
    except NotRegularFileError as exc:
        if stat.S_ISDIR(exc.st.st_mode):
            found = "cannot read agent.toml: it is a directory"
        else:
            from aikito_mem.fsutil import describe_mode

            found = (f"cannot read agent.toml: it is not a regular file "
                     f"({describe_mode(exc.st.st_mode)})")
        raise _unreadable(config_path, found, "replace it with a file") from None
    except FileTooLargeError as exc:
        raise _unreadable(config_path, f"cannot read agent.toml: it is {exc.size} bytes, "
                          f"more than the {exc.limit} this engine reads",
                          "shorten it") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise _unreadable(config_path, f"cannot open agent.toml ({reason})",
                          "fix its permissions or replace it with a regular file") from None
    return data


def _raise_not_found(name: str, project_dir: str, config_path: str) -> NoReturn:
    try:
        os.lstat(config_path)
    except OSError:
        pass
    else:  # lstat sees it, open does not: a dangling symlink
        raise ConfigError(
            f"{config_path}: agent.toml is a symlink to nothing (dangling); expected a "
            "regular file holding the project's TOML configuration — fix or replace the "
            "link",
            code="config.unreadable",
            path=config_path,
        )
    try:
        dst: os.stat_result | None = os.stat(project_dir)
    except OSError:
        dst = None
    if dst is not None and stat.S_ISDIR(dst.st_mode):
        found = f"the directory {project_dir}/ exists but has no agent.toml"
        remedy = f"create {config_path} to register the project, or check the project name"
    elif dst is not None:
        found = f"{project_dir} is not a directory"
        remedy = "check the project name"
    else:
        found = "found nothing"
        remedy = "create agent.toml there or check the project name"
    hint = _other_projects(os.path.dirname(os.path.dirname(project_dir)), name)
    raise ProjectNotFoundError(
        f"project {name!r} not found: expected {config_path}, {found} — {remedy}{hint}",
        project=name,
        path=config_path,
    )


def _other_projects(workspace_root: str, name: str) -> str:
    """``; did you mean 'demo'? the projects of this workspace: demo, web`` — or ``""``
    when the workspace lists no project (or cannot be listed)."""
    import difflib

    try:
        names = [n for n in list_projects(workspace_root) if n != name]
    except ConfigError:
        return ""
    if not names:
        return ""
    folded = {n.casefold(): n for n in names}
    close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.6)
    guess = f"; did you mean {folded[close[0]]!r}?" if close else ";"
    shown = ", ".join(names[:20]) + (f", … ({len(names) - 20} more)" if len(names) > 20
                                     else "")
    return f"{guess} the projects of this workspace: {shown}"


def read_config_bytes(workspace_root: str, name: str) -> tuple[bytes, str, str]:
    """The exact bytes of a project's ``agent.toml``, its project dir and its path."""
    check_project_name(name)
    project_dir = os.path.join(workspace_root, layout.PROJECTS_ROOT, name)
    config_path = os.path.join(project_dir, layout.CONFIG_NAME)
    return _read_config_bytes(name, project_dir, config_path), project_dir, config_path


def load_project_config(
    workspace_root: str, name: str, *, environ: Mapping[str, str] | None = None
) -> ProjectConfig:
    """Read and validate ``<workspace_root>/projects/<name>/agent.toml``.

    ``environ`` (default ``os.environ``) supplies ``HOME`` for ``~`` in checkout paths.
    Raises :class:`ProjectNotFoundError` when the directory or file is missing ([C7]) and
    :class:`ConfigError` for anything invalid.
    """
    data, project_dir, config_path = read_config_bytes(workspace_root, name)
    home = home_directory(environ) or ""
    return parse_project_config(
        data, name=name, project_dir=project_dir, config_path=config_path, home=home
    )


def list_projects(workspace_root: str) -> tuple[str, ...]:
    """Sorted names of the directories under ``<ws>/projects`` that hold an ``agent.toml``.

    An ``agent.toml`` counts when anything is there (``lstat``), so that a broken one is
    listed and then reported by :func:`load_project_config`, never silently skipped.
    """
    projects = os.path.join(workspace_root, layout.PROJECTS_ROOT)
    names: list[str] = []
    try:
        with os.scandir(projects) as it:
            entries = list(it)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"workspace {workspace_root!r}: cannot list {projects}/ ({reason}); expected a "
            "directory holding one directory per project — create it or fix its permissions",
            code="config.workspace_no_projects",
            path=projects,
        ) from None
    for entry in entries:
        try:
            if not entry.is_dir():
                continue
            os.lstat(os.path.join(entry.path, "agent.toml"))
        except OSError:
            continue
        names.append(entry.name)
    return tuple(sorted(names))


# --------------------------------------------------------------------------- containment


@attrs.frozen(repr=False, eq=False)
class CheckoutMatch(Value):
    """One active checkout that contains the path searched for."""

    config: ProjectConfig
    #: Physical path of the checkout, as plans name it.
    checkout: str
    #: The checkout's label in ``agent.toml``.
    label: str
    #: The ancestor of the searched path that *is* the checkout (equal to ``checkout``
    #: unless the path reaches it through another spelling, e.g. a bind mount).
    root: str
    #: The searched path relative to ``root`` (``""`` for the checkout itself).
    relative: str


@attrs.frozen(repr=False, eq=False)
class CheckoutSearch(Value):
    """What :func:`find_checkouts` found: at most one match per project."""

    matches: tuple[CheckoutMatch, ...]
    #: Projects whose ``agent.toml`` could not be loaded (not searched).
    broken: tuple[str, ...] = ()


class _Ancestors:
    """The ancestors of one absolute path (itself first) and their identities, each
    ``stat``-ed at most once."""

    def __init__(self, path: str) -> None:
        self.paths: list[str] = []
        while True:
            self.paths.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        self._ids: dict[str, tuple[int, int] | None] = {}

    def identity(self, path: str) -> tuple[int, int] | None:
        if path not in self._ids:
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                self._ids[path] = None
            else:
                self._ids[path] = (st.st_dev, st.st_ino)
        return self._ids[path]


def _match(slot: _checkouts.Slot, path: str, ancestors: _Ancestors) -> tuple[str, str] | None:
    """``(root, relative)`` when ``path`` is the checkout of ``slot`` or below it."""
    base = slot.path.rstrip("/") or "/"
    if path == base:
        return base, ""
    if path.startswith(base.rstrip("/") + "/"):
        return base, path[len(base.rstrip("/")) + 1:]
    if slot.identity is None:
        return None
    for ancestor in ancestors.paths:
        if ancestors.identity(ancestor) == slot.identity:
            rest = path[len(ancestor):].lstrip("/")
            return ancestor, rest
    return None


def find_checkouts(
    path: str,
    workspace_root: str,
    *,
    only: str | None = None,
    under: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> CheckoutSearch:
    """Which project checkouts contain ``path`` (an absolute, physical path).

    Every project of the workspace is searched (only project ``only`` when given: then a
    broken ``agent.toml`` raises its :class:`ConfigError` instead of being listed in
    ``broken``).  A project matches when one of its *active* checkouts is ``path`` or an
    ancestor of it — by path, or by the identity of an ancestor (a bind mount or another
    spelling of the checkout); its first such checkout in ``agent.toml`` order is
    returned.  With ``under`` (e.g. ``".agents/memory"``) the path must lie strictly
    below ``<checkout>/<under>/``.
    """
    names = (only,) if only is not None else list_projects(workspace_root)
    observer = Observer()
    ancestors = _Ancestors(path)
    matches: list[CheckoutMatch] = []
    broken: list[str] = []
    for name in names:
        try:
            config = load_project_config(workspace_root, name, environ=environ)
        except ConfigError:
            if only is not None:
                raise
            broken.append(name)
            continue
        for slot in _checkouts.slots(config, observer, home=home_directory(environ) or ""):
            if slot.state is not CheckoutState.ACTIVE:
                continue
            found = _match(slot, path, ancestors)
            if found is None:
                continue
            root, relative = found
            if under is not None and not relative.startswith(under.rstrip("/") + "/"):
                continue
            matches.append(CheckoutMatch(config, slot.path, slot.label, root, relative))
            break
    return CheckoutSearch(tuple(matches), tuple(broken))
