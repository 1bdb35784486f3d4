"""Doctor's checks across segments ([G5]): the agent registry, git conflict markers in
what agents read, and one checkout registered by two projects.

- ``agents.registry`` ([H5]): the agent registry ``<ws>/agents`` loaded exactly as a sync
  loads it; what would make every sync of the workspace fail (a registry file that is
  not valid TOML, a symlink, a target with a ``.git`` component …) is an error naming
  the file, else an ``ok`` listing the instruction targets (no check without ``agents/``:
  then ``AGENTS.md`` is the one target).

- ``git.conflict_markers`` (error): a complete ``<<<<<<<`` … ``=======`` … ``>>>>>>>``
  group at column 0 in a project's ``agent.toml``, its ``AGENTS.md``, its selected skills'
  files or its referenced memory files
  (:mod:`aikito_mem.commands.doctor.markers`; a sync never reads sources, doctor may).
  A merge-conflicted ``agent.toml`` does not parse: its markers are reported beside the
  ``project.config`` parse error (:func:`unloadable_config_checks`).
- ``checkout.shared`` (warning): one active checkout listed by two projects — their syncs
  would unlink each other's links, since ownership is by the link's literal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from aikito_mem.commands.doctor.report import Check
from aikito_mem.layout import instructions_source, memory_source, skill_source
from aikito_mem.model import CheckoutState, Severity


def registry_check(ws_root: str) -> Check | None:
    from aikito_mem.config.registry_read import load_registry
    from aikito_mem.errors import ConfigError
    from aikito_mem.layout import agents_root

    directory = agents_root(ws_root)
    try:
        registry = load_registry(ws_root)
    except ConfigError as exc:
        return Check("agents.registry", Severity.ERROR,
                     f"the agent registry cannot be loaded, so every sync of this workspace "
                     f"fails (exit 4): {exc.message}",
                     remedy="fix the registry file as the message says, then run "
                     "`aikito doctor` again", path=exc.path or directory)
    if not registry.present:
        return None  # nothing to load: AGENTS.md is the one instruction target ([G3])
    targets = ", ".join(t.path for t in registry.targets) or "none"
    n = len(registry.agents)
    return Check("agents.registry", Severity.OK,
                 f"the agent registry {directory} loads: {n} agent{'s' * (n != 1)}, "
                 f"instruction targets {targets}", path=directory)


def _marker_check(project: str, marked: Any, consequence: str) -> Check:
    lines = ", ".join(str(n) for n in marked.lines)
    groups = (f"a group starting at line {lines}" if len(marked.lines) == 1
              else f"groups starting at lines {lines}")
    return Check("git.conflict_markers", Severity.ERROR,
                 f"{project}: {marked.path} holds git conflict markers ({groups}); "
                 f"{consequence}",
                 remedy="resolve the merge conflict in that file and remove the markers",
                 path=marked.path, project=project)


def conflict_marker_checks(configs: Iterable[Any], ws_root: str) -> list[Check]:
    from aikito_mem.commands.doctor.markers import scan

    checks: list[Check] = []
    for config in configs:
        roots = [config.config_path, instructions_source(ws_root, config.name)]
        roots += [skill_source(ws_root, name) for name in config.skills]
        roots += [memory_source(ws_root, ref) for ref in config.memory]
        checks.extend(_marker_check(config.name, marked,
                                    "agents would read both sides of the merge")
                      for marked in scan(roots))
    return checks


def unloadable_config_checks(ws_root: str, name: str, exc: Any) -> list[Check]:
    """The checks of a project whose ``agent.toml`` does not load: ``project.config``
    (error) with the loader's message, and, when the file holds conflict markers — a
    merge-conflicted ``agent.toml`` is never valid TOML — ``git.conflict_markers`` beside
    it, naming the lines: the markers are the cause, the parse error what a sync
    reports ([G5])."""
    from shlex import quote

    from aikito_mem.commands.doctor.markers import scan
    from aikito_mem.layout import CONFIG_NAME, project_dir

    config_path = os.path.join(project_dir(ws_root, name), CONFIG_NAME)
    marked = scan([config_path])
    shown = quote(exc.path or config_path)
    remedy = (f"resolve the merge conflict in {shown} and remove its markers "
              "(git.conflict_markers)" if marked
              else f"fix {shown} as the message says")
    checks = [Check("project.config", Severity.ERROR, exc.message, remedy=remedy,
                    path=exc.path, project=name)]
    checks.extend(_marker_check(name, m, f"it is not valid TOML, so every sync of {name} "
                                "fails (exit 4)") for m in marked)
    return checks


def shared_checkout_checks(configs: Iterable[Any], observer: Any) -> list[Check]:
    from aikito_mem.world import checkouts as _checkouts

    owners: dict[str, list[str]] = {}
    for config in configs:
        try:
            slots = _checkouts.slots(config, observer)
        except (OSError, ValueError):
            continue
        for slot in slots:
            if slot.state is CheckoutState.ACTIVE:
                owners.setdefault(slot.path, []).append(config.name)
    return [
        Check("checkout.shared", Severity.WARNING,
              f"checkout {path} is registered by the projects {', '.join(names)}: their "
              "syncs would unlink each other's links (ownership is by the link's literal)",
              remedy="register the checkout in one project only", path=path)
        for path, names in sorted(owners.items()) if len(names) > 1
    ]
