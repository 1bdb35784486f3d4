"""All hypothesis strategies of the suite, in one place.

The central one is :func:`worlds`: a *description* of a workspace and its checkouts
(:class:`World`) that can be realised two ways —

* :meth:`World.planner_inputs` builds the pure planner's inputs by hand
  (``ProjectConfig``, ``ResourceSet``, ``CheckoutView`` values; no filesystem), and
* :meth:`World.materialise` builds the same world in a real directory, for
  ``Project.load(...).plan()``.

Smaller building blocks: :func:`components`, :func:`references`, :func:`reference_lists`,
:data:`TARGET_STATES` / :func:`target_states`, :data:`STALE_KINDS`; and
:func:`fs_examples`, the example budget of hypothesis tests on the real filesystem.
"""

from __future__ import annotations

import os
import posixpath
import string
from collections.abc import Iterable
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st

from aikito_mem.model import (
    ABSENT,
    Candidate,
    CheckoutState,
    Finding,
    Kind,
    Observed,
    ProjectConfig,
    Resource,
    ResourceSet,
)
from aikito_mem.views import CheckoutView
from tests.helpers.workspace import WS

PROJECT = "demo"
#: Workspace root of pure (no filesystem) worlds.
PURE_WS = "/ws"
#: Directory holding the checkouts of pure worlds.
PURE_CO = "/co"
MEMORY_DIR = ".agents/memory"


def fs_examples(n: int = 30) -> int:
    """Example budget for hypothesis tests that touch the real filesystem: at most ``n``
    under ``ci``/``dev``, the profile's own count under ``long``."""
    current = settings().max_examples
    return current if current > 100 else min(n, current)

# --------------------------------------------------------------------------- references

_FIRST = string.ascii_letters + string.digits + "-_"
_REST = _FIRST + "."


def components(max_size: int = 8) -> st.SearchStrategy[str]:
    """One safe path component: ASCII letters, digits, ``-_.``, never starting with ``.``."""
    return st.builds(
        lambda a, b: a + b,
        st.sampled_from(_FIRST),
        st.text(alphabet=_REST, max_size=max_size - 1),
    )


def references(max_depth: int = 3) -> st.SearchStrategy[str]:
    """A clean relative reference of 1–``max_depth`` components ([C3])."""
    return st.lists(components(), min_size=1, max_size=max_depth).map("/".join)


def fold(ref: str) -> str:
    return ref.casefold()


def clash_free(refs: Iterable[str], reserved: Iterable[str] = ()) -> list[str]:
    """Keep the references, in order, that neither duplicate nor prefix an earlier one
    (after case folding, [C4]) and whose first component is not in ``reserved``."""
    kept: list[str] = []
    keys: set[str] = set()
    prefixes: set[str] = set()
    banned = {fold(r) for r in reserved}
    for ref in refs:
        key = fold(ref)
        parts = key.split("/")
        ancestors = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if parts[0] in banned or key in keys or key in prefixes or ancestors & keys:
            continue
        kept.append(ref)
        keys.add(key)
        prefixes |= ancestors
    return kept


def reference_lists(
    min_size: int = 0, max_size: int = 5, reserved: Iterable[str] = (PROJECT,)
) -> st.SearchStrategy[list[str]]:
    """Valid ``memory`` lists: no duplicates, no case-fold twins, no prefix clashes.

    ``notes`` is drawn often, to exercise shadowing ([S4]).
    """
    reserved = tuple(reserved)
    common = ["notes", "notes/x.md", "notes/y", "team/a.md", "team/b"]
    one = st.one_of(references(), st.sampled_from(common))
    return (
        st.lists(one, max_size=max_size + 2)
        .map(lambda refs: clash_free(refs, reserved)[:max_size])
        .filter(lambda refs: len(refs) >= min_size)
    )


# --------------------------------------------------------------------------- states

#: What can stand at a desired runtime target.
TARGET_STATES = (
    "absent",
    "owned",           # symlink, literal = canonical source (absolute)
    "owned_relative",  # symlink, relative literal that normalises to the source
    "legacy_notes",    # symlink to <ws>/memory/<p>/notes
    "foreign",         # symlink to an existing path outside the workspace
    "dangling",        # symlink to nothing
    "file",
    "dir",             # non-empty directory
    "empty_dir",
    "fifo",
)


def target_states() -> st.SearchStrategy[str]:
    return st.sampled_from(TARGET_STATES)


#: Source kinds of a workspace reference: safe ones and the [S3] failures.
SOURCE_KINDS = ("file", "dir", "missing", "outside_link", "fifo")
#: ``None``: no notes; ``current``/``legacy``: a notes directory there;
#: ``current_root_only``: ``projects/<p>/memory`` exists without ``notes/`` (legacy present
#: but disabled); ``current_unsafe``: ``projects/<p>/memory/notes`` is a regular file.
NOTES_KINDS = (None, "current", "legacy", "current_root_only", "current_unsafe")
#: Layout of ``.agents``/``.agents/memory`` in a checkout.
LAYOUTS = ("ok", "ok", "ok", "no_agents", "no_memory", "agents_link", "memory_file")
CLEAN_TARGET_STATES = ("absent", "absent", "owned", "owned_relative")
CLEAN_NOTES_KINDS = (None, "current", "legacy", "current_root_only")
CLEAN_LAYOUTS = ("ok", "ok", "ok", "no_agents", "no_memory")
#: Entries that are neither desired targets nor ancestors of one ([P2]).
STALE_KINDS = ("owned", "owned_relative", "foreign", "file", "dotfile", "empty_dir", "fifo")
#: Directories stale entries may be put in (besides the memory root and real ancestors).
STALE_DIRS = ("~old", "~old/~deeper")


@dataclass(frozen=True)
class CheckoutWorld:
    name: str
    online: bool
    layout: str
    #: Desired target rel → state (absent targets may be omitted).
    targets: dict[str, str] = field(default_factory=dict)
    #: Ancestor rel → ``dir`` | ``absent`` | ``file``.
    ancestors: dict[str, str] = field(default_factory=dict)
    #: ``(rel, kind)`` of stale entries; ``rel`` never clashes with a desired target.
    stale: tuple[tuple[str, str], ...] = ()
    #: A stale symlink at ``notes`` to ``current``/``legacy`` notes (``None``: none).
    stale_notes: str | None = None


@dataclass(frozen=True)
class World:
    refs: tuple[str, ...]
    sources: dict[str, str]
    notes: str | None
    checkouts: tuple[CheckoutWorld, ...]
    project: str = PROJECT

    # -- derived --------------------------------------------------------------------------

    @property
    def has_notes(self) -> bool:
        """Whether a notes resource exists (safe or not)."""
        return self.notes in ("current", "legacy", "current_unsafe")

    def shadowed(self, ref: str) -> bool:
        return self.has_notes and (ref == "notes" or ref.startswith("notes/"))

    @property
    def desired(self) -> tuple[str, ...]:
        """Runtime rels of the non-shadowed resources, sorted."""
        rels = [r for r in self.refs if not self.shadowed(r)]
        if self.has_notes:
            rels.append("notes")
        return tuple(sorted(rels))

    @property
    def desired_ancestors(self) -> tuple[str, ...]:
        out: set[str] = set()
        for rel in self.desired:
            parts = rel.split("/")
            out.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return tuple(sorted(out))

    def with_refs(self, refs: Iterable[str]) -> World:
        """The same world with the ``memory`` list in another order."""
        return World(tuple(refs), self.sources, self.notes, self.checkouts, self.project)

    # -- sources ----------------------------------------------------------------------------

    def source_of(self, ws: str, rel: str) -> str:
        if rel == "notes" and self.has_notes:
            return self.notes_source(ws)
        return f"{ws}/memory/{rel}"

    def notes_source(self, ws: str) -> str:
        current, legacy = self.notes_paths(ws)
        return legacy if self.notes == "legacy" else current

    def notes_paths(self, ws: str) -> tuple[str, str]:
        return (f"{ws}/projects/{self.project}/memory/notes",
                f"{ws}/memory/{self.project}/notes")

    # -- literal of a symlink in a given state -------------------------------------------

    def literal(self, ws: str, outside: str, co: str, rel: str, state: str) -> str:
        base = f"{co}/{MEMORY_DIR}"
        link_dir = posixpath.dirname(f"{base}/{rel}")
        if state == "owned":
            return self.source_of(ws, rel)
        if state == "owned_relative":
            return posixpath.relpath(self.source_of(ws, rel), link_dir)
        if state == "legacy_notes":
            return self.notes_paths(ws)[1]
        if state == "foreign":
            return outside
        if state == "dangling":
            return "missing-target"
        raise ValueError(state)

    # -- pure realisation -------------------------------------------------------------------

    def planner_inputs(self) -> dict[str, object]:
        """Keyword arguments for :func:`aikito_mem.planner.memory.build_plan`, built by hand."""
        ws = PURE_WS
        config_path = f"{ws}/projects/{self.project}/agent.toml"
        candidates = tuple(
            Candidate(str(i + 1), f"{PURE_CO}/{c.name}", f"{PURE_CO}/{c.name}", True)
            for i, c in enumerate(self.checkouts)
        )
        config = ProjectConfig(self.project, f"{ws}/projects/{self.project}", config_path,
                               self.refs, candidates, (), b"")
        return {
            "config": config,
            "workspace": ws,
            "workspace_source": "option",
            "resources": self.resource_set(ws),
            "checkouts": tuple(self.view(c, i) for i, c in enumerate(self.checkouts)),
        }

    def resource_set(self, ws: str) -> ResourceSet:
        current, legacy = self.notes_paths(ws)
        resources: list[Resource] = []
        findings: list[Finding] = []
        if self.notes in ("current", "legacy"):
            resources.append(Resource("notes", "notes", self.notes_source(ws), is_notes=True))
        elif self.notes == "current_unsafe":
            resources.append(Resource(
                "notes", "notes", current, is_notes=True,
                problem=f"source {current} is a regular file; expected a directory"))
        for ref in self.refs:
            src = f"{ws}/memory/{ref}"
            if self.shadowed(ref):
                resources.append(Resource(ref, ref, src, shadowed=True))
                findings.append(Finding("memory.shadowed", "warning", f"{ref} shadowed"))
                continue
            kind = self.sources[ref]
            if kind == "missing":
                resources.append(Resource(ref, ref, src, problem=f"source {src} does not exist",
                                          missing=True))
            elif kind in ("outside_link", "fifo"):
                resources.append(Resource(ref, ref, src, problem=f"source {src} is unsafe"))
            else:
                resources.append(Resource(ref, ref, src))
        resources.sort(key=lambda r: (r.rel, r.shadowed))
        findings.sort(key=lambda f: (f.code, f.message))
        pm_exists = self.notes in ("current", "current_root_only", "current_unsafe")
        notes_source = self.notes_source(ws) if self.has_notes else None
        location = None
        if self.has_notes:
            location = "legacy" if self.notes == "legacy" else "current"
        return ResourceSet(tuple(resources), pm_exists, notes_source, location,
                           (current, legacy), tuple(findings))

    def view(self, c: CheckoutWorld, index: int) -> CheckoutView:
        path = f"{PURE_CO}/{c.name}"
        label = str(index + 1)
        if not c.online:
            return CheckoutView(label, path, CheckoutState.OFFLINE, "path does not exist")
        root = Observed(Kind.DIR, None, 1, 1)
        d = Observed(Kind.DIR, None, 1, 2)
        agents, memory = d, d
        if c.layout == "no_agents":
            agents, memory = ABSENT, ABSENT
        elif c.layout == "no_memory":
            memory = ABSENT
        elif c.layout == "agents_link":
            agents, memory = Observed(Kind.LINK, "/elsewhere"), ABSENT
        elif c.layout == "memory_file":
            memory = Observed(Kind.FILE)
        entries = dict(self.entry_kinds(c, PURE_WS, "/outside", path))
        return CheckoutView(label, path, CheckoutState.ACTIVE, None, root, agents, memory,
                            tuple(sorted(entries.items())))

    def entry_kinds(self, c: CheckoutWorld, ws: str, outside: str,
                    co: str) -> list[tuple[str, Observed]]:
        """Every entry under ``.agents/memory`` of an online checkout (parents first)."""
        if c.layout != "ok":
            return []
        out: list[tuple[str, Observed]] = []
        ino = iter(range(100, 10_000))
        for rel in sorted(c.ancestors, key=lambda r: r.count("/")):
            state = c.ancestors[rel]
            if state == "dir":
                out.append((rel, Observed(Kind.DIR, None, 1, next(ino))))
            elif state == "file":
                out.append((rel, Observed(Kind.FILE, None, 1, next(ino))))
        for rel, state in sorted(c.targets.items()):
            out.extend(self._entry(ws, outside, co, rel, state, ino))
        used_dirs: set[str] = set()
        for rel, _kind in c.stale:
            parent = posixpath.dirname(rel)
            if parent in STALE_DIRS:
                parts = parent.split("/")
                used_dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        for d in sorted(used_dirs):
            out.append((d, Observed(Kind.DIR, None, 1, next(ino))))
        for rel, kind in c.stale:
            out.extend(self._stale_entry(ws, outside, co, rel, kind, ino))
        if c.stale_notes is not None:
            current, legacy = self.notes_paths(ws)
            literal = current if c.stale_notes == "current" else legacy
            out.append(("notes", Observed(Kind.LINK, literal, 1, next(ino))))
        return out

    def _entry(self, ws: str, outside: str, co: str, rel: str, state: str,
               ino: Iterable[int]) -> list[tuple[str, Observed]]:
        it = iter(ino)
        if state == "absent":
            return []
        if state in ("owned", "owned_relative", "legacy_notes", "foreign", "dangling"):
            literal = self.literal(ws, outside, co, rel, state)
            return [(rel, Observed(Kind.LINK, literal, 1, next(it)))]
        if state == "file":
            return [(rel, Observed(Kind.FILE, None, 1, next(it)))]
        if state == "fifo":
            return [(rel, Observed(Kind.FIFO, None, 1, next(it)))]
        if state == "empty_dir":
            return [(rel, Observed(Kind.DIR, None, 1, next(it)))]
        if state == "dir":
            return [(rel, Observed(Kind.DIR, None, 1, next(it))),
                    (f"{rel}/inner.txt", Observed(Kind.FILE, None, 1, next(it)))]
        raise ValueError(state)

    def _stale_entry(self, ws: str, outside: str, co: str, rel: str, kind: str,
                     ino: Iterable[int]) -> list[tuple[str, Observed]]:
        it = iter(ino)
        if kind in ("owned", "owned_relative"):
            literal = self.literal(ws, outside, co, rel, kind)
            # A stale rel is never desired, so its canonical source is <ws>/memory/<rel>.
            if kind == "owned":
                literal = f"{ws}/memory/{rel}"
            return [(rel, Observed(Kind.LINK, literal, 1, next(it)))]
        if kind == "foreign":
            return [(rel, Observed(Kind.LINK, outside, 1, next(it)))]
        if kind in ("file", "dotfile"):
            return [(rel, Observed(Kind.FILE, None, 1, next(it)))]
        if kind == "empty_dir":
            return [(rel, Observed(Kind.DIR, None, 1, next(it)))]
        if kind == "fifo":
            return [(rel, Observed(Kind.FIFO, None, 1, next(it)))]
        raise ValueError(kind)

    # -- real realisation -------------------------------------------------------------------

    def materialise(self, ws: WS) -> list[str]:
        """Build this world under ``ws``; return the
        checkout paths in ``paths`` order (offline ones are not created)."""
        root = ws.root
        outside = f"{ws.base}/outside"
        os.makedirs(outside, exist_ok=True)
        for ref in self.refs:
            if self.shadowed(ref):
                continue
            kind = self.sources[ref]
            src = f"{root}/memory/{ref}"
            if kind == "file":
                ws.add_file(ref, f"content of {ref}\n")
            elif kind == "dir":
                ws.add_dir(ref)
                with open(f"{src}/inside.md", "w") as fh:
                    fh.write("x\n")
            elif kind == "outside_link":
                os.makedirs(os.path.dirname(src), exist_ok=True)
                os.symlink(outside, src)
            elif kind == "fifo":
                os.makedirs(os.path.dirname(src), exist_ok=True)
                os.mkfifo(src)
        current = self.notes_paths(root)[0]
        if self.notes == "current":
            ws.add_notes(self.project)
        elif self.notes == "legacy":
            ws.add_notes(self.project, legacy=True)
        elif self.notes == "current_root_only":
            os.makedirs(os.path.dirname(current), exist_ok=True)
            ws.add_notes(self.project, legacy=True)  # present, but never consulted
        elif self.notes == "current_unsafe":
            os.makedirs(os.path.dirname(current), exist_ok=True)
            with open(current, "w") as fh:
                fh.write("not a directory\n")
        paths: list[str] = []
        for c in self.checkouts:
            if not c.online:
                paths.append(f"{ws.checkouts_dir}/{c.name}")
                continue
            co = ws.checkout(c.name)
            paths.append(co)
            self._materialise_checkout(c, root, outside, co)
        ws.write_config(self.project, memory=list(self.refs), paths=paths)
        return paths

    def _materialise_checkout(self, c: CheckoutWorld, ws: str, outside: str, co: str) -> None:
        if c.layout == "no_agents":
            return
        if c.layout == "agents_link":
            os.symlink(outside, f"{co}/.agents")
            return
        os.makedirs(f"{co}/.agents", exist_ok=True)
        if c.layout == "no_memory":
            return
        base = f"{co}/{MEMORY_DIR}"
        if c.layout == "memory_file":
            with open(base, "w") as fh:
                fh.write("x\n")
            return
        os.makedirs(base, exist_ok=True)
        for rel, obs in self.entry_kinds(c, ws, outside, co):
            path = f"{base}/{rel}"
            if obs.kind is Kind.DIR:
                os.makedirs(path, exist_ok=True)
            elif obs.kind is Kind.FILE:
                with open(path, "w") as fh:
                    fh.write("user data\n")
            elif obs.kind is Kind.FIFO:
                os.mkfifo(path)
            elif obs.kind is Kind.LINK:
                assert obs.literal is not None
                os.symlink(obs.literal, path)


# --------------------------------------------------------------------------- worlds


@st.composite
def checkout_worlds(draw: st.DrawFn, name: str, desired: tuple[str, ...],
                    ancestors: tuple[str, ...], *, fifo: bool = True,
                    clean: bool = False, notes_current: bool = False) -> CheckoutWorld:
    """One checkout of a world; ``clean`` draws only states that cause no CONFLICT.

    ``notes_current``: the desired ``notes`` is the project notes at the current location,
    so a link to the legacy notes there is the one replacement of [P1], not a CONFLICT.
    """
    online = draw(st.sampled_from([True, True, True, False]))
    if not online:
        return CheckoutWorld(name, False, "ok")
    layout = draw(st.sampled_from(CLEAN_LAYOUTS if clean else LAYOUTS))
    if layout != "ok":
        return CheckoutWorld(name, True, layout)
    states = [s for s in (CLEAN_TARGET_STATES if clean else TARGET_STATES)
              if fifo or s != "fifo"]
    anc_states = ["dir", "dir", "absent"] if clean else ["dir", "dir", "dir", "absent", "file"]
    anc: dict[str, str] = {}
    for rel in sorted(ancestors, key=lambda r: r.count("/")):
        parent = posixpath.dirname(rel)
        if parent and anc.get(parent) != "dir":
            anc[rel] = "absent"
        else:
            anc[rel] = draw(st.sampled_from(anc_states))
    targets: dict[str, str] = {}
    for rel in desired:
        parent = posixpath.dirname(rel)
        if parent and anc.get(parent) != "dir":
            continue
        targets[rel] = draw(st.sampled_from(
            [*states, "legacy_notes"] if clean and rel == "notes" and notes_current
            else states))
    containers = ["", *STALE_DIRS, *(a for a, s in anc.items() if s == "dir")]
    kinds = [k for k in STALE_KINDS if fifo or k != "fifo"]
    stale: dict[str, str] = {}
    for container, kind, nm in draw(st.lists(
            st.tuples(st.sampled_from(containers), st.sampled_from(kinds), components(4)),
            max_size=4)):
        leaf = f".{nm}" if kind == "dotfile" else f"~{nm}"
        rel = f"{container}/{leaf}" if container else leaf
        if rel in STALE_DIRS:
            continue
        stale.setdefault(rel, kind)
    stale_notes = None
    if "notes" not in desired and "notes" not in ancestors:
        stale_notes = draw(st.sampled_from([None, None, "current", "legacy"]))
    return CheckoutWorld(name, True, layout, targets, anc, tuple(sorted(stale.items())),
                         stale_notes)


@st.composite
def worlds(draw: st.DrawFn, *, max_refs: int = 5, max_checkouts: int = 3,
           fifo: bool = True, clean: bool = False) -> World:
    """A whole world: references with source kinds, notes, 1–``max_checkouts`` checkouts
    each with a layout, target states, ancestor states and stale entries.

    ``clean=True`` draws only worlds whose plan has no CONFLICT (safe sources, owned or
    missing targets, usable layouts; stale entries still vary): for convergence tests.
    """
    refs = tuple(draw(reference_lists(max_size=max_refs)))
    kinds = ["file", "dir"] if clean else [k for k in SOURCE_KINDS if fifo or k != "fifo"]
    sources = {ref: draw(st.sampled_from([*kinds, "file", "dir"])) for ref in refs}
    notes = draw(st.sampled_from(CLEAN_NOTES_KINDS if clean else NOTES_KINDS))
    skeleton = World(refs, sources, notes, ())
    desired, ancestors = skeleton.desired, skeleton.desired_ancestors
    n = draw(st.integers(1, max_checkouts))
    cos = tuple(draw(checkout_worlds(f"c{i}", desired, ancestors, fifo=fifo, clean=clean,
                                     notes_current=notes == "current"))
                for i in range(n))
    return World(refs, sources, notes, cos)


def permutations_of(world: World) -> st.SearchStrategy[World]:
    """The same world with its ``memory`` list permuted."""
    return st.permutations(world.refs).map(world.with_refs)
