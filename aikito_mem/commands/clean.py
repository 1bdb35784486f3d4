"""``aikito clean`` ([L3]): plan, or lock + plan + execute a clean — the sync's engine.

``clean project NAME [PATH]`` cleans the checkouts ``agent.toml`` lists (or exactly
PATH); ``clean PATH`` cleans one checkout whose project may no longer exist.  Either way
the plan is made by the pure :mod:`aikito_mem.planner.clean` from what
:mod:`aikito_mem.world.clean` observes, shown as it is by ``--dry-run``, and executed by
:func:`aikito_mem.executor.execute.execute`: under the per-checkout lock ([E3]), every
observation re-checked before the first write ([E2]), every write judged by the writer's
guard ([E9]).  ``agent.toml`` is never edited.
"""

from __future__ import annotations

import os

from aikito_mem import signals
from aikito_mem.config.discovery import Workspace
from aikito_mem.executor.execute import execute
from aikito_mem.executor.lock import DEFAULT_TIMEOUT, Locks, check_timeout
from aikito_mem.model import CheckoutState, Plan, PlannedTarget, SyncResult
from aikito_mem.planner.clean import build_clean_plan
from aikito_mem.world import checkouts as _checkouts
from aikito_mem.world.clean import observe_checkout, path_slot
from aikito_mem.world.observe import Observer


class Cleaner:
    """One clean: the workspace, the project (``None`` for ``clean PATH``) and PATH."""

    def __init__(self, workspace: Workspace, project: str | None, path: str | None,
                 environ: dict[str, str] | None = None, moved_from: str | None = None
                 ) -> None:
        if project is None and path is None:
            raise ValueError("clean needs a project or a path")
        self.ws = workspace
        self.project = project
        self.path = path
        self.environ = environ
        #: ``--moved-from OLD`` ([L4]): links into the old root are this workspace's too.
        self.moved_from = moved_from

    def _slots(self, observer: Observer) -> tuple[tuple[_checkouts.Slot, ...], str, str | None]:
        """The checkouts to clean, the project's agent.toml path and its digest."""
        if self.project is None:
            assert self.path is not None
            return (path_slot(self.path, self.ws.root, observer),), "", None
        from aikito_mem.config.projects import load_project_config

        config = load_project_config(self.ws.root, self.project, environ=self.environ)
        if self.path is not None:
            slot, _ = _checkouts.explicit_slot(config, self.path, observer)
            return (slot,), config.config_path, config.sha256
        return _checkouts.slots(config, observer), config.config_path, config.sha256

    def _plan(self, slots: tuple[_checkouts.Slot, ...], config_path: str,
              digest: str | None, observer: Observer) -> Plan:
        from aikito_mem.config.registry_read import load_registry

        registry = load_registry(self.ws.root)
        targets = tuple(PlannedTarget(t.path, t.agents) for t in registry.targets)
        rels = tuple(t.rel for t in targets)
        # [N1]: the per-agent skills directories (``.claude/skills``…) are cleaned too.
        skill_dirs = tuple(PlannedTarget(d.path, d.agents) for d in registry.skill_dirs)
        dirs = tuple(d.rel for d in skill_dirs)
        moved_from = None
        if self.moved_from is not None:
            from aikito_mem.api import moved_root

            moved_from = moved_root(self.moved_from, self.ws.root)
        with signals.interruptible():
            views = tuple(observe_checkout(s, rels, observer, dirs) for s in slots)
        return build_clean_plan(
            workspace=self.ws.root, workspace_source=self.ws.found_via,
            project=self.project, config_path=config_path, checkouts=views,
            targets=targets, skill_dirs=skill_dirs,
            explicit_path=_checkouts.given_path(self.path) if self.path is not None
            else None,
            config_digest=digest, moved_from=moved_from,
        )

    def plan(self) -> Plan:
        """The clean plan; writes nothing and takes no lock ([E7])."""
        observer = Observer()
        slots, config_path, digest = self._slots(observer)
        return self._plan(slots, config_path, digest, observer)

    def run(self, *, lock_timeout: float = DEFAULT_TIMEOUT) -> SyncResult:
        """Lock the checkouts, plan under the locks and execute ([E3])."""
        lock_timeout = check_timeout(lock_timeout)
        with signals.installed(), Locks() as locks:
            slots, config_path, digest = self._slots(Observer())
            locks.acquire([s.path for s in slots if s.state is CheckoutState.ACTIVE],
                          lock_timeout)
            plan = self._plan(slots, config_path, digest, Observer())
            return execute(plan, locks=locks)


def cleaner(workspace: Workspace, project: str | None, path: str | None,
            moved_from: str | None = None) -> Cleaner:
    return Cleaner(workspace, project, path, environ=dict(os.environ),
                   moved_from=moved_from)
