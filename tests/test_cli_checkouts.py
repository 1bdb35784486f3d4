"""Which project and which checkouts ``aikito sync project`` acts on (SPEC §9, [K4]): NAME
omitted or ``.`` — the project whose active checkout holds the current directory; an
explicit PATH — exactly that checkout, registered unless ``--no-register``."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from tests.helpers.workspace import WS


@pytest.fixture
def demo(ws: WS) -> WS:
    ws.add_file("glossary.md", "g")
    ws.write_config("demo", memory=["glossary.md"], paths=[ws.checkout("co")])
    return ws


def sync(ws: WS, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", *args])


def sync_json(ws: WS, *args: str) -> tuple[int, dict[str, Any]]:
    res = sync(ws, *args, "--json")
    doc: dict[str, Any] = json.loads(res.stdout)
    assert doc["exit_code"] == res.exit_code
    return res.exit_code, doc


def linked(ws: WS, checkout: str) -> bool:
    return os.path.islink(ws.runtime(checkout, "glossary.md"))


# --------------------------------------------------------------------------- NAME from cwd


@pytest.mark.parametrize("name", [None, "."])
def test_name_resolved_from_cwd(demo: WS, monkeypatch: pytest.MonkeyPatch,
                                name: str | None) -> None:
    demo.write_config("other", memory=["glossary.md"], paths=[demo.checkout("other-co")])
    deep = f"{demo.checkout('co')}/src/deep"
    os.makedirs(deep)
    monkeypatch.chdir(deep)
    code, doc = sync_json(demo, *([] if name is None else [name]), "--dry-run")
    assert code == 0, doc
    assert doc["project"] == "demo"
    assert [c["path"] for c in doc["checkouts"]] == [demo.checkout("co")]


def test_name_from_cwd_outside_any_checkout(demo: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(demo.base)
    code, doc = sync_json(demo, "--dry-run")
    assert (code, doc["outcome"]) == (4, "config_error")
    assert doc["error"]["code"] == "config.project_not_found"
    text = sync(demo, ".", "--dry-run")
    assert text.exit_code == 4 and str(demo.base) in text.stderr


def test_name_from_cwd_ambiguous_lists_projects(demo: WS,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    co = demo.checkout("co")
    demo.write_config("twin", memory=["glossary.md"], paths=[co])
    monkeypatch.chdir(co)
    code, doc = sync_json(demo, "--dry-run")
    assert code == 4
    assert doc["error"]["code"] == "config.project_ambiguous"
    assert "demo" in doc["error"]["message"] and "twin" in doc["error"]["message"]
    text = sync(demo, "--dry-run")
    assert text.exit_code == 4 and "demo" in text.stderr and "twin" in text.stderr
    assert not os.path.lexists(f"{co}/.agents")


# --------------------------------------------------------------------------- explicit PATH


def test_explicit_path_plans_only_that_checkout(demo: WS) -> None:
    co, second = demo.checkout("co"), demo.checkout("second")
    demo.write_config("demo", memory=["glossary.md"], paths=[co, second])
    code, doc = sync_json(demo, "demo", second, "--dry-run")
    assert code == 0
    assert [c["path"] for c in doc["checkouts"]] == [second]
    assert {op["checkout"] for op in doc["operations"]} == {second}
    code, doc = sync_json(demo, "demo", second)
    assert (code, doc["outcome"]) == (0, "applied")
    assert linked(demo, second)
    assert not os.path.lexists(f"{co}/.agents")  # the other registered checkout: untouched


def test_explicit_unregistered_path_no_register(demo: WS) -> None:
    new = demo.checkout("new")
    before = Path(demo.config_path("demo")).read_bytes()
    code, doc = sync_json(demo, "demo", new, "--no-register")
    assert (code, doc["outcome"]) == (0, "applied")
    assert Path(demo.config_path("demo")).read_bytes() == before
    assert linked(demo, new) and not linked(demo, demo.checkout("co"))


def test_explicit_unregistered_path_registers(demo: WS) -> None:
    new = demo.checkout("new")
    cfg = demo.config_path("demo")
    before = Path(cfg).read_bytes()
    assert sync_json(demo, "demo", new, "--dry-run")[0] == 0
    assert Path(cfg).read_bytes() == before  # a dry run never registers
    code, doc = sync_json(demo, "demo", new)
    assert code == 0, doc
    after = Path(cfg).read_bytes()
    assert after.startswith(before[: before.index(b"paths")])
    assert tomllib.loads(after.decode())["paths"] == [demo.checkout("co"), new]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_explicit_path_must_be_an_existing_directory(demo: WS, kind: str) -> None:
    target = f"{demo.base}/nope"
    if kind == "file":
        with open(target, "w") as fh:
            fh.write("x")
    cfg = demo.config_path("demo")
    digest = hashlib.sha256(Path(cfg).read_bytes()).hexdigest()
    for args in ((), ("--dry-run",), ("--no-register",)):
        code, doc = sync_json(demo, "demo", target, *args)
        assert (code, doc["outcome"]) == (4, "config_error")
        assert target in doc["error"]["message"]
    text = sync(demo, "demo", target)
    assert text.exit_code == 4 and target in text.stderr
    assert (kind == "file") == os.path.lexists(target)
    assert hashlib.sha256(Path(cfg).read_bytes()).hexdigest() == digest
    assert not os.path.lexists(f"{demo.checkout('co')}/.agents")
