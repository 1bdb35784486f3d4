"""Safety of the skills and instructions segments (SPEC §13, [G7]) on real directories.

- The stale matrix ([E2], [G7]): a plan made (``Project.plan`` or ``--dry-run --out``),
  the world changed in what the skills and instructions segments were planned from,
  execution refused with exit 3 and the whole tree byte- and inode-identical.  A registry
  edit that changes neither a target nor its detection is not stale ([G6]).
- The dry-run audit ([E7]): no write event while a dry run plans all three segments.
- The writer's just-in-time ownership re-read before an unlink ([E4]): a link swapped for
  a foreign one between verification and its unlink is never removed, in every segment.
- The guard's rows for skills and instructions ([E9]): hand-made writes refused.
- Races during execution ([E4]): ``.agents/skills`` or ``.claude`` swapped for a symlink,
  a target appearing in the window — never written through, never clobbered.
- A bounded property over user interference at every skill and instruction target and
  their parents: dry run equals real run, foreign entries survive, the next run converges.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from aikito_mem import Project
from aikito_mem.cli import cli
from aikito_mem.errors import StalePlanError, UnsafePlanError
from aikito_mem.executor import execute as execute_mod
from aikito_mem.model import Action, Operation, Plan, SegmentName
from aikito_mem.world.observe import lstat_link
from tests.helpers.segments import SegWorld
from tests.helpers.snapshots import changed, recreate, snapshot
from tests.helpers.strategies import fs_examples

# --------------------------------------------------------------------------- stale matrix


def build(tmp_path: Path, *, empty: bool = False) -> SegWorld:
    """Synced once with skills alpha, beta and the codex target only; then ``gamma`` is
    selected and claude-code's registry file added: the plan has NOOPs in every segment and
    CREATEs in skills (gamma) and instructions (``.claude/CLAUDE.md``, its directory made
    because ``~/.claude`` exists).  With ``empty``, ``AGENTS.md`` is emptied after the
    first sync instead: the plan UNLINKs the instruction link."""
    world = SegWorld(tmp_path)
    claude = world.ws / "agents" / "claude-code.toml"
    text = claude.read_text()
    claude.unlink()
    assert world.sync().exit_code == 0
    (world.ws / "skills" / "gamma").mkdir()
    world.write_config(skills=("alpha", "beta", "gamma"))
    if empty:
        world.agents_md.write_text(" \n\t\n")
    else:
        claude.write_text(text)
    return world


def skill_source_recreated(w: SegWorld) -> None:
    path = w.ws / "skills" / "gamma"
    recreate(path, path.mkdir, path.rmdir)


def skill_source_deleted(w: SegWorld) -> None:
    (w.ws / "skills" / "gamma").rmdir()


def skill_source_becomes_file(w: SegWorld) -> None:
    (w.ws / "skills" / "gamma").rmdir()
    (w.ws / "skills" / "gamma").write_text("not a directory\n")


def agents_md_replaced(w: SegWorld) -> None:
    new = w.project_dir / "AGENTS.md.new"
    new.write_text("# Rules\nbe careful\n")
    os.replace(new, w.agents_md)


def agents_md_recreated(w: SegWorld) -> None:
    path = w.agents_md
    recreate(path, lambda: path.write_text("# Rules\nbe careful\n"), path.unlink)


def agents_md_emptied(w: SegWorld) -> None:
    w.agents_md.write_text("")


def agents_md_deleted(w: SegWorld) -> None:
    w.agents_md.unlink()


def agents_md_becomes_link_outside(w: SegWorld) -> None:
    outside = w.base / "outside.md"
    outside.write_text("# Rules\n")
    w.agents_md.unlink()
    os.symlink(outside, w.agents_md)


def agents_md_becomes_link_inside(w: SegWorld) -> None:
    """Still content, through a link inside the workspace ([G3]): a different source."""
    shared = w.ws / "shared-rules.md"
    shared.write_text("# Rules\nbe careful\n")
    w.agents_md.unlink()
    os.symlink("../../shared-rules.md", w.agents_md)


def agents_md_filled(w: SegWorld) -> None:
    w.agents_md.write_text("# Rules again\n")


def registry_target_changed(w: SegWorld) -> None:
    f = w.ws / "agents" / "claude-code.toml"
    f.write_text(f.read_text().replace(".claude/CLAUDE.md", ".claude/RULES.md"))


def registry_detection_changed(w: SegWorld) -> None:
    f = w.ws / "agents" / "claude-code.toml"
    f.write_text(f.read_text().replace('paths = [".claude"]', 'paths = [".nowhere"]'))


def detection_lost_in_home(w: SegWorld) -> None:
    (w.home / ".claude").rmdir()


def registry_file_added(w: SegWorld) -> None:
    (w.ws / "agents" / "gemini.toml").write_text(
        '[agents.gemini]\nproject_instruction_path = "GEMINI.md"\n')


def registry_file_removed(w: SegWorld) -> None:
    (w.ws / "agents" / "codex.toml").unlink()


def registry_file_broken(w: SegWorld) -> None:
    (w.ws / "agents" / "codex.toml").write_text("[agents.codex\n")


def skill_target_retargeted(w: SegWorld) -> None:
    link = w.co / ".agents" / "skills" / "alpha"
    link.unlink()
    os.symlink(w.base / "elsewhere", link)


def skill_target_appears(w: SegWorld) -> None:
    (w.co / ".agents" / "skills" / "gamma").mkdir()


def skills_dir_swapped_for_symlink(w: SegWorld) -> None:
    foreign = w.base / "foreign-skills"
    shutil.move(w.co / ".agents" / "skills", foreign)
    os.symlink(foreign, w.co / ".agents" / "skills")


def instruction_target_replaced(w: SegWorld) -> None:
    (w.co / "AGENTS.md").unlink()
    (w.co / "AGENTS.md").write_text("the user's own rules\n")


def instruction_target_appears(w: SegWorld) -> None:
    (w.co / ".claude").mkdir()
    (w.co / ".claude" / "CLAUDE.md").write_text("the user's own\n")


def claude_parent_symlink(w: SegWorld) -> None:
    foreign = w.base / "foreign-claude"
    foreign.mkdir()
    os.symlink(foreign, w.co / ".claude")


def skills_list_edited(w: SegWorld) -> None:
    w.write_config(skills=("alpha", "gamma"))


#: name → (mutation, a word the differences name, plan with an emptied AGENTS.md)
STALE: dict[str, tuple[Callable[[SegWorld], None], str, bool]] = {
    "skill_source_recreated": (skill_source_recreated, "skills/gamma", False),
    "skill_source_deleted": (skill_source_deleted, "skills/gamma", False),
    "skill_source_becomes_file": (skill_source_becomes_file, "skills/gamma", False),
    "skills_list_edited": (skills_list_edited, "skills list", False),
    "agents_md_replaced": (agents_md_replaced, "AGENTS.md", False),
    "agents_md_recreated": (agents_md_recreated, "AGENTS.md", False),
    "agents_md_emptied": (agents_md_emptied, "AGENTS.md", False),
    "agents_md_deleted": (agents_md_deleted, "AGENTS.md", False),
    "agents_md_becomes_link_outside": (agents_md_becomes_link_outside, "AGENTS.md", False),
    "agents_md_becomes_link_inside": (agents_md_becomes_link_inside, "AGENTS.md", False),
    "agents_md_filled": (agents_md_filled, "AGENTS.md", True),
    "agents_md_deleted_while_empty": (agents_md_deleted, "AGENTS.md", True),
    "registry_target_changed": (registry_target_changed, "instruction targets", False),
    "registry_detection_changed": (registry_detection_changed, "detected", False),
    "detection_lost_in_home": (detection_lost_in_home, "detected", False),
    "registry_file_added": (registry_file_added, "instruction targets", False),
    "registry_file_removed": (registry_file_removed, "instruction targets", False),
    "registry_file_broken": (registry_file_broken, "registry", False),
    "skill_target_retargeted": (skill_target_retargeted, "skills/alpha", False),
    "skill_target_appears": (skill_target_appears, "skills/gamma", False),
    "skills_dir_swapped_for_symlink": (skills_dir_swapped_for_symlink, ".agents/skills",
                                       False),
    "instruction_target_replaced": (instruction_target_replaced, "AGENTS.md", False),
    "instruction_target_appears": (instruction_target_appears, "CLAUDE.md", False),
    "claude_parent_symlink": (claude_parent_symlink, ".claude", False),
}


def _world(w: SegWorld) -> tuple[Path, Path]:
    return (w.base, w.home)


@pytest.mark.parametrize("case", sorted(STALE))
def test_stale_segment_plan_is_refused_by_the_api(tmp_path: Path, case: str) -> None:
    mutate, word, empty = STALE[case]
    w = build(tmp_path, empty=empty)
    project = Project.load("demo", workspace=str(w.ws))
    plan = project.plan()
    assert plan.has_changes and not plan.blocked
    segments = {op.segment for op in plan.changes}
    assert SegmentName.INSTRUCTIONS in segments and SegmentName.SKILLS in segments
    mutate(w)
    before = snapshot(*_world(w))
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert changed(before, snapshot(*_world(w))) == set()
    exc = info.value
    assert exc.exit_code == 3
    assert any(word in d for d in exc.differences), exc.differences
    assert exc.result is not None and exc.result.outcome == "stale"
    assert {s.value for s in exc.result.statuses} <= {"not_applied"}


@pytest.mark.parametrize("case", sorted(STALE))
def test_stale_segment_plan_file_is_refused_by_apply(tmp_path: Path, case: str) -> None:
    mutate, word, empty = STALE[case]
    w = build(tmp_path, empty=empty)
    planfile = w.base / "plan.toml"
    res = w.sync("--dry-run", "--out", str(planfile), "--json")
    assert res.exit_code == 0, res.output
    mutate(w)
    before = snapshot(*_world(w))
    res = CliRunner().invoke(cli, ["apply", str(planfile), "--json"])
    doc = json.loads(res.stdout)
    if case == "registry_file_broken":  # the project cannot be loaded: refused as such
        assert (res.exit_code, doc["error"]["code"]) == (4, "config.toml_syntax")
        assert changed(before, snapshot(*_world(w))) == set()
        return
    assert res.exit_code == 3, res.output
    assert doc["outcome"] == "stale" and doc["error"]["code"] == "sync.stale"
    assert any(word in d for d in doc["error"]["differences"]), doc["error"]
    assert {op["status"] for op in doc["operations"]} <= {"not_applied"}
    for seg in doc["segments"].values():
        assert seg["outcome"] in ("stale", "unchanged")
    assert changed(before, snapshot(*_world(w))) == set()


def test_recreated_skill_source_is_caught_when_the_inode_number_is_reused(
        tmp_path: Path) -> None:
    w = build(tmp_path)
    plan = Project.load("demo", workspace=str(w.ws)).plan()
    path = w.ws / "skills" / "gamma"
    reused = recreate(path, path.mkdir, path.rmdir)
    with pytest.raises(StalePlanError) as info:
        Project.load("demo", workspace=str(w.ws)).execute(plan)
    assert any("skills/gamma" in d and "recreated" in d for d in info.value.differences), \
        info.value.differences
    assert not os.path.lexists(w.co / ".agents" / "skills" / "gamma")
    # Usually reused on ext4/tmpfs: then the generation number is what differs.
    assert isinstance(reused, bool)


def registry_cosmetic_edit(w: SegWorld) -> None:
    f = w.ws / "agents" / "claude-code.toml"
    f.write_text(f.read_text().replace("Claude Code", "Claude") +
                 '\n[agents.claude-code.mcp]\nservers = ["x"]\n')
    (w.ws / "agents" / "codex.toml").write_text(
        '# reordered\n[agents.codex]\nproject_instruction_path = "AGENTS.md"\n'
        'skills_path = "~/.codex/skills"\n')


def agents_md_edited(w: SegWorld) -> None:
    w.agents_md.write_text("# Rules, reworded\n")


@pytest.mark.parametrize("mutate", [registry_cosmetic_edit, agents_md_edited])
def test_edits_that_change_no_target_nor_detection_are_not_stale(
        tmp_path: Path, mutate: Callable[[SegWorld], None]) -> None:
    """[G6]/[G3]: the plan records targets, agents, detection and the emptiness — not the
    registry's other keys nor the instructions' content."""
    w = build(tmp_path)
    project = Project.load("demo", workspace=str(w.ws))
    plan = project.plan()
    mutate(w)
    result = project.execute(plan)
    assert result.outcome == "applied"
    assert os.readlink(w.co / ".claude" / "CLAUDE.md") == w.instructions
    assert os.readlink(w.co / ".agents" / "skills" / "gamma") == w.skill("gamma")


@pytest.mark.parametrize("mutate", [registry_cosmetic_edit, agents_md_edited])
def test_edits_that_change_no_target_nor_detection_do_not_stale_a_plan_file(
        tmp_path: Path, mutate: Callable[[SegWorld], None]) -> None:
    w = build(tmp_path)
    planfile = w.base / "plan.toml"
    assert w.sync("--dry-run", "--out", str(planfile)).exit_code == 0
    mutate(w)
    res = CliRunner().invoke(cli, ["apply", str(planfile), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["outcome"] == "applied"
    assert os.readlink(w.co / ".claude" / "CLAUDE.md") == w.instructions


def _swap_claude_for_symlink(w: SegWorld) -> None:
    """``.claude`` (holding aikito's NOOP link) moved aside and replaced by a symlink to
    it: every entry reads the same through the link, yet the parent is no longer real."""
    moved = w.base / "moved-claude"
    shutil.move(w.co / ".claude", moved)
    os.symlink(moved, w.co / ".claude")


def test_instruction_parent_swapped_for_a_symlink_is_stale(tmp_path: Path) -> None:
    w = SegWorld(tmp_path)
    assert w.sync().exit_code == 0
    (w.ws / "skills" / "gamma").mkdir()
    w.write_config(skills=("alpha", "beta", "gamma"))
    project = Project.load("demo", workspace=str(w.ws))
    plan = project.plan()
    planfile = w.base / "plan.toml"
    assert w.sync("--dry-run", "--out", str(planfile)).exit_code == 0
    _swap_claude_for_symlink(w)
    before = snapshot(*_world(w))
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any(".claude" in d for d in info.value.differences), info.value.differences
    res = CliRunner().invoke(cli, ["apply", str(planfile), "--json"])
    assert res.exit_code == 3, res.output
    assert changed(before, snapshot(*_world(w))) == set()
    assert not os.path.lexists(w.co / ".agents" / "skills" / "gamma")


# --------------------------------------------------------------------------- dry-run audit


@pytest.fixture
def recorder() -> Iterator[Any]:
    from tests.helpers.audit import RECORDER

    RECORDER.events.clear()
    RECORDER.seen.clear()
    yield RECORDER
    RECORDER.armed = False


def test_dry_run_of_every_segment_makes_no_write_event(tmp_path: Path, recorder: Any) -> None:
    """[E7]: creates, unlinks, conflicts and a detected agent's missing directory in
    skills and instructions, planned with the audit hook armed: not one write event."""
    w = build(tmp_path)
    (w.ws / "skills" / "delta").mkdir()
    w.write_config(skills=("beta", "gamma", "delta"))  # alpha: UNLINK
    (w.co / ".agents" / "skills" / "delta").mkdir()  # CONFLICT
    project = Project.load("demo", workspace=str(w.ws))
    before = snapshot(*_world(w))
    recorder.armed = True
    try:
        plan = project.plan()
        res = w.sync("--dry-run", "--json")
        check = w.sync("--check")
    finally:
        recorder.armed = False
    assert recorder.events == [], recorder.events
    assert "open" in recorder.seen  # the hook was live
    assert changed(before, snapshot(*_world(w))) == set()
    actions = {(op.segment, op.action) for op in plan.operations}
    assert {(SegmentName.SKILLS, Action.UNLINK), (SegmentName.SKILLS, Action.CONFLICT),
            (SegmentName.SKILLS, Action.CREATE), (SegmentName.INSTRUCTIONS, Action.CREATE),
            (SegmentName.INSTRUCTIONS, Action.NOOP)} <= actions
    assert res.exit_code == check.exit_code == 1


# --------------------------------------------------------------------------- JIT re-read


def _swap_to_foreign(path: str, foreign: str) -> None:
    os.unlink(path)
    os.symlink(foreign, path)


def unlinks_in_skills(w: SegWorld) -> None:
    w.write_config(skills=())


def unlinks_in_instructions(w: SegWorld) -> None:
    w.agents_md.write_text("")


def unlinks_in_memory(w: SegWorld) -> None:
    (w.ws / "memory" / "b.md").write_text("b\n")
    text = (w.project_dir / "agent.toml").read_text()
    (w.project_dir / "agent.toml").write_text(text.replace('["a.md"]', '["a.md", "b.md"]'))
    assert w.sync().exit_code == 0
    (w.project_dir / "agent.toml").write_text(text.replace('["a.md"]', "[]"))


UNLINKERS = {"skills": unlinks_in_skills, "instructions": unlinks_in_instructions,
             "memory": unlinks_in_memory}


@pytest.mark.parametrize("segment", sorted(UNLINKERS))
def test_link_swapped_after_verification_is_never_unlinked(
        tmp_path: Path, segment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """[E4]: the writer re-reads each link (``readlinkat``) right before its unlink and
    compares the literal.  Two owned links of one segment are planned for removal; while
    the first is removed, the user swaps the second for a link of their own (after
    verification, before its re-read): it is preserved and the run stops, exit 3."""
    w = SegWorld(tmp_path)
    assert w.sync().exit_code == 0
    UNLINKERS[segment](w)
    project = Project.load("demo", workspace=str(w.ws))
    plan = project.plan()
    unlinks = [op for op in plan.operations
               if op.action is Action.UNLINK and op.segment.value == segment
               and op.entry == "link"]
    assert len(unlinks) == 2, unlinks
    foreign = str(w.base / "users-own")
    seen: list[str] = []

    def user_swaps(op: Operation) -> None:
        seen.append(op.target)
        if len(seen) == 1:
            other = next(u.target for u in unlinks if u.target != op.target)
            _swap_to_foreign(other, foreign)

    monkeypatch.setattr(execute_mod, "before_write", user_swaps)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert info.value.exit_code == 3
    swapped = next(u.target for u in unlinks if u.target != seen[0])
    assert os.readlink(swapped) == foreign  # the user's link is still there
    assert not os.path.lexists(seen[0])
    assert len(seen) == 1


# --------------------------------------------------------------------------- guard rows


def _guarded_world(tmp_path: Path) -> tuple[SegWorld, Project]:
    w = SegWorld(tmp_path)
    assert w.sync().exit_code == 0
    (w.ws / "skills" / "gamma").mkdir()
    w.write_config(skills=("alpha", "beta", "gamma"))
    (w.base / "foreign-skill").mkdir()
    return w, Project.load("demo", workspace=str(w.ws))


def _replace(plan: Plan, pick: Callable[[Operation], bool], **changes: Any) -> Plan:
    ops = list(plan.operations)
    (i,) = [n for n, op in enumerate(ops) if pick(op)]
    ops[i] = attrs.evolve(ops[i], **changes)
    return plan.evolve(operations=tuple(ops))


def _gamma(op: Operation) -> bool:
    return op.action is Action.CREATE and op.target.endswith("/skills/gamma")


def skill_create_to_foreign_source(w: SegWorld, plan: Plan) -> Plan:
    return _replace(plan, _gamma, source=str(w.base / "foreign-skill"))


def skill_create_two_components(w: SegWorld, plan: Plan) -> Plan:
    return _replace(plan, _gamma, target=f"{w.co}/.agents/skills/gamma/inner",
                    source=w.skill("gamma"))


def skill_create_for_unselected_name(w: SegWorld, plan: Plan) -> Plan:
    return _replace(plan, _gamma, target=f"{w.co}/.agents/skills/unused",
                    source=w.skill("unused"))


def instruction_create_not_in_registry(w: SegWorld, plan: Plan) -> Plan:
    return _replace(plan, _gamma, segment=SegmentName.INSTRUCTIONS,
                    target=f"{w.co}/src/EVIL.md", source=w.instructions)


def instruction_create_foreign_source(w: SegWorld, plan: Plan) -> Plan:
    (w.co / "AGENTS.md").unlink()
    plan = Project.load("demo", workspace=str(w.ws)).plan()
    return _replace(plan, lambda op: op.action is Action.CREATE
                    and op.target == f"{w.co}/AGENTS.md", source=str(w.base / "evil.md"))


def instruction_unlink_foreign_link(w: SegWorld, plan: Plan) -> Plan:
    os.makedirs(w.co / "docs")
    os.symlink(w.base / "users-rules.md", w.co / "docs" / "RULES.md")
    os.symlink(w.base / "users-rules.md", w.co / "GEMINI.md")
    target = f"{w.co}/GEMINI.md"
    return _replace(plan, _gamma, segment=SegmentName.INSTRUCTIONS, action=Action.UNLINK,
                    target=target, source=None, observed=lstat_link(target))


def instruction_unlink_registry_target_foreign(w: SegWorld, plan: Plan) -> Plan:
    target = f"{w.co}/AGENTS.md"
    os.unlink(target)
    os.symlink(w.base / "users-rules.md", target)
    plan = Project.load("demo", workspace=str(w.ws)).plan()
    plan = plan.evolve(operations=tuple(op for op in plan.operations
                                        if op.action is not Action.CONFLICT))
    return plan.evolve(operations=(*plan.operations, Operation(
        segment=SegmentName.INSTRUCTIONS, action=Action.UNLINK, rule="G4",
        checkout=str(w.co), resource="AGENTS.md", target=target, source=None,
        reason="tampered", entry="link", observed=lstat_link(target))))


def skill_unlink_foreign_link(w: SegWorld, plan: Plan) -> Plan:
    target = f"{w.co}/.agents/skills/mine"
    os.symlink(w.base / "foreign-skill", target)
    return _replace(plan, _gamma, action=Action.UNLINK, target=target, source=None,
                    observed=lstat_link(target))


def instruction_unlink_owned_literal_outside_registry(w: SegWorld, plan: Plan) -> Plan:
    """The user's own link to the project instructions at a path the registry does not
    name (or no longer names, [G3]): not a target, so not aikito's to remove."""
    os.makedirs(w.co / "docs")
    target = f"{w.co}/docs/RULES.md"
    os.symlink(w.instructions, target)
    return _replace(plan, _gamma, segment=SegmentName.INSTRUCTIONS, action=Action.UNLINK,
                    target=target, source=None, observed=lstat_link(target))


def skill_unlink_nested_link(w: SegWorld, plan: Plan) -> Plan:
    """A link inside the user's own directory below ``.agents/skills``: skills are one
    component deep ([G2]); whatever the literal, nothing deeper is aikito's."""
    os.makedirs(w.co / ".agents" / "skills" / "sub")
    target = f"{w.co}/.agents/skills/sub/inner"
    os.symlink(f"{w.ws}/skills/sub/inner", target)
    return _replace(plan, _gamma, action=Action.UNLINK, target=target, source=None,
                    observed=lstat_link(target))


TAMPER: dict[str, Callable[[SegWorld, Plan], Plan]] = {
    f.__name__: f for f in (
        skill_create_to_foreign_source, skill_create_two_components,
        skill_create_for_unselected_name, instruction_create_not_in_registry,
        instruction_create_foreign_source, instruction_unlink_foreign_link,
        instruction_unlink_registry_target_foreign, skill_unlink_foreign_link,
        instruction_unlink_owned_literal_outside_registry, skill_unlink_nested_link)
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_guard_refuses_hand_made_segment_writes(tmp_path: Path, name: str) -> None:
    w, project = _guarded_world(tmp_path)
    plan = TAMPER[name](w, project.plan())
    before = snapshot(*_world(w))
    with pytest.raises(UnsafePlanError) as info:
        project.execute(plan)
    assert info.value.exit_code == 4
    assert changed(before, snapshot(*_world(w))) == set()


def test_guard_rows_exist_for_every_writing_segment() -> None:
    from aikito_mem.executor.guard import SEGMENTS

    assert set(SEGMENTS) == set(SegmentName)
    assert SEGMENTS[SegmentName.SKILLS].single_component
    assert not SEGMENTS[SegmentName.SKILLS].prunes
    assert not SEGMENTS[SegmentName.INSTRUCTIONS].prunes



# --------------------------------------------------------------------------- races


@pytest.fixture
def world_path(tmp_path: Path) -> Path:
    return tmp_path


def _foreign(w: SegWorld) -> Path:
    foreign = w.base / "foreign"
    foreign.mkdir()
    (foreign / "theirs.txt").write_text("someone else's\n")
    return foreign


def test_skills_root_swapped_during_execution_never_writes_into_the_foreign_directory(
        world_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[E4]: ``.agents/skills`` replaced by a symlink while the skills are written: the
    next write finds its held directory moved and stops; the foreign directory is
    untouched."""
    w = SegWorld(world_path)
    foreign = _foreign(w)
    (w.co / ".agents" / "skills").mkdir(parents=True)
    calls: list[str] = []

    def user_swaps(op: Operation) -> None:
        calls.append(op.target)
        if len(calls) == 1:
            os.rename(w.co / ".agents" / "skills", w.base / "moved-skills")
            os.symlink(foreign, w.co / ".agents" / "skills")

    monkeypatch.setattr(execute_mod, "before_write", user_swaps)
    before = snapshot(foreign)
    res = w.sync()
    assert res.exit_code == 3, res.output
    assert changed(before, snapshot(foreign)) == set()
    assert len(calls) == 1
    assert not os.path.lexists(w.co / "AGENTS.md")  # later segments never started


def test_instruction_parent_appearing_as_a_symlink_is_never_written_through(
        world_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[G4]/[E4]: ``.claude`` (missing when planned, to be created) appears as a symlink
    to a foreign directory just before the instructions are written: ``O_NOFOLLOW``
    refuses it, the run stops with exit 3, nothing is written there."""
    w = SegWorld(world_path)
    foreign = _foreign(w)

    def user_links(op: Operation) -> None:
        if op.target.endswith("/.agents/skills/beta"):
            os.symlink(foreign, w.co / ".claude")

    monkeypatch.setattr(execute_mod, "before_write", user_links)
    before = snapshot(foreign)
    code, doc = w.json()
    assert code == 3, doc
    assert changed(before, snapshot(foreign)) == set()
    assert doc["segments"]["skills"]["outcome"] == "applied"
    assert doc["segments"]["instructions"]["outcome"] == "stale"
    assert doc["segments"]["memory"]["outcome"] == "stale"
    assert not os.path.lexists(w.co / ".agents" / "memory")


@pytest.mark.parametrize("segment", ["skills", "instructions"])
def test_target_appearing_in_the_window_is_never_clobbered(
        world_path: Path, segment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    w = SegWorld(world_path)
    target = {"skills": w.co / ".agents" / "skills" / "alpha",
              "instructions": w.co / "AGENTS.md"}[segment]

    def user_writes(op: Operation) -> None:
        if op.target == str(target):
            target.write_text("the user's, just now\n")

    monkeypatch.setattr(execute_mod, "before_write", user_writes)
    assert w.sync().exit_code == 3
    assert target.read_text() == "the user's, just now\n"



# --------------------------------------------------------------------------- property

STATES = ("absent", "owned", "foreign_link", "file", "dir")


def _put(path: Path, state: str, owned: str, base: Path) -> None:
    if state == "absent":
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if state == "owned":
        os.symlink(owned, path)
    elif state == "foreign_link":
        os.symlink(base / "elsewhere", path)
    elif state == "file":
        path.write_text("the user's\n")
    else:
        path.mkdir()
        (path / "inside.txt").write_text("the user's\n")


@settings(max_examples=fs_examples(25))
@given(alpha=st.sampled_from(STATES), beta=st.sampled_from(STATES),
       agents=st.sampled_from(STATES), claude=st.sampled_from(STATES),
       claude_dir=st.sampled_from(("absent", "dir", "file", "symlink")),
       source=st.sampled_from(("content", "empty", "absent")))
def test_any_interference_dry_run_equals_real_run_and_foreign_entries_survive(
        tmp_path_factory: pytest.TempPathFactory, alpha: str, beta: str, agents: str,
        claude: str, claude_dir: str, source: str) -> None:
    """[E7]/[G2]/[G4]: whatever the user put at skill and instruction targets and their
    parents, the dry run's exit code and operations are the real run's; nothing the
    engine does not own is changed; the next run has nothing left to write outside the
    blocked segments ([E6])."""
    w = SegWorld(tmp_path_factory.mktemp("prop"))
    skills = w.co / ".agents" / "skills"
    _put(skills / "alpha", alpha, w.skill("alpha"), w.base)
    _put(skills / "beta", beta, w.skill("beta"), w.base)
    _put(w.co / "AGENTS.md", agents, w.instructions, w.base)
    if claude_dir == "file":
        (w.co / ".claude").write_text("the user's\n")
    elif claude_dir == "symlink":
        (w.base / "foreign-claude").mkdir()
        os.symlink(w.base / "foreign-claude", w.co / ".claude")
    else:
        if claude_dir == "dir":
            (w.co / ".claude").mkdir()
        if claude_dir == "dir" or claude != "absent":
            _put(w.co / ".claude" / "CLAUDE.md", claude, w.instructions, w.base)
    if source == "empty":
        w.agents_md.write_text("\n")
    elif source == "absent":
        w.agents_md.unlink()
    before = snapshot(w.base, w.home)
    dry_code, dry = w.json("--dry-run")
    assert changed(before, snapshot(w.base, w.home)) == set()
    code, doc = w.json()
    assert code == dry_code, (dry, doc)
    key = [(op["segment"], op["action"], op["target"]) for op in dry["operations"]]
    assert key == [(op["segment"], op["action"], op["target"]) for op in doc["operations"]]
    after = snapshot(w.base, w.home)
    owned = {w.skill("alpha"), w.skill("beta"), w.instructions, f"{w.ws}/memory/a.md"}
    for path, entry in before.items():
        literal = entry[5][3:] if entry[5].startswith("-> ") else None
        if literal in owned or entry[0] & 0o170000 == 0o040000:
            continue  # aikito's own links may go; directories' times change
        assert after.get(path) == entry, path
    again_code, again = w.json("--dry-run")
    blocked = {s for s, v in again["segments"].items() if v["outcome"] == "blocked"}
    assert not [op for op in again["operations"]
                if op["action"] in ("CREATE", "UNLINK") and op["segment"] not in blocked]
    assert again_code in (0, 1)
