"""What the benchmark measures: the workloads and the builders of their workspaces
(SPEC §12, §13 [G7]). Pure file creation: nothing here starts a process.

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

W1+segments adds the skills and project instructions of SPEC §13::

    <base>/ws/skills/<name>/SKILL.md       one directory per skill
    <base>/ws/agents/<agent>.toml          [agents.<agent>] project_instruction_path = ...
    <base>/ws/projects/demo/AGENTS.md      the (non-empty) instruction source
        projects/demo/agent.toml           ... and skills = [...]

W1+agents is W1+segments whose registry also gives three agents a per-agent skills
directory (SPEC §17 [N1]: ``project_skills_path``), each agent detected by a path that the
harness creates in every run's throw-away ``HOME`` (``Built.home_paths``)::

    <base>/ws/agents/<agent>.toml          ... project_skills_path = ".claude/skills"
                                           [agents.<agent>.detect] paths = [".claude"]

The floor script (``floor.py``) does not parse TOML: it reads ``<base>/floor.txt``,
a plain manifest of the same job written here (see floor.py for its format).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.agents import AGENTS, SKILL_AGENTS, Agent, agent_registry_toml

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
    skills: int = 0  # skills <ws>/skills/<name>/ selected by the project (SPEC §13 [G1])
    instructions: int = 0  # instruction targets per checkout: the first n of AGENTS ([G3])
    #: Per-agent skills directories ([N1]): the registry is SKILL_AGENTS (``instructions``
    #: must then be 2, its two instruction targets) and each selected skill is linked in
    #: each of its ``agent_dirs`` directories too.
    agent_dirs: int = 0
    #: The workload whose round-robin groups this one joins (its ratios to it are fair).
    group: str = ""

    @property
    def refs(self) -> int:
        return self.files + self.dirs + self.nested

    @property
    def memory_resources(self) -> int:
        """Memory resources per checkout: references plus the notes resource."""
        return self.refs + (1 if self.notes else 0)

    @property
    def segment_resources(self) -> int:
        """Skills, instruction targets and per-agent skill links per checkout (§13, §17)."""
        return self.skills * (1 + self.agent_dirs) + self.instructions

    @property
    def resources(self) -> int:
        """Resources per checkout, every segment."""
        return self.memory_resources + self.segment_resources

    @property
    def targets(self) -> int:
        """Runtime targets to create across all active checkouts."""
        return self.resources * self.active

    @property
    def memory_only(self) -> bool:
        """The job GNU Stow can do too (it has no skills or instructions)."""
        return self.segment_resources == 0

    @property
    def group_name(self) -> str:
        return self.group or self.name


W1 = Workload(
    "W1",
    "typical: 30 refs (20 files, 5 dirs, 5 nested), notes, 3 checkouts (1 offline)",
    files=20,
    dirs=5,
    nested=5,
    notes=10,
    active=2,
    offline=1,
)
W1_SEGMENTS = replace(
    W1,
    name="W1+segments",
    description="W1 + 5 skills + 2 instruction targets per checkout (SPEC §13 [G7])",
    skills=5,
    instructions=len(AGENTS),
    group="W1",
)
W1_AGENTS = replace(
    W1_SEGMENTS,
    name="W1+agents",
    description=(
        "W1+segments + 3 detected agents with a project_skills_path each (SPEC §17 [N1])"
    ),
    agent_dirs=len([a for a in SKILL_AGENTS if a.project_skills_path]),
)
W2_10K = Workload("W2-10k", "scale: 10,000 top-level file refs, 1 checkout", files=10000)
WORKLOADS: tuple[Workload, ...] = (
    W1,
    W1_SEGMENTS,
    W1_AGENTS,
    Workload("W2-1k", "scale: 1,000 top-level file refs, 1 checkout", files=1000),
    W2_10K,
    Workload("W3", "wide: 100 refs, 50 checkouts", files=100, active=50),
)
#: [G7]: a warm W1+segments sync costs at most this much over the memory-only W1.
SEGMENTS_LIMIT = 1.10
#: [N1]: a warm W1+agents sync costs at most this much over W1+segments (the same skills
#: in ``.agents/skills`` only).
AGENTS_LIMIT = 1.10


def group_of(name: str) -> str:
    """The round-robin group of a workload name (itself for names not in WORKLOADS)."""
    return next((w.group_name for w in WORKLOADS if w.name == name), name)


def families(selected: list[Workload]) -> list[list[Workload]]:
    """``selected`` grouped by ``group_name``, in order: each family is timed together."""
    out: dict[str, list[Workload]] = {}
    for wl in selected:
        out.setdefault(wl.group_name, []).append(wl)
    return list(out.values())


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
    skills: list[str] = field(default_factory=list)
    instruction_targets: list[str] = field(default_factory=list)
    #: The per-agent skills directories ([N1]), relative to a checkout.
    agent_dirs: list[str] = field(default_factory=list)
    #: Paths every run's throw-away HOME holds (relative to it): the agents' detection.
    home_paths: list[str] = field(default_factory=list)

    @property
    def agent_toml(self) -> Path:
        return self.ws / "projects" / PROJECT / "agent.toml"

    @property
    def empty_manifest(self) -> Path:
        """The floor manifest of the empty project (the syscall baseline)."""
        return self.base / "floor-empty.txt"


def _toml_list(items: list[str]) -> str:
    # json string escaping is valid TOML basic-string escaping for these names.
    if not items:
        return "[]"
    return "[\n" + "".join(f"    {json.dumps(i)},\n" for i in items) + "]"


def _agent_toml(name: str, paths: list[str], memory: list[str], skills: list[str]) -> str:
    text = f'name = "{name}"\npaths = {_toml_list(paths)}\nmemory = {_toml_list(memory)}\n'
    return text + (f"skills = {_toml_list(skills)}\n" if skills else "")


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


def _make_skills(ws: Path, n: int) -> list[str]:
    """``n`` skill directories ``<ws>/skills/<name>/SKILL.md``; returns their names."""
    names = [f"skill-{i:02d}" for i in range(n)]
    for name in names:
        (ws / "skills" / name).mkdir(parents=True)
        (ws / "skills" / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: benchmark skill {name}\n---\n\n# {name}\n"
        )
    return names


def registry_of(wl: Workload) -> tuple[Agent, ...]:
    """The agents of ``wl``'s registry: the first ``instructions`` of AGENTS, or
    SKILL_AGENTS for a workload with per-agent skills directories."""
    return SKILL_AGENTS if wl.agent_dirs else AGENTS[: wl.instructions]


def _make_instructions(ws: Path, project: Path, agents: tuple[Agent, ...]) -> list[str]:
    """A non-empty ``AGENTS.md`` and the registry files of ``agents``; returns the
    instruction targets (relative to a checkout)."""
    if not agents:
        return []
    (project / "AGENTS.md").write_text(f"# {project.name}\n\nProject instructions.\n")
    for agent in agents:
        (ws / "agents" / f"{agent.name}.toml").write_text(agent_registry_toml(agent))
    return [a.project_instruction_path for a in agents if a.project_instruction_path]


def _new_workspace(base: Path) -> tuple[Path, Path]:
    """An empty workspace at ``base/ws`` (``base`` emptied first); returns it and its
    ``memory`` directory."""
    if base.exists():
        shutil.rmtree(base)
    ws = base / "ws"
    mem = ws / "memory"
    for d in (mem, ws / "agents", ws / "subagents", ws / "projects"):
        d.mkdir(parents=True)
    (ws / "layout.toml").write_text("version = 2\n")
    return ws, mem


def build(wl: Workload, base: Path) -> Built:
    """Create the workspace and (empty) checkouts of ``wl`` in directory ``base``."""
    ws, mem = _new_workspace(base)

    refs = _make_sources(mem, wl.files, wl.dirs, wl.nested)
    skills = _make_skills(ws, wl.skills)

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
    (proj / "agent.toml").write_text(_agent_toml(PROJECT, paths, refs, skills))
    notes_source: Path | None = None
    if wl.notes:
        notes_source = proj / "memory" / "notes"
        notes_source.mkdir(parents=True)
        for i in range(wl.notes):
            (notes_source / f"note-{i:02d}.md").write_text("note\n")
    agents = registry_of(wl)
    instruction_targets = _make_instructions(ws, proj, agents)
    agent_dirs = [a.project_skills_path for a in agents if a.project_skills_path]
    assert len(instruction_targets) == wl.instructions and len(agent_dirs) == wl.agent_dirs

    eproj = ws / "projects" / EMPTY_PROJECT
    eproj.mkdir()
    (eproj / "agent.toml").write_text(
        _agent_toml(EMPTY_PROJECT, [str(p) for p in empty_active], [], [])
    )

    # Plain-text manifest for floor.py (its docstring has the format).
    manifest = base / "floor.txt"
    lines = [f"W {ws}"]
    if notes_source is not None:
        lines.append(f"N {notes_source}")
    lines += [f"A {p}" for p in active] + [f"O {p}" for p in offline]
    lines += [f"R {r}" for r in refs]
    lines += [f"L {ws / 'skills' / s} {d}/{s}" for d in [".agents/skills", *agent_dirs]
              for s in skills]
    if instruction_targets:
        lines.append(f"I {proj / 'AGENTS.md'}")
        lines += [f"L {proj / 'AGENTS.md'} {t}" for t in instruction_targets]
    manifest.write_text("\n".join(lines) + "\n")
    empty = [f"W {ws}"] + [f"A {p}" for p in empty_active]
    (base / "floor-empty.txt").write_text("\n".join(empty) + "\n")
    return Built(
        wl, base, ws, refs, active, offline, empty_active, manifest, notes_source,
        skills, instruction_targets, agent_dirs,
        [p for a in agents if a.project_skills_path for p in a.detect_paths],
    )  # fmt: skip


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


def count_segment_links(built: Built) -> int:
    """Skill links (per-agent ones too) and instruction targets that are symlinks, across
    the active checkouts."""
    n = 0
    for co in built.active:
        targets = [co / d / s for d in [".agents/skills", *built.agent_dirs]
                   for s in built.skills]
        targets += [co / t for t in built.instruction_targets]
        n += sum(1 for t in targets if t.is_symlink())
    return n


def links_note(built: Built) -> str:
    """'' when every expected link exists after a run, else what is short."""
    wl = built.wl
    notes = []
    n, want = count_links(built), wl.memory_resources * wl.active
    if n != want:
        notes.append(f"created {n} of {want} expected links")
    n, want = count_segment_links(built), wl.segment_resources * wl.active
    if n != want:
        notes.append(f"created {n} of {want} expected skill/instruction links")
    return "; ".join(notes)


# --------------------------------------------------------------------------- W4: status


@dataclass(frozen=True)
class StatusWorkload:
    """Many W1-like projects in one workspace, for ``aikito status``.

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
STATUS_HALF = 25  # the smaller workspace of the linearity check
V_STATUS = f"status {W4.projects}p"
V_STATUS_JSON = f"status --json {W4.projects}p"
V_STATUS_HALF = f"status {STATUS_HALF}p"
V_SINGLE = f"dry-run 1 of {W4.projects}p"
STATUS_VARIANTS = (V_STATUS, V_STATUS_JSON, V_STATUS_HALF, V_SINGLE, "-")


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
    ws, mem = _new_workspace(base)
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
        (proj / "agent.toml").write_text(_agent_toml(name, [str(c) for c in cos], refs, []))
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
