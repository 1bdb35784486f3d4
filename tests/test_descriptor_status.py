"""The memory descriptor in ``aikito status`` and the ``MEMORY.md`` index it anchors.

- ``status`` (text and ``aikito.status/1``) reports each active checkout's
  ``.agents/config.yaml`` by the reader rules: no ``memory:`` block, tiers 0–3, a missing
  contract version, a malformed or unreadable file — a finding for that checkout, never a
  crash of the listing, never a change of the exit code.
- The anchor: ``.agents/memory/MEMORY.md``, a regular file, while ``.agents/config.yaml``
  has a top-level ``memory:`` key, is no foreign entry ([P2] keeps warning for every other
  entry aikito did not create); it is never touched, and ``status`` shows it.
- Structure: a sync never imports YAML; the cheap check runs only where a regular
  ``MEMORY.md`` is.

The reader itself, field by field: tests/test_descriptor.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import aikito_mem.world.descriptor as descriptor_mod
from aikito_mem.cli import cli
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

TIERS = {
    0: ("auto", ".agents/memory", None, None, None, ["grep"]),
    1: ("obsidian-only", ".agents/memory", ".agents/vault", None, None, ["grep"]),
    2: ("obsidian-graphify", ".agents/memory", ".agents/vault", "graphify-out/graph.json",
        None, ["graph", "grep"]),
    3: ("obsidian-graphify-rag", ".agents/memory", ".agents/vault",
        "graphify-out/graph.json", "http://localhost:8080", ["rag", "graph", "grep"]),
}
INDEX = "# Memory index\n- [style](style.md)\n"


def aikito(ws: WS, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--workspace", ws.root, *args], catch_exceptions=False)


def status_doc(ws: WS) -> tuple[dict[str, Any], int]:
    result = aikito(ws, "status", "--json")
    return json.loads(result.stdout), result.exit_code


def checkouts(d: dict[str, Any], project: str = "demo") -> list[dict[str, Any]]:
    proj = next(p for p in d["projects"] if p["name"] == project)
    found: list[dict[str, Any]] = proj["checkouts"]
    return found


def write_config_yaml(co: str, text: str | bytes) -> str:
    os.makedirs(f"{co}/.agents", exist_ok=True)
    path = f"{co}/.agents/config.yaml"
    Path(path).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def tier_yaml(tier: int, *, contract: int | None = 1) -> str:
    stack, memory_path, vault, graph, rag, _ = TIERS[tier]
    lines = ["project:", "  name: demo"]
    if contract is not None:
        lines.append(f"  project_init_contract_version: {contract}")
    lines += ["memory:", f"  tier: {tier}", f"  stack: {stack}", f"  memory_path: {memory_path}"]
    if vault:
        lines.append(f"  vault_path: {vault}")
    if graph:
        lines.append(f"  graph_path: {graph}")
    if rag:
        lines.append(f"  rag_endpoint: {rag}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def demo(ws: WS) -> tuple[WS, str]:
    """Project ``demo`` with one reference, synced into one checkout."""
    ws.add_file("style.md", "style\n")
    co = ws.checkout("demo")
    ws.write_config("demo", memory=["style.md"], paths=[co])
    ws.project("demo").sync()
    return ws, co


# ------------------------------------------------------------------------------ status


def test_no_config_yaml_is_absent_and_not_shown(demo: tuple[WS, str]) -> None:
    ws, co = demo
    d, code = status_doc(ws)
    assert code == 0
    desc = checkouts(d)[0]["descriptor"]
    assert desc["state"] == "absent" and desc["path"] == f"{co}/.agents/config.yaml"
    assert desc["tier"] is None and desc["contract_version"] is None and desc["index"] is None
    assert "descriptor" not in aikito(ws, "status").stdout


@pytest.mark.parametrize("contract", [None, 1])
def test_no_memory_block_is_no_memory_backend(demo: tuple[WS, str], contract: int | None) -> None:
    ws, co = demo
    project = "project:\n  name: demo\n"
    if contract is not None:
        project += f"  project_init_contract_version: {contract}\n"
    write_config_yaml(co, project + "stack: none\n")
    d, code = status_doc(ws)
    assert code == 0
    desc = checkouts(d)[0]["descriptor"]
    assert desc["state"] == "no_memory" and desc["tier"] is None
    assert desc["contract_version"] == (contract or 0)
    assert desc["memory_path"] is None and desc["surfaces"] == []
    text = aikito(ws, "status").stdout
    assert f"descriptor demo/1: no memory backend (contract v{contract or 0})" in text


@pytest.mark.parametrize("tier", [0, 1, 2, 3])
def test_tiers_report_what_they_promise(demo: tuple[WS, str], tier: int) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(tier))
    d, code = status_doc(ws)
    assert code == 0
    desc = checkouts(d)[0]["descriptor"]
    stack, memory_path, vault, graph, rag, surfaces = TIERS[tier]
    assert desc["state"] == "memory" and desc["tier"] == tier and desc["stack"] == stack
    assert desc["contract_version"] == 1
    assert (desc["memory_path"], desc["vault_path"], desc["graph_path"],
            desc["rag_endpoint"]) == (memory_path, vault, graph, rag)
    assert desc["surfaces"] == surfaces
    assert desc["findings"] == []  # a lower tier lacks the higher fields: no finding
    text = aikito(ws, "status").stdout
    assert (f"descriptor demo/1: tier {tier} {stack}, contract v1, no MEMORY.md index, "
            f"retrieval {', '.join(surfaces)}") in text.splitlines()


def test_tier_3_with_an_empty_rag_endpoint_has_no_rag_surface(demo: tuple[WS, str]) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(3).replace("http://localhost:8080", ""))
    desc = checkouts(status_doc(ws)[0])[0]["descriptor"]
    assert desc["rag_endpoint"] == "" and desc["surfaces"] == ["graph", "grep"]


def test_a_missing_contract_version_is_contract_v0(demo: tuple[WS, str]) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(2, contract=None))
    desc = checkouts(status_doc(ws)[0])[0]["descriptor"]
    assert desc["contract_version"] == 0 and desc["tier"] == 2 and desc["findings"] == []
    assert "tier 2 obsidian-graphify, contract v0" in aikito(ws, "status").stdout


@pytest.mark.parametrize("content", [
    "memory: [unclosed\n",
    "memory:\n  tier: 1\n\tbad: tab\n",
    "- a list\n- at the top\n",
    "memory: 3\n",
    b"memory:\n  tier: \xff\n",
])
def test_a_malformed_file_is_a_finding_never_a_crash(
    ws: WS, content: str | bytes
) -> None:
    """Two checkouts: the malformed descriptor is a warning for its own checkout; the
    other checkout, and the exit code (the sync state), are unaffected."""
    ws.add_file("style.md", "style\n")
    bad, good = ws.checkout("bad"), ws.checkout("good")
    ws.write_config("demo", memory=["style.md"], paths={"bad": bad, "good": good})
    ws.project("demo").sync()
    write_config_yaml(bad, content)
    write_config_yaml(good, tier_yaml(1))
    d, code = status_doc(ws)
    assert code == 0 and d["error"] is None
    first, second = checkouts(d)
    assert first["descriptor"]["state"] == "invalid"
    [finding] = first["descriptor"]["findings"]
    assert finding["severity"] == "warning" and finding["path"] == f"{bad}/.agents/config.yaml"
    assert first["sync"]["in_sync"] is True
    assert second["descriptor"]["state"] == "memory" and second["descriptor"]["tier"] == 1
    text = aikito(ws, "status")
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert "descriptor demo/bad: unreadable .agents/config.yaml (see the warning below)" in lines
    assert any(line.startswith(f"warning: {bad}/.agents/config.yaml: ") for line in lines)
    assert any(line.startswith("descriptor demo/good: tier 1") for line in lines)
    assert lines[-1] == "status: 1 project, all in sync"


def test_a_symlinked_config_yaml_is_not_followed(demo: tuple[WS, str], tmp_path: Path) -> None:
    ws, co = demo
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(tier_yaml(3))
    os.makedirs(f"{co}/.agents", exist_ok=True)
    os.symlink(elsewhere, f"{co}/.agents/config.yaml")
    desc = checkouts(status_doc(ws)[0])[0]["descriptor"]
    assert desc["state"] == "invalid" and desc["tier"] is None


@pytest.mark.parametrize("with_active", [False, True])
def test_offline_checkouts_have_no_descriptor(ws: WS, with_active: bool) -> None:
    ws.add_file("style.md")
    paths = [f"{ws.base}/nowhere"]
    if with_active:
        paths.append(ws.checkout("here"))
        write_config_yaml(paths[1], tier_yaml(0))
    ws.write_config("demo", memory=["style.md"], paths=paths)
    d, code = status_doc(ws)
    assert code == 7 if with_active else code == 0  # the active one is not synced yet
    assert checkouts(d)[0]["state"] == "offline" and checkouts(d)[0]["descriptor"] is None
    if with_active:
        assert checkouts(d)[1]["descriptor"]["tier"] == 0


def test_status_writes_nothing(demo: tuple[WS, str]) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(3))
    Path(ws.runtime(co, "MEMORY.md")).write_text(INDEX)
    before = snapshot(ws.base)
    aikito(ws, "status")
    aikito(ws, "status", "--json")
    assert changed(before, snapshot(ws.base)) == set()


# ------------------------------------------------------------------------------ the anchor


def sync_doc(ws: WS, *extra: str) -> dict[str, Any]:
    result = aikito(ws, "sync", "project", "demo", "--json", *extra)
    assert result.exit_code == 0, result.stdout
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def codes(d: dict[str, Any]) -> list[str]:
    return [f["code"] for f in d["findings"]]


def test_the_index_with_a_memory_block_is_no_foreign_entry(demo: tuple[WS, str]) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(0))
    index = ws.runtime(co, "MEMORY.md")
    Path(index).write_text(INDEX)
    before = snapshot(ws.runtime(co), f"{co}/.agents/config.yaml")
    for extra in ((), ("--dry-run",)):
        d = sync_doc(ws, *extra)
        assert codes(d) == ["memory.index_anchor"]
        [finding] = d["findings"]
        assert finding["severity"] == "info" and finding["path"] == index
        assert d["summary"]["create"] == d["summary"]["unlink"] == 0
    text = aikito(ws, "sync", "project", "demo").stdout
    assert "warning" not in text and "MEMORY.md" not in text
    verbose = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo", "-v"],
                                 env={"COLUMNS": "1000"})
    assert "MEMORY.md: the memory index" in verbose.stdout
    assert changed(before, snapshot(ws.runtime(co), f"{co}/.agents/config.yaml")) == set()
    d, code = status_doc(ws)
    assert code == 0
    [entry] = checkouts(d)
    assert entry["sync"]["foreign"] == 0 and entry["descriptor"]["index"] == index
    assert "descriptor demo/1: tier 0 auto, contract v1, index MEMORY.md, retrieval grep" in (
        aikito(ws, "status").stdout.splitlines())


@pytest.mark.parametrize("config", [
    None,                                        # no .agents/config.yaml
    "project:\n  project_init_contract_version: 1\n",   # no memory: block
    "project:\n  memory:\n    tier: 0\n",        # memory: nested, not top-level
    "# memory: commented out\nmemories: []\n",   # neither
])
def test_without_the_block_the_index_stays_a_foreign_entry(
    demo: tuple[WS, str], config: str | None
) -> None:
    ws, co = demo
    if config is not None:
        write_config_yaml(co, config)
    index = ws.runtime(co, "MEMORY.md")
    Path(index).write_text(INDEX)
    before = snapshot(ws.runtime(co))
    d = sync_doc(ws)
    assert codes(d) == ["memory.foreign_entry"] and d["findings"][0]["path"] == index
    assert changed(before, snapshot(ws.runtime(co))) == set()
    entry = checkouts(status_doc(ws)[0])[0]
    assert entry["sync"]["foreign"] == 1 and entry["descriptor"]["index"] is None


@pytest.mark.parametrize("what", ["symlink", "nested", "directory", "other name"])
def test_only_a_regular_top_level_memory_md_is_the_index(
    demo: tuple[WS, str], tmp_path: Path, what: str
) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(1))
    base = ws.runtime(co)
    if what == "symlink":
        (tmp_path / "idx.md").write_text(INDEX)
        os.symlink(tmp_path / "idx.md", f"{base}/MEMORY.md")
        foreign = [f"{base}/MEMORY.md"]
    elif what == "nested":
        os.mkdir(f"{base}/sub")
        Path(f"{base}/sub/MEMORY.md").write_text(INDEX)
        foreign = [f"{base}/sub/MEMORY.md"]
    elif what == "directory":
        os.mkdir(f"{base}/MEMORY.md")
        Path(f"{base}/MEMORY.md/x").write_text("x")
        foreign = [f"{base}/MEMORY.md/x"]
    else:
        Path(f"{base}/memory.md").write_text(INDEX)
        foreign = [f"{base}/memory.md"]
    before = snapshot(base)
    d = sync_doc(ws)
    assert codes(d) == ["memory.foreign_entry"]
    assert [f["path"] for f in d["findings"]] == foreign
    assert changed(before, snapshot(base)) == set()


def test_the_index_exempts_only_itself(demo: tuple[WS, str]) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(0))
    Path(ws.runtime(co, "MEMORY.md")).write_text(INDEX)
    Path(ws.runtime(co, "notes.txt")).write_text("mine\n")
    d = sync_doc(ws)
    assert [(f["code"], f["path"]) for f in d["findings"]] == [
        ("memory.index_anchor", ws.runtime(co, "MEMORY.md")),
        ("memory.foreign_entry", ws.runtime(co, "notes.txt")),
    ]


def test_the_planner_exempts_only_a_regular_file() -> None:
    """The pure planner, fed a view that says the index is anchored while the entry at
    ``MEMORY.md`` is no regular file: still a foreign entry (defence in depth)."""
    from aikito_mem.model import Kind, Observed
    from aikito_mem.values import replace
    from tests.helpers.pure import plan_of, resource_set, view

    for kind, literal in ((Kind.LINK, "/elsewhere"), (Kind.FIFO, None), (Kind.FILE, None)):
        anchored = replace(view({"MEMORY.md": Observed(kind, literal, 1, 2)}),
                           index_anchor=True)
        plan = plan_of(resource_set(), anchored)
        expected = "memory.index_anchor" if kind is Kind.FILE else "memory.foreign_entry"
        assert [f.code for f in plan.findings] == [expected], kind
        assert plan.operations == ()


def test_a_reference_named_memory_md_still_conflicts_with_a_file(ws: WS) -> None:
    """The anchor rule concerns entries aikito does not manage: a reference ``MEMORY.md``
    over a real file is a CONFLICT as ever, the file preserved."""
    ws.add_file("MEMORY.md", "the workspace's\n")
    co = ws.checkout("demo")
    ws.write_config("demo", memory=["MEMORY.md"], paths=[co])
    write_config_yaml(co, tier_yaml(0))
    os.makedirs(ws.runtime(co))
    Path(ws.runtime(co, "MEMORY.md")).write_text(INDEX)
    before = snapshot(ws.runtime(co))
    result = aikito(ws, "sync", "project", "demo", "--json")
    assert result.exit_code == 1
    d = json.loads(result.stdout)
    assert [op["action"] for op in d["operations"]] == ["CONFLICT"]
    assert changed(before, snapshot(ws.runtime(co))) == set()


def test_the_cheap_check_runs_only_where_a_regular_index_is(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``has_memory_block`` per checkout that has a regular ``MEMORY.md``; none
    elsewhere (no ``config.yaml`` read for checkouts without one)."""
    calls: list[str] = []
    real = descriptor_mod.has_memory_block

    def counting(root: str) -> bool:
        calls.append(root)
        return real(root)

    monkeypatch.setattr(descriptor_mod, "has_memory_block", counting)
    ws.add_file("style.md")
    cos = {name: ws.checkout(name) for name in ("plain", "index", "link", "other")}
    ws.write_config("demo", memory=["style.md"], paths=cos)
    ws.project("demo").sync()
    for co in cos.values():
        write_config_yaml(co, tier_yaml(0))
    Path(ws.runtime(cos["index"], "MEMORY.md")).write_text(INDEX)
    os.symlink("elsewhere", ws.runtime(cos["link"], "MEMORY.md"))
    for name in ("N.md", "notes.txt"):  # regular files sorted before and after MEMORY.md
        Path(ws.runtime(cos["other"], name)).write_text("x")
    calls.clear()
    plan = ws.project("demo").plan()
    assert calls == [cos["index"]]
    assert [f.code for f in plan.findings] == ["memory.index_anchor", *(
        ["memory.foreign_entry"] * 3)]


@pytest.mark.parametrize("names", [[], ["A.md"], ["A.md", "B"]])
def test_entries_that_all_sort_before_the_index(ws: WS, names: list[str]) -> None:
    co = ws.checkout("demo")
    ws.write_config("demo", memory=[], paths=[co])
    write_config_yaml(co, tier_yaml(0))
    os.makedirs(ws.runtime(co))
    for name in names:
        Path(ws.runtime(co, name)).write_text("x")
    plan = ws.project("demo").plan()
    assert [f.path for f in plan.findings] == [ws.runtime(co, n) for n in names]


# ------------------------------------------------------------------------------ structure


def _imports(*args: str) -> tuple[int, set[str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "aikito_mem", *args],
                          capture_output=True, text=True, timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    return proc.returncode, imported


def test_a_sync_never_imports_yaml_and_status_does(demo: tuple[WS, str]) -> None:
    ws, co = demo
    write_config_yaml(co, tier_yaml(3))
    Path(ws.runtime(co, "MEMORY.md")).write_text(INDEX)
    for extra in ((), ("--dry-run",), ("--check",)):
        code, imported = _imports("--workspace", ws.root, "sync", "project", "demo", *extra)
        assert code == 0, extra
        assert "yaml" not in imported, extra
    code, imported = _imports("--workspace", ws.root, "status")
    assert code == 0 and "yaml" in imported
