"""§17 Every agent a user has: [N1] per-agent project skill directories, [N2] the
catalogue of agents.

Black-box conformance, from SPEC.md alone: see :mod:`tests.conformance`.  Real ``aikito``
processes (the Python API for ``Project.prepare``); an agent is detected through an
executable on the run's ``PATH`` or a path under its home directory, both the test's own.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from tests.conformance._support import (
    assert_config_error,
    op_for,
    ops,
    run,
    save_plan,
    tlist,
)
from tests.helpers.snapshots import snapshot

#: A command no machine has: an agent detected through it only where a test puts it.
FAKE = "aikito-conformance-agent"
SKILLS = ("review", "lint")


def _agent(w, name: str, skills_path: str | None, *, commands=(), paths=()) -> Path:
    """``<ws>/agents/<name>.toml``: the agent's skills directory and its detection."""
    text = f"[agents.{name}]\n"
    if skills_path is not None:
        text += f'project_skills_path = "{skills_path}"\n'
    text += (f"\n[agents.{name}.detect]\ncommands = {tlist(commands)}\n"
             f"paths = {tlist(paths)}\n")
    return Path(w.builder.add_agent(name, text))


def _world(w, skills=SKILLS) -> None:
    for s in skills:
        w.builder.add_skill(s)
    w.agent(extra=f"skills = {tlist(skills)}\n")


def _path_with_fake(w, *commands: str) -> dict:
    """An environment whose ``PATH`` starts with a directory holding ``commands``."""
    bin_dir = w.tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for c in commands or (FAKE,):
        exe = bin_dir / c
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def _links(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = os.readlink(p)
    return out


def _skill(w, name: str) -> str:
    return str(w.ws / "skills" / name)


# ------------------------------------------------------------------------------- [N1]


def test_N1_each_selected_skill_is_also_linked_in_the_agents_directory(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", paths=[".fake"])
    (w.home / ".fake").mkdir()
    r, doc = w.jsync()
    assert r.rc == 0, r
    created = {(o["target"], o["source"], o["segment"]) for o in ops(doc, "CREATE")}
    assert created == {(str(w.co / d / s), _skill(w, s), "skills")
                       for d in (".agents/skills", ".fake/skills") for s in SKILLS}
    assert _links(w.co) == {f"{d}/{s}": _skill(w, s)
                            for d in (".agents/skills", ".fake/skills") for s in SKILLS}
    # Owned → NOOP, and a second sync writes nothing ([G7]).
    before = snapshot(w.co)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert {o["action"] for o in doc["operations"]} == {"NOOP"}
    assert snapshot(w.co) == before


def test_N1_anything_else_is_a_conflict_preserved_and_the_skills_segment_blocked(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", commands=[FAKE])
    (w.co / ".fake" / "skills").mkdir(parents=True)
    (w.co / ".fake" / "skills" / "lint").write_text("the agent's own lint\n")
    before = snapshot(w.co)
    r, doc = w.jsync()
    assert r.rc == 1, r
    (conflict,) = op_for(doc, w.co / ".fake" / "skills" / "lint")
    assert conflict["action"] == "CONFLICT" and conflict["segment"] == "skills"
    assert doc["segments"]["skills"]["success"] is False
    assert snapshot(w.co) == before  # preserved, and nothing of the segment written


def test_N1_a_deselected_skills_link_is_unlinked_the_agents_own_entries_kept(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", paths=[".fake"])
    (w.home / ".fake").mkdir()
    assert w.sync().rc == 0
    own = w.co / ".fake" / "skills" / "mine"
    own.mkdir()
    (own / "SKILL.md").write_text("# mine\n")
    foreign = w.co / ".fake" / "skills" / "alias"
    os.symlink(w.tmp / "elsewhere", foreign)
    kept = snapshot(own, foreign)
    w.agent(extra='skills = ["review"]\n')
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert [o["target"] for o in ops(doc, "UNLINK")] == [
        str(w.co / d / "lint") for d in (".agents/skills", ".fake/skills")]
    assert not os.path.lexists(w.co / ".fake" / "skills" / "lint")
    assert os.readlink(w.co / ".fake" / "skills" / "review") == _skill(w, "review")
    assert snapshot(own, foreign) == kept
    warned = {f["path"] for f in doc["findings"] if f["severity"] == "warning"}
    assert {str(own), str(foreign)} <= warned


def test_N1_not_detected_is_a_skip_shown_only_with_verbose(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", commands=[FAKE], paths=[".fake"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    skips = ops(doc, "SKIP")
    assert sorted(o["target"] for o in skips) == [str(w.co / ".fake/skills" / s)
                                                  for s in sorted(SKILLS)]
    assert all("agent not detected" in o["reason"] for o in skips)
    quiet = w.sync()
    assert quiet.rc == 0, quiet
    assert "agent not detected" not in quiet.out + quiet.err
    assert not (w.co / ".fake").exists()
    verbose = w.sync("-v")
    assert verbose.rc == 0, verbose
    assert "agent not detected" in verbose.out
    assert not (w.co / ".fake").exists()


def test_N1_detected_through_a_command_on_PATH(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", commands=[FAKE])
    r, doc = w.jsync("--dry-run")
    assert {o["action"] for o in op_for(doc, w.co / ".fake/skills/review")} == {"SKIP"}
    r, doc = w.jsync(extra_env=_path_with_fake(w))
    assert r.rc == 0, r
    assert {o["action"] for o in op_for(doc, w.co / ".fake/skills/review")} == {"CREATE"}
    assert (w.co / ".fake" / "skills").is_dir() and not (w.co / ".fake").is_symlink()
    assert os.readlink(w.co / ".fake/skills/lint") == _skill(w, "lint")


def test_N1_detected_through_a_path_under_the_home_directory(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", paths=[".config/fake"])
    r, doc = w.jsync("--dry-run")
    assert {o["action"] for o in op_for(doc, w.co / ".fake/skills/review")} == {"SKIP"}
    (w.home / ".config" / "fake").mkdir(parents=True)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.co / ".fake/skills/review") == _skill(w, "review")


def test_N1_an_existing_directory_is_used_without_detection(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", commands=[FAKE])
    (w.co / ".fake" / "skills").mkdir(parents=True)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert {o["action"] for o in op_for(doc, w.co / ".fake/skills/review")} == {"CREATE"}
    assert os.readlink(w.co / ".fake/skills/review") == _skill(w, "review")


def test_N1_two_agents_naming_one_directory_form_one_target_directory(w):
    _world(w)
    _agent(w, "one", ".shared/skills", commands=[FAKE])
    _agent(w, "two", ".shared/skills", paths=[".two"])
    r, doc = w.jsync("--dry-run")
    shared = [o for o in doc["operations"] if "/.shared/" in o["target"]]
    assert sorted((o["action"], o["target"]) for o in shared) == [
        ("SKIP", str(w.co / ".shared/skills" / s)) for s in sorted(SKILLS)]
    (w.home / ".two").mkdir()  # only the second agent is detected
    r, doc = w.jsync()
    assert r.rc == 0, r
    shared = [o for o in doc["operations"] if "/.shared/" in o["target"]]
    assert sorted((o["action"], o["target"]) for o in shared) == [
        ("CREATE", str(w.co / ".shared/skills" / s)) for s in sorted(SKILLS)]
    assert {k for k in _links(w.co) if k.startswith(".shared/")} == {
        f".shared/skills/{s}" for s in SKILLS}


def test_N1_agents_skills_as_project_skills_path_adds_nothing(w):
    _world(w)
    r, doc = w.jsync("--dry-run")
    alone = sorted((o["action"], o["target"], o["source"]) for o in doc["operations"]
                   if o["segment"] == "skills")
    _agent(w, "same", ".agents/skills", paths=[".same"])
    (w.home / ".same").mkdir()
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    assert sorted((o["action"], o["target"], o["source"]) for o in doc["operations"]
                  if o["segment"] == "skills") == alone
    assert w.sync().rc == 0
    assert set(_links(w.co)) == {f".agents/skills/{s}" for s in SKILLS}


@pytest.mark.parametrize("path", [".git/skills", "sub/.git/skills", ".agents/other",
                                  "sub/.agents/skills", ".agents", "../skills",
                                  "/abs/skills"])
def test_N1_a_git_or_agents_component_or_unclean_path_is_a_config_error(w, path):
    _world(w)
    agent_file = _agent(w, "bad", path, paths=[".bad"])
    (w.home / ".bad").mkdir()
    before = snapshot(w.co, w.ws)
    r = w.sync("--json")
    assert_config_error(r, str(agent_file))
    assert snapshot(w.co, w.ws) == before


def test_N1_prepare_links_agents_skills_and_that_agents_directory_only(api_env):
    w = api_env
    _world(w)
    _agent(w, "one", ".one/skills", paths=[".one"])
    _agent(w, "two", ".two/skills", paths=[".two"])
    (w.home / ".one").mkdir()
    (w.home / ".two").mkdir()
    from aikito_mem import Project

    prepared = Project.load("demo", workspace=str(w.ws)).prepare("one")
    assert prepared.result.success
    assert _links(w.co) == {f"{d}/{s}": _skill(w, s)
                            for d in (".agents/skills", ".one/skills") for s in SKILLS}
    assert not (w.co / ".two").exists()


def test_N1_clean_prunes_the_directory_and_its_parent_when_it_emptied_them(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", paths=[".fake"])
    (w.home / ".fake").mkdir()
    other = w.co.parent / "other"
    other.mkdir()
    w.agent(paths=[str(w.co), str(other)], extra=f"skills = {tlist(SKILLS)}\n")
    assert w.sync().rc == 0
    (other / ".fake" / "settings.json").write_text("{}\n")  # the agent's own file
    kept = snapshot(other / ".fake" / "settings.json")
    r = w.cli("clean", "project", "demo", "--json")
    assert r.rc == 0, r
    assert not (w.co / ".fake").exists()  # .fake/skills, then .fake: emptied
    assert not (other / ".fake" / "skills").exists()
    assert snapshot(other / ".fake" / "settings.json") == kept  # .fake kept: not emptied
    assert _links(w.co) == {} and _links(other) == {}
    again = w.cli("clean", "project", "demo", "--json")
    assert again.rc == 0 and again.json["outcome"] == "unchanged"


def test_N1_G7_a_dry_run_writes_nothing_and_a_saved_plan_goes_stale(w):
    _world(w)
    _agent(w, "fake", ".fake/skills", paths=[".fake"])
    (w.home / ".fake").mkdir()
    before = snapshot(w.co, w.ws)
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0 and doc["outcome"] == "planned", r
    assert {o["action"] for o in op_for(doc, w.co / ".fake/skills/review")} == {"CREATE"}
    assert snapshot(w.co, w.ws) == before
    plan = save_plan(w)
    (w.co / ".fake" / "skills" / "review").mkdir(parents=True)  # appears meanwhile
    before = snapshot(w.co, w.ws)
    r = w.cli("apply", plan, "--json")
    assert r.rc == 3, r
    assert r.json["outcome"] == "stale"
    assert snapshot(w.co, w.ws) == before


# ------------------------------------------------------------------------------- [N2]


def _catalogue(w, **kw) -> list[dict]:
    r = run(["agents", "--json"], w.home, **kw)
    assert r.rc == 0, r
    return r.json["agents"]


def _only_path(w) -> dict:
    """A ``PATH`` of one empty directory: no agent of the machine is detected."""
    empty = w.tmp / "empty-bin"
    empty.mkdir(exist_ok=True)
    return {"PATH": str(empty)}


def test_N2_the_catalogue_lists_at_least_25_agents_with_paths_and_detection(w):
    agents = _catalogue(w, extra_env=_only_path(w))
    assert len(agents) >= 25
    names = [a["name"] for a in agents]
    assert len(set(names)) == len(names)
    for a in agents:
        assert {"name", "display_name", "project_instruction_path", "project_skills_path",
                "detect", "detected", "registered"} <= set(a), a
        assert a["detect"]["commands"] or a["detect"]["paths"], a
        assert a["detected"] is False, a
    claude = next(a for a in agents if a["display_name"] == "Claude Code")
    assert claude["project_skills_path"] == ".claude/skills"


def test_N2_agents_shows_what_is_detected_here_and_registered_in_the_workspace(w):
    env = _only_path(w)
    by_command = next(a for a in _catalogue(w, extra_env=env) if a["detect"]["commands"])
    env = _path_with_fake(w, by_command["detect"]["commands"][0])
    env["PATH"] = env["PATH"].split(os.pathsep)[0]
    w.builder.add_agent(by_command["name"], f"[agents.{by_command['name']}]\n"
                                            'project_instruction_path = "MINE.md"\n')
    r = w.cli("agents", "--json", extra_env=env)
    assert r.rc == 0, r
    row = next(a for a in r.json["agents"] if a["name"] == by_command["name"])
    assert row["detected"] is True and row["registered"] is True
    assert row["project_instruction_path"] == "MINE.md"  # what a sync would link
    assert r.json["summary"]["registered"] == 1


def test_N2_init_writes_exactly_the_agents_detected_here(w):
    env = _only_path(w)
    catalogue = _catalogue(w, extra_env=env)
    by_command = next(a for a in catalogue if a["detect"]["commands"])
    by_path = next(a for a in catalogue if a["detect"]["paths"] and a is not by_command
                   and not set(a["detect"]["commands"]) & set(by_command["detect"]["commands"]))
    command = by_command["detect"]["commands"][0]
    (w.home / by_path["detect"]["paths"][0]).mkdir(parents=True)
    env = _path_with_fake(w, command)
    env["PATH"] = env["PATH"].split(os.pathsep)[0]
    expected = {a["name"] for a in catalogue
                if command in a["detect"]["commands"]
                or any((w.home / p).exists() for p in a["detect"]["paths"])}
    assert {by_command["name"], by_path["name"]} <= expected
    ws = w.tmp / "fresh"
    r = run(["init", ws, "--json"], w.home, extra_env=env)
    assert r.rc == 0, r
    assert {p.stem for p in (ws / "agents").iterdir()} == expected
    for p in (ws / "agents").iterdir():
        doc = tomllib.loads(p.read_text())
        assert set(doc) == {"agents"} and set(doc["agents"]) == {p.stem}
    # Never overwriting: a file of the user's stays as it is.
    mine = ws / "agents" / f"{by_command['name']}.toml"
    mine.write_text(f'[agents.{by_command["name"]}]\nproject_instruction_path = "X.md"\n')
    kept = snapshot(mine)
    r = run(["init", ws], w.home, extra_env=env)
    assert r.rc == 0, r
    assert snapshot(mine) == kept


def test_N2_init_with_no_agent_detected_creates_no_registry_and_says_how(w):
    ws = w.tmp / "fresh"
    r = run(["init", ws], w.home, extra_env=_only_path(w))
    assert r.rc == 0, r
    assert (ws / "projects").is_dir() and not (ws / "agents").exists()
    assert "aikito agents add" in r.out


def test_N2_agents_add_writes_never_overwrites_and_suggests(w):
    _world(w)
    claude = next(a for a in _catalogue(w, extra_env=_only_path(w))
                  if a["display_name"] == "Claude Code")
    name = claude["name"]
    before = snapshot(w.ws)
    dry = w.cli("agents", "add", name, "--dry-run")
    assert dry.rc == 0, dry
    assert snapshot(w.ws) == before
    r = w.cli("agents", "add", name)
    assert r.rc == 0, r
    written = w.ws / "agents" / f"{name}.toml"
    doc = tomllib.loads(written.read_text())
    assert set(doc) == {"agents"} and set(doc["agents"]) == {name}
    assert doc["agents"][name]["project_skills_path"] == ".claude/skills"
    # The file it wrote is the registry a sync uses: detected here, .claude/skills linked.
    (w.home / claude["detect"]["paths"][0]).mkdir(parents=True)
    assert w.sync().rc in (0, 1)
    assert os.readlink(w.co / ".claude" / "skills" / "review") == _skill(w, "review")
    # Never overwriting; an unknown name gets a did-you-mean, and nothing is written.
    written.write_text(f"[agents.{name}]\n")
    kept = snapshot(w.ws)
    again = w.cli("agents", "add", name)
    assert again.rc == 0, again
    assert snapshot(w.ws) == kept
    unknown = w.cli("agents", "add", name[:-1])
    assert unknown.rc == 4, unknown
    assert f"did you mean '{name}'" in " ".join(unknown.err.split())  # however wrapped
    assert snapshot(w.ws) == kept
