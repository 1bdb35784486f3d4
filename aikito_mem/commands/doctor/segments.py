"""Doctor's checks across segments ([G5]): git conflict markers in what agents read, and
one checkout registered by two projects.

- ``git.conflict_markers`` (error): a complete ``<<<<<<<`` … ``=======`` … ``>>>>>>>``
  group at column 0 in a project's ``agent.toml``, its ``AGENTS.md``, its selected skills'
  files or its referenced memory files
  (:mod:`aikito_mem.commands.doctor.markers`; a sync never reads sources, doctor may).
- ``checkout.shared`` (warning): one active checkout listed by two projects — their syncs
  would unlink each other's links, since ownership is by the link's literal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aikito_mem.commands.doctor.report import Check
from aikito_mem.layout import instructions_source, memory_source, skill_source
from aikito_mem.model import CheckoutState, Severity


def conflict_marker_checks(configs: Iterable[Any], ws_root: str) -> list[Check]:
    from aikito_mem.commands.doctor.markers import scan

    checks: list[Check] = []
    for config in configs:
        roots = [config.config_path, instructions_source(ws_root, config.name)]
        roots += [skill_source(ws_root, name) for name in config.skills]
        roots += [memory_source(ws_root, ref) for ref in config.memory]
        for marked in scan(roots):
            lines = ", ".join(str(n) for n in marked.lines)
            checks.append(Check(
                "git.conflict_markers", Severity.ERROR,
                f"{config.name}: {marked.path} holds git conflict markers (a group starting "
                f"at line {lines}); agents would read both sides of the merge",
                remedy="resolve the merge conflict in that file and remove the markers",
                path=marked.path, project=config.name))
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
