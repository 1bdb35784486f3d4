"""Which project checkout contains a path: the one answer, used by
``Project.for_directory`` and ``aikito adopt``.

:func:`find_checkouts` matches a path against the *active* checkouts of every project
(or one), by physical path and, for other spellings such as a bind mount, by the identity
(``st_dev``, ``st_ino``) of each of its ancestors.  Projects whose ``agent.toml`` cannot
be loaded are returned by name, so the caller can say which were not searched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from aikito_mem.config.discovery import home_directory
from aikito_mem.config.projects import list_projects, load_project_config
from aikito_mem.errors import ConfigError
from aikito_mem.model import CheckoutState, ProjectConfig
from aikito_mem.values import Value
from aikito_mem.world import checkouts as _checkouts
from aikito_mem.world.observe import Observer

__all__ = ["CheckoutMatch", "CheckoutSearch", "find_checkouts"]


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
