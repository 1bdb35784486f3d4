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
from collections.abc import Mapping

from aikito_mem import fsutil
from aikito_mem.model import (
    ABSENT,
    InstructionSource,
    InstructionState,
    InstructionsView,
    InstructionTargetView,
    Kind,
    Observed,
    Resource,
    SkillsView,
    SourceCheck,
)
from aikito_mem.observe import Observer
from aikito_mem.planner_instructions import LEGACY_TARGET, instructions_source
from aikito_mem.planner_skills import SKILLS_DIR, skill_source
from aikito_mem.registry import Registry


def resolve_skills(skills: tuple[str, ...], workspace: str,
                   observer: Observer) -> tuple[Resource, ...]:
    """Every selected skill with its source safety decided ([G2]), sorted by name."""
    from aikito_mem.resources import _SourceWalker

    walker = _SourceWalker(observer)
    root = f"{workspace}/skills"
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
    root = observer.lstat(path)
    if root.kind is Kind.LINK:
        return SkillsView(Observed(Kind.LINK, observer.readlink(path), root.dev, root.ino))
    if root.kind is not Kind.DIR:
        return SkillsView(root)
    root = observer.identity(path, root)
    entries: list[tuple[str, Observed]] = []
    observer.calls += 1
    with os.scandir(path) as it:
        for entry in it:
            if entry.is_symlink():
                observer.calls += 1
                try:
                    literal = os.readlink(entry.path)
                except OSError:
                    continue
                entries.append((entry.name, Observed(Kind.LINK, literal, root.dev,
                                                     entry.inode())))
            elif entry.is_dir(follow_symlinks=False):
                entries.append((entry.name, Observed(Kind.DIR, None, root.dev, entry.inode())))
            elif entry.is_file(follow_symlinks=False):
                entries.append((entry.name, Observed(Kind.FILE, None, root.dev, entry.inode())))
            else:
                entries.append((entry.name, observer.lstat(entry.path)))
    entries.sort()
    return SkillsView(root, tuple(entries))


def _observe_link(path: str, observer: Observer) -> Observed:
    obs = observer.lstat(path)
    if obs.kind is Kind.LINK:
        return Observed(Kind.LINK, observer.readlink(path), obs.dev, obs.ino)
    return obs


def instructions_view(
    checkout: str,
    agents: Observed,
    registry: Registry,
    detection: Mapping[str, bool],
    observer: Observer,
    *,
    only: tuple[str, ...] | None = None,
) -> InstructionsView:
    """Every instruction target of one active checkout ([G4]); ``only`` limits the
    targets to those paths (``Project.prepare(agent)``, [A3])."""
    targets = []
    for target in registry.targets:
        if only is not None and target.path not in only:
            continue
        parents: list[tuple[str, Observed]] = []
        parts = target.path.split("/")
        usable = True
        for i in range(1, len(parts)):
            prel = "/".join(parts[:i])
            pobs = _observe_link(f"{checkout}/{prel}", observer)
            if pobs.kind is Kind.DIR:
                pobs = observer.identity(f"{checkout}/{prel}", pobs)
            parents.append((prel, pobs))
            if pobs.kind is not Kind.DIR:
                usable = False
                break
        observed = _observe_link(f"{checkout}/{target.path}", observer) if usable else ABSENT
        detected = any(detection.get(a, False) for a in target.agents)
        targets.append(InstructionTargetView(target.path, target.agents, detected, observed,
                                             tuple(parents)))
    legacy = ABSENT
    if agents.kind is Kind.DIR:
        legacy = _observe_link(f"{checkout}/{LEGACY_TARGET}", observer)
    return InstructionsView(tuple(targets), legacy)
