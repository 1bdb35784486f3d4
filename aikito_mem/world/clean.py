"""What ``aikito clean`` finds in one checkout ([L3]): the observing side.

The same calls a sync observes with — ``lstat``, ``readlink``, the observing room's walk
(never through a link, never into a mount point) — for ``.agents`` (one level),
``.agents/memory`` (recursively), ``.agents/skills`` (one level), every instruction
target of the registry and the legacy ``.agents/AGENTS.md``, the per-agent skills
directories ([N1]), and the directories on the way to those (one level each where a
link is held below, to know whether the clean empties them); each instruction target's
relink name (a killed relink's leftover, [L4] [L8]); and which directory it may prune is
a mount point ([L8]).  Nothing is read or
written; :mod:`aikito_mem.planner.clean` decides.
"""

from __future__ import annotations

from aikito_mem.errors import ConfigError
from aikito_mem.layout import (
    AGENTS_DIR,
    LEGACY_INSTRUCTIONS,
    MEMORY_DIR,
    SKILLS_DIR,
    relink_path,
)
from aikito_mem.model import ABSENT, CheckoutState, Kind, Observed
from aikito_mem.views.clean import CleanCheckout
from aikito_mem.world import checkouts
from aikito_mem.world.checkouts import Slot
from aikito_mem.world.observe import Observer


def path_slot(path: str, workspace: str, observer: Observer) -> checkouts.Slot:
    """The one checkout of ``clean PATH``: an existing directory outside the workspace."""
    given = checkouts.given_path(path)
    try:
        obs = observer.stat_follow(given)
    except OSError as exc:
        raise ConfigError(f"checkout {given} cannot be examined: {exc.strerror}; expected "
                          "an existing directory", code="config.checkout_path",
                          path=given) from None
    if obs.kind is not Kind.DIR:
        found = "nothing" if not obs.exists else obs.describe()
        raise ConfigError(
            f"checkout {given} is {found}; expected an existing directory to clean — "
            "check the path (a checkout named 'project' is written ./project)",
            code="config.checkout_path", path=given)
    slot = checkouts.physical("explicit", given, obs)
    if slot.state is not CheckoutState.ACTIVE:
        raise ConfigError(f"{slot.reason}", code="config.checkout_path", path=given)
    from aikito_mem.config.discovery import home_directory

    # [H1]: never a place a checkout can never be (/, home, the workspace, inside it…).
    places = checkouts.Places.of(workspace, None, home_directory(), observer)
    refused = (checkouts.refusal(slot.path, slot.identity, places)
               if slot.identity is not None else None)
    if refused is not None:
        code, what = refused
        raise ConfigError(
            f"checkout {slot.path} {what}; expected a project's own working copy — never "
            "/, the home directory, the workspace, a directory inside it, or an ancestor "
            "of the home directory or the workspace ([H1]); nothing was removed",
            code=code, path=slot.path)
    return slot


def _target(checkout: str, rel: str, observer: Observer
            ) -> tuple[Observed, tuple[tuple[str, Observed], ...]]:
    """What is at instruction target ``rel`` and each directory on the way (up to the
    first one that is not a real directory: then the target is not looked at)."""
    parents = observer.on_the_way(checkout, rel)
    if parents and parents[-1][1].kind is not Kind.DIR:
        return ABSENT, parents
    return observer.look(f"{checkout}/{rel}", identity=False), parents


class _Parents:
    """The directories on the way to the instruction targets and the per-agent skills
    directories: each as observed (re-checked before the first write, [E2]: one that
    appears, vanishes or is replaced makes the plan stale) and, below which a link is
    held, the names of its entries (to know whether the clean empties it)."""

    def __init__(self, co: str, observer: Observer) -> None:
        self.co = co
        self.observer = observer
        self.found: dict[str, tuple[Observed, tuple[str, ...]]] = {}
        self.listed: set[str] = set()

    def add(self, on_the_way: tuple[tuple[str, Observed], ...], *, holds_link: bool
            ) -> None:
        for prel, pobs in on_the_way:
            if prel in self.listed or (prel in self.found and not holds_link):
                continue
            names: tuple[str, ...] = ()
            if holds_link:
                self.listed.add(prel)
                names = tuple(n for n, _ in self.observer.scan(
                    f"{self.co}/{prel}", pobs, recursive=False))
            self.found[prel] = (pobs, names)


def _skill_dir(co: str, rel: str, observer: Observer, parents: _Parents
               ) -> tuple[str, Observed, tuple[tuple[str, Observed], ...]]:
    """A per-agent skills directory ([N1]): what is there, its entries (one level), and
    the directories on the way, into ``parents``."""
    obs, on_the_way = _target(co, rel, observer)
    if obs.kind is Kind.DIR:
        obs = observer.identity(f"{co}/{rel}", obs)
    entries = (observer.scan(f"{co}/{rel}", obs, recursive=False)
               if obs.kind is Kind.DIR else ())
    parents.add(on_the_way, holds_link=any(e.kind is Kind.LINK for _, e in entries))
    return rel, obs, entries


def _mounts(co: str, observer: Observer, looked: list[tuple[str, Observed]]
            ) -> tuple[str, ...]:
    """[L8]: which of the directories a clean may prune (``looked``, relative to the
    checkout ``co``) are mount points — never removed: kept, and said so."""
    return tuple(sorted({rel for rel, obs in looked
                         if observer.mount_point(f"{co}/{rel}", obs)}))


def observe_checkout(slot: Slot, targets: tuple[str, ...], observer: Observer,
                     skill_dirs: tuple[str, ...] = ()) -> CleanCheckout:
    """Observe one checkout candidate for a clean.  Offline and invalid ones cost
    nothing more.  ``skill_dirs``: the registry's per-agent skills directories."""
    base = CleanCheckout(slot.label, slot.path, slot.state, slot.reason, root=slot.root)
    if slot.state is not CheckoutState.ACTIVE:
        return base
    co = slot.path
    try:
        root = observer.lstat(co)
        if root.kind is not Kind.DIR:
            return CleanCheckout(slot.label, co, CheckoutState.INVALID,
                                 f"checkout {co} is {root.describe()}; expected a directory",
                                 root=root)
        root = observer.identity(co, root)
        agents = observer.look(f"{co}/{AGENTS_DIR}")
        agents_entries: tuple[tuple[str, Observed], ...] = ()
        memory = skills = ABSENT
        memory_entries: tuple[tuple[str, Observed], ...] = ()
        skills_entries: tuple[tuple[str, Observed], ...] = ()
        found: list[tuple[str, Observed]] = []
        if agents.kind is Kind.DIR:
            agents_entries = observer.scan(f"{co}/{AGENTS_DIR}", agents, recursive=False)
            memory = observer.look(f"{co}/{MEMORY_DIR}")
            if memory.kind is Kind.DIR:
                memory_entries = observer.scan(f"{co}/{MEMORY_DIR}", memory)
            skills = observer.look(f"{co}/{SKILLS_DIR}")
            if skills.kind is Kind.DIR:
                skills_entries = observer.scan(f"{co}/{SKILLS_DIR}", skills,
                                               recursive=False)
            legacy = dict(agents_entries).get(LEGACY_INSTRUCTIONS.rpartition("/")[2], ABSENT)
            found.append((LEGACY_INSTRUCTIONS, legacy))
        parents = _Parents(co, observer)
        for rel in targets:
            obs, on_the_way = _target(co, rel, observer)
            found.append((rel, obs))
            leftover = ABSENT
            if not on_the_way or on_the_way[-1][1].kind is Kind.DIR:
                # [L8]: a killed relink's fresh link at the target's relink name ([L4]).
                leftover = observer.look(f"{co}/{relink_path(rel)}", identity=False)
                if leftover.exists:
                    found.append((relink_path(rel), leftover))
            parents.add(on_the_way, holds_link=Kind.LINK in (obs.kind, leftover.kind))
        agent_skills = tuple(_skill_dir(co, rel, observer, parents) for rel in skill_dirs)
        mounts = _mounts(co, observer, [
            (AGENTS_DIR, agents), (MEMORY_DIR, memory), (SKILLS_DIR, skills),
            *((f"{MEMORY_DIR}/{rel}", obs) for rel, obs in memory_entries),
            *((rel, obs) for rel, (obs, _) in parents.found.items()),
            *((rel, obs) for rel, obs, _ in agent_skills)])
    except OSError as exc:
        return CleanCheckout(slot.label, co, CheckoutState.INVALID,
                             f"checkout {co} cannot be examined: {exc.strerror}",
                             root=Observed(Kind.OTHER))
    return CleanCheckout(
        slot.label, co, CheckoutState.ACTIVE, None, root, agents, agents_entries, memory,
        memory_entries, skills, skills_entries, tuple(found),
        tuple((rel, obs, names) for rel, (obs, names) in sorted(parents.found.items())),
        agent_skills, mounts,
    )
