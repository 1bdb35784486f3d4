"""The benchmark package's pure parts (SPEC §12, §13 [G7]): the workspaces its workloads
build, the syscall-floor script on them, the report on made-up rows, and that installing
a Debian package is opt-in. No timing and no run of the reference tool."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import pytest

from bench import cli, imports, instructions, report, suite
from bench.results import AIKITO, FLOOR, IMPORTS, PASS, REFERENCE, STOW, Row, Sample
from bench.runner import peers

# --------------------------------------------------------------------------- the workloads


def _agent_toml(b: suite.Built, project: str = suite.PROJECT) -> dict[str, object]:
    with open(b.ws / "projects" / project / "agent.toml", "rb") as fh:
        return tomllib.load(fh)


def _manifest(path: Path) -> list[tuple[str, str]]:
    return [tuple(line.split(" ", 1)) for line in path.read_text().splitlines()]  # type: ignore[misc]


def test_w1_has_the_documented_shape(tmp_path: Path) -> None:
    b = suite.build(suite.W1, tmp_path / "w1")
    mem = b.ws / "memory"
    nested = [r for r in b.refs if "/" in r]
    assert len(b.refs) == len(set(b.refs)) == 30
    assert len([r for r in b.refs if (mem / r).is_file() and "/" not in r]) == 20
    assert len([r for r in b.refs if (mem / r).is_dir()]) == 5
    assert len(nested) == 5
    assert all(r.count("/") == 2 and (mem / r).is_file() for r in nested)  # team/a/b.md
    assert b.notes_source is not None
    assert len([p for p in b.notes_source.iterdir() if p.is_file()]) == 10

    config = _agent_toml(b)
    assert config["memory"] == b.refs
    assert "skills" not in config
    paths = config["paths"]
    assert isinstance(paths, list) and len(paths) == 3
    assert [os.path.isdir(p) for p in paths].count(True) == 2
    assert [Path(p) for p in paths if not os.path.exists(p)] == b.offline
    assert len(b.active) == 2 and len(b.offline) == 1

    # The reference tool's workspace requirements; no skills or instructions in W1.
    assert tomllib.loads((b.ws / "layout.toml").read_text()) == {"version": 2}
    assert list((b.ws / "agents").iterdir()) == list((b.ws / "subagents").iterdir()) == []
    assert not (b.ws / "skills").exists()
    assert not (b.ws / "projects" / suite.PROJECT / "AGENTS.md").exists()

    # The syscall baseline: an empty project with as many (existing) checkouts.
    empty = _agent_toml(b, suite.EMPTY_PROJECT)
    assert empty["memory"] == []
    assert [Path(p) for p in empty["paths"]] == b.empty_active  # type: ignore[union-attr]
    assert all(p.is_dir() for p in b.empty_active)

    kinds = [k for k, _ in _manifest(b.manifest)]
    assert (kinds.count("R"), kinds.count("A"), kinds.count("O"), kinds.count("N")) == (30, 2, 1, 1)
    assert "L" not in kinds and "I" not in kinds
    assert suite.W1.resources == 31 and suite.W1.targets == 62


def test_w1_segments_adds_skills_and_two_instruction_targets(tmp_path: Path) -> None:
    w1 = suite.build(suite.W1, tmp_path / "w1")
    b = suite.build(suite.W1_SEGMENTS, tmp_path / "seg")
    assert b.refs == w1.refs  # the memory job is W1's
    assert _agent_toml(b)["memory"] == w1.refs
    assert len(b.active) == 2 and len(b.offline) == 1

    skills = _agent_toml(b)["skills"]
    assert isinstance(skills, list) and len(skills) == 5 and skills == b.skills
    assert sorted(p.name for p in (b.ws / "skills").iterdir()) == sorted(skills)
    for name in skills:
        assert (b.ws / "skills" / name / "SKILL.md").read_text().strip()

    agents_md = b.ws / "projects" / suite.PROJECT / "AGENTS.md"
    assert agents_md.read_text().strip()  # non-empty: every target is linked

    # The registry, in the reference tool's format: one [agents.<stem>] table a file.
    registry = sorted((b.ws / "agents").glob("*.toml"))
    assert len(registry) == 2
    targets = []
    for path in registry:
        doc = tomllib.loads(path.read_text())
        assert list(doc) == ["agents"]
        assert list(doc["agents"]) == [path.stem]
        agent = doc["agents"][path.stem]
        targets.append(agent["project_instruction_path"])
        assert all(isinstance(c, str) for c in agent["detect"]["commands"])
    assert sorted(targets) == [".claude/CLAUDE.md", "AGENTS.md"]
    assert sorted(b.instruction_targets) == sorted(targets)

    lines = _manifest(b.manifest)
    links = [v for k, v in lines if k == "L"]
    assert len(links) == 5 + 2
    assert ("I", str(agents_md)) in lines
    assert suite.W1_SEGMENTS.resources == 31 + 5 + 2
    assert suite.W1_SEGMENTS.group_name == "W1" and not suite.W1_SEGMENTS.memory_only


def test_w1_agents_adds_three_detected_per_agent_skills_directories(tmp_path: Path) -> None:
    """W1+agents ([N1]): W1+segments' memory, skills and two instruction targets, and
    three agents of the registry with a ``project_skills_path`` each, detected by a path
    the harness creates under every run's HOME."""
    seg = suite.build(suite.W1_SEGMENTS, tmp_path / "seg")
    b = suite.build(suite.W1_AGENTS, tmp_path / "agents")
    assert (b.refs, b.skills, sorted(b.instruction_targets)) == (
        seg.refs, seg.skills, sorted(seg.instruction_targets))
    assert _agent_toml(b) == {**_agent_toml(seg), "paths": _agent_toml(b)["paths"]}
    assert b.agent_dirs == [".claude/skills", ".gemini/skills", ".opencode/skills"]
    assert b.home_paths == [".claude", ".gemini", ".config/opencode"]
    assert seg.agent_dirs == seg.home_paths == []

    registry = {p.stem: tomllib.loads(p.read_text()) for p in (b.ws / "agents").glob("*.toml")}
    assert sorted(registry) == ["claude-code", "codex", "gemini", "opencode"]
    for name, doc in registry.items():
        assert list(doc) == ["agents"] and list(doc["agents"]) == [name]
    skills_paths = {n: d["agents"][n].get("project_skills_path") for n, d in registry.items()}
    assert skills_paths == {"claude-code": ".claude/skills", "codex": None,
                            "gemini": ".gemini/skills", "opencode": ".opencode/skills"}
    detect = {n: d["agents"][n]["detect"] for n, d in registry.items()}
    assert detect["gemini"] == {"paths": [".gemini"]}
    assert detect["opencode"] == {"paths": [".config/opencode"]}
    assert detect["claude-code"] == {"paths": [".claude"]}

    links = [v for k, v in _manifest(b.manifest) if k == "L"]
    assert len(links) == 5 * 4 + 2
    assert f"{b.ws}/skills/skill-00 .gemini/skills/skill-00" in links
    assert suite.W1_AGENTS.segment_resources == 5 * 4 + 2
    assert suite.W1_AGENTS.group_name == "W1"


def test_the_engine_links_every_per_agent_directory_of_w1_agents(tmp_path: Path) -> None:
    """With the detection paths under HOME, a plan of W1+agents creates each skill in each
    per-agent directory, and the registry names the three directories ([N1])."""
    from aikito_mem.api import Project
    from aikito_mem.config.registry_read import load_registry

    b = suite.build(suite.W1_AGENTS, tmp_path / "agents")
    home = tmp_path / "home"
    for rel in b.home_paths:
        (home / rel).mkdir(parents=True)
    dirs = load_registry(str(b.ws)).skill_dirs
    assert [d.path for d in dirs] == b.agent_dirs
    plan = Project.load(suite.PROJECT, str(b.ws), environ={"HOME": str(home)}).plan()
    created = {op.target for op in plan.operations if op.action.value == "CREATE"}
    for co in b.active:
        for d in b.agent_dirs:
            assert {f"{co}/{d}/{s}" for s in b.skills} <= created
    assert "CONFLICT" not in [op.action.value for op in plan.operations]


def test_every_home_of_w1_agents_holds_the_detection_paths(tmp_path: Path) -> None:
    from bench.runner.groups import Env, Tool

    b = suite.build(suite.W1_AGENTS, tmp_path / "agents")
    envs = Env(tmp_path)
    env = envs.new(b.ws, b.home_paths)
    first = Path(env["HOME"])
    envs.fresh_home(env, b.home_paths)
    assert Path(env["HOME"]) != first
    for home in (first, Path(env["HOME"])):
        assert all((home / rel).is_dir() for rel in b.home_paths)
    assert list(Path(envs.new(b.ws)["HOME"]).iterdir()) == []
    # The reference tool links no per-agent directory ([N1] is this engine's): no row.
    assert not Tool(REFERENCE, None).applies_to(suite.W1_AGENTS)
    assert Tool(REFERENCE, None).applies_to(suite.W1_SEGMENTS)
    assert Tool(FLOOR, None).applies_to(suite.W1_AGENTS)


def test_w1_and_its_segment_workloads_are_timed_in_one_family() -> None:
    fams = suite.families(list(suite.WORKLOADS))
    assert [w.name for w in fams[0]] == ["W1", "W1+segments", "W1+agents"]
    assert all(len(f) == 1 for f in fams[1:])
    assert suite.group_of("W1+segments") == "W1" and suite.group_of("W3") == "W3"
    assert suite.group_of("W1+agents") == "W1"


def test_the_engine_plans_the_w1_segments_workspace(tmp_path: Path) -> None:
    """The row runs whatever the engine makes of the skill and instruction keys: the
    workspace is accepted and its memory is planned in full, without a conflict; the
    engine's registry reads the two agent files as the two instruction targets."""
    from aikito_mem.api import Project
    from aikito_mem.config.registry_read import load_registry

    b = suite.build(suite.W1_SEGMENTS, tmp_path / "seg")
    targets = load_registry(str(b.ws)).targets
    assert sorted(t.path for t in targets) == sorted(b.instruction_targets)
    plan = Project.load(suite.PROJECT, str(b.ws), environ={"HOME": str(tmp_path)}).plan()
    actions = [op.action.value for op in plan.operations]
    assert "CONFLICT" not in actions
    assert actions.count("CREATE") >= suite.W1.targets


@pytest.mark.parametrize("wl", [suite.W1, suite.W1_SEGMENTS, suite.W1_AGENTS],
                         ids=lambda w: w.name)
def test_the_floor_script_does_the_whole_job(
    wl: suite.Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """floor.py (imported, not spawned): dry and cold then warm succeed on a fresh
    workspace, and cold creates every expected link of every segment."""
    from bench import floor

    b = suite.build(wl, tmp_path / "w")
    for mode in ("dry", "cold", "warm"):
        monkeypatch.setattr(sys, "argv", ["floor.py", mode, str(b.manifest)])
        assert floor.main() == 0, mode
    assert suite.links_note(b) == ""
    assert suite.count_links(b) == wl.memory_resources * wl.active
    assert suite.count_segment_links(b) == wl.segment_resources * wl.active
    suite.reset_checkouts(b.active, tmp_path / "trash")
    assert all(list(co.iterdir()) == [] for co in b.active)
    assert suite.links_note(b).startswith(f"created 0 of {wl.memory_resources * wl.active}")


# --------------------------------------------------------------------------- the report


def _row(wl: str, variant: str, tool: str, *ms: float, **kw: object) -> Row:
    samples = [Sample(m, 0, 10 * 1024, m - 1) for m in ms]
    return Row(wl, variant, tool, ["cmd"], samples, **kw)  # type: ignore[arg-type]


def _rows() -> list[Row]:
    return [
        _row("startup", "-", PASS, 10.0),
        _row("W1", "warm", AIKITO, 100.0, 110.0, 120.0, sys_all=2.7, sys_fs=2.4),
        _row("W1", "warm", FLOOR, 10.0, sys_all=1.5, sys_fs=1.5),
        _row("W1", "warm", REFERENCE, 440.0),
        Row("W1", "warm", STOW, missing=peers.not_installed("stow")),
        _row("W1", "warm", PASS, 20.0),
        _row("W1", "warm", IMPORTS, 80.0),
        _row("W1+segments", "warm", AIKITO, 121.0, sys_all=2.2, sys_fs=2.0),
    ]


def _cells(text: str, workload: str, tool: str) -> dict[str, str]:
    """The cells of one table line by the columns of the header's dash line."""
    lines = text.splitlines()
    dashes = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans, pos = [], 0
    for run in lines[dashes].split("  "):
        spans.append((pos, pos + len(run)))
        pos += len(run) + 2
    for line in lines[dashes + 1 :]:
        cells = [line[a:b].strip() for a, b in spans]
        if cells[0] == workload and cells[2] == tool:
            return dict(zip(report.HEAD, cells, strict=True))
    raise AssertionError(f"no line {workload}/{tool} in\n{text}")


def test_table_formats_a_result_row() -> None:
    text = report.table(_rows())
    assert text.splitlines()[0].split("  ")[0] == "workload"
    row = _cells(text, "W1", AIKITO)
    assert row["n"] == "3"
    assert row["median ms"] == "110.0"
    assert row["spread ms (min-max)"] == "100.0-120.0"
    assert row["cpu ms"] == "109.0"
    assert row["x pass"] == "5.50"  # the python -c pass of its own group, not start-up's
    assert row["x floor.py"] == "11.00"
    assert row["x ref"] == "0.25"
    assert row["x stow"] == report.NO_PEER[STOW]
    assert row["x W1"] == "-"
    assert (row["sys/res"], row["fs/res"], row["RSS MB"]) == ("2.7", "2.4", "10.0")
    assert _cells(text, "W1", STOW)["median ms"] == "MISSING"
    missing = "stow not installed: pass --install or apt-get install stow"
    assert f"W1/warm/stow: MISSING: {missing}" in text


def test_w1_segments_row_shows_its_ratio_to_w1() -> None:
    text = report.table(_rows())
    seg = _cells(text, "W1+segments", AIKITO)
    assert seg["x W1"] == "1.10"
    assert seg["x pass"] == "6.05"  # timed in W1's group: W1's python -c pass
    assert seg["x stow"] == "-"  # stow has no row there: not a missing peer


def test_missing_strace_is_said_in_the_syscall_columns() -> None:
    rows = [r for r in _rows() if r.workload != "W1+segments"]
    for r in rows:
        r.sys_all = r.sys_fs = None
    why = peers.not_installed("strace")
    text = report.table(rows, strace_missing=why)
    row = _cells(text, "W1", AIKITO)
    assert (row["sys/res"], row["fs/res"]) == (report.NO_STRACE, report.NO_STRACE)
    assert _cells(text, "W1", PASS)["sys/res"] == "-"  # never counted anyway
    assert f"sys/res, fs/res: {why}" in text
    assert why == "strace not installed: pass --install or apt-get install strace"
    steady = [t for t in report.targets(rows, why) if "syscalls" in str(t["target"])]
    assert steady == [
        {
            "target": "steady state <= 4 fs syscalls per resource",
            "status": "NOT MEASURED",
            "measured": why,
        }
    ]


@pytest.mark.parametrize(  # warm W1 is 110 ms
    ("segments_ms", "status"), [(120.0, "MET"), (122.0, "NOT MET"), (None, "NOT MEASURED")]
)
def test_segments_target_is_warm_w1_segments_over_warm_w1(
    segments_ms: float | None, status: str
) -> None:
    rows = [r for r in _rows() if r.workload != "W1+segments"]
    if segments_ms is not None:
        rows.append(_row("W1+segments", "warm", AIKITO, segments_ms, note="created 0 of 14"))
    (target,) = [t for t in report.targets(rows)
                 if str(t["target"]).startswith("warm W1+segments")]
    assert target["target"] == "warm W1+segments within 1.10x of warm W1 (SPEC §13 [G7])"
    assert target["status"] == status
    if segments_ms is not None:
        assert "created 0 of 14" in str(target["measured"])


@pytest.mark.parametrize(  # warm W1+segments is 121 ms
    ("agents_ms", "status"), [(133.0, "MET"), (134.0, "NOT MET"), (None, "NOT MEASURED")]
)
def test_agents_target_is_warm_w1_agents_over_warm_w1_segments(
    agents_ms: float | None, status: str
) -> None:
    rows = _rows()
    if agents_ms is not None:
        rows.append(_row("W1+agents", "warm", AIKITO, agents_ms))
    (target,) = [t for t in report.targets(rows) if "W1+agents" in str(t["target"])]
    assert target["target"] == (
        "warm W1+agents within 1.10x of warm W1+segments (SPEC §17 [N1])")
    assert target["status"] == status
    if agents_ms is not None:
        assert str(target["measured"]).startswith(
            f"warm W1+agents {agents_ms:.1f} ms / warm W1+segments 121.0 ms")
        seg = _cells(report.table(rows), "W1+agents", AIKITO)
        assert seg["x W1"] == f"{agents_ms / 110:.2f}"  # over W1, like W1+segments


def test_document_carries_every_row_with_its_ratios() -> None:
    rows = _rows()
    doc = report.document(rows, report.targets(rows), None, {"date": "d"})
    assert doc["schema"] == "aikito_mem.bench/1" and doc["date"] == "d"
    by_key = {(r["workload"], r["tool"]): r for r in doc["rows"]}  # type: ignore[attr-defined]
    assert by_key[("W1+segments", AIKITO)]["x_w1"] == pytest.approx(1.1)
    assert by_key[("W1", STOW)]["missing"] == peers.not_installed("stow")


def test_startup_figures_are_ratios_of_rows_of_one_group() -> None:
    rows = [*_rows(), _row("startup", "-", "import click", 40.0),
            _row("startup", "-", "aikito --version", 45.0)]
    figures = {f["figure"]: f for f in report.startup_figures(rows)}
    w1 = figures["W1 warm / import floor"]  # warm W1 110 ms over the W1 group's 80 ms
    assert (w1["ratio"], w1["goal"], w1["status"]) == (pytest.approx(1.375), 1.2, "NOT MET")
    assert w1["cpu_ratio"] == pytest.approx(109 / 79)
    seg = figures["W1+segments warm / import floor"]
    assert (seg["ratio"], seg["goal"]) == (pytest.approx(121 / 80), 1.26)
    version = figures["aikito --version / import click"]
    assert (version["ratio"], version["status"]) == (pytest.approx(1.125), "NOT MET")
    text = report.startup_text(list(figures.values()))
    assert "[NOT MET] W1 warm / import floor: 1.38x wall (110.0 ms / 80.0 ms)" in text
    missing = report.startup_figures([r for r in rows if r.tool != IMPORTS])
    assert missing[0]["status"] == "NOT MEASURED"
    assert report.document(rows, [], None, {})["startup_figures"] == report.startup_figures(rows)


_IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       120 |        120 |   click.core
import time:      2500 |       2500 |     aikito_mem.model
import time:       300 |       2800 |   aikito_mem.cli
import time:       800 |        800 | locale
"""


def test_import_budget_parses_and_sorts_self_times() -> None:
    parsed = imports.parse(_IMPORTTIME)
    assert parsed == {"click.core": 120, "aikito_mem.model": 2500, "aikito_mem.cli": 300,
                      "locale": 800}
    other = dict(parsed, **{"aikito_mem.model": 3500})
    budget = imports.summarise([parsed, other, parsed], {"click.core"}, ["aikito"])
    assert list(budget.package.items()) == [("aikito_mem.model", 2.5), ("aikito_mem.cli", 0.3)]
    assert budget.beyond_floor == {"locale": 0.8}  # click.core is the floor's
    assert budget.package_ms == pytest.approx(2.8) and budget.runs == 3
    text = imports.text(budget, "warm W1", top=1)
    assert "aikito_mem: 2.8 ms in 2 modules" in text
    assert "  2.50  aikito_mem.model" in text and "(1 more)" in text
    assert budget.as_dict()["beyond_floor"] == {"locale": 0.8}


def test_number_formats() -> None:
    assert (report.fmt_ms(None), report.fmt_ms(12.345), report.fmt_ms(1500.4)) == (
        "-",
        "12.3",
        "1500",
    )
    assert (report.fmt_ratio(None), report.fmt_ratio(1.234), report.fmt_ratio(150.2)) == (
        "-",
        "1.23",
        "150",
    )


# --------------------------------------------------------------------------- installing


def test_a_missing_debian_tool_is_reported_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(packages: list[str]) -> str:
        raise AssertionError(f"apt-get install {packages} without --install")

    monkeypatch.setattr(peers.shutil, "which", lambda name: None)
    monkeypatch.setattr(peers, "_apt_install", refuse)
    peer = peers.debian_tool("strace", allow_install=False)
    assert peer.path is None
    assert peer.reason == "strace not installed: pass --install or apt-get install strace"


def test_install_asks_apt_get_for_a_missing_debian_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []

    def fake(packages: list[str]) -> str:
        asked.append(packages)
        return "apt-get install failed: offline"

    monkeypatch.setattr(peers.shutil, "which", lambda name: None)
    monkeypatch.setattr(peers, "_apt_install", fake)
    peer = peers.debian_tool("stow", allow_install=True)
    assert asked == [["stow"]]
    assert (peer.path, peer.reason) == (None, "apt-get install failed: offline")


@pytest.mark.parametrize(
    ("argv", "debian", "reference"),
    [([], False, True), (["--install"], True, True), (["--no-install"], False, False)],
)
def test_installing_debian_packages_is_opt_in(
    argv: list[str], debian: bool, reference: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: dict[str, bool] = {}

    def debian_tool(name: str, allow_install: bool) -> peers.Peer:
        calls[name] = allow_install
        return peers.Peer(name, None, reason="test")

    def reference_tool(allow_install: bool) -> peers.Peer:
        calls["reference"] = allow_install
        return peers.Peer("reference", None, reason="test")

    monkeypatch.setattr(peers, "debian_tool", debian_tool)
    monkeypatch.setattr(peers, "reference_tool", reference_tool)
    cli.get_peers(cli.parse_args(argv))
    assert calls == {"stow": debian, "strace": debian, "reference": reference}


def test_install_and_no_install_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.parse_args(["--install", "--no-install"])
    assert "not allowed with argument" in capsys.readouterr().err


# ------------------------------------------------------------------ instruction counts


def test_instruction_count_sums_every_process_callgrind_reports(tmp_path: Path) -> None:
    fake = tmp_path / "valgrind"
    fake.write_text("#!/bin/sh\necho '==1== Collected : 2000' >&2\n"
                    "echo '==2== Collected : 500' >&2\n")
    fake.chmod(0o755)
    assert instructions.count(str(fake), ["true"], {}, str(tmp_path)) == 2500


def test_instruction_count_names_a_failure(tmp_path: Path) -> None:
    fake = tmp_path / "valgrind"
    fake.write_text("#!/bin/sh\necho 'no such file' >&2\nexit 3\n")
    fake.chmod(0o755)
    assert instructions.count(str(fake), ["x"], {}, str(tmp_path)) == "exit 3: no such file"


def test_instruction_figures_are_judged_against_their_goal() -> None:
    met = instructions.Figure("W1 warm / import floor", 1.2, 276_000_000, 234_000_000)
    unmet = instructions.Figure("W1+segments warm / import floor", 1.26, 300_000_000,
                                234_000_000)
    lost = instructions.Figure("aikito --version / import click", 1.1, "exit 1: boom", 1)
    assert met.as_dict()["status"] == "MET"
    assert unmet.as_dict()["status"] == "NOT MET"
    assert lost.as_dict()["status"] == "NOT MEASURED"
    assert instructions.text([met, unmet, lost]).splitlines() == [
        "start-up figures in instructions (valgrind, PYTHONHASHSEED=0, whole process):",
        "  [MET] W1 warm / import floor: 276.00 M / 234.00 M = 1.179x; goal <= 1.2x",
        "  [NOT MET] W1+segments warm / import floor: 300.00 M / 234.00 M = 1.282x; "
        "goal <= 1.26x",
        "  [NOT MEASURED] aikito --version / import click: exit 1: boom",
    ]
    assert instructions.text([], "valgrind is not installed").splitlines()[1] == (
        "  NOT MEASURED: valgrind is not installed")
