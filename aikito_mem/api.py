"""The Python API ([A1]–[A3]): the imperative shell that sequences the rooms.

``config`` (discovery, projects, agent.toml) → ``world`` (one observation pass of every
segment) → ``planner`` (pure) for a plan, then ``executor`` (lock → verify → guard →
write) for a sync.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from aikito_mem import signals
from aikito_mem.config.agent_toml import parse_project_config
from aikito_mem.config.discovery import (
    Workspace,
    current_directory,
    home_directory,
    resolve_workspace,
)
from aikito_mem.config.projects import load_project_config, read_config_bytes
from aikito_mem.errors import ConfigError, NoProjectHereError
from aikito_mem.executor.execute import execute, planned_result
from aikito_mem.executor.lock import DEFAULT_TIMEOUT, Locks, check_timeout
from aikito_mem.model import (
    Action,
    CheckoutState,
    Plan,
    ProjectConfig,
    SourceCheck,
    SyncResult,
)
from aikito_mem.planner.project import plan_project
from aikito_mem.world import checkouts as _checkouts
from aikito_mem.world.observe import Observer, with_identity

if TYPE_CHECKING:
    # To the type checker, the classes __getattr__ below returns (at run time: lazily).
    from aikito_mem.prepare import PrepareConflict as PrepareConflict
    from aikito_mem.prepare import PreparedProject as PreparedProject
    from aikito_mem.world.git import WorktreeAnswers


def _identify(plan: Plan) -> Plan:
    """Take the identity ([P5]) of every source the plan links (CREATE) — only those."""
    if not any(c.identity for c in plan.sources):
        return plan
    sources = tuple(
        SourceCheck(c.path, with_identity(c.path, c.observed), True) if c.identity else c
        for c in plan.sources
    )
    return plan.evolve(sources=sources)


def moved_root(moved_from: str | None, workspace: str) -> str | None:
    """``--moved-from OLD`` checked ([L4]): an absolute path without control characters,
    not the workspace itself, written without trailing ``/``; else ``ConfigError``."""
    if moved_from is None:
        return None
    from aikito_mem.config.names import control_character
    from aikito_mem.planner.moved import normalise_old
    from aikito_mem.world.observe import another_workspace

    old = normalise_old(moved_from)
    problem = None
    if control_character(moved_from) is not None:
        problem = "contains a control character"
    elif not old.startswith("/") or old == "/":
        problem = "is not the absolute path of a directory"
    elif old == workspace:
        problem = "is the workspace itself"
    elif another_workspace(old, workspace):
        # A link into a workspace that still exists is that workspace's, never ours.
        problem = ("still holds a workspace other than this one (it has projects/): its "
                   "links are its own")
    if problem is not None:
        raise ConfigError(
            f"--moved-from {moved_from!r} {problem}; expected the absolute path the "
            f"workspace had before it moved to {workspace} (e.g. --moved-from ~/aikito-old)",
            code="config.moved_from", path=moved_from)
    return old




def _moved_remedies(plan: Plan) -> Plan:
    """[L4]: a conflict over a link into another root that no longer holds a workspace
    names ``aikito sync --moved-from OLD`` as its remedy (one ``lstat`` per such root,
    only when there are such conflicts)."""
    conflict = Action.CONFLICT  # Plan.blocked, reading the member off its class once
    if not any(op.action is conflict for op in plan.operations):
        return plan  # no conflict to suggest a root: the [L4] rules are not imported
    from aikito_mem.planner.moved import moved_remedies, suggested_roots

    roots = suggested_roots(plan)
    if not roots:
        return plan
    from aikito_mem.world.observe import another_workspace

    return moved_remedies(plan, {root for root in roots
                                 if not another_workspace(root, plan.workspace)})


def _workspace(workspace: str | Workspace | None, environ: Mapping[str, str] | None
               ) -> Workspace:
    if isinstance(workspace, Workspace):
        return workspace
    return resolve_workspace(workspace, environ=environ)


class Project:
    """One project of a workspace: plan, execute, sync and prepare its memory links."""

    def __init__(self, *, config: ProjectConfig, workspace: Workspace) -> None:
        #: The validated ``agent.toml``.
        self.config = config
        #: The resolved workspace.
        self.ws = workspace
        #: The environment ``agent.toml`` was loaded with (``~`` expansion), for re-reads.
        self._environ: Mapping[str, str] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def workspace(self) -> str:
        return self.ws.root

    def __repr__(self) -> str:
        return f"Project({self.name!r}, workspace={self.workspace!r})"

    @classmethod
    def load(
        cls,
        name: str,
        workspace: str | Workspace | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> Project:
        """Load project ``name`` of ``workspace`` (``None``: discovery, SPEC §2; a
        :class:`~aikito_mem.config.discovery.Workspace` already resolved is used as it is)."""
        ws = _workspace(workspace, environ)
        project = cls(config=load_project_config(ws.root, name, environ=environ), workspace=ws)
        project._environ = environ  # re-read agent.toml under the lock alike (sync)
        return project

    @classmethod
    def for_directory(
        cls,
        directory: str,
        workspace: str | Workspace | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> Project:
        """The project one of whose active checkouts contains ``directory``."""
        ws = _workspace(workspace, environ)
        here = os.path.realpath(os.path.join(current_directory(), directory)
                                if not os.path.isabs(directory) else directory)
        from aikito_mem.world.containment import find_checkouts  # only for a directory

        search = find_checkouts(here, ws.root, environ=environ)
        found = [(m.config.name, m.checkout) for m in search.matches]
        if len(found) == 1:
            project = cls(config=search.matches[0].config, workspace=ws)
            project._environ = environ
            return project
        broken = search.broken
        skipped = f" (projects with a broken agent.toml: {', '.join(broken)})" if broken else ""
        if not found:
            raise NoProjectHereError(
                f"no project of workspace {ws.root} has an active checkout containing {here}"
                f"{skipped} — name the project: aikito sync project NAME",
                directory=here, workspace=ws.root, broken=tuple(broken),
            )
        listing = ", ".join(f"{n} ({p})" for n, p in found)
        raise ConfigError(
            f"{here} is inside checkouts of several projects: {listing} — name the project: "
            "aikito sync project NAME", code="config.project_ambiguous", path=here,
        )

    # -- planning -----------------------------------------------------------------------

    def _slots(
        self, path: str | None, observer: Observer, *, register: bool,
        worktrees: WorktreeAnswers | None = None,
    ) -> tuple[tuple[_checkouts.Slot, ...], str | None, str | None]:
        home = self._home()
        if path is None:
            return (_checkouts.slots(self.config, observer, home=home, worktrees=worktrees),
                    None, None)
        slot, registered = _checkouts.explicit_slot(self.config, path, observer, home=home,
                                                    worktrees=worktrees)
        given = _checkouts.given_path(path)
        if not register or registered:
            return (slot,), given, None
        from aikito_mem.config.write import plan_registration  # tomlkit: only to register

        active = [(s.label, s.path)
                  for s in _checkouts.slots(self.config, observer, home=home,
                                            worktrees=worktrees)
                  if s.state is CheckoutState.ACTIVE]
        return (slot,), given, plan_registration(self.config, given, slot.path,
                                                 home=self._home(), active=active)

    def _plan(
        self,
        slots: tuple[_checkouts.Slot, ...],
        observer: Observer,
        *,
        explicit: str | None,
        register: str | None,
        identify: bool = True,
        agent: str | None = None,
        moved_from: str | None = None,
    ) -> Plan:
        """One plan of every segment (§13): one observation pass, then the planner
        ([G6]); ``agent`` limits the instruction targets to that agent's ([A3]);
        ``moved_from`` relinks links into the workspace's old root ([L4])."""
        from aikito_mem.world import observe_project

        home = self._home()
        # Planning writes nothing: a signal ends it at once ([E5]).
        with signals.interruptible():
            observed = observe_project(
                self.config, self.workspace, slots, observer,
                environ=self._environ if self._environ is not None else os.environ,
                home=home or None, agent=agent,
            )
            plan = plan_project(
                observed, config=self.config, workspace=self.workspace,
                workspace_source=self.ws.found_via, explicit_path=explicit,
                register=register, home=home, agent=agent, moved_from=moved_from,
            )
            plan = _moved_remedies(plan)
            return _identify(plan) if identify else plan

    def plan(
        self, path: str | None = None, *, register: bool = True, identify: bool = True,
        moved_from: str | None = None,
    ) -> Plan:
        """A frozen plan; writes nothing and takes no lock ([E7]).

        ``path`` plans exactly that checkout ([K4]); when it is not registered yet the
        plan records its registration (unless ``register=False``), done at execution.
        ``identify=False`` skips the source identities of [P5] (three syscalls per source
        to create) for a plan that will only be shown, never executed: such a plan is
        re-checked by type alone.  ``moved_from`` (``--moved-from OLD``, [L4]): a link
        whose literal is ``OLD`` + the remainder of its canonical path is relinked.
        """
        moved = moved_root(moved_from, self.workspace)
        observer = Observer()
        slots, explicit, reg = self._slots(path, observer, register=register)
        return self._plan(slots, observer, explicit=explicit, register=reg,
                          identify=identify, moved_from=moved)

    def dry_run(self, path: str | None = None, *, register: bool = True) -> SyncResult:
        return planned_result(self.plan(path, register=register))

    # -- execution ----------------------------------------------------------------------

    def execute(self, plan: Plan, *, lock_timeout: float = DEFAULT_TIMEOUT) -> SyncResult:
        """Execute a plan made earlier: lock, re-verify everything, write ([E1]–[E5]).

        SIGINT/SIGTERM handlers are installed for the duration ([E5]); ``lock_timeout``
        must be a finite number of seconds ≥ 0, else :class:`ConfigError`."""
        if plan.workspace != self.workspace or plan.project != self.name:
            raise ConfigError(
                f"plan is for project {plan.project!r} of workspace {plan.workspace}; "
                f"expected project {self.name!r} of workspace {self.workspace} — load "
                "the project the plan was made for",
                code="plan.foreign",
            )
        return execute(plan, lock_timeout=lock_timeout, always_verify=True,
                       environ=self._environ, config=self.config, home=self.home)

    def sync(
        self,
        path: str | None = None,
        *,
        register: bool = True,
        lock_timeout: float = DEFAULT_TIMEOUT,
        moved_from: str | None = None,
    ) -> SyncResult:
        """Lock, plan and execute in one go (``aikito sync project``) ([E3]);
        ``moved_from`` as for :meth:`plan` ([L4]).

        SIGINT/SIGTERM handlers are installed for the duration: waiting for the lock and
        planning end at once on a signal, writes stop before the next one ([E5]).
        ``lock_timeout`` must be a finite number of seconds ≥ 0, else
        :class:`ConfigError`."""
        lock_timeout = check_timeout(lock_timeout)
        moved = moved_root(moved_from, self.workspace)
        answers = None
        if self.config.worktrees:  # [L6]: one `git worktree list` per checkout per call
            from aikito_mem.world.git import WorktreeAnswers

            answers = WorktreeAnswers()
        with signals.installed(), Locks() as locks:
            plan = self.plan_locked(path, register=register, locks=locks,
                                    lock_timeout=lock_timeout, moved_from=moved,
                                    worktrees=answers)
            # The guard re-uses this parse while agent.toml keeps its bytes ([E9], [P6]),
            # and git's answers for this very plan object only ([L6]).
            if answers is not None:
                answers.made(plan)
            return execute(plan, locks=locks, environ=self._environ, config=self.config,
                           home=self.home, worktrees=answers)

    def plan_locked(
        self, path: str | None, *, register: bool, locks: Locks, lock_timeout: float,
        moved_from: str | None = None, worktrees: WorktreeAnswers | None = None,
    ) -> Plan:
        """Take the locks of the checkouts ``path`` selects (into ``locks``, held by the
        caller) and plan under them — what ``sync`` executes, and what ``apply`` compares
        a saved plan with ([E3], [E9]).  ``worktrees`` collects git's answers ([L6];
        ``None``: asked and forgotten)."""
        observer = Observer()
        slots, explicit, reg = self._slots(path, observer, register=register,
                                           worktrees=worktrees)
        locks.acquire([s.path for s in slots if s.state is CheckoutState.ACTIVE], lock_timeout)
        # Observe after the lock: a concurrent sync that held it has finished — and may
        # have changed agent.toml (registered this very path): re-read it, so the later
        # syncs find nothing left to do instead of a stale plan ([E3]).
        project = self._reloaded()
        if project is not self:
            if worktrees is not None:
                worktrees.forget()  # another agent.toml: ask git again
            slots, explicit, reg = project._slots(path, Observer(), register=register,
                                                  worktrees=worktrees)
            locks.acquire(
                [s.path for s in slots if s.state is CheckoutState.ACTIVE], lock_timeout
            )
        return project._plan(slots, Observer(), explicit=explicit, register=reg,
                             moved_from=moved_root(moved_from, self.workspace))

    def _reloaded(self) -> Project:
        """``self`` when ``agent.toml`` still has the bytes it was loaded from, else a
        project loaded from the new bytes (parsed only then: [P6])."""
        data, project_dir, config_path = read_config_bytes(self.workspace, self.name)
        if data == self.config.data:
            return self
        config = parse_project_config(data, name=self.name, project_dir=project_dir,
                                      config_path=config_path, home=self._home())
        project = Project(config=config, workspace=self.ws)
        project._environ = self._environ
        return project

    @property
    def home(self) -> str:
        """The home directory ``~`` expands to for this project ("" when none)."""
        return home_directory(self._environ) or ""

    def _home(self) -> str:
        return self.home

    def prepare(self, agent: str, path: str | None = None) -> PreparedProject:
        """Make one checkout's memory ready for an agent session ([A3], INV-MEM-12).

        Same engine, holding the lock; never registers, never touches anything outside
        that checkout's ``.agents/memory``, prints nothing.  SIGINT/SIGTERM handlers are
        installed for the duration ([E5]).  Its room, :mod:`aikito_mem.prepare`, is
        imported by the first call ([§12]: a sync never needs it).
        """
        from aikito_mem.prepare import PreparedProject, prepare

        def plan(slot: _checkouts.Slot) -> Plan:
            return self._plan((slot,), Observer(), explicit=slot.path, register=None,
                              agent=agent)

        with signals.installed():
            checkout, result = prepare(self.config, self.workspace, agent, path,
                                       environ=self._environ, home=self.home, plan=plan)
        return PreparedProject(self.name, agent, checkout, result)


def __getattr__(name: str) -> object:
    """:class:`~aikito_mem.prepare.PrepareConflict` and
    :class:`~aikito_mem.prepare.PreparedProject`, where they were declared before their
    room was split off (PEP 562: imported on first use — a sync builds neither)."""
    if name in ("PrepareConflict", "PreparedProject"):
        from aikito_mem import prepare

        return getattr(prepare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
