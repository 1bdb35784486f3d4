"""§13 Segments: skills and project instructions — [G1]–[G7].

Black-box conformance, from SPEC.md alone: see :mod:`tests.conformance`.  Real ``aikito``
processes in a fresh home, real temporary directories, real ``git`` where a target is
tracked; an agent is detected through an executable on the run's ``PATH`` or a path under
its home directory, both the test's own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conformance._support import (
    W,
    assert_config_error,
    assert_schema,
    hold_lock,
    op_for,
    ops,
    save_plan,
    tlist,
)
from tests.helpers.gitrepo import git, init_repo, needs_git
from tests.helpers.snapshots import recreate, snapshot

#: A command no machine has: an agent is detected through it only where a test puts it.
FAKE = "aikito-conformance-agent"
SEGMENTS = ("skills", "instructions", "memory")
SUMMARY_KEYS = ("create", "noop", "unlink", "conflict", "skip")


def _world(w: W, skills=("alpha",), memory=("style.md",), agents_md: str | None = "Be kind.\n",
           paths=None, extra: str = "") -> None:
    """Skills, one memory file and the project's ``AGENTS.md`` (unless ``None``)."""
    for s in skills:
        w.builder.add_skill(s)
    for m in memory:
        w.mem(m)
    if agents_md is not None:
        w.builder.write_instructions("demo", agents_md)
    w.agent(memory=list(memory), paths=paths, extra=f"skills = {tlist(skills)}\n" + extra)


def _agent(w: W, name: str, target: str | None, *, commands=(), paths=(),
           more: str = "") -> Path:
    """``<ws>/agents/<name>.toml``: the agent's instruction target and its detection."""
    text = f"[agents.{name}]\n"
    if target is not None:
        text += f"project_instruction_path = {tlist([target])[1:-1]}\n"
    text += more
    text += (f"\n[agents.{name}.detect]\ncommands = {tlist(commands)}\n"
             f"paths = {tlist(paths)}\n")
    return Path(w.builder.add_agent(name, text))


def _fake_path(w: W) -> dict:
    """An environment whose ``PATH`` starts with a directory holding :data:`FAKE`."""
    bin_dir = w.tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / FAKE
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def _skill(w: W, name: str) -> str:
    return str(w.ws / "skills" / name)


def _agents_md(w: W) -> str:
    return str(w.ws / "projects" / "demo" / "AGENTS.md")


def _seg(doc, segment: str) -> list[dict]:
    return [o for o in doc["operations"] if o["segment"] == segment]


def _acts(doc, segment: str) -> list[tuple[str, str]]:
    return [(o["action"], o["target"]) for o in _seg(doc, segment)]


# ------------------------------------------------------------------------------- [G1]


@pytest.mark.parametrize(("value", "names"), [
    ('"alpha"', ["skills"]),
    ('["ok", 3]', ["skills[1]"]),
    ('[["alpha"]]', ["skills[0]"]),
    ('{alpha = true}', ["skills"]),
    ('["a/b"]', ["skills[0]", "a/b"]),
    ('["."]', ["skills[0]"]),
    ('[".."]', ["skills[0]"]),
    ('[""]', ["skills[0]"]),
    ('[" alpha"]', ["skills[0]"]),
    ('["al\\\\pha"]', ["skills[0]"]),
    ('["al\\u200dpha"]', ["skills[0]"]),
    ('["alpha", "alpha"]', ["alpha"]),
    ('["Alpha", "alpha"]', ["Alpha", "alpha"]),
    ('["\\u00e9t\\u00e9", "e\\u0301te\\u0301"]', ["skills[0]", "skills[1]"]),
])
def test_G1_a_bad_skills_value_is_a_config_error_naming_key_and_index(w, value, names):
    w.builder.add_skill("alpha")
    w.builder.add_skill("ok")
    w.agent(extra=f"skills = {value}\n")
    before = snapshot(w.co, w.ws)
    r = w.sync("--json")
    assert_config_error(r, str(w.toml), *names)
    assert snapshot(w.co, w.ws) == before


def test_G1_skills_as_a_string_is_never_read_per_character(w):
    for s in ("a", "l", "p", "h"):
        w.builder.add_skill(s)
    w.agent(extra='skills = "alpha"\n')
    r = w.sync("--json")
    assert_config_error(r, "skills")
    assert not (w.co / ".agents").exists()


@pytest.mark.parametrize("mode", ['"link"', '"Link"', '"LINK"'])
def test_G1_sync_mode_link_in_any_case_is_accepted(w, mode):
    _world(w, extra=f"sync_mode = {mode}\n")
    r, _doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.co / ".agents/skills/alpha") == _skill(w, "alpha")


@pytest.mark.parametrize("mode", ['"copy"', '"Copy"', '"COPY"'])
def test_G1_sync_mode_copy_is_a_config_error_saying_this_engine_only_links(w, mode):
    _world(w, extra=f"sync_mode = {mode}\n")
    before = snapshot(w.co, w.ws)
    doc = assert_config_error(w.sync("--json"), "sync_mode")
    msg = doc["error"]["message"]
    assert "only links" in msg and "reference tool" in msg, msg
    assert snapshot(w.co, w.ws) == before


@pytest.mark.parametrize("mode", ['"lnk"', '"symlink"', '""', "1", "true", '["link"]'])
def test_G1_any_other_sync_mode_is_a_config_error(w, mode):
    _world(w, extra=f"sync_mode = {mode}\n")
    before = snapshot(w.co, w.ws)
    assert_config_error(w.sync("--json"), "sync_mode")
    assert snapshot(w.co, w.ws) == before


# ------------------------------------------------------------------------------- [G2]


def test_G2_a_skill_is_linked_with_the_canonical_literal_then_noop(w):
    _world(w, skills=("alpha", "beta"))
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "skills") == [("CREATE", str(w.co / ".agents/skills" / s))
                                    for s in ("alpha", "beta")]
    for s in ("alpha", "beta"):
        link = w.co / ".agents/skills" / s
        assert os.readlink(link) == _skill(w, s)
    assert (w.co / ".agents/skills").is_dir() and not (w.co / ".agents/skills").is_symlink()
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "unchanged", r
    assert {o["action"] for o in _seg(doc, "skills")} == {"NOOP"}


def test_G2_a_relative_literal_that_normalises_to_the_source_is_owned(w):
    _world(w)
    (w.co / ".agents/skills").mkdir(parents=True)
    os.symlink(os.path.relpath(_skill(w, "alpha"), w.co / ".agents/skills"),
               w.co / ".agents/skills/alpha")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "skills") == [("NOOP", str(w.co / ".agents/skills/alpha"))]


@pytest.mark.parametrize("how", ["missing", "a file", "outside", "broken link"])
def test_G2_an_unusable_skill_source_is_a_conflict_and_memory_still_applies(w, how):
    _world(w, skills=("alpha", "beta"))
    src = Path(_skill(w, "beta"))
    for p in src.iterdir():
        p.unlink()
    src.rmdir()
    if how == "a file":
        src.write_text("not a directory\n")
    elif how == "outside":
        (w.tmp / "elsewhere").mkdir()
        os.symlink(w.tmp / "elsewhere", src)
    elif how == "broken link":
        os.symlink(w.ws / "skills" / "nowhere", src)
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert_schema(doc, 1)
    (conflict,) = op_for(doc, w.co / ".agents/skills/beta")
    assert conflict["action"] == "CONFLICT" and conflict["segment"] == "skills"
    assert doc["segments"]["skills"]["success"] is False
    assert doc["segments"]["skills"]["outcome"] == "blocked"
    assert not (w.co / ".agents/skills").exists()  # nothing of the blocked segment
    assert doc["segments"]["memory"]["outcome"] == "applied"
    assert os.readlink(w.rt("style.md")) == w.src("style.md")


def test_G2_a_skill_source_symlinked_inside_the_skills_root_is_allowed(w):
    _world(w, skills=("alpha",))
    os.symlink(_skill(w, "alpha"), w.ws / "skills" / "beta")
    w.agent(memory=["style.md"], extra='skills = ["alpha", "beta"]\n')
    r, _doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.co / ".agents/skills/beta") == _skill(w, "beta")


@pytest.mark.parametrize("what", ["file", "directory", "foreign link", "dangling link"])
def test_G2_anything_else_at_a_skill_target_is_a_conflict_preserved(w, what):
    _world(w)
    target = w.co / ".agents/skills/alpha"
    target.parent.mkdir(parents=True)
    if what == "file":
        target.write_text("mine\n")
    elif what == "directory":
        target.mkdir()
        (target / "SKILL.md").write_text("# my own alpha\n")
    elif what == "foreign link":
        os.symlink(w.tmp, target)
    else:
        os.symlink(w.tmp / "nothing", target)
    before = snapshot(w.co / ".agents/skills")
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert [o["action"] for o in op_for(doc, target)] == ["CONFLICT"]
    assert snapshot(w.co / ".agents/skills") == before


def test_G2_a_deselected_owned_link_is_unlinked_foreign_entries_warned_and_kept(w):
    _world(w, skills=("alpha", "beta"))
    assert w.sync().rc == 0
    skills = w.co / ".agents/skills"
    (skills / "mine").mkdir()
    (skills / "notes.txt").write_text("mine\n")
    os.symlink(_skill(w, "alpha"), skills / "alias")  # owned by no name: foreign
    kept = snapshot(skills / "mine", skills / "notes.txt", skills / "alias")
    w.agent(memory=["style.md"], extra='skills = ["alpha"]\n')
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert [o["target"] for o in ops(doc, "UNLINK")] == [str(skills / "beta")]
    assert not os.path.lexists(skills / "beta")
    assert snapshot(skills / "mine", skills / "notes.txt", skills / "alias") == kept
    warned = {f["path"] for f in doc["findings"] if f["severity"] == "warning"}
    assert {str(skills / "mine"), str(skills / "notes.txt"), str(skills / "alias")} <= warned
    assert doc["segments"]["skills"]["success"] is True


def test_G2_a_deselected_link_is_unlinked_even_when_its_skill_is_gone(w):
    _world(w, skills=("alpha", "beta"))
    assert w.sync().rc == 0
    (w.ws / "skills/beta/SKILL.md").unlink()
    (w.ws / "skills/beta").rmdir()
    w.agent(memory=["style.md"], extra="skills = []\n")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert sorted(o["target"] for o in ops(doc, "UNLINK")) == [
        str(w.co / ".agents/skills" / s) for s in ("alpha", "beta")]
    assert not os.path.lexists(w.co / ".agents/skills/beta")


@pytest.mark.parametrize("what", ["file", "link"])
def test_G2_agents_skills_not_a_real_directory_blocks_the_skills_segment(w, what):
    _world(w)
    (w.co / ".agents").mkdir()
    if what == "file":
        (w.co / ".agents/skills").write_text("x\n")
    else:
        (w.tmp / "real").mkdir()
        os.symlink(w.tmp / "real", w.co / ".agents/skills")
    before = snapshot(w.co / ".agents/skills", w.tmp / "real")
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert doc["segments"]["skills"]["outcome"] == "blocked"
    assert {o["action"] for o in _seg(doc, "skills")} == {"CONFLICT"}
    assert doc["segments"]["memory"]["outcome"] == "applied"
    assert snapshot(w.co / ".agents/skills", w.tmp / "real") == before


def _committed_target_is_skipped(w, target: str, files: dict[str, str]) -> dict:
    """[L1]: ``files`` committed in the checkout, ``target`` (relative) among them or
    holding them: a SKIP "tracked by git", exit 0, the target byte- and inode-identical."""
    _world(w)
    init_repo(w.co, files)
    before = snapshot(w.co / target)
    r, doc = w.jsync()
    assert r.rc == 0, r
    (op,) = op_for(doc, w.co / target)
    assert op["action"] == "SKIP" and op["reason"] == "tracked by git"
    assert snapshot(w.co / target) == before
    return doc


@needs_git
def test_G2_a_skill_target_git_tracks_is_a_skip_tracked_by_git(w):
    doc = _committed_target_is_skipped(w, ".agents/skills/alpha",
                                       {".agents/skills/alpha/SKILL.md": "# committed\n"})
    assert "git.tracked_target" in {f["code"] for f in doc["findings"]}


# ------------------------------------------------------------------------------- [G3]


def test_G3_without_an_agents_directory_the_one_target_is_AGENTS_md(w):
    _world(w)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "instructions") == [("CREATE", str(w.co / "AGENTS.md"))]
    assert os.readlink(w.co / "AGENTS.md") == _agents_md(w)


def test_G3_an_empty_agents_directory_means_no_targets(w):
    _world(w)
    (w.ws / "agents").mkdir()
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _seg(doc, "instructions") == []
    assert doc["segments"]["instructions"]["active"] is False
    assert not os.path.lexists(w.co / "AGENTS.md")


def test_G3_registry_targets_agents_sharing_one_and_an_agent_without_a_path(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", commands=[FAKE])
    _agent(w, "codex", "AGENTS.md")
    _agent(w, "amp", "AGENTS.md")
    _agent(w, "plain", None, commands=[FAKE])
    r, doc = w.jsync(extra_env=_fake_path(w))
    assert r.rc == 0, r
    assert _acts(doc, "instructions") == [("CREATE", str(w.co / ".claude/CLAUDE.md")),
                                          ("CREATE", str(w.co / "AGENTS.md"))]
    for t in (".claude/CLAUDE.md", "AGENTS.md"):
        assert os.readlink(w.co / t) == _agents_md(w)


def test_G3_other_files_of_the_agents_directory_are_no_agents(w):
    _world(w)
    _agent(w, "codex", "CODEX.md")
    (w.ws / "agents" / "README.md").write_text('project_instruction_path = "X.md"\n')
    (w.ws / "agents" / "old.toml.bak").write_text("not toml [\n")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "instructions") == [("CREATE", str(w.co / "CODEX.md"))]


def test_G3_a_target_dropped_from_the_registry_is_left_as_it_is(w):
    _world(w)
    claude = _agent(w, "claude", "CLAUDE.md")
    _agent(w, "codex", "AGENTS.md")
    assert w.sync().rc == 0
    claude.unlink()
    before = snapshot(w.co / "CLAUDE.md")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert [o["target"] for o in _seg(doc, "instructions")] == [str(w.co / "AGENTS.md")]
    assert snapshot(w.co / "CLAUDE.md") == before


def test_G3_without_an_agents_directory_any_agent_prepares_AGENTS_md(api_env):
    w = api_env
    _world(w)
    from aikito_mem import Project

    prepared = Project.load("demo", workspace=str(w.ws)).prepare("whatever-agent")
    assert prepared.result.success
    assert os.readlink(w.co / "AGENTS.md") == _agents_md(w)


def test_G3_the_reference_tools_registry_keys_are_ignored(w):
    _world(w)
    _agent(w, "claude", "AGENTS.md", more=(
        'display_name = "Claude Code"\ninstruction_path = "~/.claude/CLAUDE.md"\n'
        'skills_path = "~/.claude/skills"\nrunner = "claude"\n'
        '[agents.claude.mcp]\nservers = ["x"]\n[agents.claude.subagents]\nfoo = "bar"\n'))
    (w.ws / "agents" / "claude.toml").write_text(
        'version = 3\n' + (w.ws / "agents" / "claude.toml").read_text())
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "instructions") == [("CREATE", str(w.co / "AGENTS.md"))]


@pytest.mark.parametrize(("text", "names"), [
    ('project_instruction_path = "AGENTS.md"\n', ["project_instruction_path"]),
    ('[detect]\ncommands = ["x"]\n', ["detect"]),
    ('[agents.other]\nproject_instruction_path = "AGENTS.md"\n', ["other"]),
    ('[agents.bad]\nproject_instruction_path = 3\n', ["project_instruction_path"]),
    ('[agents.bad]\nproject_instruction_path = "../AGENTS.md"\n', ["project_instruction_path"]),
    ('[agents.bad]\nproject_instruction_path = "/AGENTS.md"\n', ["project_instruction_path"]),
    ('[agents.bad]\nproject_instruction_path = ".agents/AGENTS.md"\n',
     ["project_instruction_path"]),
    ('[agents.bad]\nproject_instruction_path = ".agents"\n', ["project_instruction_path"]),
    ('[agents.bad]\nproject_instruction_path = ".git/AGENTS.md"\n',
     ["project_instruction_path"]),
    ("[agents.bad\n", []),
    ('[agents.bad]\ndetect = "claude"\n', ["detect"]),
    ('[agents.bad.detect]\ncommands = "claude"\n', ["commands"]),
    ('[agents.bad.detect]\npaths = [3]\n', ["paths"]),
    ('[agents.bad.detect]\npaths = ["../.claude"]\n', ["paths"]),
    ('[agents.bad.detect]\npaths = ["/etc"]\n', ["paths"]),
])
def test_G3_a_bad_registry_file_is_a_config_error_naming_file_and_key(w, text, names):
    _world(w)
    path = w.builder.add_agent("bad", text)
    before = snapshot(w.co, w.ws)
    assert_config_error(w.sync("--json"), path, *names)
    assert snapshot(w.co, w.ws) == before


def test_G3_a_target_inside_another_target_is_a_config_error(w):
    _world(w)
    _agent(w, "one", "docs")
    two = _agent(w, "two", "docs/AGENTS.md")
    before = snapshot(w.co, w.ws)
    r = w.sync("--json")
    doc = assert_config_error(r, "project_instruction_path")
    assert str(two) in doc["error"]["message"] or str(w.ws / "agents/one.toml") in \
        doc["error"]["message"]
    assert snapshot(w.co, w.ws) == before


def test_G3_a_symlinked_source_inside_the_workspace_links_the_canonical_path(w):
    _world(w, agents_md=None)
    real = w.ws / "shared" / "AGENTS.md"
    real.parent.mkdir()
    real.write_text("Shared rules.\n")
    os.symlink(real, w.ws / "projects/demo/AGENTS.md")
    r, _doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.co / "AGENTS.md") == _agents_md(w)


@pytest.mark.parametrize("how", ["outside", "broken", "directory", "fifo"])
def test_G3_an_unsafe_source_makes_every_instruction_target_a_conflict(w, how):
    _world(w, agents_md=None)
    _agent(w, "claude", "CLAUDE.md")
    _agent(w, "codex", "AGENTS.md")
    src = w.ws / "projects/demo/AGENTS.md"
    if how == "outside":
        (w.tmp / "AGENTS.md").write_text("outside\n")
        os.symlink(w.tmp / "AGENTS.md", src)
    elif how == "broken":
        os.symlink(w.ws / "projects/demo/nothing.md", src)
    elif how == "directory":
        src.mkdir()
    else:
        os.mkfifo(src)
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert _acts(doc, "instructions") == [("CONFLICT", str(w.co / "AGENTS.md")),
                                          ("CONFLICT", str(w.co / "CLAUDE.md"))]
    assert doc["segments"]["instructions"]["outcome"] == "blocked"
    assert doc["segments"]["skills"]["outcome"] == "applied"
    assert not os.path.lexists(w.co / "AGENTS.md") and not os.path.lexists(w.co / "CLAUDE.md")


# ------------------------------------------------------------------------------- [G4]


def test_G4_a_missing_parent_is_made_only_when_the_agent_is_detected(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", commands=[FAKE], paths=[".claude"])
    r, doc = w.jsync()
    assert r.rc == 0, r
    (op,) = op_for(doc, w.co / ".claude/CLAUDE.md")
    assert op["action"] == "SKIP" and "agent not detected" in op["reason"]
    assert not (w.co / ".claude").exists()
    # Detected through a command on PATH …
    r, doc = w.jsync(extra_env=_fake_path(w))
    assert r.rc == 0, r
    assert [o["action"] for o in op_for(doc, w.co / ".claude/CLAUDE.md")] == ["CREATE"]
    assert (w.co / ".claude").is_dir() and not (w.co / ".claude").is_symlink()
    assert os.readlink(w.co / ".claude/CLAUDE.md") == _agents_md(w)


def test_G4_a_target_of_two_agents_is_created_when_either_is_detected(w):
    _world(w)
    _agent(w, "one", ".ai/RULES.md", commands=[FAKE])
    _agent(w, "two", ".ai/RULES.md", paths=[".two"])
    r, doc = w.jsync("--dry-run")
    assert [o["action"] for o in op_for(doc, w.co / ".ai/RULES.md")] == ["SKIP"]
    (w.home / ".two").mkdir()
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert [o["action"] for o in op_for(doc, w.co / ".ai/RULES.md")] == ["CREATE"]
    assert os.readlink(w.co / ".ai/RULES.md") == _agents_md(w)


def test_G4_detected_through_a_path_under_the_home_directory(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    (w.home / ".claude").mkdir()
    r, _doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.co / ".claude/CLAUDE.md") == _agents_md(w)


@pytest.mark.parametrize("what", ["not executable", "a directory"])
def test_G4_a_command_on_PATH_must_be_an_executable(w, what):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", commands=[FAKE])
    bin_dir = w.tmp / "bin"
    bin_dir.mkdir()
    if what == "a directory":
        (bin_dir / FAKE).mkdir()
    else:
        (bin_dir / FAKE).write_text("#!/bin/sh\nexit 0\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    r, doc = w.jsync(extra_env=env)
    assert r.rc == 0, r
    (op,) = op_for(doc, w.co / ".claude/CLAUDE.md")
    assert op["action"] == "SKIP" and "agent not detected" in op["reason"]
    assert not (w.co / ".claude").exists()


def test_G4_an_agent_without_a_detect_table_is_not_detected(w):
    _world(w)
    w.builder.add_agent("claude", '[agents.claude]\nproject_instruction_path = "x/CLAUDE.md"\n')
    r, doc = w.jsync(extra_env=_fake_path(w))
    assert r.rc == 0, r
    (op,) = op_for(doc, w.co / "x/CLAUDE.md")
    assert op["action"] == "SKIP" and "agent not detected" in op["reason"]
    (w.co / "x").mkdir()  # an existing parent needs no detection
    r, doc = w.jsync()
    assert [o["action"] for o in op_for(doc, w.co / "x/CLAUDE.md")] == ["CREATE"]


def test_G4_detection_is_recorded_and_rechecked_at_execution(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    (w.home / ".claude").mkdir()
    plan = save_plan(w)
    (w.home / ".claude").rmdir()  # no longer detected
    before = snapshot(w.co)
    r = w.cli("apply", plan, "--json")
    assert r.rc == 3, r
    assert r.json["outcome"] == "stale"
    assert snapshot(w.co) == before


@pytest.mark.parametrize("what", ["file", "directory", "foreign link"])
def test_G4_the_users_own_instruction_file_is_a_conflict_never_overwritten(w, what):
    _world(w)
    target = w.co / "AGENTS.md"
    if what == "file":
        target.write_text("my own instructions\n")
    elif what == "directory":
        target.mkdir()
    else:
        os.symlink(w.tmp / "mine.md", target)
    before = snapshot(target)
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert [o["action"] for o in op_for(doc, target)] == ["CONFLICT"]
    assert snapshot(target) == before
    assert doc["segments"]["instructions"]["outcome"] == "blocked"
    assert doc["segments"]["memory"]["outcome"] == "applied"


@needs_git
def test_G4_a_committed_instruction_file_is_a_skip_tracked_by_git_exit_0(w):
    doc = _committed_target_is_skipped(w, "AGENTS.md", {"AGENTS.md": "the repository's own\n"})
    tracked = [f for f in doc["findings"] if f["code"] == "git.tracked_target"]
    assert [f["severity"] for f in tracked] == ["warning"]
    assert git("status", "--porcelain", "--", "AGENTS.md", cwd=w.co) == ""


@pytest.mark.parametrize("source", ["empty", "white space", "absent"])
def test_G4_an_empty_or_absent_source_unlinks_its_owned_links(w, source):
    _world(w)
    assert w.sync().rc == 0
    assert os.path.islink(w.co / "AGENTS.md")
    md = w.ws / "projects/demo/AGENTS.md"
    if source == "absent":
        md.unlink()
    else:
        md.write_text("" if source == "empty" else " \t\r\n\n")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "instructions") == [("UNLINK", str(w.co / "AGENTS.md"))]
    assert not os.path.lexists(w.co / "AGENTS.md")
    # … and with nothing there, nothing at all.
    r, doc = w.jsync()
    assert r.rc == 0 and _seg(doc, "instructions") == [], r


@pytest.mark.parametrize("text", ["\f\n", "\v", "\u00a0\n", "\u2003"])
def test_G4_white_space_is_space_tab_cr_lf_only(w, text):
    _world(w, agents_md=text)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _acts(doc, "instructions") == [("CREATE", str(w.co / "AGENTS.md"))]


def test_G4_an_empty_source_leaves_the_users_file_alone(w):
    _world(w, agents_md="\n")
    (w.co / "AGENTS.md").write_text("mine\n")
    before = snapshot(w.co / "AGENTS.md")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert _seg(doc, "instructions") == []
    assert snapshot(w.co / "AGENTS.md") == before


def test_G4_the_legacy_agents_AGENTS_md_owned_link_is_unlinked(w):
    _world(w)
    (w.co / ".agents").mkdir()
    os.symlink(_agents_md(w), w.co / ".agents/AGENTS.md")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert ("UNLINK", str(w.co / ".agents/AGENTS.md")) in _acts(doc, "instructions")
    assert not os.path.lexists(w.co / ".agents/AGENTS.md")
    assert os.readlink(w.co / "AGENTS.md") == _agents_md(w)


@pytest.mark.parametrize("what", ["symlink", "file"])
def test_G4_a_parent_that_is_a_symlink_or_not_a_directory_is_a_conflict(w, what):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    (w.home / ".claude").mkdir()
    if what == "symlink":
        (w.tmp / "elsewhere").mkdir()
        os.symlink(w.tmp / "elsewhere", w.co / ".claude")
    else:
        (w.co / ".claude").write_text("x\n")
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert [o["action"] for o in op_for(doc, w.co / ".claude/CLAUDE.md")] == ["CONFLICT"]
    if what == "symlink":
        assert list((w.tmp / "elsewhere").iterdir()) == []  # never written through it
    assert not os.path.lexists(w.co / "AGENTS.md")  # the segment is blocked as a whole


# ------------------------------------------------------------------------------- [G5]


def test_G5_status_shows_each_checkouts_state_per_segment(w):
    _world(w)
    (w.co / ".agents/skills/alpha").mkdir(parents=True)  # a skills conflict
    r = w.cli("status", "--json")
    assert r.rc == 1, r
    (project,) = r.json["projects"]
    (checkout,) = project["checkouts"]
    segs = checkout["sync"]["segments"]
    assert set(segs) == set(SEGMENTS)
    assert segs["skills"]["in_sync"] is False and segs["skills"]["conflict"] == 1
    assert segs["instructions"]["in_sync"] is False and segs["instructions"]["create"] == 1
    assert segs["memory"]["create"] == 1
    text = w.cli("status")
    assert text.rc == 1 and "skills: 1 conflict" in text.out, text


def test_G5_status_and_doctor_warn_of_a_checkout_two_projects_register(w):
    _world(w)
    (w.ws / "projects/other").mkdir()
    (w.ws / "projects/other/agent.toml").write_text(f"paths = {tlist([str(w.co)])}\n")
    status = w.cli("status", "--json")
    assert [f["severity"] for f in status.json["findings"]
            if str(w.co) in f["message"] and "demo" in f["message"]
            and "other" in f["message"]] == ["warning"], status
    doctor = w.cli("doctor", "--json")
    assert [c["status"] for c in doctor.json["checks"]
            if str(w.co) in c["message"] and "demo" in c["message"]
            and "other" in c["message"]] in (["warning"], ["error"]), doctor
    for cmd in ("status", "doctor"):
        text = " ".join(w.cli(cmd).out.split())
        assert "demo" in text and "other" in text and str(w.co) in text, (cmd, text)


@pytest.mark.parametrize("where", ["agent.toml", "AGENTS.md", "skill", "memory"])
def test_G5_doctor_reports_git_conflict_markers(w, where):
    _world(w)
    marked = "<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> theirs\n"
    path = {
        "agent.toml": w.toml,
        "AGENTS.md": w.ws / "projects/demo/AGENTS.md",
        "skill": w.ws / "skills/alpha/SKILL.md",
        "memory": w.ws / "memory/style.md",
    }[where]
    if where == "agent.toml":
        path.write_text(path.read_text() + marked)
    else:
        path.write_text(marked)
    r = w.cli("doctor", "--json")
    assert r.rc == 1, r  # an error
    found = [(c["status"], c["path"]) for c in r.json["checks"]
             if c["id"] == "git.conflict_markers"]
    assert found == [("error", str(path))], r
    # A sync never reads sources: the markers do not change its plan.
    if where != "agent.toml":
        assert w.sync("--dry-run").rc == 0


def test_G5_prepare_links_that_agents_instruction_target_only(api_env):
    w = api_env
    _world(w)
    _agent(w, "claude", "CLAUDE.md", paths=[".claude"])
    _agent(w, "codex", "AGENTS.md", paths=[".codex"])
    from aikito_mem import Project

    prepared = Project.load("demo", workspace=str(w.ws)).prepare("claude")
    assert prepared.result.success
    assert os.readlink(w.co / "CLAUDE.md") == _agents_md(w)
    assert not os.path.lexists(w.co / "AGENTS.md")
    assert os.readlink(w.co / ".agents/skills/alpha") == _skill(w, "alpha")
    assert os.readlink(w.rt("style.md")) == w.src("style.md")


# ------------------------------------------------------------------------------- [G6]


def _check_segments(doc) -> None:
    assert set(doc["segments"]) == set(SEGMENTS)
    total = dict.fromkeys(SUMMARY_KEYS, 0)
    for name in SEGMENTS:
        seg = doc["segments"][name]
        assert {"active", "success", "outcome", "summary"} <= set(seg), seg
        assert set(seg["summary"]) >= set(SUMMARY_KEYS)
        for k in SUMMARY_KEYS:
            total[k] += seg["summary"][k]
        ops_here = _seg(doc, name)
        if ops_here:
            assert seg["active"] is True, (name, seg)
        elif not doc["findings"]:
            assert seg["active"] is False, (name, seg)
        actions = ("CREATE", "NOOP", "UNLINK", "CONFLICT", "SKIP")
        for k, action in zip(SUMMARY_KEYS, actions, strict=True):
            assert seg["summary"][k] == sum(o["action"] == action for o in ops_here), name
    assert {k: doc["summary"][k] for k in SUMMARY_KEYS} == total


def test_G6_every_segment_is_always_present_even_when_nothing_is_configured(w):
    w.agent()
    (w.ws / "agents").mkdir()
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    _check_segments(doc)
    for name in SEGMENTS:
        seg = doc["segments"][name]
        assert (seg["active"], seg["success"], seg["outcome"]) == (False, True, "planned")
        assert all(seg["summary"][k] == 0 for k in SUMMARY_KEYS)
    r, doc = w.jsync()
    assert r.rc == 0, r
    _check_segments(doc)
    assert {doc["segments"][n]["outcome"] for n in SEGMENTS} == {"unchanged"}


def test_G6_a_segment_with_only_a_finding_is_active(w):
    w.mem("style.md")
    w.agent(memory=["style.md"])
    (w.ws / "agents").mkdir()
    (w.co / ".agents/skills").mkdir(parents=True)
    (w.co / ".agents/skills/junk").write_text("mine\n")
    r, doc = w.jsync()
    assert r.rc == 0, r
    _check_segments(doc)
    assert _seg(doc, "skills") == []
    assert [f["path"] for f in doc["findings"]] == [str(w.co / ".agents/skills/junk")]
    assert doc["segments"]["skills"]["active"] is True
    assert doc["segments"]["instructions"]["active"] is False


@pytest.mark.parametrize("how", ["config error", "stale", "busy", "blocked"])
def test_G6_the_three_segments_are_present_whatever_the_outcome(w, how):
    _world(w)
    if how == "config error":
        w.toml.unlink()
        r, doc = w.jsync()
        expected = (4, "config_error")
    elif how == "stale":
        plan = save_plan(w)
        (w.co / "AGENTS.md").write_text("appeared\n")
        r = w.cli("apply", plan, "--json")
        doc = r.json
        expected = (3, "stale")
    elif how == "busy":
        fd = hold_lock(w.co)
        try:
            r, doc = w.jsync("--lock-timeout", "0")
        finally:
            os.close(fd)
        expected = (6, "busy")
    else:
        (w.co / "AGENTS.md").write_text("mine\n")
        r, doc = w.jsync()
        expected = (1, "blocked")
    assert (r.rc, doc["outcome"]) == expected, r
    assert_schema(doc, expected[0])
    assert list(doc["segments"]) == list(SEGMENTS)
    for name in SEGMENTS:
        seg = doc["segments"][name]
        assert set(seg) >= {"active", "success", "outcome", "summary"}, seg
        assert set(seg["summary"]) >= set(SUMMARY_KEYS)
    assert not os.path.lexists(w.rt("style.md")) or how == "blocked"


def test_G6_operations_are_ordered_by_segment_then_checkout_then_target(w):
    second = w.co.parent / "second"
    second.mkdir()
    _world(w, skills=("zeta", "alpha"), memory=("z.md", "a.md"),
           paths=[str(second), str(w.co)])
    _agent(w, "claude", "CLAUDE.md")
    _agent(w, "codex", "AGENTS.md")
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    _check_segments(doc)
    got = [(o["segment"], o["checkout"], o["target"]) for o in doc["operations"]]
    want = []
    for seg, rels in (("skills", [".agents/skills/alpha", ".agents/skills/zeta"]),
                      ("instructions", ["AGENTS.md", "CLAUDE.md"]),
                      ("memory", [".agents/memory/a.md", ".agents/memory/z.md"])):
        for co in (second, w.co):
            want += [(seg, str(co), str(co / rel)) for rel in rels]
    assert got == want
    assert [s for s in doc["segments"]] == list(SEGMENTS)


def test_G6_a_real_run_and_a_dry_run_give_each_segment_its_outcome(w):
    _world(w)
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0 and doc["outcome"] == "planned", r
    assert {doc["segments"][n]["outcome"] for n in SEGMENTS} == {"planned"}
    assert all(doc["segments"][n]["active"] for n in SEGMENTS)
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "applied", r
    _check_segments(doc)
    assert {doc["segments"][n]["outcome"] for n in SEGMENTS} == {"applied"}
    r, doc = w.jsync()
    assert {doc["segments"][n]["outcome"] for n in SEGMENTS} == {"unchanged"}
    assert all(doc["segments"][n]["active"] for n in SEGMENTS)  # NOOPs are operations


def test_G6_offline_checkouts_get_a_skip_per_skill_and_instruction_target(w):
    gone = w.tmp / "gone"
    _world(w, skills=("alpha", "beta"), paths=[str(w.co), str(gone)])
    _agent(w, "claude", "CLAUDE.md")
    _agent(w, "codex", "AGENTS.md")
    r, doc = w.jsync()
    assert r.rc == 0, r
    offline = [(o["segment"], o["action"], o["target"]) for o in doc["operations"]
               if o["checkout"] == str(gone)]
    assert offline == [
        ("skills", "SKIP", str(gone / ".agents/skills/alpha")),
        ("skills", "SKIP", str(gone / ".agents/skills/beta")),
        ("instructions", "SKIP", str(gone / "AGENTS.md")),
        ("instructions", "SKIP", str(gone / "CLAUDE.md")),
        ("memory", "SKIP", str(gone / ".agents/memory/style.md")),
    ]
    assert not gone.exists()


def test_G6_registration_happens_when_one_segment_is_blocked(w):
    _world(w, paths=[])
    (w.co / ".agents/skills/alpha").mkdir(parents=True)  # skills blocked, memory not
    r, doc = w.jsync(str(w.co))
    assert r.rc == 1 and doc["outcome"] == "blocked", r
    assert doc["segments"]["memory"]["outcome"] == "applied"
    assert str(w.co) in w.toml.read_text()


def test_G6_no_registration_when_every_active_segment_is_blocked(w):
    _world(w, paths=[], agents_md=None)
    (w.co / ".agents/skills/alpha").mkdir(parents=True)
    (w.co / ".agents/memory/style.md").mkdir(parents=True)
    before = w.toml.read_bytes()
    r, doc = w.jsync(str(w.co))
    assert r.rc == 1 and doc["outcome"] == "blocked", r
    assert {doc["segments"][n]["outcome"] for n in ("skills", "memory")} == {"blocked"}
    assert w.toml.read_bytes() == before


def test_G6_a_registry_edit_that_changes_no_target_nor_detection_is_no_difference(w):
    _world(w)
    _agent(w, "claude", "CLAUDE.md", paths=[".claude"])
    plan = save_plan(w)
    _agent(w, "claude", "CLAUDE.md", paths=[".claude"],
           more='display_name = "Claude Code"\n')
    r = w.cli("apply", plan, "--json")
    assert r.rc == 0, r
    assert os.readlink(w.co / "CLAUDE.md") == _agents_md(w)


# ------------------------------------------------------------------------------- [G7]


def test_G7_a_second_sync_writes_nothing_in_any_segment(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    _agent(w, "codex", "AGENTS.md")
    (w.home / ".claude").mkdir()
    assert w.sync().rc == 0
    before = snapshot(w.co, w.ws, w.home)
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "unchanged", r
    assert {o["action"] for o in doc["operations"]} == {"NOOP"}
    assert snapshot(w.co, w.ws, w.home) == before


def test_G7_a_dry_run_and_check_write_nothing_in_any_segment(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    (w.home / ".claude").mkdir()
    before = snapshot(w.co, w.ws, w.home)
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0 and {o["action"] for o in doc["operations"]} == {"CREATE"}, r
    assert w.sync("--check").rc == 7
    assert snapshot(w.co, w.ws, w.home) == before


def _stale_after(w: W, change) -> dict:
    plan = save_plan(w)
    change()
    before = snapshot(w.co, w.ws)
    r = w.cli("apply", plan, "--json")
    assert r.rc == 3, r
    assert r.json["outcome"] == "stale"
    assert snapshot(w.co, w.ws) == before
    return r.json


def test_G7_a_skill_source_deleted_and_recreated_is_stale(w):
    _world(w)
    src = Path(_skill(w, "alpha"))

    def remove():
        (src / "SKILL.md").unlink()
        src.rmdir()

    _stale_after(w, lambda: recreate(src, lambda: w.builder.add_skill("alpha"), remove))


def test_G7_agents_md_replaced_is_stale_but_edited_is_not(w):
    _world(w)
    md = w.ws / "projects/demo/AGENTS.md"
    plan = save_plan(w)
    with open(md, "a") as fh:  # an edit of a non-empty AGENTS.md
        fh.write("More rules.\n")
    r = w.cli("apply", plan, "--json")
    assert r.rc == 0, r
    w.cli("clean", "project", "demo")

    def replace():
        tmp = md.with_name("AGENTS.md.new")
        tmp.write_text("Be kind.\n")
        os.replace(tmp, md)

    _stale_after(w, replace)


@pytest.mark.parametrize("to", ["empty", "filled"])
def test_G7_emptying_or_filling_agents_md_is_stale(w, to):
    _world(w, agents_md="Be kind.\n" if to == "empty" else "  \n")
    md = w.ws / "projects/demo/AGENTS.md"

    def edit():
        with open(md, "r+") as fh:  # the same file, its contents changed in place
            fh.truncate(0)
            fh.write("   \n" if to == "empty" else "Now rules.\n")

    _stale_after(w, edit)


def test_G7_a_registry_edit_changing_a_target_is_stale(w):
    _world(w)
    _agent(w, "claude", "CLAUDE.md")
    _stale_after(w, lambda: _agent(w, "claude", "CLAUDE2.md"))


def test_G7_a_registry_edit_changing_a_detection_is_stale(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    (w.home / ".seen").mkdir()
    _stale_after(w, lambda: _agent(w, "claude", ".claude/CLAUDE.md", paths=[".seen"]))


def test_G7_a_target_tampered_with_between_plan_and_execute_is_stale(w):
    _world(w)
    _stale_after(w, lambda: (w.co / "AGENTS.md").write_text("appeared\n"))


def test_G7_a_saved_plan_blocked_as_a_whole_is_refused_as_blocked(w):
    """Blocked as a whole (the one active segment blocked): exit 1 before verification —
    a source re-created since, which verification would name, is not what it reports."""
    _world(w, skills=("alpha", "beta"), agents_md=None, memory=())
    (w.co / ".agents/skills/alpha").mkdir(parents=True)
    plan = w.tmp / "plan.toml"
    r = w.sync("--dry-run", "--out", plan)
    assert r.rc == 1, r
    assert plan.exists()
    src = Path(_skill(w, "beta"))

    def remove():
        (src / "SKILL.md").unlink()
        src.rmdir()

    recreate(src, lambda: w.builder.add_skill("beta"), remove)
    before = snapshot(w.co, w.ws)
    r = w.cli("apply", plan, "--json")
    assert r.rc == 1, r
    assert r.json["outcome"] == "blocked"
    assert snapshot(w.co, w.ws) == before
