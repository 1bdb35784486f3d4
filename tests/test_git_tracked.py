"""[L1] targets tracked by git: real repositories with committed ``AGENTS.md``,
``.claude/CLAUDE.md`` and skill directories; the planner's tables with "tracked" as an
observed fact; the one ``git ls-files`` per checkout, none on a warm sync; git missing,
failing or slow; verification of a tracked target."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aikito_mem.model import (
    ABSENT,
    Action,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    Resource,
)
from aikito_mem.planner import instructions as planner_instructions
from aikito_mem.planner import skills as planner_skills
from aikito_mem.views import InstructionsView, InstructionTargetView, SkillsView
from aikito_mem.world import git as git_room
from tests.helpers.audit import RECORDER
from tests.helpers.cli import invoke
from tests.helpers.gitrepo import git, init_repo, needs_git, status
from tests.helpers.programs import executable
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

CLAUDE = '[agents.claude]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
CODEX = '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n'


def committed_world(ws: WS) -> str:
    """A workspace with a skill, instructions and a memory reference, and a checkout
    whose repository commits ``AGENTS.md``, ``.claude/CLAUDE.md`` and the skill."""
    ws.add_skill("review")
    ws.add_skill("lint")
    ws.add_agent("claude", CLAUDE)
    ws.add_agent("codex", CODEX)
    ws.write_instructions("demo", "# the workspace's instructions\n")
    ws.add_file("style.md", "s\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {
        "AGENTS.md": "# the repository's own\n",
        ".claude/CLAUDE.md": "# the repository's claude\n",
        ".agents/skills/review/SKILL.md": "# committed skill\n",
        "README": "r\n",
    })
    ws.write_config("demo", memory=["style.md"], paths=[co], skills=["review", "lint"])
    return co


def sync(ws: WS, *args: str) -> tuple[int, dict[str, object]]:
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json", *args)
    return res.exit_code, json.loads(res.stdout)


def ops_by_target(doc: dict[str, object]) -> dict[str, dict[str, object]]:
    ops = doc["operations"]
    assert isinstance(ops, list)
    return {op["target"]: op for op in ops}


# ------------------------------------------------------------------ real repositories


@needs_git
def test_committed_files_are_skipped_never_a_conflict(ws: WS) -> None:
    co = committed_world(ws)
    before = snapshot(co)
    code, doc = sync(ws)
    assert code == 0, doc
    ops = ops_by_target(doc)
    for rel in ("AGENTS.md", ".claude/CLAUDE.md", ".agents/skills/review"):
        op = ops[f"{co}/{rel}"]
        assert (op["action"], op["reason"], op["rule"]) == ("SKIP", "tracked by git", "L1")
    assert ops[f"{co}/.agents/skills/lint"]["action"] == "CREATE"
    assert ops[f"{co}/.agents/memory/style.md"]["action"] == "CREATE"
    findings = [f for f in doc["findings"] if f["code"] == "git.tracked_target"]
    assert sorted(f["path"] for f in findings) == sorted(
        f"{co}/{rel}" for rel in ("AGENTS.md", ".claude/CLAUDE.md", ".agents/skills/review"))
    assert all(f["severity"] == "warning" for f in findings)
    for f in findings:  # never a remedy that moves, deletes or adopts the file
        assert not any(w in f["message"] for w in ("adopt", "move", "remove", "delete"))
    # The repository's files are byte- and inode-identical; git sees no change to them.
    after = snapshot(co)
    for rel in ("AGENTS.md", ".claude/CLAUDE.md", ".agents/skills/review/SKILL.md"):
        assert after[f"{co}/{rel}"] == before[f"{co}/{rel}"]
    assert not [line for line in status(co) if not line.startswith("??")]
    # Every later sync is the same SKIP, exit 0, forever.
    code, again = sync(ws)
    assert code == 0 and again["outcome"] == "unchanged"


@needs_git
def test_text_output_says_tracked_and_exits_0(ws: WS) -> None:
    co = committed_world(ws)
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    assert "  ~ AGENTS.md: skipped (tracked by git)" in res.stdout
    assert f"{co}" in res.stdout and "tracked by git: it belongs to the repository" in res.stdout


@needs_git
def test_a_tracked_memory_target_stays_a_conflict_saying_so(ws: WS) -> None:
    ws.add_file("style.md", "s\n")
    ws.add_file("gone/x.md", "x\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {".agents/memory/style.md": "mine\n",
                                                ".agents/memory/new.md": "tracked\n"})
    ws.write_config("demo", memory=["style.md", "new.md"], paths=[co])
    code, doc = sync(ws)
    assert code == 1
    ops = ops_by_target(doc)
    for rel in ("style.md", "new.md"):  # new.md: its source is missing as well
        op = ops[f"{co}/.agents/memory/{rel}"]
        assert op["action"] == "CONFLICT"
        assert "git tracks it: it belongs to the repository" in op["reason"]
        remedy = op["remedy"]
        assert "adopt" not in remedy and "move it" not in remedy
        assert "out of the way" not in remedy and f"remove '{rel}' from memory" in remedy


@needs_git
def test_an_untracked_file_is_still_a_conflict_with_its_remedies(ws: WS) -> None:
    ws.write_instructions("demo", "# ws\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    Path(co, "AGENTS.md").write_text("untracked\n")
    Path(co, ".agents/skills/review").mkdir(parents=True)
    Path(co, ".agents/skills/review/notes").write_text("untracked\n")
    ws.add_skill("review")
    ws.write_config("demo", memory=[], paths=[co], skills=["review"])
    code, doc = sync(ws)
    assert code == 1
    ops = ops_by_target(doc)
    assert ops[f"{co}/AGENTS.md"]["action"] == "CONFLICT"
    assert ops[f"{co}/.agents/skills/review"]["action"] == "CONFLICT"
    assert not [f for f in doc["findings"] if f["code"].startswith("git.")]


@needs_git
def test_a_directory_is_tracked_when_git_tracks_a_file_in_it(ws: WS) -> None:
    ws.add_skill("a")
    ws.add_skill("b")
    co = init_repo(f"{ws.checkouts_dir}/repo", {".agents/skills/a/deep/SKILL.md": "x\n"})
    Path(co, ".agents/skills/b").mkdir()
    Path(co, ".agents/skills/b/untracked").write_text("u\n")
    ws.write_config("demo", memory=[], paths=[co], skills=["a", "b"])
    _code, doc = sync(ws, "--dry-run")
    ops = ops_by_target(doc)
    assert ops[f"{co}/.agents/skills/a"]["action"] == "SKIP"
    assert ops[f"{co}/.agents/skills/b"]["action"] == "CONFLICT"


@needs_git
def test_a_committed_owned_link_stays_noop(ws: WS) -> None:
    ws.write_instructions("demo", "# ws\n")
    co = init_repo(f"{ws.checkouts_dir}/repo")
    os.symlink(f"{ws.root}/projects/demo/AGENTS.md", f"{co}/AGENTS.md")
    git("add", "AGENTS.md", cwd=co)
    git("commit", "-q", "-m", "link", cwd=co)
    ws.write_config("demo", memory=[], paths=[co])
    code, doc = sync(ws)
    assert code == 0 and ops_by_target(doc)[f"{co}/AGENTS.md"]["action"] == "NOOP"


@needs_git
def test_a_checkout_in_a_subdirectory_of_its_repository(ws: WS) -> None:
    ws.write_instructions("demo", "# ws\n")
    top = init_repo(f"{ws.checkouts_dir}/mono", {"svc/AGENTS.md": "svc's own\n"})
    co = f"{top}/svc"
    ws.write_config("demo", memory=[], paths=[co])
    code, doc = sync(ws)
    assert code == 0 and ops_by_target(doc)[f"{co}/AGENTS.md"]["action"] == "SKIP"


# ------------------------------------------------------------- the cost of the question


def _git_calls(ws: WS, *args: str) -> tuple[int, list[list[str]], dict[str, object]]:
    """Run a sync in process; the exit code, every git subprocess it started, and the
    document."""
    RECORDER.seen.clear()
    calls: list[list[str]] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[bytes], argv: object, *a: object, **kw: object) -> None:
        if isinstance(argv, list):
            calls.append([str(x) for x in argv])
        real(self, argv, *a, **kw)  # type: ignore[arg-type]

    subprocess.Popen.__init__ = spy  # type: ignore[method-assign]
    RECORDER.armed = True
    try:
        res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json", *args)
    finally:
        RECORDER.armed = False
        subprocess.Popen.__init__ = real  # type: ignore[method-assign]
    return res.exit_code, calls, json.loads(res.stdout)


@needs_git
def test_a_warm_sync_starts_no_subprocess(ws: WS) -> None:
    """The structural half of §15's cost rule: a sync with everything linked asks git
    nothing; a foreign link at a target is asked about ([L1]: a committed link)."""
    ws.add_skill("review")
    ws.write_instructions("demo", "# ws\n")
    ws.add_file("style.md", "s\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    offline = f"{ws.checkouts_dir}/offline"
    ws.write_config("demo", memory=["style.md"], paths=[co, offline], skills=["review"])
    assert sync(ws)[0] == 0
    code, calls, doc = _git_calls(ws)
    assert code == 0 and doc["outcome"] == "unchanged"
    assert calls == [] and "subprocess.Popen" not in RECORDER.seen
    assert "open" in RECORDER.seen  # the witness was live
    ws.add_agent("claude", '[agents.claude]\nproject_instruction_path = "CLAUDE.md"\n')
    assert sync(ws)[0] == 0  # CLAUDE.md linked: owned from now on
    code, calls, doc = _git_calls(ws)
    assert code == 0 and doc["outcome"] == "unchanged" and calls == []
    os.unlink(f"{co}/CLAUDE.md")
    os.symlink("/elsewhere", f"{co}/CLAUDE.md")  # a foreign link: git is asked about it
    _code, calls, _doc = _git_calls(ws, "--dry-run")
    assert [c[c.index("--") + 1:] for c in calls] == [["CLAUDE.md"]]


@needs_git
def test_one_ls_files_per_checkout_with_every_occupied_target(ws: WS) -> None:
    co = committed_world(ws)
    other = init_repo(f"{ws.checkouts_dir}/other", {"AGENTS.md": "other\n"})
    ws.write_config("demo", memory=["style.md"], paths=[co, other], skills=["review", "lint"])
    _code, calls, _doc = _git_calls(ws, "--dry-run")
    asked = [c for c in calls if "ls-files" in c]
    assert len(asked) == len(calls) == 2
    first = asked[0]
    assert first[first.index("-C") + 1] == co
    assert first[first.index("--") + 1:] == [".agents/skills/review", ".claude/CLAUDE.md",
                                             "AGENTS.md"]


def test_a_checkout_outside_git_is_untracked_without_a_finding(ws: WS) -> None:
    ws.write_instructions("demo", "# ws\n")
    co = ws.checkout("plain")
    Path(co, "AGENTS.md").write_text("mine\n")
    ws.write_config("demo", memory=[], paths=[co])
    code, doc = sync(ws)
    assert code == 1 and ops_by_target(doc)[f"{co}/AGENTS.md"]["action"] == "CONFLICT"
    assert not [f for f in doc["findings"] if f["code"].startswith("git.")]


SLOW_GIT = f"#!/bin/sh\nexec {shutil.which('sleep')} 600\n"
FAILING_GIT = "#!/bin/sh\necho 'fatal: index file corrupt' >&2\nexit 128\n"


@pytest.mark.parametrize("kind", ["missing", "hung", "failing"])
def test_git_missing_failing_or_slow_is_untracked_with_one_finding(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    ws.write_instructions("demo", "# ws\n")
    ws.add_skill("review")
    co = ws.checkout("repo")
    Path(co, "AGENTS.md").write_text("mine\n")
    Path(co, ".agents/skills/review").mkdir(parents=True)
    ws.write_config("demo", memory=[], paths=[co], skills=["review"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if kind != "missing":
        executable(bin_dir, "git", SLOW_GIT if kind == "hung" else FAILING_GIT)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(git_room, "GIT_TIMEOUT", 0.3)
    code, doc = sync(ws)
    assert code == 1  # untracked: the conflicts of before
    ops = ops_by_target(doc)
    assert ops[f"{co}/AGENTS.md"]["action"] == "CONFLICT"
    assert ops[f"{co}/.agents/skills/review"]["action"] == "CONFLICT"
    [finding] = [f for f in doc["findings"] if f["code"].startswith("git.")]
    assert finding["code"] == "git.unavailable" and finding["severity"] == "warning"
    word = {"missing": "git is not installed", "hung": "did not answer within 0.3 s",
            "failing": "index file corrupt"}[kind]
    assert word in finding["message"] and finding["path"] == co


# ------------------------------------------------------------------ verification


@needs_git
def test_a_tracked_target_replaced_after_planning_makes_the_plan_stale(ws: WS) -> None:
    co = committed_world(ws)
    project = ws.project("demo")
    plan = project.plan()
    assert any(op.rule == "L1" for op in plan.operations)
    os.rename(f"{co}/AGENTS.md", f"{co}/AGENTS.old")
    Path(co, "AGENTS.md").write_text("# the repository's own\n")  # same bytes, new file
    before = snapshot(co)
    from aikito_mem.errors import StalePlanError

    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any(f"target {co}/AGENTS.md" in d for d in info.value.differences)
    assert snapshot(co) == before


@needs_git
def test_apply_of_a_saved_plan_with_tracked_targets(ws: WS, tmp_path: Path) -> None:
    co = committed_world(ws)
    out = str(tmp_path / "plan.toml")
    assert invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                  "--out", out).exit_code == 0
    git("rm", "-q", "--cached", "AGENTS.md", cwd=co)  # no longer tracked: a CONFLICT now
    res = invoke("--workspace", ws.root, "apply", out, "--json")
    assert res.exit_code == 3, res.output


# ------------------------------------------------------------------ the pure tables


def _skill(ws_root: str, name: str) -> Resource:
    return Resource(name, name, f"{ws_root}/skills/{name}")


@pytest.mark.parametrize("kind", [Kind.FILE, Kind.DIR])
def test_skills_table_tracked_is_skip(kind: Kind) -> None:
    obs = Observed(kind, None, 1, 2)
    view = SkillsView(Observed(Kind.DIR, None, 1, 1), (("review", obs),))
    target = "/co/.agents/skills/review"
    args = ("/co", Observed(Kind.DIR, None, 1, 0), view, (_skill("/ws", "review"),), "/ws",
            "/ws/projects/demo/agent.toml")
    ops, findings, _dirs = planner_skills.plan_checkout(*args, frozenset({target}))
    assert [(op.action, op.rule, op.reason) for op in ops] == [
        (Action.SKIP, "L1", "tracked by git")]
    assert [f.code for f in findings] == ["git.tracked_target"]
    ops, findings, _dirs = planner_skills.plan_checkout(*args)
    assert [op.action for op in ops] == [Action.CONFLICT] and not findings


@pytest.mark.parametrize("obs", [Observed(Kind.FILE, None, 1, 2), Observed(Kind.DIR, None, 1, 2),
                                 Observed(Kind.LINK, "/elsewhere", 1, 2), ABSENT])
def test_instructions_table_tracked_applies_to_files_directories_and_links(
        obs: Observed) -> None:
    source = InstructionSource("/ws/projects/demo/AGENTS.md", InstructionState.CONTENT)
    view = InstructionsView((InstructionTargetView("AGENTS.md", ("codex",), False, obs),))
    ops, findings, _ = planner_instructions.plan_checkout(
        "/co", source, view, frozenset({"/co/AGENTS.md"}))
    [op] = ops
    if obs.kind is not Kind.ABSENT:  # a committed link too ([L1])
        assert (op.action, op.rule, op.reason) == (Action.SKIP, "L1", "tracked by git")
        assert [f.code for f in findings] == ["git.tracked_target"]
    else:
        assert op.action is Action.CREATE
        assert not findings


def test_ls_files_answer_parsing(tmp_path: Path) -> None:
    assert git_room._covers(".agents/skills/a", [".agents/skills/a/x"])
    assert not git_room._covers(".agents/skills/a", [".agents/skills/ab"])
    assert git_room._covers("AGENTS.md", ["AGENTS.md"])
    assert git_room.tracked(str(tmp_path), []) == frozenset()
