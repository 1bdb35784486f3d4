"""``aikito init``: a workspace both tools accept, a project template the engine accepts,
nothing ever overwritten (the engine functions of :mod:`aikito_mem.commands.init.run`)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from aikito_mem import Project
from aikito_mem.commands.init.run import (
    LAYOUT_TEXT,
    WORKSPACE_DIRS,
    EntryKind,
    InitStatus,
    init_project,
    init_workspace,
)
from aikito_mem.config.catalogue import load_catalogue
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.errors import ConfigError
from aikito_mem.render.init import json_document, text_lines
from tests.helpers.programs import executable
from tests.helpers.snapshots import snapshot


def env(home: str, **extra: str) -> dict[str, str]:
    return {"HOME": home, **extra}


def statuses(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {e.path: e.status.value for e in report.entries}


def made_workspace(home: str, **extra: str) -> str:
    return init_workspace(environ=env(home, **extra)).workspace


# -- init_workspace: a fresh workspace ---------------------------------------------------


def fake_executable(directory: Path, name: str) -> None:
    """An executable ``name`` in ``directory``: what detection finds on ``PATH``."""
    executable(directory, name)


def detect_every_agent(home: str) -> None:
    """A home directory where every catalogue agent is detected (its detect paths)."""
    for entry in load_catalogue():
        for path in entry.detect.paths:
            Path(home, path).mkdir(parents=True, exist_ok=True)
        if not entry.detect.paths:
            fake_executable(Path(home, "bin"), entry.detect.commands[0])


def every_agent_env(home: str) -> dict[str, str]:
    detect_every_agent(home)
    return env(home, PATH=f"{home}/bin")


def test_fresh_workspace_at_the_default_location(home: str) -> None:
    report = init_workspace(environ=env(home))
    root = f"{home}/aikito"
    assert report.workspace == root and report.found_via == "default"
    assert report.outcome == "applied"
    for name in WORKSPACE_DIRS:
        if name != "agents":
            assert os.path.isdir(f"{root}/{name}") and not os.path.islink(f"{root}/{name}")
    assert os.listdir(f"{root}/subagents") == []
    assert Path(root, "layout.toml").read_bytes() == LAYOUT_TEXT == b"version = 2\n"
    # No agent detected here (no PATH, an empty home): no agents/ at all, so AGENTS.md is
    # the one instruction target ([N2], [G3]); a note says how to add agents.
    assert not os.path.lexists(f"{root}/agents")
    assert report.agents == () and report.findings == ()
    assert any("aikito agents add NAME" in line for line in text_lines(report))
    pointer = f"{home}/.config/aikito/workspace"
    assert report.pointer == pointer
    assert Path(pointer).read_text() == root + "\n"
    assert {e.status for e in report.entries} == {InitStatus.CREATED}
    # Discovery now finds it through the pointer file ([W1]).
    found = resolve_workspace(environ=env(home))
    assert (found.root, found.found_via) == (root, "pointer file")


def test_two_detected_agents_make_exactly_two_registry_files(
    home: str, tmp_path: Path
) -> None:
    """Detection with the run's environment: one agent by an executable on PATH, one by
    a path under the home directory; nothing else of the catalogue is written [N2]."""
    bin_dir = tmp_path / "bin"
    fake_executable(bin_dir, "claude")
    Path(home, ".codex").mkdir()
    report = init_workspace(environ=env(home, PATH=f"/nonexistent:{bin_dir}"))
    root = report.workspace
    assert sorted(os.listdir(f"{root}/agents")) == ["claude-code.toml", "codex.toml"]
    assert [e.role for e in report.entries].count("agent") == 2
    assert report.findings == ()
    from aikito_mem.config.registry_read import load_registry

    registry = load_registry(root)
    assert {t.path: t.agents for t in registry.targets} == {
        ".claude/CLAUDE.md": ("claude-code",), "AGENTS.md": ("codex",)}


def test_a_command_that_is_not_executable_is_not_detected(home: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("not executable\n")
    report = init_workspace(environ=env(home, PATH=str(bin_dir)))
    assert not os.path.lexists(f"{report.workspace}/agents")


def test_pointer_directories_are_private(home: str) -> None:
    made_workspace(home)
    assert os.stat(f"{home}/.config").st_mode & 0o777 == 0o700
    assert os.stat(f"{home}/.config/aikito").st_mode & 0o777 == 0o700


def test_registry_files_hold_only_their_own_agents_table(home: str) -> None:
    root = init_workspace(environ=every_agent_env(home)).workspace
    catalogue = load_catalogue()
    assert sorted(os.listdir(f"{root}/agents")) == sorted(f"{a.name}.toml" for a in catalogue)
    for agent in catalogue:
        doc = tomllib.loads(Path(root, "agents", f"{agent.name}.toml").read_text())
        # The reference tool refuses any other top-level key or table ([G3]).
        assert list(doc) == ["agents"] and list(doc["agents"]) == [agent.name]
        table = doc["agents"][agent.name]
        assert table.get("project_instruction_path") == agent.instruction_path
        assert table.get("project_skills_path") == agent.skills_path
        assert table["detect"] == {"commands": list(agent.detect.commands),
                                   "paths": list(agent.detect.paths)}
    by_name = {a.name: a.instruction_path for a in catalogue}
    assert by_name["claude-code"] == ".claude/CLAUDE.md"
    assert by_name["codex"] == "AGENTS.md"


def test_the_engine_reads_the_registry_init_writes(home: str) -> None:
    from aikito_mem.config.registry_read import load_registry

    registry = load_registry(init_workspace(environ=every_agent_env(home)).workspace)
    catalogue = load_catalogue()
    assert {a.name for a in registry.agents} == {a.name for a in catalogue}
    expected: dict[str, set[str]] = {}
    for a in catalogue:
        if a.instruction_path is not None:
            expected.setdefault(a.instruction_path, set()).add(a.name)
    assert {t.path: set(t.agents) for t in registry.targets} == expected


def test_path_argument_wins_and_relative_is_resolved_against_cwd(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    report = init_workspace("ws", environ=env(home, AIKITO_DIR=f"{tmp_path}/other"))
    assert report.workspace == f"{os.path.realpath(tmp_path)}/ws"
    assert report.found_via == "argument"
    assert not os.path.exists(f"{tmp_path}/other")
    # AIKITO_DIR names another workspace: said, since commands use it first.
    assert [f.code for f in report.findings] == ["init.pointer"]
    assert "AIKITO_DIR" in report.findings[0].message


def test_aikito_dir_is_the_default_path(home: str, tmp_path: Path) -> None:
    target = f"{tmp_path}/from-env"
    report = init_workspace(environ=env(home, AIKITO_DIR=target))
    assert (report.workspace, report.found_via) == (target, "AIKITO_DIR")
    assert report.findings == ()
    assert Path(home, ".config/aikito/workspace").read_text() == target + "\n"


def test_relative_aikito_dir_is_refused(home: str) -> None:
    before = snapshot(home)
    with pytest.raises(ConfigError) as info:
        init_workspace(environ=env(home, AIKITO_DIR="rel/ws"))
    assert info.value.code == "config.workspace_not_absolute"
    assert snapshot(home) == before


def test_missing_parents_are_created_and_reported(home: str, tmp_path: Path) -> None:
    target = f"{tmp_path}/a/b/ws"
    report = init_workspace(target, environ=env(home))
    roles = [(e.path, e.role) for e in report.entries[:3]]
    assert roles == [(f"{tmp_path}/a", "parent"), (f"{tmp_path}/a/b", "parent"),
                     (target, "workspace")]
    assert os.path.isdir(f"{target}/projects")


def test_xdg_config_home_holds_the_pointer(home: str, tmp_path: Path) -> None:
    xdg = f"{tmp_path}/xdg"
    report = init_workspace(f"{tmp_path}/ws", environ=env(home, XDG_CONFIG_HOME=xdg))
    assert report.pointer == f"{xdg}/aikito/workspace"
    assert Path(xdg, "aikito", "workspace").read_text() == f"{tmp_path}/ws\n"
    assert not os.path.exists(f"{home}/.config")


# -- init_workspace: an existing workspace ---------------------------------------------


def test_second_init_changes_nothing_and_says_what_existed(home: str) -> None:
    made_workspace(home)
    before = snapshot(home)
    report = init_workspace(environ=env(home))
    assert snapshot(home) == before
    assert report.outcome == "unchanged"
    assert {e.status for e in report.entries} == {InitStatus.EXISTED}
    assert "already initialised" in text_lines(report)[0]


def test_partial_workspace_gets_only_what_is_missing(home: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "projects" / "demo").mkdir(parents=True)
    (root / "projects" / "demo" / "agent.toml").write_text('memory = ["a.md"]\n')
    (root / "memory").mkdir()
    (root / "memory" / "a.md").write_text("mine\n")
    (root / "agents").mkdir()  # an empty registry: deliberately no instruction targets
    kept = snapshot(root / "projects", root / "memory", root / "agents")
    report = init_workspace(str(root), environ=env(home))
    assert snapshot(root / "projects", root / "memory", root / "agents") == kept
    got = statuses(report)
    for name in ("projects", "memory", "agents"):
        assert got[f"{root}/{name}"] == "existed"
    for name in ("skills", "subagents", "layout.toml"):
        assert got[f"{root}/{name}"] == "created"
    # An existing agents/ is the user's registry: no entries are added to it.
    assert os.listdir(root / "agents") == []
    assert not any(e.role == "agent" for e in report.entries)


def test_existing_pointer_is_left_alone_and_a_different_one_is_named(
    home: str, tmp_path: Path
) -> None:
    """A pointer naming another workspace that exists is the user's choice ([L4])."""
    other = tmp_path / "other"
    (other / "projects").mkdir(parents=True)
    pointer = Path(home, ".config", "aikito", "workspace")
    pointer.parent.mkdir(parents=True)
    pointer.write_text(f"{other}\n")
    report = init_workspace(f"{tmp_path}/ws", environ=env(home))
    assert pointer.read_text() == f"{other}\n"
    assert statuses(report)[str(pointer)] == "existed"
    assert [f.code for f in report.findings] == ["init.pointer"]
    assert str(other) in report.findings[0].message


@pytest.mark.parametrize("named", ["/somewhere/else", "{tmp}/moved-away"])
def test_a_pointer_to_a_workspace_that_no_longer_exists_is_repointed(
    home: str, tmp_path: Path, named: str
) -> None:
    """[L4]: after ``mv`` of the workspace, ``aikito init NEWPATH`` points aikito at it
    (and says so, naming the ``--moved-from`` that relinks the checkouts); a dry run
    only says it would."""
    named = named.format(tmp=tmp_path)
    if named.startswith(str(tmp_path)):
        os.makedirs(named)  # a directory, but no workspace (no projects/) any more
    pointer = Path(home, ".config", "aikito", "workspace")
    pointer.parent.mkdir(parents=True)
    pointer.write_text(f"{named}\n")
    pointer.chmod(0o600)
    root = tmp_path / "ws"
    (root / "projects").mkdir(parents=True)
    dry = init_workspace(str(root), dry_run=True, environ=env(home))
    assert pointer.read_text() == f"{named}\n"
    assert statuses(dry)[str(pointer)] == "planned"
    report = init_workspace(str(root), environ=env(home))
    assert pointer.read_text() == f"{root}\n"
    assert pointer.stat().st_mode & 0o777 == 0o600
    assert statuses(report)[str(pointer)] == "created"
    (finding,) = [f for f in report.findings if f.code == "init.pointer_repointed"]
    assert named in finding.message and f"aikito sync --moved-from {named}" in finding.message
    again = init_workspace(str(root), environ=env(home))
    assert statuses(again)[str(pointer)] == "existed" and again.findings == ()


def test_existing_pointer_to_this_workspace_is_quiet(home: str) -> None:
    made_workspace(home)
    assert init_workspace(environ=env(home)).findings == ()


def test_only_dotfiles_count_as_empty(home: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("x\n")
    report = init_workspace(str(root), environ=env(home))
    assert statuses(report)[f"{root}/projects"] == "created"


def test_a_non_empty_directory_that_is_no_workspace_is_refused(
    home: str, tmp_path: Path
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "main.py").write_text("print()\n")
    before = snapshot(tmp_path, home)
    with pytest.raises(ConfigError) as info:
        init_workspace(str(code), environ=env(home))
    assert info.value.code == "config.init_not_workspace"
    assert "main.py" in info.value.message
    assert snapshot(tmp_path, home) == before


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("memory", lambda p: p.write_text("a file\n")),
        ("agents", lambda p: os.symlink("nowhere", p)),
        ("skills", lambda p: os.mkfifo(p)),
        ("layout.toml", lambda p: p.mkdir()),
        ("subagents", lambda p: os.symlink("layout.toml", p)),
    ],
)
def test_an_entry_of_the_wrong_type_is_refused_and_nothing_is_written(
    home: str, tmp_path: Path, name: str, make
) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ws"
    (root / "projects").mkdir(parents=True)
    (root / "layout.toml").write_text("version = 2\n") if name != "layout.toml" else None
    make(root / name)
    before = snapshot(tmp_path, home)
    with pytest.raises(ConfigError) as info:
        init_workspace(str(root), environ=env(home))
    assert info.value.code == "config.init_wrong_type"
    assert info.value.path == f"{root}/{name}"
    assert snapshot(tmp_path, home) == before


def test_a_symlinked_directory_is_left_as_it_is_with_a_warning(
    home: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink(str(outside), root / "skills")
    os.symlink(str(outside), root / "agents")
    report = init_workspace(str(root), environ=env(home))
    assert os.listdir(outside) == []  # nothing written through either link
    assert statuses(report)[f"{root}/agents"] == "existed"
    assert {f.path for f in report.findings if f.code == "init.symlink"} == {
        f"{root}/skills", f"{root}/agents"}


def test_legacy_reference_layout_gets_no_layout_marker(home: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "agents.toml").write_text("[agents]\n")
    report = init_workspace(str(root), environ=env(home))
    assert not (root / "layout.toml").exists()
    assert "init.legacy_layout" in {f.code for f in report.findings}


def test_an_unexpected_layout_marker_is_kept_and_named(home: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "layout.toml").write_text("version = 1\n")
    report = init_workspace(str(root), environ=env(home))
    assert (root / "layout.toml").read_text() == "version = 1\n"
    assert "init.layout" in {f.code for f in report.findings}


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ("{tmp}/new/../ws", "config.init_path"),
        ("{tmp}/file/ws", "config.init_wrong_type"),
        ("{tmp}/line\nbreak", "config.init_path"),
    ],
)
def test_unusable_paths_are_refused(home: str, tmp_path: Path, target: str, code: str) -> None:
    (tmp_path / "file").write_text("x")
    before = snapshot(tmp_path, home)
    with pytest.raises(ConfigError) as info:
        init_workspace(target.format(tmp=tmp_path), environ=env(home))
    assert info.value.code == code
    assert snapshot(tmp_path, home) == before


def test_dotdot_below_an_existing_directory_is_resolved_by_the_kernel(
    home: str, tmp_path: Path
) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    os.symlink(str(tmp_path / "real" / "sub"), tmp_path / "link")
    report = init_workspace(f"{tmp_path}/link/../ws", environ=env(home))
    assert report.workspace == f"{tmp_path}/real/ws"  # not the lexical {tmp}/ws
    assert os.path.isdir(f"{tmp_path}/real/ws/projects")


# -- the pointer file: problems are warnings -------------------------------------------


def test_symlinked_config_directory_gets_no_pointer(home: str, tmp_path: Path) -> None:
    outside = tmp_path / "dotfiles"
    outside.mkdir()
    os.makedirs(f"{home}/.config")
    os.symlink(str(outside), f"{home}/.config/aikito")
    report = init_workspace(f"{tmp_path}/ws", environ=env(home))
    assert os.listdir(outside) == []
    assert not any(e.role == "pointer" for e in report.entries)
    assert "AIKITO_DIR" in report.findings[0].message
    assert os.path.isdir(f"{tmp_path}/ws/projects")


def test_config_path_that_is_a_file_gets_no_pointer(home: str, tmp_path: Path) -> None:
    Path(home, ".config").write_text("not a directory\n")
    report = init_workspace(f"{tmp_path}/ws", environ=env(home))
    assert Path(home, ".config").read_text() == "not a directory\n"
    assert [f.code for f in report.findings] == ["init.pointer"]


def test_missing_home_directory_gets_no_pointer(tmp_path: Path) -> None:
    gone = f"{tmp_path}/gone"
    report = init_workspace(f"{tmp_path}/ws", environ={"HOME": gone})
    assert not os.path.exists(gone)
    assert [f.code for f in report.findings] == ["init.pointer"]


# -- init_project ------------------------------------------------------------------------


def test_project_with_a_checkout_under_home(home: str) -> None:
    root = made_workspace(home)
    co = Path(home, "code", "demo")
    co.mkdir(parents=True)
    report = init_project(None, "demo", str(co), environ=env(home))
    assert (report.workspace, report.found_via) == (root, "pointer file")
    assert (report.checkout, report.registered_as) == (str(co), "~/code/demo")
    config = Path(root, "projects", "demo", "agent.toml")
    assert [e.path for e in report.entries] == [str(config.parent), str(config)]
    doc = tomllib.loads(config.read_text())
    assert doc == {"paths": ["~/code/demo"], "memory": []}
    # The engine accepts the template: the checkout is active and nothing conflicts.
    plan = Project.load("demo", workspace=root).plan()
    assert [c.path for c in plan.checkouts] == [str(co)]
    assert not plan.conflicts


def test_project_checkout_outside_home_is_absolute(home: str, tmp_path: Path) -> None:
    root = made_workspace(home)
    co = tmp_path / "srv" / "demo"
    co.mkdir(parents=True)
    report = init_project(root, "demo", f"{tmp_path}/srv/./demo/", environ=env(home))
    assert report.registered_as == str(co)
    assert tomllib.loads(Path(root, "projects/demo/agent.toml").read_text())["paths"] == [
        str(co)]


def test_project_checkout_relative_to_cwd(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = made_workspace(home)
    (tmp_path / "co").mkdir()
    monkeypatch.chdir(tmp_path)
    report = init_project(root, "demo", "co", environ=env(home))
    assert report.registered_as == f"{os.path.realpath(tmp_path)}/co"


def test_project_without_checkout(home: str) -> None:
    root = made_workspace(home)
    report = init_project(root, "demo", environ=env(home))
    assert report.checkout is None and report.registered_as is None
    text = Path(root, "projects/demo/agent.toml").read_text()
    assert tomllib.loads(text) == {"paths": [], "memory": []}
    assert "# skills = []" in text
    assert text_lines(report)[-1] == "Next: aikito sync project demo PATH"


def test_project_directory_without_agent_toml_gets_one(home: str) -> None:
    root = made_workspace(home)
    notes = Path(root, "projects", "demo", "memory", "notes")
    notes.mkdir(parents=True)
    report = init_project(root, "demo", environ=env(home))
    assert [e.status for e in report.entries] == [InitStatus.EXISTED, InitStatus.CREATED]
    assert notes.is_dir()


def test_existing_project_is_a_configuration_error(home: str, tmp_path: Path) -> None:
    root = made_workspace(home)
    init_project(root, "demo", environ=env(home))
    (tmp_path / "co").mkdir()
    before = snapshot(root, home, tmp_path)
    with pytest.raises(ConfigError) as info:
        init_project(root, "demo", str(tmp_path / "co"), environ=env(home))
    assert info.value.exit_code == 4 and info.value.code == "config.project_exists"
    assert snapshot(root, home, tmp_path) == before


def test_dangling_agent_toml_link_counts_as_existing(home: str) -> None:
    root = made_workspace(home)
    Path(root, "projects", "demo").mkdir()
    os.symlink("/nowhere", f"{root}/projects/demo/agent.toml")
    with pytest.raises(ConfigError) as info:
        init_project(root, "demo", environ=env(home))
    assert info.value.code == "config.project_exists"
    assert os.readlink(f"{root}/projects/demo/agent.toml") == "/nowhere"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "-x", ".hidden", "a b", "x" * 256,
                                  "naïve", "a\nb"])
def test_invalid_project_names(home: str, name: str) -> None:
    root = made_workspace(home)
    before = snapshot(root)
    with pytest.raises(ConfigError) as info:
        init_project(root, name, environ=env(home))
    assert info.value.code == "config.project_name"
    assert snapshot(root) == before


@pytest.mark.parametrize("kind", ["project dir", "projects dir"])
def test_project_never_written_through_a_symlink(home: str, tmp_path: Path, kind: str) -> None:
    root = made_workspace(home)
    outside = tmp_path / "outside"
    outside.mkdir()
    if kind == "project dir":
        os.symlink(str(outside), f"{root}/projects/demo")
    else:
        os.rename(f"{root}/projects", f"{outside}/projects")
        os.symlink(f"{outside}/projects", f"{root}/projects")
    before = snapshot(tmp_path, root)
    with pytest.raises(ConfigError) as info:
        init_project(root, "demo", environ=env(home))
    assert info.value.code == "config.init_wrong_type"
    assert snapshot(tmp_path, root) == before


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda t, root: f"{t}/missing", "config.checkout_path"),
        (lambda t, root: (Path(t, "f").write_text("x"), f"{t}/f")[1], "config.checkout_path"),
        (lambda t, root: (os.makedirs(f"{root}/memory/co"), f"{root}/memory/co")[1],
         "config.checkout_in_workspace"),
        (lambda t, root: f"{root}/skills", "config.checkout_in_workspace"),
        (lambda t, root: (os.makedirs(f"{root}/projects/demo/memory/x"),
                          f"{root}/projects/demo/memory/x")[1], "config.checkout_in_workspace"),
        (lambda t, root: f"{t}/bad\x7fname", "config.init_path"),
    ],
)
def test_unusable_checkouts_are_refused(home: str, tmp_path: Path, make, code: str) -> None:  # type: ignore[no-untyped-def]
    root = made_workspace(home)
    checkout = make(str(tmp_path), root)
    before = snapshot(root, tmp_path)
    with pytest.raises(ConfigError) as info:
        init_project(root, "demo", checkout, environ=env(home))
    assert info.value.code == code
    assert snapshot(root, tmp_path) == before


def test_project_needs_a_workspace(home: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        init_project(None, "demo", environ=env(home))
    assert info.value.code == "config.workspace_missing"
    with pytest.raises(ConfigError) as info:
        init_project(str(tmp_path), "demo", environ=env(home))
    assert info.value.code == "config.workspace_no_projects"


def test_prepare_knows_the_default_agents(home: str) -> None:
    Path(home, ".claude").mkdir()  # Claude Code detected: agents/claude-code.toml
    root = made_workspace(home)
    co = Path(home, "code", "demo")
    co.mkdir(parents=True)
    init_project(root, "demo", str(co), environ=env(home))
    prepared = Project.load("demo", workspace=root).prepare("claude-code")
    assert prepared.checkout == str(co)
    with pytest.raises(ConfigError):
        Project.load("demo", workspace=root).prepare("claude")


# -- reports -----------------------------------------------------------------------------


def test_json_document(home: str) -> None:
    report = init_workspace(dry_run=True, environ=env(home))
    doc = json_document(report, None, command="workspace", dry_run=True)
    assert doc["schema"] == "aikito.init/1" and doc["command"] == "workspace"
    assert doc["outcome"] == "planned" and doc["dry_run"] is True
    assert doc["summary"] == {"created": 0, "existed": 0, "planned": len(report.entries)}
    first = doc["entries"][0]
    assert first == {"path": f"{home}/aikito", "kind": "directory", "status": "planned",
                     "role": "workspace"}
    assert report.entries[0].kind is EntryKind.DIRECTORY


def test_text_lines(home: str) -> None:
    Path(home, ".claude").mkdir()
    lines = text_lines(init_workspace(dry_run=True, environ=env(home)), home=home)
    assert lines[0] == f"Would initialise workspace {home}/aikito"
    assert "  would create projects/" in lines
    assert "  would create agents/" in lines
    assert "  would create agents/claude-code.toml" in lines
    assert "  would create ~/.config/aikito/workspace" in lines
    assert lines[-1] == "Next: aikito init project NAME [CHECKOUT]"
    assert all(len(line) <= 100 for line in lines)


def test_project_checkout_with_dotdot_is_resolved_by_the_kernel(
    home: str, tmp_path: Path
) -> None:
    root = made_workspace(home)
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "co").mkdir()
    (tmp_path / "co").mkdir()  # the lexical reading would name this one
    os.symlink(str(tmp_path / "real" / "sub"), tmp_path / "link")
    report = init_project(root, "demo", f"{tmp_path}/link/../co", environ=env(home))
    assert report.registered_as == report.checkout == f"{tmp_path}/real/co"


def test_project_in_a_workspace_whose_projects_vanished(tmp_path: Path) -> None:
    from aikito_mem.config.discovery import Workspace

    gone = Workspace(root=str(tmp_path), found_via="option", given=str(tmp_path))
    with pytest.raises(ConfigError) as info:
        init_project(gone, "demo")
    assert info.value.code == "config.workspace_no_projects"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("given", ["~nobody/ws", ""])
def test_workspace_path_that_cannot_be_made_absolute(home: str, given: str) -> None:
    with pytest.raises(ConfigError) as info:
        init_workspace(given, environ=env(home))
    assert info.value.code == "config.workspace_not_absolute"


def test_the_reference_tool_accepts_the_workspace(home: str) -> None:
    """Where ``make bench`` installed the reference tool (``aikito`` 1.61.1), it syncs a
    project of a workspace made here without complaint."""
    import subprocess

    exe = Path(__file__).resolve().parent.parent / "bench" / ".cache" / "ref-venv" / "bin" / (
        "aikito")
    if not exe.exists():
        pytest.skip("the reference tool is not installed (make bench installs it)")
    # One agent detected, so agents/ exists: the reference tool refuses a workspace
    # without it (a workspace made where no agent is detected gets one from
    # `aikito agents add`).
    Path(home, ".codex").mkdir()
    root = made_workspace(home)
    co = Path(home, "code", "demo")
    co.mkdir(parents=True)
    init_project(root, "demo", str(co), environ=env(home))
    Path(root, "projects", "demo", "AGENTS.md").write_text("# demo\n")
    proc = subprocess.run(
        [str(exe), "sync", "project", "demo", "--dry-run"], capture_output=True, text=True,
        timeout=300, env={"HOME": home, "AIKITO_DIR": root, "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{co}/AGENTS.md" in proc.stdout


def test_repointing_re_reads_the_pointer_just_before_the_rename(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[L4]: when, by the time of the write, the pointer names a workspace that exists
    (another run, the user), it is left as it is: stale, nothing replaced."""
    from aikito_mem.commands.init import repoint
    from aikito_mem.errors import StalePlanError

    pointer = Path(home, ".config", "aikito", "workspace")
    pointer.parent.mkdir(parents=True)
    pointer.write_text("/gone/ws\n")
    root = tmp_path / "ws"
    (root / "projects").mkdir(parents=True)
    monkeypatch.setattr(repoint, "names_a_workspace", lambda path: True)
    with pytest.raises(StalePlanError):
        init_workspace(str(root), environ=env(home))
    assert pointer.read_text() == "/gone/ws\n"
    assert sorted(os.listdir(pointer.parent)) == ["workspace"]  # no temporary file left


def test_the_work_tree_root_without_git_is_the_nearest_directory_holding_dot_git(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U1]: where git cannot be started (not on PATH), ``init project`` walks up from
    the current directory to the nearest ``.git``; with git, git answers."""
    from aikito_mem.commands.init.paths import work_tree_root
    from aikito_mem.world import git

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # not a repository git would accept
    (repo / "src" / "deep").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    deep = str(repo / "src" / "deep")
    assert work_tree_root(str(tmp_path / "ws"), None, deep) is None  # git: not a work tree
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert git.work_tree(deep) == git.Unavailable("git is not installed", started=False)
    assert work_tree_root(str(tmp_path / "ws"), None, deep) == os.path.realpath(repo)
    assert work_tree_root(str(tmp_path / "ws"), None, str(tmp_path / "ws")) is None
