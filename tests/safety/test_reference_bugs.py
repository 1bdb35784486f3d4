"""Defects measured in the public reference tool (``aikito`` 1.61.1) in its skills and
instructions segments, each of which must not exist here (SPEC §13, [G1]–[G6]).  One test
per defect, on real temporary directories with foreign files around.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aikito_mem import Project
from aikito_mem.errors import ProjectPrepareConflictError
from aikito_mem.executor import execute as execute_mod
from aikito_mem.model import Action, Operation, SegmentName
from tests.helpers.segments import SKILLS, SegWorld
from tests.helpers.snapshots import changed, snapshot


@pytest.fixture
def world(tmp_path: Path) -> SegWorld:
    return SegWorld(tmp_path)


def _all(w: SegWorld) -> tuple[Path, Path]:
    return (w.base, w.home)


# --------------------------------------------------------------------------- [G1]


@pytest.mark.parametrize("mode", ["lnk", "links", "symlink", "", "copy", "COPY"])
def test_a_misspelt_or_copy_sync_mode_never_unlinks(world: SegWorld, mode: str) -> None:
    """The reference tool unlinks every skill for a misspelt mode; here it is a
    configuration error and nothing is touched."""
    assert world.sync().exit_code == 0
    world.write_config(extra=f'sync_mode = "{mode}"\n')
    before = snapshot(*_all(world))
    code, doc = world.json()
    assert code == 4, doc
    assert doc["outcome"] == "config_error"
    assert "sync_mode" in doc["error"]["message"]
    if mode.lower() == "copy":
        assert "link" in doc["error"]["message"]
    assert changed(before, snapshot(*_all(world))) == set()
    for name in SKILLS:
        assert os.readlink(world.co / ".agents" / "skills" / name) == world.skill(name)


@pytest.mark.parametrize("mode", ["link", "LINK", "Link"])
def test_link_sync_mode_in_any_case_is_accepted(world: SegWorld, mode: str) -> None:
    world.write_config(extra=f'sync_mode = "{mode}"\n')
    assert world.sync().exit_code == 0
    assert os.readlink(world.co / ".agents" / "skills" / "alpha") == world.skill("alpha")


@pytest.mark.parametrize("name", ["", ".", "..", "../projects", "a/b", "/etc", " alpha",
                                  "alpha\n"])
def test_unclean_skill_names_are_refused(world: SegWorld, name: str) -> None:
    """The reference tool links the skills root itself or escapes it."""
    (world.ws / "skills" / "a").mkdir()
    (world.ws / "skills" / "a" / "b").mkdir()
    world.write_config(skills=("alpha", name))
    before = snapshot(*_all(world))
    code, doc = world.json()
    assert code == 4
    assert doc["outcome"] == "config_error"
    assert "skills" in doc["error"]["message"]
    assert changed(before, snapshot(*_all(world))) == set()


def test_names_differing_only_in_case_are_refused(world: SegWorld) -> None:
    (world.ws / "skills" / "Alpha").mkdir()
    world.write_config(skills=("alpha", "Alpha"))
    before = snapshot(*_all(world))
    code, doc = world.json()
    assert code == 4 and doc["outcome"] == "config_error"
    assert "skills" in doc["error"]["message"]
    assert changed(before, snapshot(*_all(world))) == set()


@pytest.mark.parametrize("value", ['"alpha"', '[{name = "alpha"}]', "[1]", "42",
                                   '{alpha = true}', '[["alpha"]]'])
def test_skills_of_the_wrong_type_are_configuration_errors(world: SegWorld,
                                                           value: str) -> None:
    """``skills = "alpha"`` is never read per character; a table never crashes."""
    world.write_config(skills=None, extra=f"skills = {value}\n")
    before = snapshot(*_all(world))
    res = world.sync("--json")
    assert res.exit_code == 4, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "skills" in res.stdout
    assert changed(before, snapshot(*_all(world))) == set()
    plain = world.sync()
    assert plain.exit_code == 4 and "Traceback" not in plain.output
    assert not os.path.lexists(world.co / ".agents" / "skills" / "a")


# --------------------------------------------------------------------------- [G2]


@pytest.mark.parametrize("which", [".agents/skills", ".agents"])
def test_a_symlinked_skills_root_is_never_followed(world: SegWorld, which: str) -> None:
    """The reference tool writes through the link into a foreign directory."""
    foreign = world.base / "foreign"
    foreign.mkdir()
    (foreign / "theirs.txt").write_text("someone else's\n")
    link = world.co / which
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(foreign, link)
    before = snapshot(*_all(world))
    dry_code, dry = world.json("--dry-run")
    code, doc = world.json()
    assert code == dry_code == 1
    conflicts = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
    assert conflicts and all(op["segment"] in ("skills", "memory") for op in conflicts)
    assert doc["segments"]["skills"]["outcome"] == "blocked"
    assert dry["segments"]["skills"]["outcome"] == "blocked"
    assert sorted(os.listdir(foreign)) == ["theirs.txt"]
    after = snapshot(*_all(world))
    assert {p for p in changed(before, after) if p.startswith(str(foreign))} == set()
    assert os.readlink(link) == str(foreign)
    # The instructions segment has no conflict of its own and proceeds ([E8]).
    assert os.readlink(world.co / "AGENTS.md") == world.instructions


# --------------------------------------------------------------------------- [G4]


@pytest.mark.parametrize("how", ["emptied", "whitespace", "deleted"])
def test_instruction_links_are_removed_not_left_dangling(world: SegWorld, how: str) -> None:
    assert world.sync().exit_code == 0
    (world.co / "MINE.md").symlink_to(world.instructions)  # the user's own, not a target
    if how == "deleted":
        world.agents_md.unlink()
    else:
        world.agents_md.write_text("" if how == "emptied" else " \n\t\r\n")
    code, doc = world.json()
    assert code == 0, doc
    unlinks = sorted(op["target"] for op in doc["operations"] if op["action"] == "UNLINK")
    assert unlinks == [f"{world.co}/.claude/CLAUDE.md", f"{world.co}/AGENTS.md"]
    assert doc["segments"]["instructions"]["outcome"] == "applied"
    assert not os.path.lexists(world.co / "AGENTS.md")
    assert not os.path.lexists(world.co / ".claude" / "CLAUDE.md")
    assert os.path.isdir(world.co / ".claude")  # its directory is left as it is
    assert os.readlink(world.co / "MINE.md") == world.instructions
    assert os.readlink(world.co / ".agents" / "skills" / "alpha") == world.skill("alpha")


# --------------------------------------------------------------------------- [E7]/[E8]


def _memory_root_is_a_file(w: SegWorld) -> None:
    (w.co / ".agents").mkdir()
    (w.co / ".agents" / "memory").write_text("user's file\n")


def _memory_target_is_a_file(w: SegWorld) -> None:
    (w.co / ".agents" / "memory").mkdir(parents=True)
    (w.co / ".agents" / "memory" / "a.md").write_text("user's\n")


@pytest.mark.parametrize("setup", [_memory_root_is_a_file, _memory_target_is_a_file])
@pytest.mark.parametrize("explicit", [False, True])
def test_a_later_segment_failing_does_not_make_the_dry_run_lie(
        tmp_path: Path, setup: object, explicit: bool) -> None:
    """The dry run's exit code and per-segment outcomes equal the real run's; the
    registration happens only because the run was not refused as a whole ([G6])."""
    world = SegWorld(tmp_path, register=not explicit)
    setup(world)  # type: ignore[operator]
    args = (str(world.co),) if explicit else ()
    dry_code, dry = world.json(*args, "--dry-run")
    check = world.sync(*args, "--check")
    code, doc = world.json(*args)
    assert dry_code == code == check.exit_code == 1
    assert dry["outcome"] == doc["outcome"] == "blocked"
    for name in ("skills", "instructions", "memory"):
        planned = dry["segments"][name]["outcome"]
        real = doc["segments"][name]["outcome"]
        assert (planned == "blocked") == (real == "blocked"), name
    assert doc["segments"]["memory"]["outcome"] == "blocked"
    assert doc["segments"]["skills"]["outcome"] == "applied"
    dry_ops = [(op["segment"], op["action"], op["target"]) for op in dry["operations"]]
    real_ops = [(op["segment"], op["action"], op["target"]) for op in doc["operations"]]
    assert dry_ops == real_ops


def test_agents_as_a_regular_file_is_a_conflict_in_the_dry_run_and_the_real_run(
        world: SegWorld) -> None:
    """The reference tool's dry run passes and its real run crashes."""
    (world.co / ".agents").write_text("the user's file\n")
    before = snapshot(*_all(world))
    dry = world.sync("--dry-run")
    assert dry.exit_code == 1 and "Traceback" not in dry.output
    dry_code, dry_doc = world.json("--dry-run")
    assert changed(before, snapshot(*_all(world))) == set()
    code, doc = world.json()
    assert code == dry_code == 1
    conflicts = {(op["segment"], op["target"]) for op in doc["operations"]
                 if op["action"] == "CONFLICT"}
    assert conflicts == {(op["segment"], op["target"]) for op in dry_doc["operations"]
                         if op["action"] == "CONFLICT"}
    assert {seg for seg, _ in conflicts} == {"skills", "memory"}
    assert (world.co / ".agents").read_text() == "the user's file\n"
    assert os.readlink(world.co / "AGENTS.md") == world.instructions
    real = world.sync()
    assert real.exit_code == 1 and "Traceback" not in real.output


# --------------------------------------------------------------------------- [A3]


def test_prepare_writes_only_that_agents_instruction_file(world: SegWorld) -> None:
    """The reference tool's prepare writes every agent's instruction file."""
    before = snapshot(*_all(world))
    prepared = Project.load("demo", workspace=str(world.ws)).prepare("codex")
    assert prepared.result.outcome == "applied"
    written = {p for p in changed(before, snapshot(*_all(world))) if p not in before}
    assert f"{world.co}/AGENTS.md" in written
    assert not os.path.lexists(world.co / ".claude")
    assert written == {
        f"{world.co}/AGENTS.md", f"{world.co}/.agents", f"{world.co}/.agents/skills",
        f"{world.co}/.agents/skills/alpha", f"{world.co}/.agents/skills/beta",
        f"{world.co}/.agents/memory", f"{world.co}/.agents/memory/a.md"}
    prepared = Project.load("demo", workspace=str(world.ws)).prepare("claude-code")
    assert os.readlink(world.co / ".claude" / "CLAUDE.md") == world.instructions


def test_prepare_reports_conflicts_per_segment_after_applying_the_rest(
        world: SegWorld) -> None:
    (world.co / "AGENTS.md").write_text("the user's own\n")
    with pytest.raises(ProjectPrepareConflictError) as info:
        Project.load("demo", workspace=str(world.ws)).prepare("codex")
    assert [c.segment for c in info.value.conflicts] == ["instructions"]
    assert (world.co / "AGENTS.md").read_text() == "the user's own\n"
    assert os.readlink(world.co / ".agents" / "memory" / "a.md") == f"{world.ws}/memory/a.md"


# --------------------------------------------------------------------------- the lock


def test_taking_the_lock_never_touches_the_home_directory(world: SegWorld) -> None:
    """The reference tool's lock changes the mode of ``~/.local``."""
    local = world.home / ".local"
    local.mkdir(mode=0o700)
    os.chmod(local, 0o751)
    (local / "state").mkdir()
    before = snapshot(world.home)
    assert world.sync().exit_code == 0
    assert world.sync().exit_code == 0
    Project.load("demo", workspace=str(world.ws)).prepare("codex")
    assert changed(before, snapshot(world.home)) == set()
    assert stat.S_IMODE(os.lstat(local).st_mode) == 0o751


# --------------------------------------------------------------------------- output


def test_output_lines_only_for_writes_that_happened(world: SegWorld,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that goes stale during execution stops the run: the text names only the
    links actually written (the reference tool prints every planned line)."""
    memory_target = f"{world.co}/.agents/memory/a.md"

    def user_writes(op: Operation) -> None:
        if op.target == memory_target:
            Path(memory_target).write_text("the user's, just now\n")

    monkeypatch.setattr(execute_mod, "before_write", user_writes)
    res = world.sync()
    assert res.exit_code == 3, res.output
    plus = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith("+")]
    unmarked = [ln for ln in plus if not ln.endswith("]")]
    applied = [t for t, _ in world.targets().values() if os.path.islink(t)]
    assert len(unmarked) == len(applied) == 4, res.output
    shown = {f"{world.co}/{ln.split()[1]}" for ln in unmarked}
    assert shown == set(applied)
    # The write that never happened is never shown as done: marked, or not shown at all.
    for ln in plus:
        if ln.startswith("+ a.md "):
            assert ln.endswith("[not_applied]"), ln
    assert Path(memory_target).read_text() == "the user's, just now\n"
    code, doc = world.json()  # the next run: the user's file is a conflict, preserved
    assert code == 1 and doc["segments"]["memory"]["outcome"] == "blocked"
    statuses = {op["target"]: op["status"] for op in doc["operations"]}
    assert statuses[memory_target] == "not_applied"


# --------------------------------------------------------------------------- remedies


def test_conflict_remedies_name_the_right_command(world: SegWorld) -> None:
    """Each segment's remedy names the command that resolves it for that very target —
    ``aikito adopt TARGET`` for a directory at a skill target and a file at an instruction
    target ([L5]) as for a memory entry (the reference tool names the wrong command) — and
    that adopt, on copies that differ from the workspace's, refuses with the differences
    and changes nothing."""
    d = world.co / ".agents" / "skills" / "alpha"
    d.mkdir(parents=True)
    (world.co / "AGENTS.md").write_text("mine\n")
    (world.co / ".agents" / "memory").mkdir()
    (world.co / ".agents" / "memory" / "a.md").write_text("mine\n")
    code, doc = world.json()
    assert code == 1
    remedies = {op["segment"]: op.get("remedy") or "" for op in doc["operations"]
                if op["action"] == "CONFLICT"}
    assert set(remedies) == {"skills", "instructions", "memory"}
    assert f"aikito adopt {d}" in remedies["skills"]
    assert f"aikito adopt {world.co}/AGENTS.md" in remedies["instructions"]
    assert f"aikito adopt {world.co}/.agents/memory/a.md" in remedies["memory"]
    before = snapshot(*_all(world))
    for target in (d, world.co / "AGENTS.md"):
        res = world.run("adopt", str(target))
        assert res.exit_code == 1, res.output
        assert "already exists and differs" in res.output
    assert changed(before, snapshot(*_all(world))) == set()
    plan = Project.load("demo", workspace=str(world.ws)).plan()
    segs = {op.segment for op in plan.operations if op.action is Action.CONFLICT}
    assert segs == {SegmentName.SKILLS, SegmentName.INSTRUCTIONS, SegmentName.MEMORY}
