"""Per-agent skills directories [N1], on real directories: an agent's own skill kept
byte- and inode-identical, two agents sharing one directory, detection through ``PATH``
and the home directory, ``prepare(agent)`` scoping, the writer's guard, staleness, a dry
run that writes nothing, the registry's refusals, and interop with the reference tool."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import attrs
import pytest

from aikito_mem import Project
from aikito_mem.config.registry_read import load_registry
from aikito_mem.errors import ConfigError, StalePlanError, UnsafePlanError
from aikito_mem.executor import guard
from aikito_mem.model import Action, Operation, SegmentName
from tests.helpers.programs import executable
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

CLAUDE = ('[agents.claude-code]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
          'project_skills_path = ".claude/skills"\n\n'
          '[agents.claude-code.detect]\ncommands = ["claude"]\npaths = [".claude"]\n')


def agent(name: str, skills: str, command: str = "", path: str = "") -> str:
    return (f'[agents.{name}]\nproject_skills_path = "{skills}"\n\n'
            f'[agents.{name}.detect]\ncommands = {[command] if command else []}\n'
            f'paths = {[path] if path else []}\n').replace("'", '"')


def setup(ws: WS, skills: tuple[str, ...] = ("review", "lint")) -> str:
    for s in skills:
        ws.add_skill(s)
    co = ws.checkout("app")
    ws.write_config("demo", paths=[co], skills=list(skills))
    return co


def actions(plan, prefix: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(op.action.value, op.target[len(prefix) + 1:]) for op in plan.operations
            if op.target.startswith(prefix + "/")]


def test_an_agents_own_skill_is_preserved_byte_and_inode_identical(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    own = Path(co, ".claude", "skills", "my-own")
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("# the agent's own skill\n")
    (Path(co, ".claude", "skills") / "notes.txt").write_text("a file of the user's\n")
    kept = snapshot(own, Path(co, ".claude", "skills", "notes.txt"))
    result = ws.project("demo").sync()
    assert result.success
    base = f"{co}/.claude/skills"
    assert os.readlink(f"{base}/review") == f"{ws.root}/skills/review"
    assert os.readlink(f"{base}/lint") == f"{ws.root}/skills/lint"
    assert snapshot(own, Path(base, "notes.txt")) == kept
    plan = ws.project("demo").plan()
    assert sorted(actions(plan, f"{co}/.claude/skills")) == [("NOOP", "lint"), ("NOOP", "review")]
    assert {f.path for f in plan.findings if f.code == "skills.foreign_entry"} == {
        f"{base}/my-own", f"{base}/notes.txt"}
    # A second sync writes nothing: the directory's times stay as they are ([E6]).
    before = snapshot(Path(co, ".claude"))
    ws.project("demo").sync()
    assert snapshot(Path(co, ".claude")) == before


def test_a_deselected_skill_is_unlinked_there_too(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(co, ".claude").mkdir()
    Path(ws.home, ".claude").mkdir()
    ws.project("demo").sync()
    ws.write_config("demo", paths=[co], skills=["review"])
    ws.project("demo").sync()
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["review"]
    assert sorted(os.listdir(f"{co}/.agents/skills")) == ["review"]


def test_detection_by_home_path_creates_the_directory(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    plan = ws.project("demo").plan()
    assert [a for a, _ in actions(plan, f"{co}/.claude/skills")] == ["SKIP", "SKIP"]
    assert not os.path.exists(f"{co}/.claude")
    Path(ws.home, ".claude").mkdir()
    ws.project("demo").sync()
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["lint", "review"]
    assert not os.path.islink(f"{co}/.claude") and not os.path.islink(f"{co}/.claude/skills")


def test_detection_by_path_and_none_without_it(ws: WS, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    ws.project("demo").sync()
    assert not os.path.exists(f"{co}/.claude")
    executable(tmp_path / "bin", "claude")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    ws.project("demo").sync()
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["lint", "review"]


def test_an_existing_directory_is_used_without_detection(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(co, ".claude", "skills").mkdir(parents=True)
    ws.project("demo").sync()
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["lint", "review"]


def test_two_agents_naming_one_directory_are_one_target(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("one", agent("one", ".shared/skills", path=".one"))
    ws.add_agent("two", agent("two", ".shared/skills", path=".two"))
    registry = load_registry(ws.root)
    assert [(d.path, d.agents) for d in registry.skill_dirs] == [
        (".shared/skills", ("one", "two"))]
    Path(ws.home, ".two").mkdir()  # only the second is detected: the directory is made
    plan = ws.project("demo").plan()
    assert sorted(actions(plan, f"{co}/.shared/skills")) == [("CREATE", "lint"),
                                                             ("CREATE", "review")]
    ws.project("demo").sync()
    assert sorted(os.listdir(f"{co}/.shared/skills")) == ["lint", "review"]


def test_agents_skills_itself_adds_nothing(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("codex", agent("codex", ".agents/skills", path=".codex"))
    Path(ws.home, ".codex").mkdir()
    plan = ws.project("demo").plan()
    assert load_registry(ws.root).skill_dirs == ()
    assert sorted(op.target for op in plan.operations if op.segment is SegmentName.SKILLS) == [
        f"{co}/.agents/skills/lint", f"{co}/.agents/skills/review"]


def test_prepare_links_only_that_agents_directory(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    ws.add_agent("roo", agent("roo", ".roo/skills", path=".roo"))
    Path(ws.home, ".claude").mkdir()
    Path(ws.home, ".roo").mkdir()
    Project.load("demo", workspace=ws.root).prepare("claude-code")
    assert sorted(os.listdir(f"{co}/.agents/skills")) == ["lint", "review"]
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["lint", "review"]
    assert not os.path.exists(f"{co}/.roo")


def test_a_dry_run_writes_nothing(ws: WS) -> None:
    setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(ws.home, ".claude").mkdir()
    before = snapshot(*ws.roots())
    plan = ws.project("demo").plan()
    assert any(op.rule == "N1" and op.action is Action.CREATE for op in plan.operations)
    assert snapshot(*ws.roots()) == before


def test_a_symlinked_directory_blocks_the_skills_segment_and_is_kept(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(co, ".claude").mkdir()
    elsewhere = ws.base / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, f"{co}/.claude/skills")
    result = ws.project("demo").plan()
    assert SegmentName.SKILLS in result.blocked_segments
    assert os.readlink(f"{co}/.claude/skills") == str(elsewhere)
    assert os.listdir(elsewhere) == []


# ------------------------------------------------------------------- guard and staleness


def test_the_guard_accepts_exactly_the_registry_directories(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(ws.home, ".claude").mkdir()
    plan = ws.project("demo").plan()
    guard.check(plan)  # every planned write is one the engine derives
    create = next(op for op in plan.operations if op.rule == "N1" and op.resource == "review")
    elsewhere = attrs.evolve(create, target=f"{co}/.cursor/skills/review")
    forged = attrs.evolve(plan, operations=(*plan.operations, elsewhere))
    with pytest.raises(UnsafePlanError) as info:
        guard.check(forged)
    assert ".cursor/skills/review" in info.value.message
    deep = attrs.evolve(create, target=f"{co}/.claude/skills/review/x")
    with pytest.raises(UnsafePlanError):
        guard.check(attrs.evolve(plan, operations=(*plan.operations, deep)))
    other_source = attrs.evolve(create, source=f"{ws.root}/skills/lint")
    with pytest.raises(UnsafePlanError):
        guard.check(attrs.evolve(plan, operations=(other_source,)))


def test_the_guard_refuses_unlinking_a_link_it_does_not_own(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(co, ".claude", "skills").mkdir(parents=True)
    os.symlink("/somewhere/else", f"{co}/.claude/skills/theirs")
    plan = ws.project("demo").plan()
    theirs = next(f for f in plan.findings if f.path == f"{co}/.claude/skills/theirs")
    assert theirs.code == "skills.foreign_entry"
    base = next(op for op in plan.operations if op.rule == "N1")
    from aikito_mem.model import Kind, Observed

    forged = Operation(Action.UNLINK, "N1", co, f"{co}/.claude/skills/theirs", "forged",
                       observed=Observed(Kind.LINK, "/somewhere/else"),
                       segment=SegmentName.SKILLS)
    with pytest.raises(UnsafePlanError):
        guard.check(attrs.evolve(plan, operations=(*plan.operations, forged)))
    assert base.segment is SegmentName.SKILLS


def test_detection_changing_between_plan_and_execute_is_stale(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    project = ws.project("demo")
    plan = project.plan()  # not detected: SKIPs recorded with the detection
    assert [p.detected for p in plan.skill_dirs] == [False]
    Path(ws.home, ".claude").mkdir()
    before = snapshot(co)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any("skills directory .claude/skills" in d for d in info.value.differences)
    assert snapshot(co) == before


def test_the_directory_replaced_between_plan_and_execute_is_stale(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(co, ".claude", "skills").mkdir(parents=True)
    project = ws.project("demo")
    plan = project.plan()
    os.rmdir(f"{co}/.claude/skills")
    os.symlink(str(ws.base), f"{co}/.claude/skills")
    with pytest.raises(StalePlanError):
        project.execute(plan)
    assert not [n for n in os.listdir(ws.base) if n in ("review", "lint")]


def test_a_registry_edit_of_the_directory_is_stale(ws: WS) -> None:
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    Path(co, ".claude", "skills").mkdir(parents=True)
    project = ws.project("demo")
    plan = project.plan()
    ws.add_agent("claude-code", CLAUDE.replace(".claude/skills", ".claude/other"))
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any("skills directories of the agent registry changed" in d
               for d in info.value.differences)


# ------------------------------------------------------------------- registry refusals


@pytest.mark.parametrize(("files", "message"), [
    ({"a": agent("a", ".x/skills"), "b": agent("b", ".x/skills/inner")},
     "is inside the skills directory"),
    ({"a": '[agents.a]\nproject_instruction_path = ".x/skills/README.md"\n',
      "b": agent("b", ".x/skills")}, "are one inside the other"),
    ({"a": '[agents.a]\nproject_instruction_path = ".x"\n', "b": agent("b", ".x/skills")},
     "are one inside the other"),
])
def test_directories_that_would_overlap_are_refused(ws: WS, files: dict[str, str],
                                                    message: str) -> None:
    for name, text in files.items():
        ws.add_agent(name, text)
    with pytest.raises(ConfigError) as info:
        load_registry(ws.root)
    assert message in info.value.message
    assert info.value.path is not None and info.value.path.startswith(f"{ws.root}/agents/")


# ------------------------------------------------------------------ the reference tool


def test_interop_with_the_reference_tool_stays_noop(ws: WS) -> None:
    """Where ``make bench`` installed aikito 1.61.1: it accepts a registry with
    ``project_skills_path``, and after its sync ours plans only NOOPs (and back)."""
    exe = Path(__file__).resolve().parent.parent / "bench" / ".cache" / "ref-venv" / "bin" / (
        "aikito")
    if not exe.exists():
        pytest.skip("the reference tool is not installed (make bench installs it)")
    co = setup(ws)
    for d in ("agents", "subagents"):
        Path(ws.root, d).mkdir(exist_ok=True)
    Path(ws.root, "layout.toml").write_text("version = 2\n")
    ws.add_agent("claude-code", CLAUDE.replace(
        "project_skills_path", 'skills_path = ".claude/skills"\nproject_skills_path'))
    Path(ws.home, ".claude").mkdir()
    ws.project("demo").sync()
    env = {"HOME": ws.home, "AIKITO_DIR": ws.root, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(exe), "sync", "project", "demo"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = ws.project("demo").plan()
    skills_ops = [op for op in plan.operations if op.segment is SegmentName.SKILLS]
    assert skills_ops and {op.action for op in skills_ops} == {Action.NOOP}
    assert sorted(os.listdir(f"{co}/.claude/skills")) == ["lint", "review"]


def test_a_skill_git_tracks_in_the_agents_directory_is_skipped_not_a_conflict(
    ws: WS,
) -> None:
    """[L1] in a per-agent directory: the repository's own committed skill of the same
    name is SKIP "tracked by git", never a CONFLICT blocking the segment."""
    co = setup(ws)
    ws.add_agent("claude-code", CLAUDE)
    own = Path(co, ".claude", "skills", "review")
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("# the repository's review skill\n")
    env = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "HOME": ws.home, "PATH": os.environ.get("PATH", "")}
    for args in (["init", "-q"], ["add", "."],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=co, check=True, env=env, capture_output=True)
    plan = ws.project("demo").plan()
    review = next(op for op in plan.operations if op.target == f"{co}/.claude/skills/review")
    assert (review.action, review.reason) == (Action.SKIP, "tracked by git")
    assert SegmentName.SKILLS not in plan.blocked_segments
    assert "git.tracked_target" in {f.code for f in plan.findings}


def test_doctor_excludes_each_link_of_an_agents_directory(ws: WS) -> None:
    """[L2] knows the new targets: each link aikito makes in ``.claude/skills`` gets a
    pattern of its own (the directory may hold the agent's own, committed skills), and
    after ``doctor --fix`` and a sync git sees nothing new."""
    from aikito_mem.commands.doctor.git import BEGIN, END
    from tests.helpers.cli import invoke
    from tests.helpers.gitrepo import init_repo, status

    for s in ("review", "lint"):
        ws.add_skill(s)
    ws.add_agent("claude-code", CLAUDE)
    co = init_repo(f"{ws.checkouts_dir}/repo", {".claude/skills/own/SKILL.md": "ours\n"})
    ws.write_config("demo", paths=[co], skills=["lint", "review"])
    res = invoke("--workspace", ws.root, "doctor", "--fix")
    assert res.exit_code in (0, 1), res.output
    block = Path(co, ".git/info/exclude").read_text().split(BEGIN + "\n", 1)[1]
    lines = block.split(END)[0].splitlines()
    assert "/.claude/skills/lint" in lines and "/.claude/skills/review" in lines
    assert "/.claude/skills/" not in lines
    assert invoke("--workspace", ws.root, "sync", "project", "demo").exit_code == 0
    assert os.path.islink(f"{co}/.claude/skills/lint")
    assert [line for line in status(co) if ".claude" in line] == []
