"""[L5] [N1] ``aikito adopt`` of a skill in an agent's own skills directory
(``<checkout>/.claude/skills/NAME``, any registry agent's ``project_skills_path``), on real
directories: moved to ``<ws>/skills/NAME``, listed in ``skills``, linked back exactly
where it came from — the next sync links the rest (NOOP/CREATE, nothing else), with the
command the report prints; every rule of [H2] and [L5] as for ``.agents/skills/NAME``
(identical copy replaced, a differing one refused with a diff, a tracked one refused,
mounts and the workspace's own copy exit 4, a dry run that writes nothing, signals); the
agent's other own skills byte- and inode-identical; two agents sharing one directory; and
the sync's remedies naming adopt, pasted and run."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest

from aikito_mem import Project
from aikito_mem.commands.adopt import treemove
from aikito_mem.executor import execute
from aikito_mem.model import ABSENT, Action, Kind, Observed, Resource
from aikito_mem.planner import agent_skills as planner_agent_skills
from aikito_mem.views.agent_skills import AgentSkillsView
from tests.helpers import adopt, mounts
from tests.helpers.adopt import CLAUDE_SKILLS as CLAUDE
from tests.helpers.adopt import LISTED_CONFIG as CONFIG
from tests.helpers.adopt import adopt_json, adopt_world, skill_dir
from tests.helpers.cli import invoke
from tests.helpers.gitrepo import git, init_repo, needs_git
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

CURSOR = ('[agents.cursor]\nproject_skills_path = ".cursor/skills"\n\n'
          '[agents.cursor.detect]\npaths = [".cursor"]\n')


@pytest.fixture
def world(ws: WS) -> tuple[WS, Path]:
    """Project ``demo`` (skill ``base``) with checkout ``<base>/co/co``; agents claude-code
    (``.claude/skills``) and cursor (``.cursor/skills``), both detected."""
    co = adopt_world(ws, CONFIG, {"claude-code": CLAUDE, "cursor": CURSOR},
                     (".claude", ".cursor"))
    return ws, co


def make_skill(co: Path, name: str = "review", text: str = "# review\n",
               where: str = ".claude/skills") -> Path:
    return skill_dir(co / where, name, text)


def own_skills(co: Path) -> tuple[Path, Path]:
    """The agent's own skills in ``.claude/skills``: a directory and a file, aikito's
    business never."""
    own = co / ".claude" / "skills" / "my-own"
    own.mkdir(parents=True, exist_ok=True)
    (own / "SKILL.md").write_text("# the agent's own skill\n")
    notes = co / ".claude" / "skills" / "notes.txt"
    notes.write_text("a file of the user's\n")
    return own, notes


def refused(ws: WS, target: Path, code: str, exit_code: int = 1) -> dict[str, Any]:
    """As :func:`tests.helpers.adopt.refused`, and no next command either."""
    return adopt.refused(ws, target, code, exit_code, no_next=True)


def skill_ops(ws: WS, name: str) -> list[tuple[str, str]]:
    """(action, target) of skill ``name`` in the next sync's plan."""
    plan = Project.load("demo", workspace=ws.root).plan()
    return sorted((op.action.value, op.target) for op in plan.operations
                  if op.segment.value == "skills" and op.resource == name)


def in_sync(ws: WS) -> None:
    plan = Project.load("demo", workspace=ws.root).plan()
    ops = [op for op in plan.operations if op.segment.value == "skills"]
    assert ops and all(op.action in (Action.NOOP, Action.SKIP) for op in ops), ops


# --------------------------------------------------------------------------- adopted


def test_a_skill_in_claude_skills_is_moved_listed_and_linked_back_there_only(
    world: tuple[WS, Path]
) -> None:
    """The issue's case: the user's own ``.claude/skills/review`` becomes a workspace skill;
    adopt links back exactly what it took, and the next sync links the rest (CREATE at
    ``.agents/skills`` and ``.cursor/skills``, NOOP where adopt linked, nothing else)."""
    ws, co = world
    Project.load("demo", workspace=ws.root).sync()
    target = make_skill(co)
    own, notes = own_skills(co)
    kept = snapshot(own, notes)
    before = snapshot(ws.base)
    rc, doc = adopt_json(ws, target, "--dry-run")
    assert rc == 0 and doc["outcome"] == "planned" and doc["segment"] == "skills", doc
    rest = [f"{co}/.agents/skills/review", f"{co}/.cursor/skills/review"]
    assert doc["next"] == {"command": f"aikito --workspace {ws.root} sync project demo",
                           "targets": rest}
    assert changed(before, snapshot(ws.base)) == set()
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["outcome"] == "adopted", doc
    assert doc["destination"] == f"{ws.root}/skills/review" and doc["method"] == "rename"
    assert doc["target"] == str(target) and doc["reference"] == "review"
    assert [s["status"] for s in doc["steps"]] == ["applied"] * 3
    assert os.readlink(target) == f"{ws.root}/skills/review"
    assert Path(ws.root, "skills/review/scripts/run.sh").read_text() == "echo hi\n"
    assert not os.path.lexists(f"{co}/.agents/skills/review")  # the next sync's
    assert not os.path.lexists(f"{co}/.cursor/skills/review")
    assert Path(ws.config_path("demo")).read_text() == CONFIG.format(
        co=json.dumps(str(co))).replace('    "base",\n]', '    "base",\n    "review",\n]')
    assert snapshot(own, notes) == kept  # the agent's own skills: byte- and inode-identical
    assert doc["next"]["targets"] == rest
    assert skill_ops(ws, "review") == [("CREATE", rest[0]), ("CREATE", rest[1]),
                                       ("NOOP", str(target))]
    plan = Project.load("demo", workspace=ws.root).plan()
    assert {(op.action, op.resource) for op in plan.operations
            if op.action is not Action.NOOP and op.segment.value == "skills"} == {
        (Action.CREATE, "review")}
    res = invoke(*shlex.split(doc["next"]["command"])[1:])  # the printed command, run
    assert res.exit_code == 0, res.output
    in_sync(ws)
    assert snapshot(own, notes) == kept


def test_the_text_report_prints_the_command_that_links_the_rest(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run where the checkout is, TARGET spelt relative to it: the report names the rest
    relative to the checkout and prints the command alone on a line; pasted, it works."""
    ws, co = world
    make_skill(co)
    monkeypatch.chdir(co)
    res = invoke("--workspace", ws.root, "adopt", ".claude/skills/review")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "not linked by adopt" in line)
    assert lines[at].startswith("  not linked by adopt: .agents/skills/review, "
                                ".cursor/skills/review"), lines
    assert lines[at + 1] == f"    aikito --workspace {ws.root} sync project demo"
    assert os.readlink(co / ".claude/skills/review") == f"{ws.root}/skills/review"
    res = invoke(*shlex.split(lines[at + 1])[1:])
    assert res.exit_code == 0, res.output
    in_sync(ws)


def test_the_rest_waits_for_the_other_conflicts_of_the_skills_segment(
    world: tuple[WS, Path]
) -> None:
    """A differing ``.claude/skills/base`` blocks the skills segment: the report says the
    sync links the rest once that conflict is resolved, and lists it."""
    ws, co = world
    make_skill(co, "base", "# base, mine\n")
    target = make_skill(co)
    res = invoke("--workspace", ws.root, "adopt", str(target))
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    assert ("the next sync links them once the other conflicts (below) are resolved: "
            f"aikito --workspace {ws.root} sync project demo") in text
    assert f"! {co}/.claude/skills/base: found a directory" in text


def test_adopting_from_agents_skills_names_the_agents_directories_as_the_rest(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    target = make_skill(co, where=".agents/skills")
    rc, doc = adopt_json(ws, target)
    assert rc == 0, doc
    assert doc["next"]["targets"] == [f"{co}/.claude/skills/review",
                                      f"{co}/.cursor/skills/review"]


def test_an_undetected_agents_missing_directory_is_not_part_of_the_rest(
    world: tuple[WS, Path]
) -> None:
    """cursor not detected and ``.cursor/skills`` absent: its SKIP is no link to make."""
    ws, co = world
    os.rmdir(f"{ws.home}/.cursor")
    target = make_skill(co)
    rc, doc = adopt_json(ws, target)
    assert rc == 0, doc
    assert doc["next"]["targets"] == [f"{co}/.agents/skills/review"]
    assert not os.path.exists(co / ".cursor")


def test_nothing_left_for_the_sync_names_no_command(ws: WS) -> None:
    """One agent directory and ``.agents/skills/review`` already linked: no rest."""
    ws.add_skill("review")
    ws.add_agent("claude-code", CLAUDE)
    co = Path(ws.checkout("co"))
    ws.write_config("demo", paths=[str(co)], skills=["review"])
    (co / ".claude/skills").mkdir(parents=True)
    Project.load("demo", workspace=ws.root).sync()
    os.unlink(co / ".claude/skills/review")
    target = co / ".claude/skills/review"
    target.mkdir()
    (target / "SKILL.md").write_text("# review\n")
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["method"] == "replace" and doc["next"] is None, doc
    res = invoke("--workspace", ws.root, "adopt", str(target))
    assert "not linked by adopt" not in res.stdout


def test_an_identical_copy_in_claude_skills_is_replaced_by_the_link(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    target = co / ".claude/skills/base"
    target.mkdir(parents=True)
    (target / "SKILL.md").write_text("# base\n")
    own, notes = own_skills(co)
    kept = snapshot(own, notes)
    workspace = snapshot(ws.root, skip=(ws.config_path("demo"),))
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["method"] == "replace", doc
    assert [s["status"] for s in doc["steps"]] == ["applied", "skipped", "applied"]
    assert os.readlink(target) == f"{ws.root}/skills/base"
    assert changed(workspace, snapshot(ws.root, skip=(ws.config_path("demo"),))) == set()
    assert snapshot(own, notes) == kept


def test_an_identical_copy_that_changes_before_its_removal_is_kept(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """[H2]: each entry removed is re-checked by identity just before: one rewritten
    after the comparison is kept (and its directory), nothing is lost."""
    ws, co = world
    target = co / ".claude/skills/base"
    target.mkdir(parents=True)
    (target / "SKILL.md").write_text("# base\n")
    real = treemove.remove_inventoried

    def meanwhile(root: str, entries: Any, before_write: Any) -> None:
        (target / "SKILL.md").write_text("# base\n")  # same bytes, another mtime/ctime
        os.utime(target / "SKILL.md", ns=(1, 1))
        real(root, entries, before_write)

    monkeypatch.setattr(treemove, "remove_inventoried", meanwhile)
    rc, doc = adopt_json(ws, target)
    assert rc != 0 and doc["outcome"] in ("stale", "partial"), doc
    assert (target / "SKILL.md").read_text() == "# base\n"
    assert Path(ws.root, "skills/base/SKILL.md").read_text() == "# base\n"


def test_a_differing_copy_is_refused_with_a_diff(world: tuple[WS, Path]) -> None:
    ws, co = world
    target = make_skill(co, "base", "# base, edited\n")
    doc = refused(ws, target, "destination_exists")
    assert {d["path"] for d in doc["differences"]} == {"SKILL.md", "scripts",
                                                        "scripts/run.sh"}
    assert "+# base, edited" in doc["diff"]


@needs_git
def test_a_skill_git_tracks_in_claude_skills_belongs_to_the_repository(
    world: tuple[WS, Path]
) -> None:
    """[L1]: refused (exit 1); and the sync's SKIP of it names adopt nowhere."""
    ws, co = world
    target = make_skill(co, "base", "# base, committed\n")
    init_repo(co)
    git("add", ".claude/skills/base/SKILL.md", cwd=co)
    git("commit", "-qm", "skill", cwd=co)
    doc = refused(ws, target, "tracked")
    assert "it belongs to the repository" in doc["error"]["message"]
    assert "aikito adopt" not in doc["error"]["message"]
    plan = Project.load("demo", workspace=ws.root).plan()
    (op,) = [op for op in plan.operations if op.target == str(target)]
    assert op.action is Action.SKIP and op.reason == "tracked by git"
    words = [op.remedy or "", *(f.message for f in plan.findings if f.path == str(target))]
    assert words[1:] and not any("adopt" in w for w in words)


@needs_git
def test_a_tracked_directory_whose_source_is_missing_names_no_adopt(
    world: tuple[WS, Path]
) -> None:
    """The source missing makes it a CONFLICT, tracked or not; tracked, its remedy never
    names adopt ([L5]) — untracked, it does (adopt moves it to the workspace)."""
    ws, co = world
    ws.write_config("demo", raw=CONFIG.format(co=json.dumps(str(co))).replace(
        '"base",', '"base",\n    "gone",'))
    target = make_skill(co, "gone")
    plan = Project.load("demo", workspace=ws.root).plan()
    (op,) = [op for op in plan.operations if op.target == str(target)]
    assert op.action is Action.CONFLICT
    assert (op.remedy or "").startswith(
        f"aikito adopt {target} (moves it to {ws.root}/skills/gone and links it back)")
    init_repo(co)
    git("add", ".claude/skills/gone", cwd=co)
    git("commit", "-qm", "skill", cwd=co)
    plan = Project.load("demo", workspace=ws.root).plan()
    (op,) = [op for op in plan.operations if op.target == str(target)]
    assert op.action is Action.CONFLICT and "adopt" not in (op.remedy or ""), op


# --------------------------------------------------------------------------- [H2]: exit 4


def test_claude_skills_as_a_symlink_into_the_workspace(world: tuple[WS, Path]) -> None:
    """``.claude/skills`` is ``<ws>/skills``: TARGET is the workspace's own copy."""
    ws, co = world
    (co / ".claude").mkdir()
    os.symlink(f"{ws.root}/skills", co / ".claude/skills")
    refused(ws, co / ".claude/skills/base", "in_workspace", exit_code=4)


def test_a_target_inside_the_workspace_named_directly(world: tuple[WS, Path]) -> None:
    ws, _co = world
    refused(ws, Path(ws.root, "skills/base"), "in_workspace", exit_code=4)


def test_a_bind_mount_of_the_workspace_skill_at_the_target(world: tuple[WS, Path]) -> None:
    """A dev container's volume: ``<ws>/skills/base`` mounted at ``.claude/skills/base``
    is the same object — never "an identical copy" to remove."""
    ws, co = world
    target = co / ".claude/skills/base"
    with mounts.bind(f"{ws.root}/skills/base", target):
        refused(ws, target, "mount_point", exit_code=4)
        assert Path(ws.root, "skills/base/SKILL.md").read_text() == "# base\n"


def test_the_agents_skills_directory_bind_mounted_from_the_workspace(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    with mounts.bind(f"{ws.root}/skills", co / ".claude/skills"):
        doc = refused(ws, co / ".claude/skills/base", "in_workspace", exit_code=4)
        assert "the workspace's own copy" in doc["error"]["message"]


# --------------------------------------------------------------------------- refusals


def test_a_name_that_is_not_one_clean_component_is_refused(world: tuple[WS, Path]) -> None:
    ws, co = world
    make_skill(co, "review ")  # a trailing space: not a name [G1] accepts
    refused(ws, co / ".claude/skills/review ", "reference_invalid")
    (co / ".claude/skills/deep/inner").mkdir(parents=True)
    refused(ws, co / ".claude/skills/deep/inner", "outside")
    (co / ".claude/skills/note.md").write_text("x\n")
    refused(ws, co / ".claude/skills/note.md", "file_type")


def test_a_name_clashing_by_case_with_a_listed_skill_is_refused(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    make_skill(co, "Base")
    doc = refused(ws, co / ".claude/skills/Base", "reference_clash")
    assert "skills" in doc["error"]["message"]


def test_a_directory_of_no_registered_agent_is_refused_naming_what_adopt_takes(
    world: tuple[WS, Path]
) -> None:
    ws, co = world
    target = make_skill(co, where=".windsurf/skills")
    doc = refused(ws, target, "outside")
    message = doc["error"]["message"]
    assert "<checkout>/.agents/skills/NAME" in message
    assert "project_skills_path" in message
    assert ("the agents' own skills directories here: .claude/skills (claude-code), "
            ".cursor/skills (cursor)") in message


def test_a_claude_skills_directory_outside_every_checkout_is_not_registered(
    world: tuple[WS, Path], tmp_path: Path
) -> None:
    ws, _co = world
    target = make_skill(tmp_path / "elsewhere")
    doc = refused(ws, target, "not_registered")
    assert "register the checkout first" in doc["error"]["message"]


def test_a_symlinked_agent_directory_on_the_way_is_refused(
    world: tuple[WS, Path], tmp_path: Path
) -> None:
    ws, co = world
    real = tmp_path / "real-claude"
    make_skill(real, where="skills")
    os.symlink(real, co / ".claude")
    refused(ws, co / ".claude/skills/review", "outside")


# --------------------------------------------------------------------------- two agents


def test_two_agents_sharing_one_directory(ws: WS) -> None:
    """Two registry files name ``.claude/skills``: one directory, one adoption."""
    ws.add_skill("base")
    ws.add_agent("claude-code", CLAUDE)
    ws.add_agent("claude-alt", CLAUDE.replace("claude-code", "claude-alt").replace(
        "project_instruction_path", "# project_instruction_path"))
    co = Path(ws.checkout("co"))
    ws.write_config("demo", raw=CONFIG.format(co=json.dumps(str(co))))
    target = make_skill(co)
    own, notes = own_skills(co)
    kept = snapshot(own, notes)
    rc, doc = adopt_json(ws, target)
    assert rc == 0, doc
    assert os.readlink(target) == f"{ws.root}/skills/review"
    assert doc["next"]["targets"] == [f"{co}/.agents/skills/review"]
    assert skill_ops(ws, "review") == [("CREATE", f"{co}/.agents/skills/review"),
                                       ("NOOP", str(target))]
    assert snapshot(own, notes) == kept


# --------------------------------------------------------------------------- dry run, signals


def test_a_dry_run_writes_nothing_and_takes_no_lock(world: tuple[WS, Path]) -> None:
    """[E7]: the write-event witness sees nothing while the adoption is checked."""
    from aikito_mem.commands.adopt.run import adopt
    from tests.helpers.audit import RECORDER

    ws, co = world
    target = make_skill(co)
    before = snapshot(*ws.roots())
    RECORDER.events.clear()
    RECORDER.armed = True
    try:
        report = adopt(str(target), ws.root, dry_run=True)
        rc, doc = adopt_json(ws, target, "--dry-run")
    finally:
        RECORDER.armed = False
    assert report.exit_code == 0 and rc == 0, doc
    assert report.adoption is not None and len(report.adoption.rest) == 2
    assert RECORDER.events == []
    assert snapshot(*ws.roots()) == before


def test_a_signal_after_the_move_writes_nothing_more(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, co = world
    target = make_skill(co)
    cfg = Path(ws.config_path("demo")).read_bytes()
    real = treemove.move

    def signalled(*a: Any) -> Any:
        method = real(*a)
        os.kill(os.getpid(), signal.SIGINT)
        return method

    monkeypatch.setattr(treemove, "move", signalled)
    rc, doc = adopt_json(ws, target)
    assert rc == 130 and doc["outcome"] == "interrupted", doc
    assert [s["status"] for s in doc["steps"]] == ["applied", "not_applied", "not_applied"]
    assert doc["content_at"] == f"{ws.root}/skills/review"
    assert "'review' is not yet in the skills list" in doc["error"]["message"]
    assert Path(ws.config_path("demo")).read_bytes() == cfg
    assert not os.path.lexists(target)


def test_a_signal_during_the_link_finishes_it_and_reports(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, co = world
    target = make_skill(co)
    monkeypatch.setattr(execute, "before_write", lambda op: os.kill(os.getpid(),
                                                                    signal.SIGTERM))
    rc, doc = adopt_json(ws, target)
    assert rc == 143 and doc["outcome"] == "interrupted", doc
    assert [s["status"] for s in doc["steps"]] == ["applied"] * 3
    assert "was adopted before the signal arrived" in doc["error"]["message"]
    assert os.readlink(target) == f"{ws.root}/skills/review"


def test_a_link_failure_restores_the_list_and_moves_the_skill_back(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine no longer plans TARGET's CREATE when adopt links: ``review`` leaves the
    skills list again and the directory goes back to ``.claude/skills``, whole."""
    ws, co = world
    target = make_skill(co)
    kept = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    cfg = Path(ws.config_path("demo")).read_bytes()
    real = Project.plan

    def drifted(self: Project, *a: Any, **kw: Any) -> Any:
        plan = real(self, *a, **kw)
        ops = tuple(op.__class__(Action.CONFLICT, op.rule, op.checkout, op.target, "drift")
                    if op.target == str(target) else op for op in plan.operations)
        return plan.evolve(operations=ops)

    monkeypatch.setattr(Project, "plan", drifted)
    rc, doc = adopt_json(ws, target)
    assert rc == 3 and doc["outcome"] == "stale", doc
    assert [s["status"] for s in doc["steps"]] == ["undone", "undone", "failed"]
    assert Path(ws.config_path("demo")).read_bytes() == cfg
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == kept
    assert not os.path.lexists(f"{ws.root}/skills/review")
    assert doc["next"] is None


# --------------------------------------------------------------------------- remedies


def _remedy_command(output: str, target: str) -> list[str]:
    """The ``aikito … adopt …`` command of the conflict line of ``target`` in a sync's text
    report (the remedy in parentheses after the reason), as argv."""
    line = next(line for line in output.splitlines() if line.startswith(f"  ! {target}:"))
    found = re.search(r"\((aikito .*? adopt \S+) \(", line)
    assert found, line
    return shlex.split(found.group(1))


@pytest.mark.parametrize("case", ["identical", "source missing"])
def test_the_printed_remedy_pasted_resolves_the_conflict(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """[L5]: the sync's remedy for a real directory at ``.claude/skills/NAME`` names
    ``aikito adopt <that path>``; pasted where the sync ran, it resolves the conflict, and
    the next sync is in sync."""
    ws, co = world
    monkeypatch.setenv("COLUMNS", "1000")  # one line per conflict, to find it
    if case == "identical":
        target = co / ".claude/skills/base"
        target.mkdir(parents=True)
        (target / "SKILL.md").write_text("# base\n")
    else:
        ws.write_config("demo", raw=CONFIG.format(co=json.dumps(str(co))).replace(
            '"base",', '"base",\n    "gone",'))
        target = make_skill(co, "gone")
    own, notes = own_skills(co)
    kept = snapshot(own, notes)
    monkeypatch.chdir(co)
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 1, res.output
    argv = _remedy_command(res.stdout, ".claude/skills/" + target.name)
    assert argv[:3] == ["aikito", "--workspace", ws.root] and argv[3] == "adopt"
    assert argv[4] == f".claude/skills/{target.name}"  # relative to where it ran ([U2])
    res = invoke(*argv[1:])
    assert res.exit_code == 0, res.output
    assert os.readlink(target) == f"{ws.root}/skills/{target.name}"
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    in_sync(ws)
    assert snapshot(own, notes) == kept


def test_the_planner_names_adopt_only_for_a_real_directory(tmp_path: Path) -> None:
    """Pure: in an agent's directory, a directory at a skill's target names adopt; a
    file, a foreign link, a tracked directory (SKIP) and a blocked directory do not."""
    res = Resource("base", "base", "/ws/skills/base")
    root = Observed(Kind.DIR, None, 1, 2)

    def ops(found: Observed, tracked: frozenset[str] = frozenset(),
            view_root: Observed = root) -> list[str]:
        view = AgentSkillsView(".claude/skills", ("claude-code",), True, view_root,
                               (("base", found),) if view_root is root else ())
        out, findings, _dirs = planner_agent_skills.plan_dir(
            "/co", view, (res,), "/ws", "/ws/projects/p/agent.toml", tracked)
        return [op.remedy or "" for op in out] + [f.message for f in findings]

    (text,) = ops(Observed(Kind.DIR, None, 1, 3))
    assert text.startswith("aikito adopt /co/.claude/skills/base (replaces it with the link")
    assert not any("adopt" in t for t in ops(Observed(Kind.FILE, None, 1, 3)))
    assert not any("adopt" in t for t in ops(Observed(Kind.LINK, "/elsewhere", 1, 3)))
    tracked = ops(Observed(Kind.DIR, None, 1, 3), frozenset({"/co/.claude/skills/base"}))
    assert tracked and not any("adopt" in t for t in tracked)
    assert not any("adopt" in t for t in ops(ABSENT, view_root=Observed(Kind.FILE, None,
                                                                           1, 4)))
