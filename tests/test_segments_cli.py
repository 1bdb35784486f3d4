"""``aikito sync project`` across the three segments (SPEC §13, [E8], [G6], [G7]) through
the command line on real temporary directories with foreign files around.

The first sync links skills, instructions and memory (exact ``+`` lines, JSON operations
tagged with their ``segment``); the second is NOOP everywhere with zero mutating syscalls
([E6]: inode, ``mtime_ns`` and ``ctime_ns`` of every link and directory unchanged); the dry
run writes nothing; ``--check`` says 7 then 0; every combination of blocked segments gives
each segment its own outcome, exit 1, nothing of a blocked segment written and the others
written — and when every active segment is blocked, nothing at all, no registration.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.segments import SegWorld
from tests.helpers.snapshots import changed, snapshot


@pytest.fixture
def world(tmp_path: Path) -> SegWorld:
    return SegWorld(tmp_path)


def check_segments(doc: dict[str, Any]) -> None:
    """[G6]: all three segments, each with exactly its four keys; the sum is the total."""
    assert doc["schema"] == "aikito.sync/2"
    assert list(doc["segments"]) == ["skills", "instructions", "memory"]
    totals = dict.fromkeys(doc["summary"], 0)
    for seg in doc["segments"].values():
        assert set(seg) == {"active", "success", "outcome", "summary"}
        assert set(seg["summary"]) == set(doc["summary"])
        for k, v in seg["summary"].items():
            totals[k] += v
    assert totals == doc["summary"]
    for name, seg in doc["segments"].items():
        ops = [op for op in doc["operations"] if op["segment"] == name]
        counts = dict.fromkeys(seg["summary"], 0)
        for op in ops:
            counts[op["action"].lower()] += 1
        assert counts == seg["summary"], name


# --------------------------------------------------------------------------- end to end


def test_first_sync_links_every_segment_with_exact_lines(world: SegWorld) -> None:
    res = world.sync()
    assert res.exit_code == 0, res.output
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith("+")]
    co = world.co
    # Targets relative to the checkout, every segment's alike ([U2]), sources to the
    # workspace; --json carries the absolute paths.
    assert lines == [
        "+ .agents/skills/alpha -> skills/alpha",
        "+ .agents/skills/beta -> skills/beta",
        "+ .claude/CLAUDE.md -> projects/demo/AGENTS.md",
        "+ AGENTS.md -> projects/demo/AGENTS.md",
        "+ .agents/memory/a.md -> memory/a.md",
    ]
    for target, literal in world.targets().values():
        assert os.readlink(target) == literal
    assert not os.path.lexists(f"{co}/.agents/skills/unused")
    assert (co / "README.md").read_text() == "foreign\n"


def test_first_sync_json_operations_carry_their_segment(world: SegWorld) -> None:
    code, doc = world.json()
    assert code == 0
    check_segments(doc)
    ops = [(op["segment"], op["action"], op["target"], op["source"], op["status"])
           for op in doc["operations"]]
    assert ops == [
        ("skills", "CREATE", f"{world.co}/.agents/skills/alpha", world.skill("alpha"),
         "applied"),
        ("skills", "CREATE", f"{world.co}/.agents/skills/beta", world.skill("beta"),
         "applied"),
        ("instructions", "CREATE", f"{world.co}/.claude/CLAUDE.md", world.instructions,
         "applied"),
        ("instructions", "CREATE", f"{world.co}/AGENTS.md", world.instructions, "applied"),
        ("memory", "CREATE", f"{world.co}/.agents/memory/a.md", f"{world.ws}/memory/a.md",
         "applied"),
    ]
    assert doc["outcome"] == "applied"
    segs = doc["segments"]
    for name, creates in (("skills", 2), ("instructions", 2), ("memory", 1)):
        assert segs[name]["active"] is True
        assert segs[name]["success"] is True
        assert segs[name]["outcome"] == "applied"
        assert segs[name]["summary"] == {"create": creates, "noop": 0, "unlink": 0,
                                         "conflict": 0, "skip": 0}
    assert doc["summary"]["create"] == 5


def test_second_sync_is_noop_with_zero_mutating_syscalls(world: SegWorld) -> None:
    assert world.sync().exit_code == 0
    before = snapshot(*world.roots(), world.home)
    code, doc = world.json()
    assert code == 0
    check_segments(doc)
    assert changed(before, snapshot(*world.roots(), world.home)) == set()  # [E6]
    assert {op["action"] for op in doc["operations"]} == {"NOOP"}
    assert doc["outcome"] == "unchanged"
    for seg in doc["segments"].values():
        assert (seg["active"], seg["success"], seg["outcome"]) == (True, True, "unchanged")
    res = world.sync()
    assert res.exit_code == 0
    assert "+" not in "".join(ln.strip()[:1] for ln in res.stdout.splitlines())
    assert changed(before, snapshot(*world.roots(), world.home)) == set()


def test_dry_run_and_check_write_nothing(world: SegWorld) -> None:
    before = snapshot(*world.roots(), world.home)
    code, doc = world.json("--dry-run")
    assert code == 0
    check_segments(doc)
    assert doc["outcome"] == "planned" and doc["dry_run"] is True
    for seg in doc["segments"].values():
        assert (seg["active"], seg["success"], seg["outcome"]) == (True, True, "planned")
    assert {op["status"] for op in doc["operations"]} == {"planned"}
    assert world.sync("--check").exit_code == 7
    assert changed(before, snapshot(*world.roots(), world.home)) == set()
    assert world.sync().exit_code == 0
    assert world.sync("--check").exit_code == 0


def test_inactive_segments_are_present_and_unchanged(world: SegWorld) -> None:
    world.write_config(skills=None)
    (world.ws / "agents" / "codex.toml").unlink()
    (world.ws / "agents" / "claude-code.toml").unlink()
    code, doc = world.json()
    assert code == 0
    check_segments(doc)
    assert doc["segments"]["skills"] == {
        "active": False, "success": True, "outcome": "unchanged",
        "summary": {"create": 0, "noop": 0, "unlink": 0, "conflict": 0, "skip": 0}}
    assert doc["segments"]["instructions"]["active"] is False
    assert doc["segments"]["memory"]["outcome"] == "applied"
    assert not os.path.lexists(world.co / ".agents" / "skills")
    assert not os.path.lexists(world.co / "AGENTS.md")


# --------------------------------------------------------------------------- blocked


def block_skills(world: SegWorld) -> None:
    """The user's own directory at a skill target."""
    d = world.co / ".agents" / "skills" / "alpha"
    d.mkdir(parents=True)
    (d / "mine.md").write_text("user's\n")


def block_instructions(world: SegWorld) -> None:
    """The user's own ``.claude/CLAUDE.md``."""
    (world.co / ".claude").mkdir()
    (world.co / ".claude" / "CLAUDE.md").write_text("my own rules\n")


def block_memory(world: SegWorld) -> None:
    """A user's file at a memory target."""
    (world.co / ".agents" / "memory").mkdir(parents=True)
    (world.co / ".agents" / "memory" / "a.md").write_text("user's note\n")


BLOCKERS = {"skills": block_skills, "instructions": block_instructions,
            "memory": block_memory}
COMBOS = [c for n in range(1, 4) for c in itertools.combinations(BLOCKERS, n)]


@pytest.mark.parametrize("blocked", COMBOS, ids=["+".join(c) for c in COMBOS])
@pytest.mark.parametrize("registered", [True, False], ids=["listed", "explicit"])
def test_blocked_segments_write_nothing_while_the_others_proceed(
        tmp_path: Path, blocked: tuple[str, ...], registered: bool) -> None:
    world = SegWorld(tmp_path, register=registered)
    for name in blocked:
        BLOCKERS[name](world)
    config_before = (world.project_dir / "agent.toml").read_bytes()
    before = snapshot(*world.roots(), world.home)
    # The dry run says exactly what the real run will do ([E7]).
    args = () if registered else (str(world.co),)
    dry_code, dry = world.json(*args, "--dry-run")
    assert changed(before, snapshot(*world.roots(), world.home)) == set()
    code, doc = world.json(*args)
    assert code == dry_code == 1
    check_segments(doc)
    assert doc["outcome"] == dry["outcome"] == "blocked"
    assert doc["error"]["code"]
    for name, seg in doc["segments"].items():
        if name in blocked:
            assert (seg["outcome"], seg["success"]) == ("blocked", False), name
            assert dry["segments"][name]["outcome"] == "blocked"
            assert seg["summary"]["conflict"] >= 1
            statuses = {op["status"] for op in doc["operations"] if op["segment"] == name
                        and op["action"] in ("CREATE", "UNLINK")}
            assert statuses <= {"not_applied"}, (name, statuses)
        else:
            assert (seg["outcome"], seg["success"]) == ("applied", True), name
            assert dry["segments"][name]["outcome"] == "planned"
    # What was written: exactly the unblocked segments' links, nothing of a blocked one.
    after = snapshot(*world.roots(), world.home)
    written = {p for p in changed(before, after) if p not in before}
    expected: set[str] = set()
    for key, (target, literal) in world.targets().items():
        segment = key.partition(":")[0]
        if segment in blocked:
            if os.path.islink(target):
                assert before.get(target) == after[target]
        elif os.path.lexists(target) or segment not in blocked:
            assert os.readlink(target) == literal, target
            expected.add(target)
    parents = {f"{world.co}/.agents", f"{world.co}/.agents/skills",
               f"{world.co}/.agents/memory", f"{world.co}/.claude"}
    assert written - parents == expected
    for path in before.keys() & after.keys():
        if not path.startswith(str(world.co) + "/") and path != str(world.co):
            continue
        if before[path][0] & 0o170000 != 0o040000:  # every pre-existing file or link
            assert before[path] == after[path], path
    if set(blocked) == set(BLOCKERS):  # [G6]: refused as a whole — no write at all
        assert changed(before, after) == set()
        assert (world.project_dir / "agent.toml").read_bytes() == config_before
        assert doc["registered"] in (None, False, [])
    elif not registered:  # not refused as a whole: the checkout is registered
        assert str(world.co) in (world.project_dir / "agent.toml").read_text()


def test_blocked_text_output_names_only_writes_that_happened(world: SegWorld) -> None:
    block_memory(world)
    res = world.sync()
    assert res.exit_code == 1
    plus = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith("+")]
    assert plus == ["+ .agents/skills/alpha -> skills/alpha",
                    "+ .agents/skills/beta -> skills/beta",
                    "+ .claude/CLAUDE.md -> projects/demo/AGENTS.md",
                    "+ AGENTS.md -> projects/demo/AGENTS.md"]


# --------------------------------------------------------------------------- more checkouts


def test_a_segment_blocked_in_one_checkout_writes_nothing_in_any(world: SegWorld) -> None:
    """[P3]/[E8]: a conflict blocks its segment in every checkout; the other segments
    proceed in every checkout."""
    co2 = world.base / "co2"
    co2.mkdir()
    (co2 / "notes.txt").write_text("foreign\n")
    world.write_config(paths=[str(world.co), str(co2)])
    block_skills(world)
    before = snapshot(*world.roots(), world.home)
    code, doc = world.json()
    assert code == 1
    check_segments(doc)
    assert [doc["segments"][s]["outcome"] for s in ("skills", "instructions", "memory")] \
        == ["blocked", "applied", "applied"]
    assert not os.path.lexists(co2 / ".agents" / "skills")
    assert not os.path.lexists(world.co / ".agents" / "skills" / "beta")
    for co in (world.co, co2):
        assert os.readlink(co / "AGENTS.md") == world.instructions
        assert os.readlink(co / ".agents" / "memory" / "a.md") == f"{world.ws}/memory/a.md"
    after = snapshot(*world.roots(), world.home)
    assert before[f"{co2}/notes.txt"] == after[f"{co2}/notes.txt"]
    assert before[f"{world.co}/.agents/skills/alpha/mine.md"] == \
        after[f"{world.co}/.agents/skills/alpha/mine.md"]


def test_offline_checkout_skips_every_skill_and_instruction_target(world: SegWorld) -> None:
    """[G6]: an offline checkout gets a SKIP per skill and per instruction target."""
    gone = world.base / "not-here"
    world.write_config(paths=[str(world.co), str(gone)])
    code, doc = world.json()
    assert code == 0
    check_segments(doc)
    skips = sorted((op["segment"], op["resource"]) for op in doc["operations"]
                   if op["action"] == "SKIP" and op["checkout"] == str(gone))
    assert skips == [("instructions", ".claude/CLAUDE.md"), ("instructions", "AGENTS.md"),
                     ("memory", "a.md"), ("skills", "alpha"), ("skills", "beta")]
    assert not os.path.lexists(gone)


def test_skills_no_longer_selected_and_legacy_instruction_link_are_unlinked(
        world: SegWorld) -> None:
    """[G2]: only aikito's own link for an unselected skill is removed; everything else in
    ``.agents/skills`` is preserved with a warning.  [G4]: the legacy owned
    ``.agents/AGENTS.md`` is removed."""
    assert world.sync().exit_code == 0
    skills = world.co / ".agents" / "skills"
    os.symlink(world.base / "elsewhere", skills / "theirs")
    (skills / "real").mkdir()
    (skills / "note.txt").write_text("mine\n")
    os.symlink(world.instructions, world.co / ".agents" / "AGENTS.md")
    world.write_config(skills=("beta",))
    before = snapshot(*world.roots(), world.home)
    code, doc = world.json()
    assert code == 0, doc
    unlinks = sorted(op["target"] for op in doc["operations"] if op["action"] == "UNLINK")
    assert unlinks == [f"{world.co}/.agents/AGENTS.md", f"{skills}/alpha"]
    segs = {op["target"]: op["segment"] for op in doc["operations"]}
    assert segs[f"{world.co}/.agents/AGENTS.md"] == "instructions"
    assert segs[f"{skills}/alpha"] == "skills"
    after = snapshot(*world.roots(), world.home)
    assert changed(before, after) == {f"{skills}/alpha", str(skills),
                                      f"{world.co}/.agents/AGENTS.md", f"{world.co}/.agents"}
    assert sorted(os.listdir(skills)) == ["beta", "note.txt", "real", "theirs"]
    assert any(f["severity"] == "warning" for f in doc["findings"]), doc["findings"]


# --------------------------------------------------------------------------- the API


@pytest.mark.parametrize("blocked", COMBOS, ids=["+".join(c) for c in COMBOS])
def test_api_result_carries_each_segments_own_outcome(world: SegWorld,
                                                      blocked: tuple[str, ...]) -> None:
    """[E8] through ``Project.sync``: the ConflictError's result names each segment's own
    outcome; ``success`` is the conjunction of the segments'."""
    from aikito_mem import Project
    from aikito_mem.errors import ConflictError

    for name in blocked:
        BLOCKERS[name](world)
    project = Project.load("demo", workspace=str(world.ws))
    planned = project.dry_run()
    with pytest.raises(ConflictError) as info:
        project.sync()
    result = info.value.result
    assert result is not None and info.value.exit_code == 1
    assert result.outcome == planned.outcome == "blocked"
    words = {s.name: (s.outcome, s.success) for s in result.segments}
    for name in BLOCKERS:
        want = ("blocked", False) if name in blocked else ("applied", True)
        assert words[name] == want, (name, words)
        dry = {s.name: s.outcome for s in planned.segments}[name]
        assert dry == ("blocked" if name in blocked else "planned")
    assert result.success is False
