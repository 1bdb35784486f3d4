"""A registration the real run would refuse is refused by the dry run and ``--check`` too,
with the same exit code and the same message, and nothing is written anywhere ([E9],
[K4]).  Real processes on real temporary trees, compared with before/after snapshots of
the workspace, the checkouts, the files a symlinked ``agent.toml`` points to, and home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

MODES = (("--dry-run",), ("--check",), ())


def run(ws: WS, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    argv: list[str | bytes] = [sys.executable, "-m", "aikito_mem", "--workspace", ws.root,
                               "sync", "project", "demo", *args]
    return subprocess.run(argv, capture_output=True, timeout=120)


def refused_alike(ws: WS, path: str | bytes, *extra: str) -> dict[str, Any]:
    """Run PATH as a dry run, as ``--check`` and for real, text and ``--json``: each exits
    4 with the same error, and nothing anywhere changes.  Returns the JSON error."""
    before = snapshot(*ws.roots())
    errors: list[dict[str, Any]] = []
    texts: list[bytes] = []
    for mode in MODES:
        text = run(ws, path, *extra, *mode)
        assert text.returncode == 4, (mode, text.stderr)
        assert b"Traceback" not in text.stderr
        texts.append(text.stderr)
        doc = run(ws, path, *extra, *mode, "--json")
        assert doc.returncode == 4, (mode, doc.stderr)
        parsed = json.loads(doc.stdout)
        assert parsed["outcome"] == "config_error" and parsed["exit_code"] == 4
        errors.append(parsed["error"])
    assert len({t for t in texts}) == 1, texts
    assert all(e == errors[0] for e in errors), errors
    assert snapshot(*ws.roots()) == before
    return errors[0]


def project(ws: WS, config: str | None = None) -> tuple[str, str]:
    """Project ``demo`` with one registered, synced checkout; returns (checkout, config)."""
    ws.add_file("a.md", "a\n")
    co = ws.checkout("co")
    path = ws.write_config("demo", memory=["a.md"], paths=[co], raw=config)
    assert run(ws).returncode == 0
    return co, path


def test_symlinked_agent_toml(tmp_path: Path) -> None:
    """agent.toml managed by a dotfile manager (a symlink): registration would replace the
    link, so it is refused — by the dry run and --check as by the real run."""
    ws = WS(tmp_path)
    _co, config = project(ws)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    os.replace(config, dotfiles / "agent.toml")
    os.symlink(dotfiles / "agent.toml", config)
    new = ws.checkout("new")
    error = refused_alike(ws, new)
    assert error["code"] == "config.register_failed"
    assert "symlink" in error["message"] and config in error["message"]
    assert "--no-register" in error["message"]
    # The refusal is the registration's: without it the same sync goes ahead.
    assert run(ws, new, "--no-register").returncode == 0
    assert os.path.islink(f"{new}/.agents/memory/a.md")
    assert os.path.islink(config)


def test_checkout_path_that_is_not_utf8(tmp_path: Path) -> None:
    ws = WS(tmp_path)
    project(ws)
    new = os.fsencode(ws.checkouts_dir) + b"/co-\xff"
    os.mkdir(new)
    error = refused_alike(ws, new)
    assert error["code"] == "config.register_failed"
    assert "not valid Unicode" in error["message"]
    assert run(ws, new, "--no-register").returncode == 0


def _nested(depth: int) -> str:
    return "x = " + "[" * depth + "]" * depth + "\n"


def _tomllib_limit() -> int:
    """The deepest array nesting ``tomllib`` parses at the top of a fresh interpreter."""
    code = ("import tomllib\nlo, hi = 1, 5000\nwhile lo < hi:\n"
            "    mid = (lo + hi + 1) // 2\n    try:\n"
            "        tomllib.loads('x = ' + '[' * mid + ']' * mid)\n        lo = mid\n"
            "    except RecursionError:\n        hi = mid - 1\nprint(lo)\n")
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, timeout=60).stdout)


@pytest.mark.parametrize("depth", ["tomlkit", "tomllib"])
def test_agent_toml_nested_deeply(tmp_path: Path, depth: str) -> None:
    """Nested past what the editor handles (tomlkit: 100 levels) or just below what
    tomllib parses: every mode gives the same configuration error, never a traceback."""
    ws = WS(tmp_path)
    co = ws.checkout("co")
    n = 150 if depth == "tomlkit" else _tomllib_limit() - 20
    ws.add_file("a.md", "a\n")
    ws.write_config("demo", raw=f'memory = ["a.md"]\npaths = ["{co}"]\n{_nested(n)}')
    error = refused_alike(ws, ws.checkout("new"))
    assert ws.config_path("demo") in error["message"]
    assert "nested" in error["message"]


@pytest.mark.parametrize("where", ["inside", "around"])
def test_checkout_nested_in_or_around_a_registered_one(tmp_path: Path, where: str) -> None:
    """`aikito sync project demo .` from a subdirectory of a checkout (or from a directory
    holding one) would register a second, nested checkout: refused, naming the checkout."""
    ws = WS(tmp_path)
    if where == "inside":
        co, _ = project(ws)
        path = f"{co}/src/lib"
        os.makedirs(path)
    else:
        ws.add_file("a.md", "a\n")
        co = ws.checkout("outer/co")
        ws.write_config("demo", memory=["a.md"], paths=[co])
        assert run(ws).returncode == 0
        path = ws.checkout("outer")
    error = refused_alike(ws, path)
    assert error["code"] == "config.checkout_nested"
    assert co in error["message"] and path in error["message"]
    assert "--no-register" in error["message"]
    # A relative PATH (`.` from the subdirectory) is the same refusal.
    proc = subprocess.run([sys.executable, "-m", "aikito_mem", "--workspace", ws.root, "sync",
                           "project", "demo", ".", "--dry-run"], cwd=path, capture_output=True,
                          text=True, timeout=120)
    # [U2]: printed there, the checkout is named as pasted there (relative when below).
    shown = co if where == "inside" else os.path.relpath(co, path)
    assert proc.returncode == 4 and f"checkout {shown} (label" in proc.stderr


def test_nested_checkout_allowed_without_registering(tmp_path: Path) -> None:
    ws = WS(tmp_path)
    co, config = project(ws)
    sub = f"{co}/sub"
    os.mkdir(sub)
    before = Path(config).read_bytes()
    assert run(ws, sub, "--no-register").returncode == 0
    assert Path(config).read_bytes() == before


def test_offline_checkout_does_not_count_as_nesting(tmp_path: Path) -> None:
    ws = WS(tmp_path)
    ws.add_file("a.md", "a\n")
    gone = f"{ws.checkouts_dir}/gone"
    ws.write_config("demo", memory=["a.md"], paths=[gone])
    os.makedirs(f"{ws.checkouts_dir}/elsewhere")
    assert run(ws, f"{ws.checkouts_dir}/elsewhere").returncode == 0
    assert tomllib.loads(Path(ws.config_path("demo")).read_text())["paths"] == [
        gone, f"{ws.checkouts_dir}/elsewhere"]


def test_owner_that_cannot_be_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent.toml owned by someone else (a shared workspace): the new file could not
    keep its owner, so every mode refuses before writing.  In process, as a user who is
    not root."""
    from aikito_mem.cli import cli
    from aikito_mem.config import write as config_write

    ws = WS(tmp_path)
    project(ws)
    os.chown(ws.config_path("demo"), 4242, 4242)
    new = ws.checkout("new")
    monkeypatch.setattr(config_write.os, "geteuid", lambda: 1000)
    before = snapshot(*ws.roots())
    outputs = set()
    for mode in MODES:
        result = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                          new, *mode])
        assert result.exit_code == 4, result.output
        outputs.add(result.stderr)
    assert len(outputs) == 1 and "4242:4242" in outputs.pop()
    assert snapshot(*ws.roots()) == before
