"""Synthetic workspaces for the benchmark (SPEC §12).

Every workload is one workspace directory plus its checkouts. Each tool gets its own
identical copy (``<root>/<workload>/<tool>/``), so the tools' runs can be interleaved
without one tool's links becoming another's starting state::

    <base>/ws/                             the workspace (AIKITO_DIR)
        layout.toml                        version = 2 (the reference tool wants it)
        agents/  subagents/                empty (the reference tool wants them)
        memory/<ref>                       sources: files, directories, nested files
        projects/demo/agent.toml           memory = [...], paths = [...]
        projects/demo/memory/notes/        project notes (W1 only)
        projects/empty/agent.toml          memory = [], its own checkouts (syscall baseline)
    <base>/co/demo-<i>/                    active checkouts of `demo`
    <base>/co/offline-<i>                  never created: offline checkouts
    <base>/co/empty-<i>/                   checkouts of `empty`

The floor script (``floor.py``) does not parse TOML: it reads ``<base>/floor.txt``,
a plain manifest of the same job written here (see floor.py for its format).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = "demo"
EMPTY_PROJECT = "empty"


@dataclass(frozen=True)
class Workload:
    """The shape of one synthetic workspace."""

    name: str
    description: str
    files: int = 0  # top-level file references
    dirs: int = 0  # directory references (each holds a few files)
    nested: int = 0  # nested file references like team/a/b.md
    notes: int = 0  # files in projects/demo/memory/notes/ (0 = no notes resource)
    active: int = 1  # active checkouts
    offline: int = 0  # offline checkouts (paths that do not exist)

    @property
    def refs(self) -> int:
        return self.files + self.dirs + self.nested

    @property
    def resources(self) -> int:
        """Resources per checkout: references plus the notes resource."""
        return self.refs + (1 if self.notes else 0)

    @property
    def targets(self) -> int:
        """Runtime targets to create across all active checkouts."""
        return self.resources * self.active


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "W1",
        "typical: 30 refs (20 files, 5 dirs, 5 nested), notes, 3 checkouts (1 offline)",
        files=20,
        dirs=5,
        nested=5,
        notes=10,
        active=2,
        offline=1,
    ),
    Workload("W2-1k", "scale: 1,000 top-level file refs, 1 checkout", files=1000),
    Workload("W2-10k", "scale: 10,000 top-level file refs, 1 checkout", files=10000),
    Workload("W3", "wide: 100 refs, 50 checkouts", files=100, active=50),
)


@dataclass
class Built:
    """A workspace on disk and everything the harness needs to know about it."""

    wl: Workload
    base: Path
    ws: Path
    refs: list[str]
    active: list[Path]
    offline: list[Path]
    empty_active: list[Path]
    manifest: Path
    notes_source: Path | None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def agent_toml(self) -> Path:
        return self.ws / "projects" / PROJECT / "agent.toml"


def _toml_list(items: list[str]) -> str:
    # json string escaping is valid TOML basic-string escaping for these names.
    if not items:
        return "[]"
    return "[\n" + "".join(f"    {json.dumps(i)},\n" for i in items) + "]"


def _agent_toml(name: str, paths: list[str], memory: list[str]) -> str:
    return f'name = "{name}"\npaths = {_toml_list(paths)}\nmemory = {_toml_list(memory)}\n'


def _make_sources(mem: Path, files: int, dirs: int, nested: int) -> list[str]:
    """Create the canonical sources under ``mem``; returns the references, in order."""
    refs: list[str] = []
    for i in range(files):
        ref = f"file-{i:05d}.md"
        (mem / ref).write_text(f"# note {i}\n")
        refs.append(ref)
    for i in range(dirs):
        ref = f"dir-{i:02d}"
        (mem / ref).mkdir()
        for j in range(3):
            (mem / ref / f"entry-{j}.md").write_text("x\n")
        refs.append(ref)
    for i in range(nested):
        ref = f"team/t{i % 2}/doc-{i:02d}.md"
        (mem / ref).parent.mkdir(parents=True, exist_ok=True)
        (mem / ref).write_text("nested\n")
        refs.append(ref)
    return refs


def build(wl: Workload, base: Path) -> Built:
    """Create the workspace and (empty) checkouts of ``wl`` in directory ``base``."""
    if base.exists():
        shutil.rmtree(base)
    ws = base / "ws"
    mem = ws / "memory"
    for d in (mem, ws / "agents", ws / "subagents", ws / "projects"):
        d.mkdir(parents=True)
    (ws / "layout.toml").write_text("version = 2\n")

    refs = _make_sources(mem, wl.files, wl.dirs, wl.nested)

    cos = base / "co"
    cos.mkdir()
    active = [cos / f"{PROJECT}-{i:02d}" for i in range(wl.active)]
    offline = [cos / f"offline-{i:02d}" for i in range(wl.offline)]
    empty_active = [cos / f"{EMPTY_PROJECT}-{i:02d}" for i in range(wl.active)]
    for p in active + empty_active:
        p.mkdir()
    # Offline checkouts sit between the active ones so their handling is exercised.
    paths = [str(p) for p in active[:1] + offline + active[1:]]

    proj = ws / "projects" / PROJECT
    proj.mkdir(parents=True)
    (proj / "agent.toml").write_text(_agent_toml(PROJECT, paths, refs))
    notes_source: Path | None = None
    if wl.notes:
        notes_source = proj / "memory" / "notes"
        notes_source.mkdir(parents=True)
        for i in range(wl.notes):
            (notes_source / f"note-{i:02d}.md").write_text("note\n")

    eproj = ws / "projects" / EMPTY_PROJECT
    eproj.mkdir()
    (eproj / "agent.toml").write_text(
        _agent_toml(EMPTY_PROJECT, [str(p) for p in empty_active], [])
    )

    # Plain-text manifest for floor.py: "W <workspace>", "N <notes source>",
    # "A <active checkout>", "O <offline checkout>", then "R <ref>" lines.
    manifest = base / "floor.txt"
    lines = [f"W {ws}"]
    if notes_source is not None:
        lines.append(f"N {notes_source}")
    lines += [f"A {p}" for p in active] + [f"O {p}" for p in offline]
    lines += [f"R {r}" for r in refs]
    manifest.write_text("\n".join(lines) + "\n")
    return Built(wl, base, ws, refs, active, offline, empty_active, manifest, notes_source)


def reset_checkouts(checkouts: list[Path], trash: Path) -> None:
    """Return checkouts to their fresh state: new empty directories.

    The old trees are renamed into ``trash`` rather than deleted: on a disk mounted with
    ``discard`` a mass delete makes the next seconds of writes slow and noisy, which
    would land in the timed region. Empty the trash with ``empty_trash`` between rows.
    """
    trash.mkdir(exist_ok=True)
    for co in checkouts:
        if co.exists():
            co.rename(trash / f"{len(os.listdir(trash)):06d}")
        co.mkdir(parents=True)


def empty_trash(trash: Path) -> None:
    shutil.rmtree(trash, ignore_errors=True)
    os.sync()  # let the deletes reach the disk before anything else is timed


def count_links(built: Built) -> int:
    """Symlinks found under the active checkouts' ``.agents/memory`` (a cheap sanity check)."""
    n = 0
    for co in built.active:
        top = co / ".agents" / "memory"
        if not top.is_dir():
            continue
        for p in top.rglob("*"):
            if p.is_symlink():
                n += 1
    return n


# --------------------------------------------------------------------------- W4: status


@dataclass(frozen=True)
class StatusWorkload:
    """Many W1-like projects in one workspace, for ``aikito status`` (issue 6).

    Every project references the same shared sources (the W1 mix) and has its own notes
    directory and its own active checkouts; there are no offline checkouts.
    """

    name: str
    description: str
    projects: int = 50
    checkouts: int = 2  # active checkouts per project
    files: int = 20
    dirs: int = 5
    nested: int = 5
    notes: int = 10

    @property
    def refs(self) -> int:
        return self.files + self.dirs + self.nested

    @property
    def resources(self) -> int:
        """Resources per checkout of one project: references plus the notes resource."""
        return self.refs + (1 if self.notes else 0)

    def targets(self, projects: int) -> int:
        """Runtime links across all checkouts of ``projects`` projects."""
        return projects * self.checkouts * self.resources


W4 = StatusWorkload(
    "W4",
    "status: 50 projects x 2 active checkouts x 30 refs (20 files, 5 dirs, 5 nested) + notes",
)


@dataclass
class StatusBuilt:
    wl: StatusWorkload
    base: Path
    ws: Path
    projects: list[str]
    checkouts: list[Path]  # all active checkouts of all projects


def project_name(i: int) -> str:
    return f"p{i:02d}"


def build_status(wl: StatusWorkload, base: Path, projects: int) -> StatusBuilt:
    """A workspace of ``projects`` W1-like projects (not synced yet)."""
    if base.exists():
        shutil.rmtree(base)
    ws = base / "ws"
    mem = ws / "memory"
    for d in (mem, ws / "agents", ws / "subagents", ws / "projects"):
        d.mkdir(parents=True)
    (ws / "layout.toml").write_text("version = 2\n")
    refs = _make_sources(mem, wl.files, wl.dirs, wl.nested)
    names: list[str] = []
    checkouts: list[Path] = []
    for i in range(projects):
        name = project_name(i)
        cos = [base / "co" / f"{name}-{j}" for j in range(wl.checkouts)]
        for co in cos:
            co.mkdir(parents=True)
        proj = ws / "projects" / name
        proj.mkdir()
        (proj / "agent.toml").write_text(_agent_toml(name, [str(c) for c in cos], refs))
        if wl.notes:
            notes = proj / "memory" / "notes"
            notes.mkdir(parents=True)
            for k in range(wl.notes):
                (notes / f"note-{k:02d}.md").write_text("note\n")
        names.append(name)
        checkouts += cos
    return StatusBuilt(wl, base, ws, names, checkouts)


def count_status_links(built: StatusBuilt) -> int:
    n = 0
    for co in built.checkouts:
        top = co / ".agents" / "memory"
        if top.is_dir():
            n += sum(1 for p in top.rglob("*") if p.is_symlink())
    return n
