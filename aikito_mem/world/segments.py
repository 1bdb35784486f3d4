"""What the skills and instructions segments want and find (§13): the observing side.

- :func:`resolve_skills`: each selected skill's source ``<ws>/skills/<name>``, checked
  like a memory source ([S3] with ``<ws>/skills`` as the root, directories only).
- :func:`instruction_source`: the state of ``<ws>/projects/<p>/AGENTS.md`` — absent,
  empty, with content, or unsafe ([G3]).  Deciding "empty" is the one read a sync makes
  of a source: it stops at the first byte that is not white space.
- :func:`skills_view` and :func:`instructions_view`: what is at ``.agents/skills`` and at
  each instruction target (and the directories on the way) of one active checkout.

Stat-family calls, ``readlink`` and that one read only; the planners decide.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from aikito_mem import fsutil
from aikito_mem.layout import (
    LEGACY_INSTRUCTIONS,
    MEMORY_DIR,
    PROJECTS_ROOT,
    SKILLS_DIR,
    instructions_source,
    owns,
    relink_path,
    skill_source,
    skills_root,
)
from aikito_mem.model import (
    ABSENT,
    CheckoutState,
    Finding,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    PlannedTarget,
    Resource,
    ResourceSet,
    SourceCheck,
)
from aikito_mem.views import (
    CheckoutView,
    InstructionsView,
    InstructionTargetView,
    SkillsView,
)
from aikito_mem.world.observe import Observer

if TYPE_CHECKING:
    # The registry's values are the caller's (this room only reads them, [G3]); a
    # per-agent skills directory's view is built only when the registry names one ([N1]).
    from aikito_mem.config.registry import Detect, InstructionTarget, Registry
    from aikito_mem.views.agent_skills import AgentSkillsView


def resolve_skills(skills: tuple[str, ...], workspace: str,
                   observer: Observer) -> tuple[Resource, ...]:
    """Every selected skill with its source safety decided ([G2]), sorted by name."""
    from aikito_mem.world.resources import SourceWalker

    walker = SourceWalker(observer)
    root = skills_root(workspace)
    out = []
    for name in sorted(skills):
        problem, missing, checks = walker.check(root, [name], what="workspace skills",
                                                dir_only=True)
        out.append(Resource(name, name, skill_source(workspace, name), problem=problem,
                            missing=missing, checks=checks))
    return tuple(out)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def instruction_source(workspace: str, project: str, observer: Observer) -> InstructionSource:
    """The state of the project instructions source ([G3]) and what to re-check ([P5])."""
    path = instructions_source(workspace, project)
    # [H4]: every component on the way is checked, as a memory source's is ([S3]):
    # ``projects/`` or ``projects/<p>/`` as a symlink that leaves the workspace makes the
    # source unsafe, exactly as a symlinked AGENTS.md that leaves it does.
    from aikito_mem.world.resources import SourceWalker

    problem, _, on_the_way = SourceWalker(observer).check(
        workspace, [PROJECTS_ROOT, project], what="workspace", dir_only=True)
    if problem is not None:
        return InstructionSource(path, InstructionState.UNSAFE,
                                 f"{path} is not reached safely: {problem}", on_the_way)
    try:
        obs = observer.lstat(path)
    except OSError as exc:
        return InstructionSource(path, InstructionState.UNSAFE,
                                 f"{path} cannot be examined ({exc.strerror})")
    follow = False
    if obs.kind is Kind.ABSENT:
        return InstructionSource(path, InstructionState.ABSENT, None,
                                 (SourceCheck(path, ABSENT),))
    if obs.kind is Kind.LINK:
        try:
            literal = observer.readlink(path)
        except OSError:
            return InstructionSource(path, InstructionState.UNSAFE,
                                     f"{path} changed while being examined")
        real = os.path.realpath(path)
        if not _within(real, os.path.realpath(workspace)):
            return InstructionSource(
                path, InstructionState.UNSAFE,
                f"{path} is a symlink to {literal!r}, which leaves the workspace "
                f"(it resolves to {real})",
                (SourceCheck(path, Observed(Kind.LINK, literal)),))
        target = observer.stat_follow(path)
        if target.kind is Kind.ABSENT:
            return InstructionSource(
                path, InstructionState.UNSAFE,
                f"{path} is a broken symlink to {literal!r}",
                (SourceCheck(path, Observed(Kind.LINK, literal)),))
        obs = Observed(Kind.LINK, literal, obs.dev, obs.ino)
        follow, kind = True, target.kind
    else:
        kind = obs.kind
    if kind is not Kind.FILE:
        article = "an" if kind.value[0] in "aeiou" else "a"
        return InstructionSource(
            path, InstructionState.UNSAFE,
            f"{path} is {article} {kind.value}; expected a regular file holding the "
            "project's instructions", (SourceCheck(path, Observed(obs.kind, obs.literal)),))
    try:
        blank = fsutil.is_blank(path, follow=follow)
    except OSError as exc:
        return InstructionSource(path, InstructionState.UNSAFE,
                                 f"{path} cannot be read ({exc.strerror})")
    check = SourceCheck(path, observer.identity(path, obs) if not follow else obs,
                        identity=not follow)
    state = InstructionState.EMPTY if blank else InstructionState.CONTENT
    return InstructionSource(path, state, None, (check,))


def skills_view(checkout: str, agents: Observed, observer: Observer) -> SkillsView:
    """``.agents/skills`` of one active checkout: itself and its entries (one level)."""
    if agents.kind is not Kind.DIR:
        return SkillsView()
    path = f"{checkout}/{SKILLS_DIR}"
    root = observer.look(path)
    if root.kind is not Kind.DIR:
        return SkillsView(root)
    # One level, through the observing room's walk: the same identities verification
    # re-checks, never into a mount point ([E2], [E5]).
    return SkillsView(root, observer.scan(path, root, recursive=False))


def instructions_view(
    checkout: str,
    agents: Observed,
    targets: tuple[InstructionTarget, ...],
    detect: Callable[[InstructionTarget], bool],
    observer: Observer,
) -> InstructionsView:
    """Every instruction target of one active checkout ([G4]).  ``detect`` is asked only
    for a target whose directory is missing (the one case where detection matters)."""
    views = []
    for target in targets:
        parents = observer.on_the_way(checkout, target.path)
        usable = not parents or parents[-1][1].kind is Kind.DIR
        observed = (observer.look(f"{checkout}/{target.path}", identity=False) if usable
                    else ABSENT)
        missing_parent = bool(parents) and parents[-1][1].kind is Kind.ABSENT
        detected = detect(target) if missing_parent else False
        relink = ABSENT
        if usable and not missing_parent:
            # A killed relink's temporary link ([L4]): one lstat per target.
            relink = observer.look(f"{checkout}/{relink_path(target.path)}", identity=False)
        views.append(InstructionTargetView(target.path, target.agents, detected, observed,
                                           parents, relink))
    legacy = ABSENT
    if agents.kind is Kind.DIR:
        legacy = observer.look(f"{checkout}/{LEGACY_INSTRUCTIONS}", identity=False)
    return InstructionsView(tuple(views), legacy)


def detected(detect: Detect | None, environ: Mapping[str, str], home: str | None) -> bool:
    """The registry's detection of one agent ([G4]), its room imported when a target
    first needs it (a run whose every target's directory exists never does)."""
    from aikito_mem.config.registry import detected as registry_detected

    return registry_detected(detect, environ, home)


class Detection:
    """Agent detection on this machine ([G4]), computed once per target and only when a
    checkout needs it; :meth:`planned` is what the plan records ([G6])."""

    def __init__(self, registry: Registry, environ: Mapping[str, str], home: str | None):
        self._registry = registry
        self._environ = environ
        self._home = home
        self.asked: dict[str, bool] = {}

    def __call__(self, target: InstructionTarget) -> bool:
        known = self.asked.get(target.path)
        if known is None:
            known = self.asked[target.path] = any(
                detected(entry.detect, self._environ, self._home)
                for entry in self._registry.agents if entry.name in target.agents
            )
        return known

    def planned(self, targets: tuple[InstructionTarget, ...]) -> tuple[PlannedTarget, ...]:
        return tuple(PlannedTarget(t.path, t.agents, self.asked.get(t.path)) for t in targets)


_OCCUPIED = (Kind.FILE, Kind.DIR)


def _foreign(obs: Observed, link_dir: str, sources: tuple[str, ...]) -> bool:
    """A regular file, a directory, or a link this workspace does not own ([O1]): what
    git is asked about ([L1]).  An owned link is never asked about (a warm sync starts
    no subprocess), nor is anything else (a FIFO, a mount point: never tracked)."""
    if obs.kind in _OCCUPIED:
        return True
    return obs.kind is Kind.LINK and owns(obs.literal, link_dir, sources) is None


def occupied_targets(
    views: tuple[CheckoutView, ...],
    resources: ResourceSet,
    skills: tuple[Resource, ...],
    skill_views: Mapping[str, SkillsView],
    source: InstructionSource,
    instr_views: Mapping[str, InstructionsView],
    agent_views: Mapping[str, tuple[AgentSkillsView, ...]] | None = None,
) -> dict[str, list[str]]:
    """Per active checkout, the targets of every segment occupied by a regular file, a
    directory or a link this workspace does not own (relative to the checkout): the only
    ones git is asked about ([L1])."""
    out: dict[str, list[str]] = {}
    desired = [r for r in resources.resources if not r.shadowed]
    active, link, directory = CheckoutState.ACTIVE, Kind.LINK, Kind.DIR  # looked up once
    for view in views:  # memory: a desired target holding something not owned
        if view.state is not active or view.memory.kind is not directory:
            continue
        entries = dict(view.entries)
        base = f"{view.path}/{MEMORY_DIR}"
        for res in desired:
            obs = entries.get(res.rel)
            if obs is None or (obs.kind is link and obs.literal == res.source):
                continue  # nothing there, or a link naming its source byte for byte ([O1])
            sources = (res.source, *resources.notes_history) if res.is_notes else (
                res.source,)
            parent = res.rel.rpartition("/")[0]
            if _foreign(obs, f"{base}/{parent}" if parent else base, sources):
                out.setdefault(view.path, []).append(f"{MEMORY_DIR}/{res.rel}")
    by_name = {res.name: (res.source,) for res in skills}
    for checkout, view_ in skill_views.items():
        base = f"{checkout}/{SKILLS_DIR}"
        for name, obs in view_.entries:
            if name in by_name and _foreign(obs, base, by_name[name]):
                out.setdefault(checkout, []).append(f"{SKILLS_DIR}/{name}")
    for checkout, aviews in (agent_views or {}).items():  # [N1]: each agent's directory
        for aview in aviews:
            out.setdefault(checkout, []).extend(
                f"{aview.rel}/{name}" for name, obs in aview.entries
                if name in by_name and _foreign(obs, f"{checkout}/{aview.rel}",
                                                by_name[name]))
    if source.state is InstructionState.CONTENT:
        for checkout, iview in instr_views.items():
            for target in iview.targets:
                parent = target.rel.rpartition("/")[0]
                if _foreign(target.observed, f"{checkout}/{parent}" if parent else checkout,
                            (source.path,)):
                    out.setdefault(checkout, []).append(target.rel)
    return {checkout: rels for checkout, rels in out.items() if rels}


def tracked_targets(
    occupied: Mapping[str, list[str]],
) -> tuple[dict[str, frozenset[str]], tuple[Finding, ...]]:
    """[L1]: which occupied targets git tracks — one ``git ls-files -z`` per checkout
    with an occupied target (a file, a directory, a link not owned), none otherwise (a
    warm sync starts no subprocess).  Outside
    a work tree nothing is tracked; git missing, failing or slow: nothing is tracked and
    one ``git.unavailable`` finding says so."""
    if not occupied:  # nor does it import the git room and subprocess ([§12])
        return {}, ()
    from aikito_mem.world import git

    tracked: dict[str, frozenset[str]] = {}
    findings: list[Finding] = []
    for checkout, rels in occupied.items():
        answer = git.tracked(checkout, rels)
        if isinstance(answer, git.Unavailable):
            findings.append(Finding(
                "git.unavailable", "warning",
                f"{answer.reason} in {checkout}: its files, directories and links at "
                "aikito's targets are treated as not tracked by git (one that git does "
                "track is the repository's: keep it, a sync skips it once git answers)",
                checkout))
        elif isinstance(answer, frozenset):
            tracked[checkout] = frozenset(f"{checkout}/{rel}" for rel in answer)
    return tracked, tuple(findings)
