"""Desired resources: canonical paths, project-notes precedence, shadowing and source
safety ([S1]–[S4], INV-MEM-02/03/04).

Sources are never read: every decision here comes from ``lstat`` (through the shared
:class:`~aikito_mem.world.observe.Observer` cache) and, for symlinks inside the memory root,
``readlink``/``realpath``.
"""

from __future__ import annotations

import os
from operator import attrgetter

from aikito_mem import layout
from aikito_mem.layout import NOTES, is_notes, memory_source, notes_sources
from aikito_mem.model import (
    Finding,
    Kind,
    Observed,
    ProjectConfig,
    Resource,
    ResourceSet,
    SourceCheck,
)
from aikito_mem.world.observe import Observer

#: A directory on the way to a source, by type alone (one shared value for every check).
_ON_THE_WAY = Observed(Kind.DIR)
#: Read once per component of every source: looked up once (reading a member off its
#: enum class is slow).
_LINK, _ABSENT, _DIR, _FILE = Kind.LINK, Kind.ABSENT, Kind.DIR, Kind.FILE


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class SourceWalker:
    """Checks that a source is a file or directory reached without leaving its root."""

    def __init__(self, observer: Observer) -> None:
        self._obs = observer
        self._real: dict[str, str] = {}
        self._roots: dict[str, tuple[str | None, bool, SourceCheck | None, str]] = {}
        #: The check of each directory on the way to a source, made once per path.
        self._on_the_way: dict[str, SourceCheck] = {}

    def _realpath(self, path: str) -> str:
        try:
            return self._real[path]
        except KeyError:
            real = self._real[path] = os.path.realpath(path)
            return real

    def found(self, path: str, obs: Observed) -> Observed:
        """What a check records of a path that is not a real directory: its type, and a
        symlink's literal — verification reads the literal back ([P5]), so a link recorded
        without it would make every plan stale."""
        if obs.kind is not Kind.LINK:
            return Observed(obs.kind)
        try:
            return Observed(Kind.LINK, self._obs.readlink(path))
        except OSError:
            return Observed(Kind.LINK)  # gone or replaced meanwhile: verification says so

    def _check_root(
        self, root: str, what: str
    ) -> tuple[str | None, bool, SourceCheck | None, str]:
        """(problem, missing, the root's check, its real path) — once per root."""
        try:
            root_obs = self._obs.lstat(root)
        except OSError as exc:
            return f"{what} root {root} cannot be examined: {exc.strerror}", False, None, root
        check = SourceCheck(root, _ON_THE_WAY if root_obs.kind is Kind.DIR
                            else self.found(root, root_obs))
        if root_obs.kind is Kind.ABSENT:
            return f"source does not exist ({root} is missing)", True, check, root
        if root_obs.kind is not Kind.DIR:
            return (f"{what} root {root} is {check.observed.describe()}; expected a real "
                    "directory",
                    False, check, root)
        return None, False, check, self._realpath(root)

    def _step(self, root: str, path: str, physical: str, real_root: str,
              checks: list[SourceCheck]) -> tuple[str | None, bool, Observed, str]:
        """One component of a source: ``(problem, missing, what is there, its physical
        path)`` — a symlink is followed only while it stays inside ``root`` ([S3])."""
        try:
            obs = self._obs.lstat(physical)
        except OSError as exc:
            return (f"source {path} cannot be examined: {exc.strerror}", False,
                    Observed(Kind.OTHER), physical)
        if obs.kind is Kind.LINK:
            try:
                literal = self._obs.readlink(physical)
            except OSError:
                return f"source {path} changed while being examined", False, obs, physical
            checks.append(SourceCheck(physical, Observed(Kind.LINK, literal)))
            real = self._realpath(physical)
            if not _within(real, real_root):
                return (f"source {path} goes through the symlink {physical} -> {literal!r}, "
                        f"which leaves {root} (it resolves to {real})", False, obs, physical)
            obs = self._obs.lstat(real)
            if obs.kind is Kind.ABSENT:
                return (f"source {path} goes through the broken symlink {physical} -> "
                        f"{literal!r}", False, obs, physical)
            physical = real
        if obs.kind is Kind.ABSENT:
            return f"source {path} does not exist", True, obs, physical
        return None, False, obs, physical

    def check(
        self, root: str, parts: list[str], *, what: str, dir_only: bool = False
    ) -> tuple[str | None, bool, tuple[SourceCheck, ...]]:
        """Return ``(problem, missing, checks)`` for ``root/parts...``."""
        root_state = self._roots.get(root)
        if root_state is None:
            root_state = self._roots[root] = self._check_root(root, what)
        problem, missing, root_check, real_root = root_state
        checks: list[SourceCheck] = [root_check] if root_check is not None else []
        if problem is not None:
            return problem, missing, tuple(checks)
        path = physical = root
        last = len(parts) - 1
        lstat = self._obs.lstat
        for i, part in enumerate(parts):
            path, physical = f"{path}/{part}", f"{physical}/{part}"
            try:
                obs: Observed | None = lstat(physical)
            except OSError:
                obs = None
            if obs is None or obs.kind is _LINK or obs.kind is _ABSENT:
                # The component's every other case, from the same cached observation.
                problem, missing, obs, physical = self._step(root, path, physical,
                                                             real_root, checks)
                if problem is not None:
                    return problem, missing, tuple(checks)
            if i < last:
                if obs.kind is not _DIR:
                    return (f"source {path} does not exist ({physical} is {obs.describe()})",
                            True, tuple(checks))
                on_the_way = self._on_the_way.get(physical)
                if on_the_way is None:
                    on_the_way = self._on_the_way[physical] = SourceCheck(physical,
                                                                          _ON_THE_WAY)
                checks.append(on_the_way)
                continue
            if obs.kind is _DIR or (obs.kind is _FILE and not dir_only):
                checks.append(SourceCheck(physical, obs))
                return None, False, tuple(checks)
            expected = "a directory" if dir_only else "a regular file or a directory"
            return f"source {path} is {obs.describe()}; expected {expected}", False, tuple(checks)
        return None, False, tuple(checks)  # pragma: no cover - parts is never empty


def _notes(config: ProjectConfig, workspace: str, observer: Observer, walker: SourceWalker
           ) -> tuple[Resource | None, str, bool, str | None]:
    """[S2]: (the notes resource or ``None``, its source location, whether the project
    memory root exists, ``current`` / ``legacy`` / ``None``).  The ``lstat`` of the project
    memory root decides, even when it is broken."""
    current, legacy = notes_sources(workspace, config.name)
    project_memory = layout.project_memory(workspace, config.name)
    try:
        pm = observer.lstat(project_memory)
    except OSError:
        pm = Observed(Kind.OTHER)
    if pm.exists:
        root, parts, location, source = project_memory, [NOTES], "current", current
        if pm.kind is not Kind.DIR:
            found = walker.found(project_memory, pm)
            return Resource(
                NOTES, NOTES, source, is_notes=True,
                problem=f"project memory root {project_memory} is {found.describe()}; "
                "expected a real directory",
                checks=(SourceCheck(project_memory, found),),
            ), source, True, location
    else:
        root, parts = layout.memory_root(workspace), [config.name, NOTES]
        location, source = "legacy", legacy
    try:
        present = observer.lstat(source)
    except OSError:
        present = Observed(Kind.OTHER)
    if not present.exists:
        return None, source, pm.exists, None
    problem, missing, checks = walker.check(
        root, parts, what="project memory" if pm.exists else "workspace memory",
        dir_only=True)
    return Resource(NOTES, NOTES, source, is_notes=True, problem=problem, missing=missing,
                    checks=checks), source, pm.exists, location


def resolve(config: ProjectConfig, workspace: str, observer: Observer) -> ResourceSet:
    """Every desired resource of ``config`` with its source safety decided ([S1]–[S4])."""
    walker = SourceWalker(observer)
    memory_root = layout.memory_root(workspace)
    notes, source, pm_exists, notes_location = _notes(config, workspace, observer, walker)
    resources: list[Resource] = [] if notes is None else [notes]
    findings: list[Finding] = []
    # Recorded so that notes appearing after planning make the plan stale ([P5]).
    notes_checks = (SourceCheck(source, Observed(Kind.ABSENT)),) if notes is None else ()
    for ref in config.memory:
        src = memory_source(workspace, ref)
        if notes is not None and is_notes(ref):
            resources.append(Resource(ref, ref, src, shadowed=True))
            findings.append(
                Finding(
                    "memory.shadowed", "warning",
                    f"reference {ref!r} is shadowed by project notes ({notes.source}); "
                    f"it is skipped — rename it in {config.config_path} to expose it",
                    config.config_path,
                )
            )
            continue
        problem, missing, checks = walker.check(memory_root, ref.split("/"),
                                                what="workspace memory")
        resources.append(Resource(ref, ref, src, problem=problem, missing=missing,
                                  checks=checks))

    resources.sort(key=attrgetter("rel", "shadowed"))
    # [P4]: output must not depend on the order of references in agent.toml.
    findings.sort(key=lambda f: (f.code, f.message))
    return ResourceSet(
        resources=tuple(resources),
        project_memory_exists=pm_exists,
        notes_source=notes.source if notes is not None else None,
        notes_location=notes_location,
        notes_history=notes_sources(workspace, config.name),
        findings=tuple(findings),
        absent_checks=notes_checks,
    )
