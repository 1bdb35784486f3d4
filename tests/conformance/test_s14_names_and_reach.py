"""§14 [H3]–[H5]: one rule for names, how far a registry target and the instructions
source reach, one environment per run — through the ``aikito`` command line and the
public Python API only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance._support import W, assert_config_error, assert_schema, save_plan
from tests.helpers.programs import executable
from tests.helpers.snapshots import changed, snapshot

# -- [H3] one rule for names --------------------------------------------------------------

#: Names an owned link can have on disk that no ``agent.toml`` reference may have ([C3]):
#: a trailing space, a newline, a byte that is not UTF-8; and how a text line shows each.
UNCLEAN = {
    "trailing space": ("old.md ", "'old.md '"),
    "newline": ("two\nlines.md", "$'two\\nlines.md'"),
    "not UTF-8": (os.fsdecode(b"caf\xe9.md"), "$'caf\\xe9.md'"),
}


def _stale_memory_link(w: W, name: str) -> Path:
    """``a.md`` linked and wanted; ``name`` an owned link to ``<ws>/memory/<name>`` that
    no reference wants any more; the user's own file beside them."""
    w.mem("a.md")
    w.agent(memory=["a.md"])
    r = w.sync()
    assert r.rc == 0, r
    link = w.rt(name)
    os.symlink(w.src(name), link)
    (w.rt() / "mine.txt").write_text("the user's\n")
    return link


def _stale_skill_link(w: W, name: str) -> Path:
    skills = w.ws / "skills" / "keep"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("# keep\n")
    w.agent(memory=[], extra='skills = ["keep"]\n')
    r = w.sync()
    assert r.rc == 0, r
    link = w.co / ".agents" / "skills" / name
    os.symlink(f"{w.ws}/skills/{name}", link)
    return link


@pytest.mark.parametrize("case", sorted(UNCLEAN))
@pytest.mark.parametrize("segment", ["memory", "skills"])
def test_H3_a_stale_owned_link_with_an_unclean_name_converges(w: W, case: str,
                                                              segment: str) -> None:
    name, shown = UNCLEAN[case]
    link = (_stale_memory_link if segment == "memory" else _stale_skill_link)(w, name)
    before = snapshot(w.tmp)

    # The dry run, --check and the real run agree ([H3]).
    dry, doc = w.jsync("--dry-run")
    assert dry.rc == 0, dry
    assert_schema(doc, 0)
    unlinks = [o for o in doc["operations"] if o["action"] == "UNLINK"]
    assert [o["target"] for o in unlinks] == [str(link)]
    assert snapshot(w.tmp) == before
    text = w.sync("--dry-run")
    assert text.rc == 0, text
    # The whole path relative to the checkout is quoted, as a shell reads it; every
    # segment's target is shown from the checkout root ([U2]).
    quote = shown.index("'") + 1
    shown = f"{shown[:quote]}.agents/{segment}/{shown[quote:]}"
    assert f"  - {shown}\n" in text.out
    check = w.sync("--check")
    assert check.rc == 7, check

    real, doc = w.jsync()
    assert real.rc == 0, real
    assert doc["outcome"] == "applied"
    assert [o["status"] for o in doc["operations"] if o["action"] == "UNLINK"] == ["applied"]
    assert not os.path.lexists(link)
    assert changed(before, snapshot(w.tmp)) == {str(link), str(link.parent)}
    again = w.sync("--check")
    assert again.rc == 0, again


@pytest.mark.parametrize("case", sorted(UNCLEAN))
def test_H3_apply_of_a_saved_plan_unlinks_it_too(w: W, case: str) -> None:
    name, _ = UNCLEAN[case]
    link = _stale_memory_link(w, name)
    plan = save_plan(w)
    r = w.cli("apply", plan, "--json")
    assert r.rc == 0, r
    assert r.json["outcome"] == "applied"
    assert not os.path.lexists(link)
    assert (w.rt() / "mine.txt").read_text() == "the user's\n"


def test_H3_json_carries_a_name_that_is_not_utf8_with_surrogateescape(w: W) -> None:
    name = os.fsdecode(b"caf\xe9.md")
    _stale_memory_link(w, name)
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    assert "\\udce9" in r.out  # the JSON text itself: \udcXX, valid JSON, ASCII
    (unlink,) = [o for o in doc["operations"] if o["action"] == "UNLINK"]
    assert unlink["target"] == f"{w.co}/.agents/memory/{name}"
    assert os.fsencode(unlink["target"]).endswith(b"/caf\xe9.md")


def test_H3_a_foreign_link_with_an_unclean_name_is_still_preserved(w: W) -> None:
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    foreign = w.rt("their link ")
    os.symlink("/somewhere/else", foreign)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(foreign) == "/somewhere/else"
    assert [f["path"] for f in doc["findings"] if f["code"] == "memory.foreign_entry"] == [
        str(foreign)]


# -- [H4] how far a registry target and the instructions source reach ----------------------


def _registry(w: W, agent: str, target: str) -> Path:
    agents = w.ws / "agents"
    agents.mkdir(exist_ok=True)
    path = agents / f"{agent}.toml"
    path.write_text(f'[agents.{agent}]\nproject_instruction_path = "{target}"\n')
    return path


@pytest.mark.parametrize("target", [
    "vendor/lib/.git/hooks/post-checkout",
    "sub/.agents/AGENTS.md",
    "deep/er/.GIT/config",
    ".git/hooks/post-checkout",
])
def test_H4_no_component_of_a_registry_target_is_git_or_agents(w: W, target: str) -> None:
    (w.co / "vendor" / "lib" / ".git" / "hooks").mkdir(parents=True)
    registry = _registry(w, "bot", target)
    (w.ws / "projects" / "demo" / "AGENTS.md").write_text("# demo\n")
    w.agent(memory=[])
    before = snapshot(w.tmp)
    for args in (("--dry-run",), ()):
        r = w.sync("--json", *args)
        assert_config_error(r, str(registry), target)
    assert snapshot(w.tmp) == before


def _instructions_outside(w: W, hop: str) -> Path:
    """The project's directory (or the whole ``projects/``) moved out of the workspace and
    symlinked back: its ``AGENTS.md`` is reached through a symlink that leaves it."""
    (w.ws / "projects" / "demo" / "AGENTS.md").write_text("# outside instructions\n")
    w.agent(memory=["a.md"])
    w.mem("a.md")
    outside = w.tmp / "outside"
    outside.mkdir()
    if hop == "projects":
        os.rename(w.ws / "projects", outside / "projects")
        os.symlink(outside / "projects", w.ws / "projects")
    else:
        os.rename(w.ws / "projects" / "demo", outside / "demo")
        os.symlink(outside / "demo", w.ws / "projects" / "demo")
    return outside


@pytest.mark.parametrize("hop", ["projects", "projects/demo"])
def test_H4_instructions_reached_through_a_symlink_leaving_the_workspace_conflict(
        w: W, hop: str) -> None:
    _registry(w, "claude", ".claude/CLAUDE.md")
    _registry(w, "codex", "AGENTS.md")
    (w.co / ".claude").mkdir()
    _instructions_outside(w, hop)
    before = snapshot(w.tmp)
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1, r
    conflicts = [o for o in doc["operations"] if o["segment"] == "instructions"]
    assert {o["target"] for o in conflicts} == {f"{w.co}/AGENTS.md",
                                               f"{w.co}/.claude/CLAUDE.md"}
    assert {o["action"] for o in conflicts} == {"CONFLICT"}
    assert all("leaves" in o["reason"] for o in conflicts)
    assert snapshot(w.tmp) == before

    # The real run writes nothing of the blocked segment; memory proceeds ([E8]).
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert doc["segments"]["instructions"]["outcome"] == "blocked"
    assert doc["segments"]["memory"]["outcome"] == "applied"
    assert not os.path.lexists(w.co / "AGENTS.md")
    assert not os.path.lexists(w.co / ".claude" / "CLAUDE.md")
    assert os.readlink(w.rt("a.md")) == w.src("a.md")


def test_H4_a_project_directory_symlinked_inside_the_workspace_is_reached(w: W) -> None:
    (w.ws / "projects" / "demo" / "AGENTS.md").write_text("# demo\n")
    w.agent(memory=[])
    os.rename(w.ws / "projects" / "demo", w.ws / "kept-demo")
    os.symlink("../kept-demo", w.ws / "projects" / "demo")
    r = w.sync()
    assert r.rc == 0, r
    assert os.readlink(w.co / "AGENTS.md") == f"{w.ws}/projects/demo/AGENTS.md"


def test_H4_skills_reached_through_a_symlink_leaving_the_workspace_conflict(w: W) -> None:
    outside = w.tmp / "outside-skills" / "review"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text("# review\n")
    os.symlink(outside.parent, w.ws / "skills")
    w.agent(memory=[], extra='skills = ["review"]\n')
    r, doc = w.jsync()
    assert r.rc == 1, r
    (op,) = [o for o in doc["operations"] if o["segment"] == "skills"]
    assert op["action"] == "CONFLICT"
    assert op["status"] == "not_applied"
    assert not os.path.lexists(w.co / ".agents" / "skills" / "review")


# -- [H5] one environment per run ----------------------------------------------------------


def _detected_only_in(w: W) -> dict[str, str]:
    """An agent detected only by a command on a ``PATH`` the process does not have, and a
    home of its own: the environment handed to ``Project.load``."""
    bin_dir = w.tmp / "their-bin"
    executable(bin_dir, "their-agent")
    agents = w.ws / "agents"
    agents.mkdir()
    (agents / "their-agent.toml").write_text(
        '[agents.their-agent]\nproject_instruction_path = ".their/AGENTS.md"\n'
        '[agents.their-agent.detect]\ncommands = ["their-agent"]\n')
    (w.ws / "projects" / "demo" / "AGENTS.md").write_text("# demo\n")
    home = w.tmp / "their-home"
    home.mkdir()
    w.agent(memory=["a.md"], paths=["~/code/demo"])
    w.mem("a.md")
    (home / "code" / "demo").mkdir(parents=True)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home)}


@pytest.mark.parametrize("how", ["sync", "prepare", "plan+execute"])
def test_H5_plan_and_verification_read_the_same_environment(api_env: W, how: str) -> None:
    from aikito_mem import Project

    w = api_env
    env = _detected_only_in(w)
    assert "their-bin" not in os.environ.get("PATH", "")
    project = Project.load("demo", workspace=str(w.ws), environ=env)
    if how == "sync":
        result = project.sync()
    elif how == "prepare":
        result = project.prepare("their-agent").result
    else:
        result = project.execute(project.plan())
    co = Path(env["HOME"]) / "code" / "demo"
    assert result.outcome == "applied"
    assert os.readlink(co / ".their" / "AGENTS.md") == f"{w.ws}/projects/demo/AGENTS.md"
    assert os.readlink(co / ".agents" / "memory" / "a.md") == w.src("a.md")
