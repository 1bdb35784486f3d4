"""``aikito status``: every state on real directories, the ``aikito.status/1``
document, the exit codes, and zero writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from aikito_mem.api import Project
from aikito_mem.cli import cli
from tests.helpers.snapshots import snapshot


def make_ws(tmp: Path) -> Path:
    ws = tmp / "ws"
    (ws / "projects").mkdir(parents=True)
    (ws / "memory" / "team").mkdir(parents=True)
    (ws / "memory" / "style.md").write_text("style\n")
    (ws / "memory" / "team" / "a.md").write_text("a\n")
    (ws / "memory" / "glossary").mkdir()
    return ws


def project(ws: Path, name: str, text: str) -> Path:
    d = ws / "projects" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "agent.toml").write_text(text)
    return d


def toml(paths: list[Path | str], memory: list[str]) -> str:
    return f"paths = {json.dumps([str(p) for p in paths])}\nmemory = {json.dumps(memory)}\n"


def status(ws: Path, *extra: str) -> Result:
    # Each line checked here is one logical line: printed wide enough not to wrap ([U2]).
    return CliRunner().invoke(cli, ["--workspace", str(ws), "status", *extra],
                              catch_exceptions=False, env={"COLUMNS": "1000"})


def doc(ws: Path) -> tuple[dict[str, Any], int]:
    res = status(ws, "--json")
    return json.loads(res.stdout), res.exit_code


def the_checkout(d: dict[str, Any], name: str = "demo", index: int = 0) -> dict[str, Any]:
    """One checkout's entry, its per-segment counts ([G5]) checked and set aside."""
    proj = next(p for p in d["projects"] if p["name"] == name)
    co: dict[str, Any] = proj["checkouts"][index]
    sync = co.get("sync")
    if sync is not None and "segments" in sync:
        segments = sync.pop("segments")
        for key in ("create", "unlink", "conflict"):
            assert sum(seg[key] for seg in segments.values()) == sync[key]
    return co


REFS = ["style.md", "team/a.md", "glossary"]


def test_in_sync(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "demo", toml([co], REFS))
    Project.load("demo", str(ws)).sync()
    d, code = doc(ws)
    assert code == 0
    assert d["schema"] == "aikito.status/1" and d["contract_version"] == 3
    assert d["workspace"] == str(ws.resolve()) and d["error"] is None
    [proj] = d["projects"]
    assert proj["name"] == "demo"
    assert proj["memory"] == {"anchor": ".agents/memory", "references": REFS,
                              "notes": {"source": None, "location": None}}
    assert proj["checkouts"][0].pop("descriptor")["state"] == "absent"
    assert proj["checkouts"] == [{"label": "1", "path": str(co.resolve()), "state": "active",
                                  "sync": {"in_sync": True, "create": 0, "unlink": 0,
                                           "conflict": 0, "foreign": 0,
                                           "segments": {"memory": {
                                               "in_sync": True, "create": 0, "unlink": 0,
                                               "conflict": 0}}}}]
    text = status(ws)
    assert text.exit_code == 0
    assert "in sync" in text.stdout and "all in sync" in text.stdout


def test_pending_create(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "demo", toml([co], REFS))
    d, code = doc(ws)
    assert code == 7  # [U3]: pending, as sync --check
    assert the_checkout(d)["sync"] == {"in_sync": False, "create": 3, "unlink": 0,
                                       "conflict": 0, "foreign": 0}
    assert "3 to create" in status(ws).stdout


def test_pending_unlink(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    cfg = project(ws, "demo", toml([co], REFS)) / "agent.toml"
    Project.load("demo", str(ws)).sync()
    cfg.write_text(toml([co], ["style.md"]))
    d, code = doc(ws)
    assert code == 7
    # team/a.md's link and the emptied team/ directory, and glossary's link.
    assert the_checkout(d)["sync"] == {"in_sync": False, "create": 0, "unlink": 3,
                                       "conflict": 0, "foreign": 0}


def test_conflict(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    (co / ".agents" / "memory").mkdir(parents=True)
    (co / ".agents" / "memory" / "style.md").write_text("a real file\n")
    project(ws, "demo", toml([co], REFS))
    d, code = doc(ws)
    assert code == 1
    assert the_checkout(d)["sync"]["conflict"] == 1
    assert the_checkout(d)["sync"]["in_sync"] is False
    assert d["projects"][0]["blocked"] is True
    assert "1 conflict" in status(ws).stdout


def test_foreign_entries_do_not_break_in_sync(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "demo", toml([co], REFS))
    Project.load("demo", str(ws)).sync()
    (co / ".agents" / "memory" / ".DS_Store").write_bytes(b"x")
    os.symlink("/elsewhere", co / ".agents" / "memory" / "foreign-link")
    d, code = doc(ws)
    assert code == 0
    assert the_checkout(d)["sync"] == {"in_sync": True, "create": 0, "unlink": 0,
                                       "conflict": 0, "foreign": 2}
    assert d["projects"][0]["warnings"] == 2
    assert "2 foreign entries" in status(ws).stdout


def test_offline_and_invalid(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    not_dir = tmp_path / "file"
    not_dir.write_text("")
    project(ws, "demo", toml([co, tmp_path / "gone"], REFS))
    Project.load("demo", str(ws)).sync()
    d, code = doc(ws)
    assert code == 0  # an offline checkout never makes the status fail
    off = the_checkout(d, index=1)
    assert off["state"] == "offline" and off["sync"] is None
    assert off["path"] == str(tmp_path / "gone")
    assert "offline" in status(ws).stdout
    project(ws, "demo", toml([co, tmp_path / "gone", not_dir], REFS))
    d, code = doc(ws)
    assert code == 1
    inv = the_checkout(d, index=2)
    assert inv["state"] == "invalid" and inv["sync"]["conflict"] == 1
    assert "reason" in inv


def test_broken_agent_toml_is_listed_with_an_error(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "demo", toml([co], REFS))
    project(ws, "broken", "memory = [\n")
    project(ws, "typed", 'memory = "x.md"\n')
    Project.load("demo", str(ws)).sync()
    d, code = doc(ws)
    assert code == 4  # a project that cannot be read: a configuration error
    by_name = {p["name"]: p for p in d["projects"]}
    assert list(by_name) == ["broken", "demo", "typed"]
    assert by_name["broken"]["error"]["code"] == "config.toml_syntax"
    assert by_name["typed"]["error"]["code"] == "config.memory_type"
    assert by_name["broken"]["error"]["path"].endswith("broken/agent.toml")
    assert "checkouts" not in by_name["broken"]
    assert by_name["demo"]["checkouts"][0]["sync"]["in_sync"] is True
    out = status(ws).stdout
    assert "error: project broken:" in out and "1 checkout" not in out


def test_notes_location(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "cur", toml([co], []))
    (ws / "projects" / "cur" / "memory" / "notes").mkdir(parents=True)
    project(ws, "leg", toml([], []))
    (ws / "memory" / "leg" / "notes").mkdir(parents=True)
    project(ws, "none", toml([], []))
    d, _ = doc(ws)
    notes = {p["name"]: p["memory"]["notes"] for p in d["projects"]}
    root = ws.resolve()
    assert notes == {
        "cur": {"source": f"{root}/projects/cur/memory/notes", "location": "current"},
        "leg": {"source": f"{root}/memory/leg/notes", "location": "legacy"},
        "none": {"source": None, "location": None},
    }
    assert next(p for p in d["projects"] if p["name"] == "leg")["checkouts"] == []
    assert "no checkout registered" in status(ws).stdout


def test_workspace_error_exit_4(tmp_path: Path) -> None:
    res = status(tmp_path / "nowhere", "--json")
    assert res.exit_code == 4
    d = json.loads(res.stdout)
    assert d["schema"] == "aikito.status/1" and d["projects"] == []
    assert d["error"]["code"] == "config.workspace_missing"
    res = status(tmp_path / "nowhere")
    assert res.exit_code == 4 and "aikito:" in res.stderr


def test_workspace_from_environment(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    res = CliRunner().invoke(cli, ["status", "--json"], env={"AIKITO_DIR": str(ws)})
    assert res.exit_code == 0
    assert json.loads(res.stdout)["workspace_source"] == "AIKITO_DIR"


def test_status_writes_nothing(tmp_path: Path) -> None:
    """Every state at once; lstat + readlink of the whole tree are unchanged after."""
    ws = make_ws(tmp_path)
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for co in (a, b, c):
        co.mkdir()
    project(ws, "synced", toml([a], REFS))
    Project.load("synced", str(ws)).sync()
    (a / ".agents" / "memory" / ".DS_Store").write_bytes(b"")
    project(ws, "pending", toml([b, tmp_path / "offline"], REFS))  # nothing exists in b
    (c / ".agents" / "memory").mkdir(parents=True)
    (c / ".agents" / "memory" / "glossary").mkdir()
    project(ws, "conflicted", toml([c], REFS))
    project(ws, "broken", "memory = ")
    (ws / "projects" / "legacy-notes").mkdir()
    (ws / "projects" / "legacy-notes" / "agent.toml").write_text(toml([c], []))
    (ws / "memory" / "legacy-notes" / "notes").mkdir(parents=True)
    before = snapshot(tmp_path)
    for extra in ((), ("--json",)):
        res = status(ws, *extra)
        assert res.exit_code == 4
    assert snapshot(tmp_path) == before
    assert not (b / ".agents").exists()


def test_names_that_are_not_utf8_are_printed_escaped(tmp_path: Path) -> None:
    """A project directory whose name is not UTF-8: the text shows the raw byte
    (``\\xff``), the JSON escapes it — never a UnicodeEncodeError."""
    ws = make_ws(tmp_path)
    odd = os.fsdecode(bytes(ws) + b"/projects/p\xff")
    os.mkdir(odd)
    with open(os.path.join(odd, "agent.toml"), "w") as f:
        f.write("memory = []\n")
    text = status(ws)
    assert text.exit_code == 0, text.output
    assert "p\\xff" in text.stdout
    d, code = doc(ws)
    assert code == 0 and [p["name"] for p in d["projects"]] == ["p\udcff"]


def test_one_project_that_cannot_be_planned_does_not_hide_the_others(tmp_path: Path) -> None:
    """A NUL in a ``paths`` entry (valid TOML ``"\\u0000"``) made the whole listing a
    traceback: that project shows its error, every other project is listed."""
    ws = make_ws(tmp_path)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "demo", toml([co], REFS))
    project(ws, "nul", 'paths = ["/srv/a\\u0000b"]\nmemory = []\n')
    project(ws, "zeta", toml([], []))
    Project.load("demo", str(ws)).sync()
    d, code = doc(ws)
    assert code == 4
    by_name = {p["name"]: p for p in d["projects"]}
    assert list(by_name) == ["demo", "nul", "zeta"]
    assert set(by_name["nul"]) == {"name", "error"}
    assert by_name["nul"]["error"]["code"] and by_name["nul"]["error"]["message"]
    assert by_name["demo"]["checkouts"][0]["sync"]["in_sync"] is True
    assert by_name["zeta"]["checkouts"] == []
    text = status(ws)
    assert text.exit_code == 4
    lines = text.stdout.splitlines()
    assert any(line.startswith("demo ") and "in sync" in line for line in lines)
    assert any(line.startswith("nul ") and "cannot be read" in line for line in lines)
    assert any(line.startswith("error: project nul:") for line in lines)
    assert lines[-1] == "status: 3 projects, 1 with errors"


@pytest.mark.parametrize("failure", [ValueError("embedded null byte"),
                                     OSError(5, "Input/output error", "/srv/x")])
def test_a_project_whose_plan_fails_is_listed_with_its_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    """Whatever stops one project's plan (a path the system refuses, a directory that
    cannot be read) is that project's error; the listing goes on."""
    ws = make_ws(tmp_path)
    project(ws, "demo", toml([], REFS))
    project(ws, "odd", toml([], []))
    real = Project.plan

    def plan(self: Project, *args: Any, **kwargs: Any) -> Any:
        if self.name == "odd":
            raise failure
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Project, "plan", plan)
    d, code = doc(ws)
    assert code == (4 if isinstance(failure, ValueError) else 5)
    by_name = {p["name"]: p for p in d["projects"]}
    assert by_name["demo"]["checkouts"] == []
    expected = "status.invalid_path" if isinstance(failure, ValueError) else "status.os_error"
    assert by_name["odd"]["error"]["code"] == expected
    words = "embedded null byte" if isinstance(failure, ValueError) else "Input/output error"
    assert words in by_name["odd"]["error"]["message"]


def test_state_per_segment_and_shared_checkout(tmp_path: Path) -> None:
    """[G5]: status shows each segment's state; a checkout registered by two projects is
    a warning (their syncs would unlink each other's links)."""
    ws = make_ws(tmp_path)
    (ws / "skills" / "alpha").mkdir(parents=True)
    co = tmp_path / "co"
    co.mkdir()
    project(ws, "demo", toml([co], ["style.md"]) + 'skills = ["alpha"]\n')
    project(ws, "other", toml([co], []))
    d, code = doc(ws)
    assert code == 7
    proj = next(p for p in d["projects"] if p["name"] == "demo")
    segments = proj["checkouts"][0]["sync"]["segments"]
    assert segments["skills"] == {"in_sync": False, "create": 1, "unlink": 0, "conflict": 0}
    assert segments["memory"]["create"] == 1
    (finding,) = d["findings"]
    assert finding["code"] == "status.shared_checkout"
    assert finding["path"] == str(co) and "demo, other" in finding["message"]
    text = status(ws).stdout
    assert "skills: 1 to create; memory: 1 to create" in text
    assert f"warning: checkout {co} is registered by the projects demo, other" in text
