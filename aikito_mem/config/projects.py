"""The projects of a workspace: reading ``agent.toml`` and listing projects.

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
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import NoReturn

from aikito_mem import layout
from aikito_mem.config.agent_toml import parse_project_config
from aikito_mem.config.discovery import home_directory
from aikito_mem.errors import ConfigError, ProjectNotFoundError
from aikito_mem.fsutil import FileTooLargeError, NotRegularFileError, read_regular
from aikito_mem.model import ProjectConfig

__all__ = [
    "check_project_name",
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
