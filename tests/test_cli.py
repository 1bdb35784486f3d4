"""The command line (SPEC §9): exact exit codes, the ``aikito.sync/2`` JSON document, the
configuration-error matrix, usage errors, real processes.  What the text reports look
like: tests/test_render.py; which project and checkouts a sync acts on:
tests/test_cli_checkouts.py.

In process through ``click.testing.CliRunner`` on real temporary directories, plus a few
real ``subprocess`` runs of the console script and of ``python -m aikito_mem``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner

from aikito_mem import __version__
from aikito_mem.cli import cli
from tests.helpers.cli import VENV_BIN, Env, one_json

# --------------------------------------------------------------------------- JSON schema

TOP = {
    "schema": str, "project": (str, type(None)), "workspace": (str, type(None)),
    "dry_run": bool, "outcome": str, "exit_code": int, "summary": dict, "checkouts": list,
    "operations": list, "findings": list, "segments": dict, "error": (dict, type(None)),
}
#: Fields this implementation adds (SPEC §9 allows new fields within aikito.sync/2).
TOP_EXTRA = {"registered"}
OP = {"segment": str, "action": str, "rule": str, "checkout": str, "resource": (str, type(None)),
      "target": str, "source": (str, type(None)), "reason": str, "status": str}
OP_EXTRA = {"entry", "found", "remedy", "error"}
CHECKOUT = {"label": str, "path": str, "state": str}
FINDING = {"code": str, "severity": str, "message": str, "path": (str, type(None))}
OUTCOMES = {"applied", "unchanged", "planned", "blocked", "stale", "failed", "busy",
            "config_error", "interrupted"}


def check_types(obj: dict[str, Any], spec: dict[str, Any], extra: set[str]) -> None:
    assert set(spec) <= set(obj), set(spec) - set(obj)
    assert set(obj) - set(spec) <= extra, set(obj) - set(spec)
    for key, typ in spec.items():
        assert isinstance(obj[key], typ), (key, obj[key])
        if typ is int:
            assert not isinstance(obj[key], bool)


def check_document(doc: dict[str, Any], code: int) -> None:
    check_types(doc, TOP, TOP_EXTRA)
    assert doc["schema"] == "aikito.sync/2"
    assert doc["exit_code"] == code
    assert doc["outcome"] in OUTCOMES
    assert set(doc["summary"]) == {"create", "noop", "unlink", "conflict", "skip"}
    assert all(type(v) is int for v in doc["summary"].values())
    counts = {k: 0 for k in doc["summary"]}
    for op in doc["operations"]:
        check_types(op, OP, OP_EXTRA)
        assert op["action"] in {"CREATE", "NOOP", "CONFLICT", "UNLINK", "SKIP"}
        assert op["status"] in {"planned", "applied", "not_applied", "unknown",
                                "unchanged", "skipped"}
        counts[op["action"].lower()] += 1
    assert counts == doc["summary"]
    for c in doc["checkouts"]:
        check_types(c, CHECKOUT, {"reason"})
        assert c["state"] in {"active", "offline", "invalid"}
    for f in doc["findings"]:
        check_types(f, FINDING, set())
    assert list(doc["segments"]) == ["skills", "instructions", "memory"]
    totals = {k: 0 for k in doc["summary"]}
    for seg in doc["segments"].values():
        assert set(seg) == {"active", "success", "outcome", "summary"}
        assert type(seg["success"]) is bool and type(seg["active"]) is bool
        assert seg["outcome"] in OUTCOMES
        for k, v in seg["summary"].items():
            totals[k] += v
    assert totals == doc["summary"]  # [G6]: the top-level summary is their sum
    for op in doc["operations"]:
        assert op["segment"] in doc["segments"]
    if doc["error"] is not None:
        assert {"code", "message"} <= set(doc["error"])
        assert isinstance(doc["error"]["code"], str) and doc["error"]["code"]
        assert isinstance(doc["error"]["message"], str) and doc["error"]["message"]


# --------------------------------------------------------------------------- basics


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip().startswith(f"aikito {__version__}")


def test_dry_run_planned(env: Env) -> None:
    code, doc = env.json("demo", "--dry-run")
    assert code == 0
    check_document(doc, 0)
    assert doc["outcome"] == "planned"
    assert doc["dry_run"] is True
    assert doc["project"] == "demo"
    assert doc["workspace"] == str(env.ws)
    assert doc["summary"] == {"create": 2, "noop": 0, "unlink": 0, "conflict": 0, "skip": 0}
    assert doc["checkouts"] == [{"label": "1", "path": str(env.co), "state": "active"}]
    assert {op["status"] for op in doc["operations"]} == {"planned"}
    assert doc["segments"]["memory"]["success"] is True
    assert doc["error"] is None
    assert not env.mem().exists()


def test_json_operation_fields(env: Env) -> None:
    _, doc = env.json("demo", "--dry-run")
    op = next(o for o in doc["operations"] if o["resource"] == "glossary.md")
    assert {k: op[k] for k in OP} == {
        "segment": "memory", "action": "CREATE", "rule": "INV-MEM-01", "checkout": str(env.co),
        "resource": "glossary.md", "target": str(env.mem("glossary.md")),
        "source": f"{env.ws}/memory/glossary.md", "reason": "target missing",
        "status": "planned",
    }


def test_check_exit_codes(env: Env) -> None:
    code, doc = env.json("demo", "--check")
    assert (code, doc["outcome"], doc["dry_run"]) == (7, "planned", True)
    check_document(doc, 7)
    assert not env.mem().exists()
    assert env.sync("demo").exit_code == 0
    code, doc = env.json("demo", "--check")
    assert (code, doc["outcome"]) == (0, "unchanged")
    check_document(doc, 0)
    assert env.sync("demo", "--check").exit_code == 0


def test_real_sync_applied_then_unchanged(env: Env) -> None:
    code, doc = env.json("demo")
    assert (code, doc["outcome"], doc["dry_run"]) == (0, "applied", False)
    check_document(doc, 0)
    assert {op["status"] for op in doc["operations"]} == {"applied"}
    assert os.readlink(env.mem("team/a.md")) == f"{env.ws}/memory/team/a.md"
    code, doc = env.json("demo")
    assert (code, doc["outcome"]) == (0, "unchanged")
    check_document(doc, 0)
    assert {(op["action"], op["status"]) for op in doc["operations"]} == {("NOOP", "unchanged")}
    assert doc["segments"]["memory"]["success"] is True


def test_skip_status_in_real_run(env: Env) -> None:
    env.config(["glossary.md"], [env.co, env.base / "offline"])
    code, doc = env.json("demo")
    assert code == 0
    statuses = {(op["action"], op["status"]) for op in doc["operations"]}
    assert statuses == {("CREATE", "applied"), ("SKIP", "skipped")}
    assert [c["state"] for c in doc["checkouts"]] == ["active", "offline"]


def _add_conflict(env: Env) -> None:
    env.mem().mkdir(parents=True)
    env.mem("glossary.md").write_text("mine\n")


def test_conflict_blocks_dry_run(env: Env) -> None:
    _add_conflict(env)
    code, doc = env.json("demo", "--dry-run")
    assert (code, doc["outcome"]) == (1, "blocked")
    check_document(doc, 1)
    assert {op["status"] for op in doc["operations"]} == {"planned"}
    assert doc["summary"]["conflict"] == 1
    assert doc["segments"]["memory"]["success"] is False
    assert doc["error"] is not None
    assert not env.mem("team").exists()
    code, doc = env.json("demo", "--check")
    assert (code, doc["outcome"]) == (1, "blocked")


def test_conflict_blocks_real_run(env: Env) -> None:
    _add_conflict(env)
    code, doc = env.json("demo")
    assert (code, doc["outcome"], doc["dry_run"]) == (1, "blocked", False)
    check_document(doc, 1)
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}
    assert not env.mem("team").exists()
    assert env.mem("glossary.md").read_text() == "mine\n"
    text = env.sync("demo")
    assert text.exit_code == 1
    assert "conflict" in text.stderr and "Traceback" not in text.output


# --------------------------------------------------------------------------- config errors


def _refs(*memory: str) -> bytes:
    return ("memory = " + json.dumps(list(memory)) + "\n").encode()


CONFIG_CASES: list[tuple[str, bytes, str, str]] = [
    # [C3]
    ("empty", _refs(""), "config.reference_invalid", "memory[0]"),
    ("absolute", _refs("ok.md", "/etc/x"), "config.reference_invalid", "'/etc/x'"),
    ("empty component", _refs("a//b"), "config.reference_invalid", "'a//b'"),
    ("dot", _refs("a/./b"), "config.reference_invalid", "'a/./b'"),
    ("leading dot", _refs("./a"), "config.reference_invalid", "'./a'"),
    ("dotdot", _refs("a/../b"), "config.reference_invalid", "'a/../b'"),
    ("bare dotdot", _refs(".."), "config.reference_invalid", "'..'"),
    ("trailing slash", _refs("a/"), "config.reference_invalid", "'a/'"),
    ("backslash", _refs("a\\b"), "config.reference_invalid", "memory[0]"),
    ("C0", _refs("a\x01b"), "config.reference_invalid", "U+0001"),
    ("tab", _refs("a\tb"), "config.reference_invalid", "U+0009"),
    ("DEL", _refs("a\x7fb"), "config.reference_invalid", "U+007F"),
    ("C1", _refs("a\x85b"), "config.reference_invalid", "U+0085"),
    ("ZWJ", _refs("a\u200db"), "config.reference_invalid", "U+200D"),
    ("BOM char", _refs("\ufeffa"), "config.reference_invalid", "U+FEFF"),
    ("bidi", _refs("a\u202eb"), "config.reference_invalid", "U+202E"),
    ("leading space", _refs(" a"), "config.reference_invalid", "' a'"),
    ("trailing space", _refs("team/a "), "config.reference_invalid", "'team/a '"),
    ("inner space", _refs("x/ b"), "config.reference_invalid", "'x/ b'"),
    ("long component", _refs("é" * 128), "config.reference_invalid", "memory[0]"),
    # [C4]
    ("duplicate", _refs("a", "b", "a"), "config.reference_duplicate", "'a'"),
    ("NFC", _refs("caf\u00e9", "cafe\u0301"), "config.reference_duplicate", "memory[1]"),
    ("casefold", _refs("Team.md", "team.md"), "config.reference_duplicate", "'Team.md'"),
    ("prefix", _refs("a", "a/b"), "config.reference_prefix", "'a/b'"),
    ("prefix reversed", _refs("x/y/z", "x"), "config.reference_prefix", "'x/y/z'"),
    # [C2]
    ("memory string", b'memory = "x.md"\n', "config.memory_type", "'memory'"),
    ("memory table", b"[memory]\na = 1\n", "config.memory_type", "'memory'"),
    ("memory number", b"memory = 3\n", "config.memory_type", "'memory'"),
    ("memory nested", b'memory = [["a"]]\n', "config.memory_type", "memory[0]"),
    ("memory element", b'memory = ["a", 1]\n', "config.memory_type", "memory[1]"),
    # [C5]
    ("paths number", b"paths = 3\n", "config.paths_type", "'paths'"),
    ("paths string", b'paths = "/x"\n', "config.paths_type", "'paths'"),
    ("paths element", b"paths = [1]\n", "config.paths_type", "paths[0]"),
    ("paths nested", b'paths = [["/x"]]\n', "config.paths_type", "paths[0]"),
    ("paths table value", b"[paths]\na = 1\n", "config.paths_type", "paths.a"),
    ("path number", b"path = 3\n", "config.paths_type", "'path'"),
    ("path table", b'[path]\na = "/x"\n', "config.paths_type", "'path'"),
    ("path element", b"path = [1]\n", "config.paths_type", "path[0]"),
    # [C1]
    ("syntax", b"memory = [\n", "config.toml_syntax", ":2:"),
    ("BOM", b"\xef\xbb\xbfmemory = []\n", "config.toml_encoding", "BOM"),
    ("invalid UTF-8", b'memory = ["\xff"]\n', "config.toml_encoding", "agent.toml"),
]


@pytest.mark.parametrize(
    ("data", "code", "culprit"),
    [pytest.param(d, c, k, id=i) for i, d, c, k in CONFIG_CASES],
)
def test_config_error_matrix(env: Env, data: bytes, code: str, culprit: str) -> None:
    cfg = env.raw(data)
    for args in ((), ("--dry-run",), ("--check",)):
        result = env.sync("demo", *args, "--json")
        assert result.exit_code == 4, (args, result.output)
        doc = one_json(result.stdout)
        check_document(doc, 4)
        assert doc["outcome"] == "config_error"
        assert doc["error"]["code"] == code, doc["error"]
        assert culprit in doc["error"]["message"]
        assert doc["operations"] == []
        assert doc["segments"]["memory"]["success"] is False
    text = env.sync("demo")
    assert text.exit_code == 4
    assert str(cfg) in text.stderr
    assert culprit in text.stderr
    assert "Traceback" not in text.output
    assert text.stdout == ""
    assert not env.mem().exists()


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("missing project", "config.project_not_found"),
        ("project dir without agent.toml", "config.project_not_found"),
        ("missing workspace", "config.workspace_missing"),
        ("workspace without projects", "config.workspace_no_projects"),
    ],
)
def test_missing_things_are_config_errors(env: Env, setup: str, code: str) -> None:
    name, culprit = "demo", ""
    ws_arg = str(env.ws)
    if setup == "missing project":
        name, culprit = "nope", str(env.ws / "projects/nope")
    elif setup == "project dir without agent.toml":
        (env.ws / "projects/bare").mkdir()
        name, culprit = "bare", str(env.ws / "projects/bare/agent.toml")
    elif setup == "missing workspace":
        ws_arg = culprit = str(env.base / "no-such-ws")
    else:
        ws_arg = culprit = str(env.base / "not-a-ws")
        os.mkdir(ws_arg)
    for extra in (["--json"], ["--json", "--dry-run"]):
        result = CliRunner().invoke(cli, ["--workspace", ws_arg, "sync", "project", name,
                                          *extra])
        assert result.exit_code == 4, result.output
        doc = one_json(result.stdout)
        check_document(doc, 4)
        assert doc["outcome"] == "config_error"
        assert doc["error"]["code"] == code
    text = CliRunner().invoke(cli, ["--workspace", ws_arg, "sync", "project", name])
    assert text.exit_code == 4
    assert culprit in text.stderr
    assert "Traceback" not in text.output
    assert not env.mem().exists()


# --------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args",
    [
        ["sync", "project", "demo", "--bogus"],
        ["sync", "project", "demo", "--out", "plan.toml"],
        ["sync", "project", "demo", "-v", "-q"],
        ["sync", "project", "demo", "--lock-timeout", "-1"],
        ["sync", "project", "demo", "--lock-timeout", "soon"],
        ["sync", "project", "demo", "/x", "extra"],
        ["sync", "nothing"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2_without_json(env: Env, args: list[str]) -> None:
    result = env.run(*args, "--json") if args[0] == "sync" and len(args) > 2 else \
        env.run(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr
    assert not env.mem().exists()


# --------------------------------------------------------------------------- real processes


def test_console_script_version() -> None:
    proc = subprocess.run([str(VENV_BIN / "aikito"), "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"aikito {__version__}")


def test_python_m_real_sync_then_check(env: Env) -> None:
    base = [sys.executable, "-m", "aikito_mem", "--workspace", str(env.ws), "sync",
            "project", "demo", "--json"]
    first = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert one_json(first.stdout)["outcome"] == "applied"
    assert os.readlink(env.mem("glossary.md")) == f"{env.ws}/memory/glossary.md"
    check = subprocess.run([*base, "--check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0
    assert one_json(check.stdout)["outcome"] == "unchanged"
    bad = subprocess.run([sys.executable, "-m", "aikito_mem", "--workspace",
                          str(env.base / "nowhere"), "sync", "project", "demo"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 4
    assert str(env.base / "nowhere") in bad.stderr
    assert "Traceback" not in bad.stderr
    usage = subprocess.run([*base, "--bogus"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and usage.stdout == ""


def test_version_imports_only_the_command_line_modules() -> None:
    """§12 start-up: of this package, ``aikito --version`` imports the command line
    modules (click-only) and nothing else — no room of the engine, no render, no errors."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "aikito_mem", "--version"],
                          capture_output=True, text=True, check=True, timeout=60)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    ours = {name for name in imported if name.split(".")[0] == "aikito_mem"}
    assert "aikito_mem.cli" in ours
    assert all(name in ("aikito_mem", "aikito_mem.__main__", "aikito_mem.console",
                        "aikito_mem.cli")
               or name.startswith("aikito_mem.cli.") for name in ours), sorted(ours)
    assert not {"attr", "attrs", "signal", "json"} & imported
