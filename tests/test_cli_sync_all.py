"""``aikito sync`` with no subcommand: every project of the workspace, one block each, a
broken project reported while the others run, and the exit code of SPEC §9's precedence
(the first of 5, 3, 6, 4, 1, 7 any project returned, else 0)."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from aikito_mem.commands.sync_all import PRECEDENCE, SyncAllReport, combined_exit_code
from aikito_mem.errors import ConfigError, InterruptedError_
from aikito_mem.outcome import error_report
from aikito_mem.render.sync_json import SCHEMA as SYNC_SCHEMA
from aikito_mem.values import replace
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS


def run(ws: WS, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--workspace", ws.root, "sync", *args],
                              catch_exceptions=False)


def shown(ws: WS, text: str) -> list[str]:
    return text.replace(str(ws.base), "<base>").splitlines()


@pytest.fixture
def three(ws: WS) -> WS:
    """alpha (one link to create), broken (agent.toml is not TOML), zeta (in sync after
    its first sync; one offline checkout)."""
    ws.add_file("a.md", "a")
    ws.write_config("alpha", memory=["a.md"], paths=[ws.checkout("alpha")])
    ws.write_config("broken", raw="memory = [\n")
    ws.write_config("zeta", memory=["a.md"], paths=[ws.checkout("zeta"), f"{ws.base}/off"])
    return ws


def test_every_project_one_block_each(three: WS) -> None:
    res = run(three)
    assert res.exit_code == 4, res.output  # broken: a configuration error
    assert shown(three, res.stdout) == [
        "workspace <base>/ws (option)",
        "",
        "project alpha",
        "checkout 1: <base>/co/alpha",
        "  + .agents/memory/a.md -> memory/a.md",
        "memory: 1 created, 0 unlinked, 0 conflicts, 0 unchanged, 0 skipped",
        "done: 1 change applied",
        "",
        "project broken: not synced (config error; see the message below)",
        "",
        "project zeta",
        "checkout 1: <base>/co/zeta",
        "  + .agents/memory/a.md -> memory/a.md",
        "checkout 2: <base>/off",
        "  ~ checkout offline: <base>/off",
        "memory: 1 created, 0 unlinked, 0 conflicts, 0 unchanged, 1 skipped "
        "(1 checkout offline)",
        "done: 1 change applied",
        "",
        "sync: 3 projects: 2 applied, 1 config error",
    ]
    assert shown(three, res.stderr) == [
        "aikito: project broken: <base>/ws/projects/broken/agent.toml:2:1: invalid TOML: "
        "Invalid value — fix the syntax at that position (see https://toml.io)"]
    # The broken project did not stop the others.
    for name in ("alpha", "zeta"):
        co = f"{three.checkouts_dir}/{name}"
        assert os.readlink(three.runtime(co, "a.md")) == three.memory_path("a.md")


def test_quiet_keeps_each_project_and_what_was_done(three: WS) -> None:
    os.unlink(three.config_path("broken"))
    os.rmdir(os.path.dirname(three.config_path("broken")))
    assert run(three).exit_code == 0
    # [U3]: nothing changed: one line per project and the total line, -q or not.
    for quiet in ((), ("-q",)):
        res = run(three, *quiet)
        assert res.exit_code == 0
        assert shown(three, res.stdout) == [
            "alpha: in sync (1 checkout)",
            "zeta: in sync (2 checkouts, 1 offline)",
            "sync: 2 projects: 2 in sync",
        ]
    # -v: the full report, each project in its block.
    verbose = run(three, "-v")
    assert shown(three, verbose.stdout) == [
        "workspace <base>/ws (option)", "",
        "project alpha",
        "checkout 1: <base>/co/alpha",
        "  = .agents/memory/a.md -> memory/a.md",
        "memory: 0 created, 0 unlinked, 0 conflicts, 1 unchanged, 0 skipped",
        "done: already in sync, nothing to do", "",
        "project zeta",
        "checkout 1: <base>/co/zeta",
        "  = .agents/memory/a.md -> memory/a.md",
        "checkout 2: <base>/off",
        "  ~ checkout offline: <base>/off",
        "memory: 0 created, 0 unlinked, 0 conflicts, 1 unchanged, 1 skipped "
        "(1 checkout offline)",
        "done: already in sync, nothing to do", "",
        "sync: 2 projects: 2 in sync",
    ]
    # A dry run of projects in sync says so, not "planned".
    dry = run(three, "--dry-run")
    assert shown(three, dry.stdout)[-1] == "sync: 2 projects: 2 in sync"


def test_dry_run_and_check_write_nothing(three: WS) -> None:
    before = snapshot(three.base)
    dry = run(three, "--dry-run")
    assert dry.exit_code == 4
    assert "dry run: nothing was written" in dry.stdout
    check = run(three, "--check")
    assert check.exit_code == 4  # 4 outranks 7
    assert snapshot(three.base) == before
    os.unlink(three.config_path("broken"))
    assert run(three, "--check").exit_code == 7
    assert run(three).exit_code == 0
    clean = run(three, "--check", "--json")
    doc = json.loads(clean.stdout)
    assert clean.exit_code == 0
    assert doc["outcomes"] == {"unchanged": 2}


def test_one_json_document(three: WS) -> None:
    res = run(three, "--json")
    doc = json.loads(res.stdout)
    assert res.exit_code == doc["exit_code"] == 4
    assert set(doc) == {"schema", "workspace", "workspace_source", "dry_run", "check",
                        "exit_code", "outcomes", "projects", "error"}
    assert (doc["schema"], doc["workspace"], doc["workspace_source"]) == (
        "aikito.sync-all/1", three.root, "option")
    assert (doc["dry_run"], doc["check"], doc["error"]) == (False, False, None)
    assert doc["outcomes"] == {"applied": 2, "config_error": 1}
    assert [p["project"] for p in doc["projects"]] == ["alpha", "broken", "zeta"]
    by_name = {p["project"]: p for p in doc["projects"]}
    # Each entry is exactly the document `aikito sync project NAME --json` prints.
    assert by_name["broken"]["schema"] == SYNC_SCHEMA
    assert by_name["broken"]["error"]["code"] == "config.toml_syntax"
    assert by_name["alpha"]["outcome"] == "applied"
    alone = json.loads(CliRunner().invoke(cli, ["--workspace", three.root, "sync",
                                                "project", "zeta", "--json"]).stdout)
    again = json.loads(run(three, "--json").stdout)
    assert {p["project"]: p for p in again["projects"]}["zeta"] == alone
    assert res.stderr == ""


def test_a_workspace_error_is_exit_4(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["--workspace", str(tmp_path / "nowhere"), "sync"])
    assert res.exit_code == 4 and res.stdout == ""
    assert res.stderr.startswith("aikito: ")
    doc = json.loads(CliRunner().invoke(cli, ["--workspace", str(tmp_path / "nowhere"),
                                              "sync", "--json"]).stdout)
    assert (doc["exit_code"], doc["projects"], doc["workspace"]) == (4, [], None)
    assert doc["error"]["code"].startswith("config.")


def test_an_empty_workspace_syncs_nothing(ws: WS) -> None:
    res = run(ws)
    assert res.exit_code == 0
    assert shown(ws, res.stdout) == [
        "workspace <base>/ws (option)", "",
        "sync: no project in this workspace, nothing was synced"]


def test_a_busy_checkout_is_exit_6_and_the_others_run(ws: WS) -> None:
    ws.add_file("a.md", "a")
    busy, free = ws.checkout("busy"), ws.checkout("free")
    ws.write_config("a-busy", memory=["a.md"], paths=[busy])
    ws.write_config("b-conflict", memory=["gone.md"], paths=[ws.checkout("c")])
    ws.write_config("c-broken", raw="memory = 1\n")
    ws.write_config("d-free", memory=["a.md"], paths=[free])
    holder = os.open(busy, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        res = run(ws, "--lock-timeout", "0", "--json")
    finally:
        os.close(holder)
    doc = json.loads(res.stdout)
    assert res.exit_code == 6  # busy (6) outranks configuration (4) and conflict (1)
    assert [p["outcome"] for p in doc["projects"]] == [
        "busy", "blocked", "config_error", "applied"]
    assert not os.path.lexists(ws.runtime(busy, "a.md"))
    assert os.readlink(ws.runtime(free, "a.md")) == ws.memory_path("a.md")


def test_conflict_outranks_pending_changes(ws: WS) -> None:
    ws.add_file("a.md", "a")
    ws.write_config("a", memory=["gone.md"], paths=[ws.checkout("a")])
    ws.write_config("b", memory=["a.md"], paths=[ws.checkout("b")])
    assert run(ws, "--check").exit_code == 1
    os.unlink(ws.config_path("a"))
    assert run(ws, "--check").exit_code == 7


@pytest.mark.parametrize("codes", [
    *[list(p) for p in itertools.permutations(PRECEDENCE, 2)],
    [0, 7], [7, 0, 1], [0, 0], [], [4, 130, 5], [5, 143]])
def test_the_exit_code_precedence(codes: list[int]) -> None:
    expected = next((c for c in codes if c >= 128),
                    next((c for c in (5, 3, 6, 4, 1, 7) if c in codes), 0))
    assert combined_exit_code(codes) == expected
    reports = tuple(error_report(ConfigError("x"), project=f"p{i}", workspace="/ws",
                                 dry_run=False) for i, _ in enumerate(codes))
    reports = tuple(replace(r, exit_code=c) for r, c in zip(reports, codes, strict=True))
    assert SyncAllReport("/ws", "option", False, False, reports).exit_code == expected


def test_a_signal_stops_the_run_after_the_project_in_flight(
        three: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT while project ``broken`` is loaded: exit 130, ``zeta`` is not reached, the
    document names the interruption."""
    import signal

    from aikito_mem.api import Project

    real = Project.load.__func__  # type: ignore[attr-defined]

    def load(cls: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "broken":
            raise InterruptedError_("interrupted by SIGINT", signum=signal.SIGINT)
        return real(cls, name, *args, **kwargs)

    monkeypatch.setattr(Project, "load", classmethod(load))
    res = run(three, "--json")
    doc = json.loads(res.stdout)
    assert res.exit_code == doc["exit_code"] == 130
    assert [p["project"] for p in doc["projects"]] == ["alpha", "broken"]
    assert doc["projects"][1]["outcome"] == "interrupted"
    assert doc["error"]["code"] == "sync.interrupted"
    assert not os.path.lexists(three.runtime(f"{three.checkouts_dir}/zeta", "a.md"))
    text = run(three)
    assert text.exit_code == 130
    assert text.stderr.splitlines() == ["aikito: interrupted by SIGINT"]


def test_a_plain_sync_of_every_project_does_not_load_tomlkit(three: WS) -> None:
    """[§11]: tomlkit only for the paths that edit agent.toml; a sync registers nothing."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "aikito_mem",
                           "--workspace", three.root, "sync"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "tomlkit" not in imported and "yaml" not in imported


def test_the_total_line_counts_projects_not_synced_apart(ws: WS) -> None:
    """[U3]: a project whose every checkout is offline (or that has none) says
    ``not synced`` on its line, and the total line counts it so, never ``in sync``."""
    ws.add_file("a.md", "a")
    ws.write_config("alpha", memory=["a.md"], paths=[ws.checkout("alpha")])
    ws.write_config("demo", memory=["a.md"], paths=[f"{ws.base}/off1", f"{ws.base}/off2"])
    assert run(ws).exit_code == 0
    for args in ((), ("--dry-run",), ("--check",)):
        res = run(ws, *args)
        assert res.exit_code == 0, args
        assert shown(ws, res.stdout) == [
            "alpha: in sync (1 checkout)",
            "demo: not synced (2 checkouts, all offline)",
            f"warning: nothing {'would be' if args else 'was'} synced: every checkout is "
            "offline (project demo, all 2 of its checkouts) — plug in or clone a checkout, "
            "then sync again",
            "sync: 2 projects: 1 in sync, 1 not synced (every checkout offline)",
        ], args
    # Coloured yellow as the project's own line, not the green of a success.
    coloured = run(ws, "--color").stdout.splitlines()
    assert coloured[1].startswith("\x1b[33m") and coloured[-1].startswith("\x1b[33m")
    ws.write_config("empty", memory=["a.md"], paths=[])
    ws.write_config("zeta", memory=["a.md"], paths=[ws.checkout("zeta")])
    res = run(ws, "-v")
    assert shown(ws, res.stdout)[-1] == (
        "sync: 4 projects: 1 applied, 1 in sync, 1 not synced (every checkout offline), "
        "1 not synced (no checkout registered)")
    doc = json.loads(run(ws, "--json").stdout)
    assert doc["outcomes"] == {"unchanged": 4}  # the JSON keeps the outcome words
