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

[H1] Refused checkouts: ``/``, the home directory, any ancestor of it, the workspace
root, any directory inside the workspace (or inside its ``memory/``, ``skills/``,
``projects/`` and the project's ``memory/`` trees wherever they physically are), and any
ancestor of the workspace.  :func:`refusal` is the one test, by the kernel's identity
(``st_dev``, ``st_ino``) of the checkout directory and of each of its ancestors — never
by comparing strings; :class:`Places` holds the identities it compares with, taken once
per listing (a handful of ``stat`` calls, never per resource).  A listed checkout so
refused is an invalid slot (CONFLICTs that block its segments); with ``strict``, and for
an explicit PATH, it is a configuration error (exit 4, nothing written or registered).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from aikito_mem import layout
from aikito_mem.config.candidates import lexical_key
from aikito_mem.config.names import control_character
from aikito_mem.errors import ConfigError
from aikito_mem.model import (
    ABSENT,
    Candidate,
    CheckoutState,
    Kind,
    Observed,
    ProjectConfig,
    ResourceSet,
)
from aikito_mem.values import Record, replace
from aikito_mem.views import CheckoutView
from aikito_mem.world.observe import Observer

if TYPE_CHECKING:  # the git room (subprocess) is imported only to ask git
    from aikito_mem.world.git import WorktreeAnswers


class Slot(Record):
    """A classified candidate, before its runtime tree is observed."""

    label: str
    #: Physical path when active; the candidate path otherwise.
    path: str
    state: CheckoutState
    reason: str | None = None
    root: Observed = ABSENT
    #: ``(st_dev, st_ino)`` of the checkout directory when active (or refused).
    identity: tuple[int, int] | None = None
    #: The error code when [H1] refuses the checkout (the slot is then invalid).
    code: str | None = None


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
    return physical(candidate.label, candidate.path, obs)


def physical(label: str, path: str, obs: Observed) -> Slot:
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


Identity = tuple[int, int]

#: The error codes of a refused checkout ([H1]).
IN_WORKSPACE = "config.checkout_in_workspace"
REFUSED = "config.checkout_refused"


def _ancestors(path: str) -> list[str]:
    """Every proper ancestor of the absolute ``path``, nearest first, ``/`` last."""
    out: list[str] = []
    while path != "/":
        path = os.path.dirname(path) or "/"
        out.append(path)
    return out


class Places:
    """The identities of the places a checkout can never be ([H1]), taken once per listing.

    ``inside``: a checkout that is one of these directories or lies below one (the
    workspace root, and its trees a sync links from, wherever they physically are).
    ``exact``: a checkout that is one of these directories (``/``, the home directory and
    its ancestors, the workspace's ancestors).  Each maps to the words of the rule.  The
    identity of every directory looked at is kept for the listing, so checkouts sharing
    ancestors (``~/code/a``, ``~/code/b``) cost one ``stat`` each, not one per level.
    """

    def __init__(self, observer: Observer) -> None:
        self._observer = observer
        self._seen: dict[str, Identity | None] = {}
        self.inside: dict[Identity, str] = {}
        self.exact: dict[Identity, str] = {}
        #: The workspace root's own identity.
        self.workspace: Identity | None = None

    def ident(self, path: str) -> Identity | None:
        """The identity of the directory the kernel reaches at ``path`` (once per path)."""
        try:
            return self._seen[path]
        except KeyError:
            pass
        try:
            obs = self._observer.stat_follow(path)
            found = (obs.dev, obs.ino) if obs.kind is Kind.DIR else None
        except (OSError, ValueError):
            found = None
        self._seen[path] = found
        return found

    @classmethod
    def of(cls, workspace: str, project_dir: str | None, home: str | None,
           observer: Observer) -> Places:
        places = cls(observer)
        ident, inside, exact = places.ident, places.inside, places.exact
        ws = places.workspace = ident(workspace)
        if ws is not None:
            inside[ws] = f"the workspace {workspace}"
        trees = [(layout.memory_root(workspace), "the workspace memory tree"),
                 (layout.skills_root(workspace), "the workspace skills tree"),
                 (layout.projects_root(workspace), "the workspace projects tree")]
        if project_dir is not None:
            trees.append((f"{project_dir}/{layout.MEMORY_ROOT}",
                          f"the memory tree of project {os.path.basename(project_dir)!r}"))
        for path, words in trees:
            found = ident(path)
            if found is not None:
                inside.setdefault(found, words)
        root = ident("/")
        if root is not None:
            exact[root] = "the root directory /"
        if home:
            found = ident(home)
            if found is not None:
                exact.setdefault(found, "your home directory")
            real = os.path.realpath(home)
            for path in dict.fromkeys((*_ancestors(os.path.normpath(home)),
                                       *_ancestors(real))):
                found = ident(path)
                if found is not None:
                    exact.setdefault(found, f"an ancestor of your home directory {home}")
        for path in _ancestors(workspace):
            found = ident(path)
            if found is not None:
                exact.setdefault(found, f"an ancestor of the workspace {workspace} (it "
                                        "contains the workspace)")
        return places


def refusal(path: str, identity: Identity, places: Places) -> tuple[str, str] | None:
    """``(error code, what the checkout is)`` when the directory ``identity`` at the
    physical ``path`` is a place a checkout can never be ([H1]), else ``None``.

    Compared by identity: the checkout itself, then each of its ancestors, against
    :class:`Places`.  A bind mount or a symlinked tree of the workspace is the same
    directory for the kernel, so it is refused as well.
    """
    words = places.inside.get(identity)
    if words is not None:
        return IN_WORKSPACE, ("is the workspace root" if identity == places.workspace
                              else f"is {words}")
    for ancestor in _ancestors(path):
        found = places.ident(ancestor)
        words = places.inside.get(found) if found is not None else None
        if words is not None:
            return IN_WORKSPACE, f"is inside {words} ({ancestor})"
    words = places.exact.get(identity)
    if words is not None:
        return REFUSED, f"is {words}"
    return None


#: The remedy of a refused explicit checkout (``sync project NAME PATH``, ``init project``).
_EXPLICIT_REMEDY = ("pass the directory of the project's code instead; nothing was written "
                    "or registered")


def _refusal_message(checkout: str, found: tuple[str, str], remedy: str | None = None
                     ) -> str:
    """The message of a refused ``checkout`` (``checkout LABEL PATH`` as the user knows it)."""
    code, what = found
    why = ("a sync would write links into the workspace itself (a link cycle in shared "
           "memory)" if code == IN_WORKSPACE else
           "its .agents, AGENTS.md and .claude/ would speak to every agent on this machine")
    text = (f"{checkout} {what}: {why}; a checkout is a project's own working copy, never "
            "/, the home directory, the workspace, a directory inside the workspace, or an "
            "ancestor of the home directory or of the workspace")
    return text if remedy is None else f"{text} — {remedy}"


def _places(config: ProjectConfig, home: str | None, observer: Observer) -> Places:
    if home is None:
        from aikito_mem.config.discovery import home_directory

        home = home_directory()
    project_dir = config.project_dir
    workspace = os.path.dirname(os.path.dirname(project_dir))
    return Places.of(workspace, project_dir, home, observer)


def slots(config: ProjectConfig, observer: Observer, *, strict: bool = False,
          home: str | None = None, worktrees: WorktreeAnswers | None = None
          ) -> tuple[Slot, ...]:
    """Every candidate of ``config``, de-duplicated ([K1]): active ones by identity,
    others by lexical path; the first label wins.

    An active checkout that [H1] refuses is an invalid slot (its ``code`` says why); with
    ``strict`` (``init project``: a checkout given explicitly) it raises that
    :class:`ConfigError` instead.  ``home``: the home directory
    of the run's environment (``None``: the process's).  ``worktrees``: the answers of
    ``git worktree list`` this call already has ([L6]; ``None``: ask git).
    """
    out: list[Slot] = []
    seen: set[object] = set()
    places: list[Places] = []

    def add(cand: Candidate) -> None:
        slot = classify(cand, observer)
        key: object = slot.identity if slot.identity is not None else lexical_key(cand.path)
        if key in seen:
            return
        seen.add(key)
        if slot.identity is not None:
            if not places:
                places.append(_places(config, home, observer))
            found = refusal(slot.path, slot.identity, places[0])
            if found is not None:
                message = _refusal_message(f"checkout {slot.label} {slot.path}", found)
                if strict:
                    raise ConfigError(f"{message} — {_EXPLICIT_REMEDY}", code=found[0],
                                      path=slot.path)
                slot = Slot(slot.label, slot.path, CheckoutState.INVALID, message,
                            code=found[0])
        out.append(slot)

    for cand in config.candidates:
        add(cand)
    if config.worktrees:
        for registered in [s for s in out if s.state is CheckoutState.ACTIVE]:
            for cand in worktree_candidates(registered, worktrees):
                add(cand)
    return tuple(out)


def worktree_candidates(registered: Slot, answers: WorktreeAnswers | None = None
                        ) -> list[Candidate]:
    """[L6]: every other worktree of the repository of an active registered checkout
    (``git worktree list --porcelain -z``, one call), as a candidate labelled
    ``<label>@<worktree directory name>``; bare entries are skipped.  A registered
    checkout in a subdirectory of its work tree maps to the same subdirectory of each
    worktree.  Not a work tree, or git unavailable: none."""
    from aikito_mem.world import git

    found = (answers.worktrees if answers is not None else git.worktrees)(registered.path)
    if not isinstance(found, tuple):
        return []
    tops = sorted((os.path.realpath(wt.path) for wt in found if not wt.bare),
                  key=len, reverse=True)
    mine = next((t for t in tops if registered.path == t
                 or registered.path.startswith(t.rstrip("/") + "/")), None)
    if mine is None:
        return []
    below = registered.path[len(mine):]
    out = []
    for wt in found:
        if wt.bare or os.path.realpath(wt.path) == mine:
            continue
        path = os.path.normpath(wt.path) + below
        name = os.path.basename(os.path.normpath(wt.path))
        out.append(Candidate(f"{registered.label}@{name}", path, path, True))
    return out


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
    config: ProjectConfig, path: str, observer: Observer, *, home: str | None = None,
    worktrees: WorktreeAnswers | None = None,
) -> tuple[Slot, bool]:
    """The one checkout of ``sync project NAME PATH`` and whether it is registered ([K4]):
    a registered candidate that is the same directory (by identity) counts.  A place
    [H1] refuses is a :class:`ConfigError` (exit 4), before anything is registered."""
    given = given_path(path)
    try:
        obs = observer.stat_follow(given)
    except OSError as exc:
        raise ConfigError(
            f"checkout {given} cannot be examined: {exc.strerror}; expected an existing "
            "directory", code="config.checkout_path", path=given,
        ) from None
    if obs.kind is not Kind.DIR:
        found = "does not exist" if obs.kind is Kind.ABSENT else f"is {obs.describe()}"
        raise ConfigError(
            f"checkout {given} {found}; expected an existing directory "
            "(aikito never creates a checkout) — clone or create it first, or fix the path",
            code="config.checkout_path", path=given,
        )
    slot = physical("explicit", given, obs)
    if slot.state is not CheckoutState.ACTIVE or slot.identity is None:
        raise ConfigError(f"{slot.reason}", code="config.checkout_path", path=given)
    refused = refusal(slot.path, slot.identity, _places(config, home, observer))
    if refused is not None:
        raise ConfigError(_refusal_message(f"checkout {slot.path}", refused, _EXPLICIT_REMEDY),
                          code=refused[0], path=slot.path)
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
    if registered is None and config.worktrees:
        # [L6]: a discovered worktree named explicitly is a checkout already: never
        # registered.
        for other_slot in slots(config, observer, home=home, worktrees=worktrees):
            if other_slot.identity == slot.identity:
                registered = other_slot.label
                break
    if registered is not None:
        slot = replace(slot, label=registered)
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
        agents = observer.look(agents_path)
        memory = ABSENT
        entries: tuple[tuple[str, Observed], ...] = ()
        index_anchor = False
        if agents.kind is Kind.DIR:
            memory_path = f"{root_path}/{layout.MEMORY_DIR}"
            memory = observer.look(memory_path)
            if memory.kind is Kind.DIR:
                entries = observer.scan(memory_path, memory)
                index_anchor = _index_anchor(root_path, entries, observer)
    except OSError as exc:
        return CheckoutView(slot.label, slot.path, CheckoutState.INVALID,
                            f"checkout {root_path} cannot be examined: {exc.strerror}",
                            root=Observed(Kind.OTHER))
    return CheckoutView(slot.label, slot.path, CheckoutState.ACTIVE, None,
                        root, agents, memory, entries, index_anchor)


def observed(slots: tuple[Slot, ...], resources: ResourceSet, observer: Observer
             ) -> tuple[CheckoutView, ...]:
    """Every slot observed (:func:`observe`), its mount points marked (:func:`mark_mounts`)
    against the desired targets of ``resources``."""
    return mark_mounts(tuple(observe(s, observer) for s in slots), resources, observer)


def mark_mounts(views: tuple[CheckoutView, ...], resources: ResourceSet,
                observer: Observer) -> tuple[CheckoutView, ...]:
    """[L8] [P2]: each directory below ``.agents/memory`` that the plan could prune (no
    desired target of ``resources`` nor a directory on the way to one) and that is a mount
    point the walk could not tell from its inode — a directory bind-mounted onto itself,
    found in the mount table — typed :attr:`Kind.MOUNT`, its entries dropped, as the walk
    types every other mount: never entered, never removed.  The table is read only when
    some checkout holds such a directory (a steady-state sync never does)."""
    desired = [r.rel for r in resources.resources if not r.shadowed]
    wanted = {*desired, *(rel.rsplit("/", n)[0] for rel in desired
                          for n in range(1, rel.count("/") + 1))}
    out = []
    for view in views:
        dirs = [rel for rel, obs in view.entries if obs.kind is Kind.DIR and rel not in wanted]
        table = observer.mounts() if dirs else None
        base = f"{view.path}/{layout.MEMORY_DIR}"
        mounted = {rel for rel in dirs if table is not None and f"{base}/{rel}" in table}
        if mounted:
            view = replace(view, entries=tuple(
                (rel, Observed(Kind.MOUNT, None, obs.dev, obs.ino) if rel in mounted else obs)
                for rel, obs in view.entries
                if not any(rel.startswith(f"{m}/") for m in mounted)))
        out.append(view)
    return tuple(out)


def entry_named(entries: tuple[tuple[str, Observed], ...], name: str) -> Observed | None:
    """The entry ``name`` of ``entries`` (sorted by relative path), by bisection; written
    out rather than taken from ``bisect``, whose C module is a shared library a sync
    would load for this one look-up ([§12])."""
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        if entries[mid][0] < name:
            lo = mid + 1
        else:
            hi = mid
    return entries[lo][1] if lo < len(entries) and entries[lo][0] == name else None


def _index_anchor(root_path: str, entries: tuple[tuple[str, Observed], ...],
                  observer: Observer) -> bool:
    """Whether ``.agents/memory/MEMORY.md`` is the memory descriptor's index: a regular file
    while ``.agents/config.yaml`` has a top-level ``memory:`` key.  The file is read (no
    YAML) only when that regular file is there: one read per such checkout."""
    found = entry_named(entries, layout.INDEX_NAME)
    if found is None or found.kind is not Kind.FILE:
        return False
    from aikito_mem.world.descriptor import has_memory_block

    observer.calls += 1
    return has_memory_block(root_path)
