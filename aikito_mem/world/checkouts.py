"""Checkout candidates → active / offline / invalid, and their observation ([K1]–[K4]).

The active/offline split is decided here once, at plan time, and frozen in the plan.  An
offline candidate costs exactly one ``stat``; nothing below it is looked at ([K3]).

[K1] A candidate path is resolved by the kernel as written: ``stat`` follows it (a
``..`` after a symlink goes where the kernel goes, never a lexical shortening), and the
physical path is ``realpath`` of it, checked to be the very directory ``stat`` found.
Active candidates are de-duplicated by that identity (``st_dev``, ``st_ino``): two
spellings or a bind mount of one directory are one checkout, so it is locked once; the
first label wins.  Offline and invalid ones are de-duplicated by their lexically
normalised path (:func:`aikito_mem.config.candidates.lexical_key`).

A checkout physically inside ``<ws>/memory``, ``<ws>/skills`` or
``<ws>/projects/<p>/memory`` would make a sync write links into the workspace itself (a
link cycle in shared memory): with ``strict`` it is a configuration error
(``config.checkout_in_workspace``); otherwise the slot is invalid (a CONFLICT), so a
caller that only reports (doctor, the containment search) never writes there either.
"""

from __future__ import annotations

import os
from bisect import bisect_left

import attrs

from aikito_mem import layout
from aikito_mem.config.candidates import lexical_key
from aikito_mem.config.names import control_character
from aikito_mem.errors import ConfigError
from aikito_mem.model import (
    ABSENT,
    Candidate,
    CheckoutState,
    CheckoutView,
    Kind,
    Observed,
    ProjectConfig,
)
from aikito_mem.world.observe import Observer


@attrs.frozen
class Slot:
    """A classified candidate, before its runtime tree is observed."""

    label: str
    #: Physical path when active; the candidate path otherwise.
    path: str
    state: CheckoutState
    reason: str | None = None
    root: Observed = ABSENT
    #: ``(st_dev, st_ino)`` of the checkout directory when active.
    identity: tuple[int, int] | None = None


def classify(candidate: Candidate, observer: Observer) -> Slot:
    if not candidate.absolute:
        return Slot(candidate.label, candidate.path, CheckoutState.OFFLINE,
                    f"{candidate.raw!r} is not an absolute path on this system")
    try:
        obs = observer.stat_follow(candidate.path)
    except OSError as exc:
        return Slot(candidate.label, candidate.path, CheckoutState.INVALID,
                    f"checkout {candidate.path} cannot be examined: {exc.strerror}")
    if obs.kind is Kind.ABSENT:
        return Slot(candidate.label, candidate.path, CheckoutState.OFFLINE,
                    "path does not exist")
    if obs.kind is not Kind.DIR:
        return Slot(candidate.label, candidate.path, CheckoutState.INVALID,
                    f"checkout {candidate.path} is {obs.describe()}; expected a directory",
                    obs)
    return _physical(candidate.label, candidate.path, obs)


def _physical(label: str, path: str, obs: Observed) -> Slot:
    """The active slot of the directory ``obs`` found at ``path``, by its physical path."""
    physical = os.path.realpath(path)
    try:
        st = os.stat(physical)
        same = (st.st_dev, st.st_ino) == (obs.dev, obs.ino)
    except OSError:
        same = False
    if not same:
        return Slot(label, path, CheckoutState.INVALID,
                    f"checkout {path} changed while being examined (its physical path "
                    f"{physical} is not the directory found there); run again")
    return Slot(label, physical, CheckoutState.ACTIVE, identity=(obs.dev, obs.ino))


@attrs.frozen
class _Trees:
    """The workspace trees a checkout must stay out of, spelled both as written and
    physically (a tree may be a symlink to elsewhere): taken once per listing."""

    #: ``(root, words)``: ``<ws>/memory``, ``<ws>/skills``, ``<ws>/projects/<p>/memory``.
    roots: tuple[tuple[str, str], ...]
    #: ``<ws>/projects`` as written and physically: ``<base>/<any>/memory`` is inside.
    projects: tuple[str, ...]

    @classmethod
    def of(cls, config: ProjectConfig) -> _Trees:
        project_dir = config.project_dir
        ws = os.path.dirname(os.path.dirname(project_dir))
        roots: list[tuple[str, str]] = []
        for root, words in (
            (layout.memory_root(ws), "the workspace memory tree"),
            (layout.skills_root(ws), "the workspace skills tree"),
            (f"{project_dir}/{layout.MEMORY_ROOT}", f"the memory tree of project {config.name!r}"),
        ):
            roots.append((root, words))
            real = os.path.realpath(root)
            if real != root:
                roots.append((real, words))
        projects = layout.projects_root(ws)
        return cls(tuple(roots), tuple(dict.fromkeys((projects, os.path.realpath(projects)))))

    def containing(self, physical: str) -> tuple[str, str] | None:
        """``(tree root, words)`` when ``physical`` is inside one of the trees."""
        for root, words in self.roots:
            if physical == root or physical.startswith(root.rstrip("/") + "/"):
                return root, words
        for base in self.projects:
            if physical.startswith(base + "/"):
                parts = physical[len(base) + 1:].split("/")
                if len(parts) >= 2 and parts[1] == layout.MEMORY_ROOT:
                    return (f"{base}/{parts[0]}/{layout.MEMORY_ROOT}",
                            f"the memory tree of project {parts[0]!r}")
        return None


def _refusal(slot: Slot, config: ProjectConfig, trees: _Trees) -> str | None:
    """The message refusing an active ``slot`` inside the workspace, else ``None``."""
    inside = trees.containing(slot.path)
    if inside is None:
        return None
    root, words = inside
    return (
        f"checkout {slot.label} {slot.path} is inside {words} ({root}); a sync would write "
        "links into the workspace itself (a link cycle in shared memory); expected a "
        f"checkout outside the workspace's memory/, skills/ and projects/*/memory/ trees "
        f"— remove this path from {config.config_path}"
    )


def slots(config: ProjectConfig, observer: Observer, *, strict: bool = False
          ) -> tuple[Slot, ...]:
    """Every candidate of ``config``, de-duplicated ([K1]): active ones by identity,
    others by lexical path; the first label wins.

    ``strict``: an active checkout inside the workspace trees raises
    :class:`ConfigError` (``config.checkout_in_workspace``); otherwise it is invalid.
    """
    out: list[Slot] = []
    seen: set[object] = set()
    trees: _Trees | None = None
    for cand in config.candidates:
        slot = classify(cand, observer)
        key: object = slot.identity if slot.identity is not None else lexical_key(cand.path)
        if key in seen:
            continue
        seen.add(key)
        if slot.state is CheckoutState.ACTIVE:
            trees = trees or _Trees.of(config)
            refusal = _refusal(slot, config, trees)
            if refusal is not None:
                if strict:
                    raise ConfigError(refusal, code="config.checkout_in_workspace",
                                      path=slot.path)
                slot = Slot(slot.label, slot.path, CheckoutState.INVALID, refusal)
        out.append(slot)
    return tuple(out)


def given_path(path: str) -> str:
    """The absolute path of an explicit checkout argument, as the kernel reaches it.

    ``~`` is expanded; a relative path is joined to the current directory (a deleted one
    is a configuration error); repeated ``/`` and ``.`` are dropped; a ``..`` is resolved
    against the physical path of what precedes it — never a lexical shortening through a
    symlink — and kept as written when what precedes it is not a directory ([K1]).  A
    control character is a configuration error ([C6]: such a path could not be
    registered).
    """
    control = control_character(path)
    if control is not None:
        raise ConfigError(
            f"checkout path {path!r} contains the control character {control}; expected "
            "the path of an existing directory without control characters — rename the "
            "directory or pass another path",
            code="config.checkout_path", path=path,
        )
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        from aikito_mem.config.discovery import current_directory

        expanded = os.path.join(current_directory(), expanded)
    out = ""
    for part in expanded.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            prefix = out or "/"
            if os.path.isdir(prefix):  # the kernel goes to the parent of what it reached
                out = os.path.dirname(os.path.realpath(prefix)).rstrip("/")
            else:  # the kernel reaches nothing: keep the text, the stat will say so
                out = f"{out}/.."
            continue
        out = f"{out}/{part}"
    return out or "/"


def explicit_slot(
    config: ProjectConfig, path: str, observer: Observer
) -> tuple[Slot, bool]:
    """The one checkout of ``sync project NAME PATH`` and whether it is registered ([K4]):
    a registered candidate that is the same directory (by identity) counts."""
    given = given_path(path)
    try:
        obs = observer.stat_follow(given)
    except OSError as exc:
        raise ConfigError(
            f"checkout {given} cannot be examined: {exc.strerror}; expected an existing "
            "directory", code="config.checkout_path", path=given,
        ) from None
    if obs.kind is not Kind.DIR:
        found = "nothing" if obs.kind is Kind.ABSENT else obs.describe()
        raise ConfigError(
            f"checkout {given} is {found}; expected an existing directory "
            "(aikito never creates a checkout) — clone or create it first, or fix the path",
            code="config.checkout_path", path=given,
        )
    slot = _physical("explicit", given, obs)
    if slot.state is not CheckoutState.ACTIVE:
        raise ConfigError(f"{slot.reason}", code="config.checkout_path", path=given)
    registered: str | None = None
    for cand in config.candidates:
        if not cand.absolute:
            continue
        if cand.path == given:
            registered = cand.label
            break
        try:
            other = observer.stat_follow(cand.path)
        except OSError:
            continue
        if other.kind is Kind.DIR and (other.dev, other.ino) == slot.identity:
            registered = cand.label
            break
    if registered is not None:
        slot = attrs.evolve(slot, label=registered)
    refusal = _refusal(slot, config, _Trees.of(config))
    if refusal is not None:
        raise ConfigError(refusal, code="config.checkout_in_workspace", path=slot.path)
    return slot, registered is not None


def observe(slot: Slot, observer: Observer) -> CheckoutView:
    """Observe the runtime tree of one slot: root, ``.agents``, ``.agents/memory`` and
    every entry below it.  Offline and invalid slots cost nothing more."""
    if slot.state is not CheckoutState.ACTIVE:
        return CheckoutView(slot.label, slot.path, slot.state, slot.reason, root=slot.root)
    root_path = slot.path
    try:
        root = observer.lstat(root_path)
        if root.kind is not Kind.DIR:
            return CheckoutView(slot.label, slot.path, CheckoutState.INVALID,
                                f"checkout {root_path} is {root.describe()}; expected a "
                                "directory", root=root)
        root = observer.identity(root_path, root)
        agents_path = f"{root_path}/{layout.AGENTS_DIR}"
        agents = observer.lstat(agents_path)
        if agents.kind is Kind.LINK:
            agents = Observed(Kind.LINK, observer.readlink(agents_path), agents.dev, agents.ino)
        memory = ABSENT
        entries: tuple[tuple[str, Observed], ...] = ()
        index_anchor = False
        if agents.kind is Kind.DIR:
            agents = observer.identity(agents_path, agents)
            memory_path = f"{root_path}/{layout.MEMORY_DIR}"
            memory = observer.lstat(memory_path)
            if memory.kind is Kind.LINK:
                memory = Observed(Kind.LINK, observer.readlink(memory_path), memory.dev,
                                  memory.ino)
            elif memory.kind is Kind.DIR:
                memory = observer.identity(memory_path, memory)
                entries = observer.scan(memory_path, memory)
                index_anchor = _index_anchor(root_path, entries, observer)
    except OSError as exc:
        return CheckoutView(slot.label, slot.path, CheckoutState.INVALID,
                            f"checkout {root_path} cannot be examined: {exc.strerror}",
                            root=Observed(Kind.OTHER))
    return CheckoutView(slot.label, slot.path, CheckoutState.ACTIVE, None,
                        root, agents, memory, entries, index_anchor)


def _index_anchor(root_path: str, entries: tuple[tuple[str, Observed], ...],
                  observer: Observer) -> bool:
    """Whether ``.agents/memory/MEMORY.md`` is the memory descriptor's index: a regular file
    while ``.agents/config.yaml`` has a top-level ``memory:`` key.  The file is read (no
    YAML) only when that regular file is there: one read per such checkout."""
    index = layout.INDEX_NAME
    i = bisect_left(entries, (index,))  # entries are sorted by relative path
    if i == len(entries) or entries[i][0] != index or entries[i][1].kind is not Kind.FILE:
        return False
    from aikito_mem.commands.descriptor import has_memory_block

    observer.calls += 1
    return has_memory_block(root_path)
