"""The agent registry [G3]: reference-tool files accepted as they are; every bad value a
configuration error naming file and key; detection [G4]."""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aikito_mem.config.registry import NO_REGISTRY, AgentEntry, Detect, InstructionTarget, detected
from aikito_mem.config.registry_read import (
    agent_name,
    build_registry,
    load_registry,
    parse_agent_file,
)
from aikito_mem.errors import ConfigError

# The reference tool's own registry file for Claude Code, as it ships (abridged comments).
REFERENCE_CLAUDE = b'''
[agents.claude-code]
display_name = "Claude Code"
instruction_path = ".claude/CLAUDE.md"
project_instruction_path = ".claude/CLAUDE.md"
skills_path = ".claude/skills"

[agents.claude-code.detect]
commands = ["claude"]
paths = [".claude"]

[agents.claude-code.runner]
command = ["claude", "{prompt}"]
auto_approve_args = ["--add-dir", "{workspace}", "--permission-mode", "auto"]

[agents.claude-code.subagents]
config_path = ".claude/agents"
config_format = "claude_markdown"

[agents.claude-code.mcp]
config_path = ".claude.json"
live_command = ["claude", "mcp", "list"]
'''


def test_reference_tool_file_is_accepted_as_it_is():
    entry = parse_agent_file("claude-code", REFERENCE_CLAUDE, "/ws/agents/claude-code.toml")
    assert entry == AgentEntry(
        "claude-code", "/ws/agents/claude-code.toml", ".claude/CLAUDE.md",
        Detect(("claude",), (".claude",)),
    )


def test_no_table_means_no_target():
    assert parse_agent_file("x", b"", "f") == AgentEntry("x", "f")
    assert parse_agent_file("x", b'[agents.x]\ndisplay_name = "X"\n', "f") == AgentEntry("x", "f")
    assert parse_agent_file("x", b"top = 1\n", "f") == AgentEntry("x", "f")


@pytest.mark.parametrize(
    ("name", "data", "key"),
    [
        ("x", b'project_instruction_path = "AGENTS.md"\n', "project_instruction_path"),
        ("x", b"[detect]\ncommands = []\n", "detect"),
        ("x", b'[agents.y]\nproject_instruction_path = "A.md"\n', "agents.y"),
        ("x", b'agents = "x"\n', "agents"),
        ("x", b"[agents]\nx = 1\n", "agents.x"),
        ("x", b"[agents.x]\nproject_instruction_path = 1\n",
         "agents.x.project_instruction_path"),
        ("x", b'[agents.x]\nproject_instruction_path = "/abs"\n',
         "agents.x.project_instruction_path"),
        ("x", b'[agents.x]\nproject_instruction_path = "../up.md"\n',
         "agents.x.project_instruction_path"),
        ("x", b'[agents.x]\nproject_instruction_path = ""\n',
         "agents.x.project_instruction_path"),
        ("x", b'[agents.x]\nproject_instruction_path = "a\\u0000b"\n',
         "agents.x.project_instruction_path"),
        ("x", b'[agents.x]\ndetect = "claude"\n', "agents.x.detect"),
        ("x", b'[agents.x.detect]\ncommands = "claude"\n', "agents.x.detect.commands"),
        ("x", b'[agents.x.detect]\ncommands = [1]\n', "agents.x.detect.commands[0]"),
        ("x", b'[agents.x.detect]\ncommands = ["/usr/bin/claude"]\n',
         "agents.x.detect.commands[0]"),
        ("x", b'[agents.x.detect]\npaths = ["../.claude"]\n', "agents.x.detect.paths[0]"),
        ("x", b'[agents.x.detect]\npaths = [""]\n', "agents.x.detect.paths[0]"),
        ("Bad", b"", "the file name"),
        ("-x", b"", "the file name"),
    ],
)
def test_bad_values_name_file_and_key(name, data, key):
    with pytest.raises(ConfigError) as info:
        parse_agent_file(name, data, "/ws/agents/f.toml")
    assert info.value.exit_code == 4
    assert info.value.message.startswith(f"/ws/agents/f.toml: {key} ")
    assert info.value.path == "/ws/agents/f.toml"


@pytest.mark.parametrize("data", [b"[agents.x\n", b"\xff\xfe", b"\xef\xbb\xbfa = 1\n",
                                  b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n"])
def test_invalid_toml_is_a_configuration_error(data):
    with pytest.raises(ConfigError) as info:
        parse_agent_file("x", data, "/ws/agents/x.toml")
    assert "/ws/agents/x.toml" in info.value.message


def test_agents_sharing_a_path_form_one_target():
    reg = build_registry([
        AgentEntry("codex", "c", "AGENTS.md"),
        AgentEntry("claude", "a", ".claude/CLAUDE.md"),
        AgentEntry("copilot", "b", "AGENTS.md"),
        AgentEntry("nothing", "d"),
    ])
    assert reg.targets == (
        InstructionTarget(".claude/CLAUDE.md", ("claude",)),
        InstructionTarget("AGENTS.md", ("codex", "copilot")),
    )
    assert reg.targets_for("copilot") == (InstructionTarget("AGENTS.md", ("codex", "copilot")),)
    assert reg.targets_for("nothing") == ()
    assert [a.name for a in reg.agents] == ["claude", "codex", "copilot", "nothing"]


@pytest.mark.parametrize("path", [".agents/AGENTS.md", ".agents", ".git/x", ".GIT/hooks/a",
                                  ".Agents/memory/x"])
def test_targets_inside_agents_or_git_are_refused(path):
    with pytest.raises(ConfigError) as info:
        build_registry([AgentEntry("x", "/ws/agents/x.toml", path)])
    assert "agents.x.project_instruction_path" in info.value.message


def test_a_target_inside_another_is_refused():
    with pytest.raises(ConfigError) as info:
        build_registry([AgentEntry("a", "fa", "docs"), AgentEntry("b", "fb", "docs/AGENTS.md")])
    assert info.value.path == "fb"
    assert "inside the instruction target 'docs'" in info.value.message


def test_without_agents_directory_the_one_target_is_agents_md(tmp_path):
    assert load_registry(str(tmp_path)) == NO_REGISTRY
    assert NO_REGISTRY.targets_for("anyone") == (InstructionTarget("AGENTS.md"),)


def test_empty_agents_directory_means_no_targets(tmp_path):
    (tmp_path / "agents").mkdir()
    reg = load_registry(str(tmp_path))
    assert reg.present and reg.targets == () and reg.agents == ()


def test_load_reads_only_toml_files(tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "claude-code.toml").write_bytes(REFERENCE_CLAUDE)
    (agents / "README.md").write_text("not a registry file")
    (agents / ".hidden.toml").write_text("garbage [")
    reg = load_registry(str(tmp_path))
    assert [a.name for a in reg.agents] == ["claude-code"]
    assert reg.targets == (InstructionTarget(".claude/CLAUDE.md", ("claude-code",)),)


@pytest.mark.parametrize("kind", ["symlink", "dir", "fifo"])
def test_non_regular_registry_files_are_refused(tmp_path, kind):
    agents = tmp_path / "agents"
    agents.mkdir()
    (tmp_path / "real.toml").write_bytes(REFERENCE_CLAUDE)
    target = agents / "x.toml"
    if kind == "symlink":
        os.symlink(tmp_path / "real.toml", target)
    elif kind == "dir":
        target.mkdir()
    else:
        os.mkfifo(target)
    with pytest.raises(ConfigError) as info:
        load_registry(str(tmp_path))
    assert str(target) in info.value.message


@pytest.mark.parametrize("where", ["inside the workspace", "outside it"])
def test_a_registry_file_symlinked_to_a_valid_file_is_refused(tmp_path, where):
    """The symlink itself is refused — never followed — however valid the file it names
    (the same bytes as a regular file load): the refusal names the link."""
    plain = tmp_path / "plain"
    (plain / "agents").mkdir(parents=True)
    (plain / "agents" / "claude-code.toml").write_bytes(REFERENCE_CLAUDE)
    assert [a.name for a in load_registry(str(plain)).agents] == ["claude-code"]

    ws = tmp_path / "ws"
    (ws / "agents").mkdir(parents=True)
    real = (ws if where == "inside the workspace" else tmp_path) / "claude-code.toml"
    real.write_bytes(REFERENCE_CLAUDE)
    link = ws / "agents" / "claude-code.toml"
    os.symlink(real, link)
    with pytest.raises(ConfigError) as info:
        load_registry(str(ws))
    assert str(link) in info.value.message and "is a symlink" in info.value.message
    assert info.value.path == str(link)


def test_agents_as_a_file_is_refused(tmp_path):
    (tmp_path / "agents").write_text("")
    with pytest.raises(ConfigError):
        load_registry(str(tmp_path))


def test_detection_by_command_on_path_and_path_under_home(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "claude"
    tool.write_text("#!/bin/sh\n")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"relative:{bin_dir}"}
    det = Detect(("claude",), (".claude",))
    assert not detected(det, env, str(home))  # not executable yet
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    assert detected(det, env, str(home))
    assert not detected(det, {"PATH": "relative"}, str(home))
    (home / ".claude").mkdir()
    assert detected(det, {"PATH": ""}, str(home))
    assert not detected(None, env, str(home))
    assert not detected(Detect(), env, str(home))


@given(name=st.text(alphabet="az09._-AZé \n/", max_size=8))
def test_agent_name_decides_what_its_pattern_did(name: str) -> None:
    """The file-name rule is checked without a pattern (nothing compiled, [§12]) and
    decides exactly what ``[a-z0-9][a-z0-9._-]*`` did."""
    import re

    assert agent_name(name) is (re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name) is not None)


@pytest.mark.parametrize("shape", ["absent", "empty", "no registry file", "files", "a file"])
def test_the_observing_pass_loads_what_load_registry_loads(tmp_path, shape):
    """A sync's observation pass decides a registry without files by the listing alone
    (the reader is imported only for files, [§12]): the same registry, or the same error,
    as :func:`load_registry` in every shape of ``agents/``."""
    from aikito_mem.config.registry import EMPTY_REGISTRY, agent_files, listed_registry
    from aikito_mem.world import load_registry as observed_registry

    agents = tmp_path / "agents"
    if shape == "a file":
        agents.write_text("")
    elif shape != "absent":
        agents.mkdir()
    if shape == "no registry file":
        (agents / "README.md").write_text("x")
        (agents / ".hidden.toml").write_text("garbage [")
    if shape == "files":
        (agents / "claude-code.toml").write_bytes(REFERENCE_CLAUDE)
    ws = str(tmp_path)
    if shape == "a file":
        with pytest.raises(ConfigError) as first:
            load_registry(ws)
        with pytest.raises(ConfigError) as second:
            observed_registry(ws)
        assert first.value.message == second.value.message
        return
    assert observed_registry(ws) == load_registry(ws)
    listed = listed_registry(agent_files(ws))
    expected = {"absent": NO_REGISTRY, "empty": EMPTY_REGISTRY,
                "no registry file": EMPTY_REGISTRY, "files": None}[shape]
    assert listed == expected
