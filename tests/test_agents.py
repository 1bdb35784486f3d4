"""The agent catalogue [N2]: the data validated, ``aikito agents`` (detection with the
run's PATH and home directory, the registry, the JSON document) and ``aikito agents add``
(never overwriting, a did-you-mean, a dry run that writes nothing, the refusals).

Real temporary directories; detection through fake executables on ``PATH`` and paths
under the test's own home directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from aikito_mem.commands.agents import AddStatus, add_agents, list_agents
from aikito_mem.config.catalogue import (
    CATALOGUE_FILE,
    load_catalogue,
    parse_catalogue,
    registry_text,
    suggestions,
)
from aikito_mem.config.names import reference_problem
from aikito_mem.config.registry_read import build_registry, load_registry, parse_agent_file
from aikito_mem.errors import ConfigError, StalePlanError
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import snapshot

CATALOGUE = load_catalogue()
NAMES = [e.name for e in CATALOGUE]
#: The reference tool's rule for an agent file's stem (aikito 1.61.1, add.py).
REFERENCE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def fake_executable(directory: Path, name: str, mode: int = 0o755) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(mode)


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "projects").mkdir(parents=True)
    return root


def env_of(home: str, path: str = "") -> dict[str, str]:
    return {"HOME": home, "PATH": path}


# -------------------------------------------------------------------- the catalogue data


def test_at_least_25_agents_with_unique_kebab_case_names() -> None:
    assert len(CATALOGUE) >= 25
    assert len(set(NAMES)) == len(NAMES)
    assert all(REFERENCE_NAME.match(n) for n in NAMES)
    assert len({e.display_name for e in CATALOGUE}) == len(CATALOGUE)


def test_every_path_is_clean() -> None:
    """[C3] for every instruction path, skills path and detect path; commands are bare."""
    for e in CATALOGUE:
        for path in (e.instruction_path, e.skills_path, *e.detect.paths):
            if path is not None:
                assert reference_problem(path) is None, (e.name, path)
        for command in e.detect.commands:
            assert "/" not in command and command.strip() == command, (e.name, command)
        assert e.detect.commands or e.detect.paths, f"{e.name} can never be detected"


def test_every_entry_cites_its_sources_in_a_comment() -> None:
    for e in CATALOGUE:
        text = "\n".join(e.source)
        assert e.source and e.source[0].startswith("# "), e.name
        assert "https://" in text, f"{e.name}: no documentation cited"
        assert "instructions" in text and "skills" in text, e.name
        if e.instruction_path is None:
            # The reason there is no plain link is written down.
            assert "no project_instruction_path" in text, e.name


def test_comment_blocks_belong_to_the_table_below_them() -> None:
    data = (b"# A\n# https://a.example\n[agents.a]\ndisplay_name = \"A\"\n"
            b"[agents.a.detect]\ncommands = [\"a\"]\n\n"
            b"[agents.b]\ndisplay_name = \"B\"\n[agents.b.detect]\npaths = [\".b\"]\n")
    a, b = parse_catalogue(data)
    assert a.source == ("# A", "# https://a.example") and b.source == ()


@pytest.mark.parametrize("bad", [
    b'name = "x"\n',  # a key outside [agents.<name>]
    b'[agents.Bad_Name]\ndisplay_name = "x"\n[agents.Bad_Name.detect]\ncommands = ["x"]\n',
    b'[agents.x]\ndisplay_name = "x"\n',  # no detect table
    # A name [G3] accepts but the reference tool does not (not kebab case).
    b'[agents.a_b]\ndisplay_name = "x"\n[agents.a_b.detect]\ncommands = ["x"]\n',
    b'[agents.x]\ndisplay_name = "x"\nproject_instruction_path = "../x"\n'
    b'[agents.x.detect]\ncommands = ["x"]\n',
])
def test_a_broken_catalogue_is_refused(bad: bytes) -> None:
    with pytest.raises(ConfigError) as info:
        parse_catalogue(bad)
    assert info.value.code in ("config.catalogue", "config.registry")


def test_the_written_files_parse_under_the_registry_rules(tmp_path: Path) -> None:
    """Each file holds only [agents.<name>] (the reference tool's rule), parses as a sync
    parses it, and the whole catalogue registered at once is a valid registry [G3]."""
    entries = []
    for e in CATALOGUE:
        text = registry_text(e)
        doc = tomllib.loads(text)
        assert list(doc) == ["agents"] and list(doc["agents"]) == [e.name]
        parsed = parse_agent_file(e.name, text.encode(), f"{tmp_path}/agents/{e.name}.toml")
        assert (parsed.instruction_path, parsed.skills_path) == (e.instruction_path,
                                                                 e.skills_path)
        assert parsed.detect == e.detect
        entries.append(parsed)
    registry = build_registry(entries)
    assert {a for t in registry.targets for a in t.agents} == {
        e.name for e in CATALOGUE if e.instruction_path is not None}


def test_the_catalogue_is_package_data() -> None:
    pyproject = tomllib.loads(Path(__file__).parent.parent.joinpath("pyproject.toml")
                              .read_text())
    data = pyproject["tool"]["setuptools"]["package-data"]
    assert CATALOGUE_FILE in data["aikito_mem.config"]


def test_the_reference_tool_accepts_a_workspace_with_every_agent(tmp_path: Path) -> None:
    """Where ``make bench`` installed the reference tool (aikito 1.61.1): a workspace
    holding every file the catalogue writes is accepted by its sync."""
    exe = Path(__file__).resolve().parent.parent / "bench" / ".cache" / "ref-venv" / "bin" / (
        "aikito")
    if not exe.exists():
        pytest.skip("the reference tool is not installed (make bench installs it)")
    root = workspace(tmp_path)
    for d in ("agents", "subagents", "memory", "skills", "projects/demo"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "layout.toml").write_text("version = 2\n")
    for e in CATALOGUE:
        (root / "agents" / f"{e.name}.toml").write_text(registry_text(e))
    co = tmp_path / "co"
    co.mkdir()
    (root / "projects" / "demo" / "agent.toml").write_text(f'paths = ["{co}"]\n')
    (root / "projects" / "demo" / "AGENTS.md").write_text("# demo\n")
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run([str(exe), "sync", "project", "demo", "--dry-run"],
                          capture_output=True, text=True, timeout=300,
                          env={"HOME": str(home), "AIKITO_DIR": str(root),
                               "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_did_you_mean() -> None:
    assert suggestions("claude", NAMES)[0] == "claude-code"
    assert suggestions("copilot", NAMES)[0] == "github-copilot"
    assert suggestions("gemini", NAMES)[0] == "gemini-cli"
    assert suggestions("zzzzzz", NAMES) == ()


# ---------------------------------------------------------------------- aikito agents


def test_detection_follows_path_and_home(tmp_path: Path, home: str) -> None:
    bin_dir = tmp_path / "bin"
    fake_executable(bin_dir, "claude")
    fake_executable(bin_dir, "gemini", mode=0o644)  # not executable: not detected
    Path(home, ".codex").mkdir()
    root = str(workspace(tmp_path))
    report = list_agents(root, environ=env_of(home, str(bin_dir)))
    detected = {r.name for r in report.rows if r.detected}
    assert detected == {"claude-code", "codex"}
    # The same machine without that PATH and that home: nothing detected.
    other = tmp_path / "other-home"
    other.mkdir()
    report = list_agents(root, environ=env_of(str(other)))
    assert not any(r.detected for r in report.rows)


def test_registered_agents_and_the_registry_values(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    (root / "agents").mkdir()
    # A user's own registry file: its values are what a sync uses, so they are shown.
    (root / "agents" / "codex.toml").write_text(
        '[agents.codex]\nproject_instruction_path = "docs/AGENTS.md"\n')
    (root / "agents" / "mine.toml").write_text(
        '[agents.mine]\nproject_instruction_path = "MINE.md"\n')
    report = list_agents(str(root), environ=env_of(home))
    rows = {r.name: r for r in report.rows}
    assert report.registry_present
    assert rows["codex"].registered and rows["codex"].instruction_path == "docs/AGENTS.md"
    assert rows["claude-code"].registered is False
    assert not rows["mine"].in_catalogue and rows["mine"].registered
    assert rows["mine"].instruction_path == "MINE.md"


def test_listing_without_a_workspace(tmp_path: Path, home: str) -> None:
    report = list_agents(str(tmp_path / "missing"), environ=env_of(home))
    assert report.error is None and report.workspace is None
    assert [f.code for f in report.findings] == ["agents.no_workspace"]
    assert {r.registered for r in report.rows} == {None}
    assert len(report.rows) == len(CATALOGUE)


def test_cli_list_json_and_text(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    Path(home, ".claude").mkdir()
    result = invoke("--workspace", str(root), "agents", "--json",
                    env={"PATH": str(tmp_path / "empty")})
    doc = one_json(result.stdout)
    assert result.exit_code == 0 and doc["schema"] == "aikito.agents/1"
    assert doc["command"] == "list" and doc["error"] is None and doc["registry"] is False
    assert doc["summary"] == {"catalogue": len(CATALOGUE), "detected": 1, "registered": 0}
    claude = next(a for a in doc["agents"] if a["name"] == "claude-code")
    assert claude["detected"] and claude["project_skills_path"] == ".claude/skills"
    text = invoke("--workspace", str(root), "agents", env={"PATH": "", "COLUMNS": "100"})
    assert text.exit_code == 0
    assert "aikito agents add claude-code" in text.stdout.splitlines()[-1]
    assert all(len(line) <= 100 for line in text.stdout.splitlines())


@pytest.mark.parametrize("columns", [60, 100])
def test_cli_list_fits_the_width(tmp_path: Path, home: str, columns: int) -> None:
    """[U2]: at 100 columns the table as it is; at 60 its first three columns, each
    agent's instruction target and skills directory indented below its row; every line
    of the list and of an error within the width."""
    root = workspace(tmp_path)
    Path(home, ".claude").mkdir()
    env = {"PATH": "", "COLUMNS": str(columns)}
    text = invoke("--workspace", str(root), "agents", env=env).stdout.splitlines()
    # Only the workspace's path may be wider, alone on its line.
    assert all(len(line) <= columns or len(line.split()) == 1 for line in text), text
    table = text[next(i for i, line in enumerate(text) if line.startswith("AGENT ")):]
    if columns == 100:
        assert table[:3] == [
            "AGENT           DETECTED  REGISTERED  INSTRUCTIONS                    SKILLS",
            "codex           -         -           AGENTS.md                       "
            ".agents/skills",
            "claude-code     yes       -           .claude/CLAUDE.md               "
            ".claude/skills"]
    else:
        assert text[:2] == ["aikito knows 31 coding agents; DETECTED: on this machine",
                            "    (PATH, home directory)"]
        assert table[:6] == [
            "AGENT           DETECTED  REGISTERED", "    INSTRUCTIONS, SKILLS",
            "codex           -         -", "    instructions AGENTS.md, skills .agents/skills",
            "claude-code     yes       -",
            "    instructions .claude/CLAUDE.md, skills .claude/skills"]
        assert text[-2:] == [
            "1 detected, 0 registered. Register the detected ones:",
            "    aikito agents add claude-code"]  # [U2]: the command whole, to paste
    error = invoke("--workspace", str(root), "agents", "add", "nosuch", env=env)
    assert error.exit_code == 4
    assert all(len(line) <= columns for line in error.stderr.splitlines()), error.stderr


def test_cli_list_with_a_broken_registry_is_exit_4(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    (root / "agents").mkdir()
    (root / "agents" / "x.toml").write_text("not toml [\n")
    result = invoke("--workspace", str(root), "agents", "--json")
    assert result.exit_code == 4
    assert one_json(result.stdout)["error"]["code"].startswith("config.toml")


# ------------------------------------------------------------------ aikito agents add


def test_add_writes_the_registry_files(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    report = add_agents(str(root), ["claude-code", "codex", "codex"], environ=env_of(home))
    assert report.outcome == "applied" and report.directory_status is AddStatus.CREATED
    assert [(f.agent, f.status) for f in report.files] == [
        ("claude-code", AddStatus.CREATED), ("codex", AddStatus.CREATED)]
    by_name = {e.name: e for e in CATALOGUE}
    for name in ("claude-code", "codex"):
        assert (root / "agents" / f"{name}.toml").read_text() == registry_text(by_name[name])
    assert {t.path for t in load_registry(str(root)).targets} == {"AGENTS.md",
                                                                   ".claude/CLAUDE.md"}


def test_add_never_overwrites(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    (root / "agents").mkdir()
    mine = root / "agents" / "codex.toml"
    mine.write_text('# my own\n[agents.codex]\nproject_instruction_path = "X.md"\n')
    before = snapshot(mine)
    report = add_agents(str(root), ["codex", "pi"], environ=env_of(home))
    assert snapshot(mine) == before
    assert [(f.agent, f.status) for f in report.files] == [
        ("codex", AddStatus.EXISTED), ("pi", AddStatus.CREATED)]
    again = add_agents(str(root), ["codex", "pi"], environ=env_of(home))
    assert again.outcome == "unchanged"


def test_add_dry_run_writes_nothing(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    before = snapshot(tmp_path)
    report = add_agents(str(root), ["cursor"], dry_run=True, environ=env_of(home))
    assert snapshot(tmp_path) == before
    assert report.outcome == "planned" and report.directory_status is AddStatus.PLANNED
    assert [f.status for f in report.files] == [AddStatus.PLANNED]


def test_an_unknown_name_gets_a_did_you_mean_and_nothing_is_written(
    tmp_path: Path, home: str
) -> None:
    root = workspace(tmp_path)
    before = snapshot(tmp_path)
    result = invoke("--workspace", str(root), "agents", "add", "codex", "claud")
    assert result.exit_code == 4
    assert "did you mean 'claude-code'?" in result.stderr
    assert snapshot(tmp_path) == before
    doc = one_json(invoke("--workspace", str(root), "agents", "add", "claud", "--json").stdout)
    assert doc["error"]["code"] == "config.unknown_agent" and doc["files"] == []


def test_a_symlinked_registry_directory_is_refused(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / "agents")
    with pytest.raises(ConfigError) as info:
        add_agents(str(root), ["codex"], environ=env_of(home))
    assert "symlink" in info.value.message
    assert os.listdir(elsewhere) == []


def test_a_registry_the_new_file_would_break_is_refused(tmp_path: Path, home: str) -> None:
    """A user's agent whose target is .claude (a file) would contain claude-code's
    .claude/CLAUDE.md: every sync would fail, so nothing is written [G3]."""
    root = workspace(tmp_path)
    (root / "agents").mkdir()
    (root / "agents" / "mine.toml").write_text(
        '[agents.mine]\nproject_instruction_path = ".claude"\n')
    before = snapshot(root)
    with pytest.raises(ConfigError) as info:
        add_agents(str(root), ["claude-code"], environ=env_of(home))
    assert "inside the instruction target" in info.value.message
    assert snapshot(root) == before


def test_a_file_that_appears_meanwhile_is_stale_and_kept(
    tmp_path: Path, home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aikito_mem import fsutil

    root = workspace(tmp_path)
    real = fsutil.create_new

    def racing(dir_fd: int, name: str, data: bytes) -> None:
        Path(root, "agents", name).write_text("theirs\n")  # another writer, first
        real(dir_fd, name, data)

    monkeypatch.setattr(fsutil, "create_new", racing)
    with pytest.raises(StalePlanError) as info:
        add_agents(str(root), ["codex"], environ=env_of(home))
    assert Path(root, "agents", "codex.toml").read_text() == "theirs\n"
    partial = info.value.result
    assert partial.directory_status is AddStatus.CREATED
    assert [f.status for f in partial.files] == [AddStatus.PLANNED]


def test_cli_add_text_and_json(tmp_path: Path, home: str) -> None:
    root = workspace(tmp_path)
    dry = invoke("--workspace", str(root), "agents", "add", "kiro", "--dry-run")
    assert dry.exit_code == 0 and not (root / "agents").exists()
    assert "  would create agents/kiro.toml" in dry.stdout.splitlines()
    done = invoke("--workspace", str(root), "agents", "add", "kiro", "--json")
    doc = one_json(done.stdout)
    assert done.exit_code == 0 and doc["outcome"] == "applied"
    assert doc["files"] == [{"agent": "kiro", "path": f"{root}/agents/kiro.toml",
                             "status": "created"}]
    assert (root / "agents" / "kiro.toml").is_file()
    usage = invoke("--workspace", str(root), "agents", "add")
    assert usage.exit_code == 2


# ------------------------------------------------------- project_skills_path in the registry


@pytest.mark.parametrize("path", [".claude/skills", ".agents/skills", "tools/skills",
                                  ".agent/skills"])
def test_a_clean_skills_directory_is_read(path: str) -> None:
    entry = parse_agent_file("x", f'[agents.x]\nproject_skills_path = "{path}"\n'.encode(),
                             "/ws/agents/x.toml")
    assert entry.skills_path == path


@pytest.mark.parametrize("path", [".git/skills", "a/.GIT/skills", ".agents/other", ".agents",
                                  "x/.agents/skills", "../skills", "/abs", "a//b", ""])
def test_a_skills_directory_in_git_or_agents_or_unclean_is_refused(path: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_agent_file("x", f'[agents.x]\nproject_skills_path = "{path}"\n'.encode(),
                         "/ws/agents/x.toml")
    assert info.value.path == "/ws/agents/x.toml"
    assert "agents.x.project_skills_path" in info.value.message


def test_a_misplaced_skills_path_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_agent_file("x", b'project_skills_path = ".x/skills"\n', "/ws/agents/x.toml")
    assert "outside [agents.x]" in info.value.message
