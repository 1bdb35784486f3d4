"""``sync project --dry-run --out PLANFILE`` and ``aikito apply PLANFILE`` (SPEC §9), and
the registration of an explicit checkout ([K4]) as a compare-and-swap on ``agent.toml``.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.helpers.cli import invoke
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS


def doc_of(res: Result) -> dict[str, Any]:
    return json.loads(res.stdout)


CONFIG = """\
# demo project — hand-written, comments must survive
name = "demo"  # must equal the directory name
paths = [
  "{co}",  # laptop
]
memory = ["top.md", "team/a.md"]  # shared memory

[hooks]  # another engine's table
list = ["x"]
"""


def build(ws: WS) -> str:
    ws.add_file("top.md", "top\n")
    ws.add_file("team/a.md", "a\n")
    ws.add_notes("demo")
    co = ws.checkout("main")
    Path(co, "README.md").write_text("foreign\n")
    ws.write_config("demo", raw=CONFIG.format(co=co))
    os.makedirs(f"{ws.base}/plans")
    return co


def dry_run_out(ws: WS, *extra: str) -> str:
    planfile = f"{ws.base}/plans/plan.toml"
    res = invoke("--workspace", ws.root, "sync", "project", "demo", *extra, "--dry-run",
              "--out", planfile, "--json")
    assert res.exit_code == 0, res.output
    assert doc_of(res)["outcome"] == "planned"
    return planfile


# --------------------------------------------------------------------------- --out


def test_dry_run_out_writes_only_the_plan_file(ws: WS) -> None:
    build(ws)
    before = snapshot(*ws.roots())
    planfile = dry_run_out(ws)
    after = snapshot(*ws.roots())
    assert changed(before, after) == {f"{ws.base}/plans", planfile}
    assert os.listdir(f"{ws.base}/plans") == ["plan.toml"]  # no temporary file left
    doc = tomllib.loads(Path(planfile).read_text())
    assert doc["plan"]["project"] == "demo"
    assert doc["plan"]["workspace"] == ws.root


def test_apply_executes_the_plan(ws: WS) -> None:
    co = build(ws)
    planfile = dry_run_out(ws)
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 0, res.output
    doc = doc_of(res)
    assert doc["outcome"] == "applied"
    assert doc["dry_run"] is False
    assert {op["status"] for op in doc["operations"]} == {"applied"}
    base = f"{co}/.agents/memory"
    assert os.readlink(f"{base}/top.md") == ws.memory_path("top.md")
    assert os.readlink(f"{base}/team/a.md") == ws.memory_path("team/a.md")
    assert os.readlink(f"{base}/notes") == ws.notes_path("demo")
    assert Path(co, "README.md").read_text() == "foreign\n"
    # A plan is executed once: applied again, what it recorded is gone → stale.
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 3
    assert doc_of(res)["outcome"] == "stale"
    assert snapshot(*ws.roots()) == before
    # A fresh sync finds nothing to do.
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert (res.exit_code, doc_of(res)["outcome"]) == (0, "unchanged")


def test_apply_text_output(ws: WS) -> None:
    build(ws)
    planfile = dry_run_out(ws)
    res = invoke("apply", planfile)
    assert res.exit_code == 0
    assert "done: 3 changes applied" in res.stdout


def test_apply_of_a_blocked_plan_is_refused(ws: WS) -> None:
    co = build(ws)
    os.makedirs(f"{co}/.agents/memory")
    Path(co, ".agents/memory/top.md").write_text("mine\n")
    planfile = f"{ws.base}/plans/plan.toml"
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run", "--out", planfile)
    assert res.exit_code == 1
    assert os.path.exists(planfile)
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 1
    assert doc_of(res)["outcome"] == "blocked"
    assert snapshot(*ws.roots()) == before


# --------------------------------------------------------------------------- bad files


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _edit_value(data: bytes) -> bytes:
    assert b'"team/a.md"' in data
    return data.replace(b'"team/a.md"', b'"team/b.md"', 1)


def _edit_source(data: bytes) -> bytes:
    return data.replace(b"/memory/top.md", b"/memory/../x.md")


def _wrong_version(data: bytes) -> bytes:
    assert b'schema = "aikito.plan/1"' in data
    return data.replace(b'schema = "aikito.plan/1"', b'schema = "aikito.plan/2"')


def _no_checksum(data: bytes) -> bytes:
    return b"\n".join(line for line in data.split(b"\n") if not line.startswith(b"checksum"))


def _extra_key(data: bytes) -> bytes:
    return b'extra = "x"\n' + data


def _empty(data: bytes) -> bytes:
    return b""


def _not_toml(data: bytes) -> bytes:
    return b"\xff\xfe garbage ["


BAD = {
    "truncated": _truncate,
    "edited_value": _edit_value,
    "edited_source": _edit_source,
    "wrong_version": _wrong_version,
    "no_checksum": _no_checksum,
    "extra_key": _extra_key,
    "empty": _empty,
    "not_toml": _not_toml,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_damaged_plan_file_is_refused_with_exit_4(ws: WS, case: str) -> None:
    co = build(ws)
    planfile = dry_run_out(ws)
    path = Path(planfile)
    path.write_bytes(BAD[case](path.read_bytes()))
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 4, res.output
    doc = doc_of(res)
    assert doc["outcome"] == "config_error"
    assert doc["error"]["code"].startswith("plan.")
    assert "Traceback" not in res.output
    assert snapshot(*ws.roots()) == before
    assert not os.path.lexists(f"{co}/.agents")


def test_missing_plan_file_is_exit_4(ws: WS) -> None:
    build(ws)
    res = invoke("apply", f"{ws.base}/plans/nope.toml", "--json")
    assert res.exit_code == 4
    assert doc_of(res)["error"]["code"] == "plan.missing"



def test_out_naming_a_fifo_is_refused_and_left_as_it_is(ws: WS) -> None:
    """``--out`` naming what is not a regular file (a FIFO here; ``/dev/null`` run as
    root alike) is a configuration error, said in the document, and nothing is written:
    the FIFO stays a FIFO."""
    build(ws)
    fifo = f"{ws.base}/plans/fifo"
    os.mkfifo(fifo)
    before = snapshot(*ws.roots())
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                 "--out", fifo, "--json")
    assert res.exit_code == 4, res.output
    error = doc_of(res)["error"]
    assert error["code"] == "plan.write"
    assert "it is a FIFO, not a regular file" in error["message"]
    assert changed(before, snapshot(*ws.roots())) == set()
    assert Path(fifo).is_fifo()


# --------------------------------------------------------------------------- workspace


def _other_workspace(ws: WS) -> str:
    other = f"{ws.base}/other-ws"
    os.makedirs(f"{other}/projects")
    os.makedirs(f"{other}/memory")
    return other


def test_apply_with_another_workspace_option_is_refused(ws: WS) -> None:
    co = build(ws)
    planfile = dry_run_out(ws)
    other = _other_workspace(ws)
    before = snapshot(*ws.roots())
    res = invoke("--workspace", other, "apply", planfile, "--json")
    assert res.exit_code == 4
    doc = doc_of(res)
    assert doc["outcome"] == "config_error"
    assert doc["error"]["code"] == "plan.foreign"
    assert snapshot(*ws.roots()) == before
    assert not os.path.lexists(f"{co}/.agents")


def test_apply_with_another_aikito_dir_is_refused(ws: WS) -> None:
    build(ws)
    planfile = dry_run_out(ws)
    other = _other_workspace(ws)
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json", env={"AIKITO_DIR": other})
    assert res.exit_code == 4
    assert doc_of(res)["error"]["code"] == "plan.foreign"
    assert snapshot(*ws.roots()) == before


def test_apply_with_the_same_workspace_through_an_alias_is_accepted(ws: WS) -> None:
    co = build(ws)
    planfile = dry_run_out(ws)
    alias = f"{ws.base}/alias"
    os.symlink(ws.root, alias)
    res = invoke("--workspace", alias, "apply", planfile, "--json")
    assert res.exit_code == 0, res.output
    assert os.readlink(f"{co}/.agents/memory/top.md") == ws.memory_path("top.md")


# --------------------------------------------------------------------------- registration


def _registered_text(ws: WS, co: str, new: str) -> str:
    return CONFIG.format(co=co).replace(
        f'  "{co}",  # laptop\n', f'  "{co}",  # laptop\n  "{new}",\n'
    )


def test_sync_with_unregistered_path_registers_it(ws: WS) -> None:
    co = build(ws)
    new = ws.checkout("second")
    config = Path(ws.config_path("demo"))
    old = config.read_text()
    res = invoke("--workspace", ws.root, "sync", "project", "demo", new, "--json")
    assert res.exit_code == 0, res.output
    doc = doc_of(res)
    assert doc["outcome"] == "applied"
    assert [c["path"] for c in doc["checkouts"]] == [new]
    text = config.read_text()
    assert text == _registered_text(ws, co, new)
    for line in old.splitlines():
        assert line in text  # every comment and key, in place
    data = tomllib.loads(text)
    assert data["paths"] == [co, new]
    assert data["hooks"] == {"list": ["x"]}
    assert sorted(os.listdir(os.path.dirname(config))) == ["agent.toml", "memory"]  # no temp
    assert os.readlink(f"{new}/.agents/memory/top.md") == ws.memory_path("top.md")
    assert not os.path.lexists(f"{co}/.agents")  # the other checkout is not touched
    # Registered now: a second run neither registers again nor changes anything.
    res = invoke("--workspace", ws.root, "sync", "project", "demo", new, "--json")
    assert (res.exit_code, doc_of(res)["outcome"]) == (0, "unchanged")
    assert config.read_text() == text


def test_no_register_leaves_agent_toml_alone(ws: WS) -> None:
    build(ws)
    new = ws.checkout("second")
    config = Path(ws.config_path("demo"))
    before = snapshot(config)
    res = invoke("--workspace", ws.root, "sync", "project", "demo", new, "--no-register", "--json")
    assert res.exit_code == 0, res.output
    assert snapshot(config) == before
    assert os.readlink(f"{new}/.agents/memory/top.md") == ws.memory_path("top.md")


def test_dry_run_with_unregistered_path_writes_nothing(ws: WS) -> None:
    build(ws)
    new = ws.checkout("second")
    before = snapshot(*ws.roots())
    res = invoke("--workspace", ws.root, "sync", "project", "demo", new, "--dry-run", "--json")
    assert res.exit_code == 0
    assert snapshot(*ws.roots()) == before


def test_explicit_path_must_exist(ws: WS) -> None:
    build(ws)
    missing = f"{ws.base}/co/missing"
    before = snapshot(*ws.roots())
    res = invoke("--workspace", ws.root, "sync", "project", "demo", missing, "--json")
    assert res.exit_code == 4
    assert not os.path.lexists(missing)
    assert snapshot(*ws.roots()) == before


def test_apply_registers_the_planned_path(ws: WS) -> None:
    co = build(ws)
    new = ws.checkout("second")
    planfile = dry_run_out(ws, new)
    assert tomllib.loads(Path(planfile).read_text())["plan"]["register"] == new
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 0, res.output
    assert Path(ws.config_path("demo")).read_text() == _registered_text(ws, co, new)
    assert os.readlink(f"{new}/.agents/memory/notes") == ws.notes_path("demo")


@pytest.mark.parametrize("edit", ["comment", "memory"])
def test_concurrent_edit_of_agent_toml_makes_apply_stale(ws: WS, edit: str) -> None:
    build(ws)
    new = ws.checkout("second")
    planfile = dry_run_out(ws, new)
    config = Path(ws.config_path("demo"))
    text = config.read_text()
    if edit == "comment":  # same data, other bytes: only the compare-and-swap sees it
        text += "# edited by someone else meanwhile\n"
    else:
        text = text.replace('"team/a.md"]', '"team/a.md", "top2.md"]')
    config.write_text(text)
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 3, res.output
    doc = doc_of(res)
    assert doc["outcome"] == "stale"
    assert any("agent.toml" in d for d in doc["error"]["differences"])
    assert config.read_text() == text
    assert snapshot(*ws.roots()) == before
    assert not os.path.lexists(f"{new}/.agents")


# --------------------------------------------------------------------------- re-plan ([E9])


def _resign(planfile: str, mutate: Any) -> None:
    from aikito_mem.executor.planfile import checksum

    doc = tomllib.loads(Path(planfile).read_text())
    mutate(doc["plan"])
    doc["checksum"] = checksum(doc["plan"])
    import tomli_w

    Path(planfile).write_text(tomli_w.dumps(doc))


def test_a_change_only_a_fresh_plan_sees_makes_apply_stale(ws: WS) -> None:
    """Verification alone would pass: aikito's own stale link appeared after the dry run.
    The fresh plan has an UNLINK the saved one has not ([E9])."""
    co = build(ws)
    planfile = dry_run_out(ws)
    os.makedirs(f"{co}/.agents/memory")
    os.symlink(ws.memory_path("gone.md"), f"{co}/.agents/memory/gone.md")
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 3, res.output
    diffs = doc_of(res)["error"]["differences"]
    assert any(f"{co}/.agents/memory/gone.md" in d and "UNLINK" in d
               and "which the plan does not have" in d for d in diffs), diffs
    assert snapshot(*ws.roots()) == before


def test_an_offline_checkout_that_appeared_makes_apply_stale(ws: WS) -> None:
    co = build(ws)
    later = f"{ws.base}/co/later"
    config = Path(ws.config_path("demo"))
    config.write_text(config.read_text().replace(f'"{co}",', f'"{co}", "{later}",'))
    planfile = dry_run_out(ws)
    os.mkdir(later)
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 3
    diffs = doc_of(res)["error"]["differences"]
    assert f"checkout {later}: the plan says 2 offline, it is 2 active now" in diffs
    assert snapshot(*ws.roots()) == before


def test_an_explicit_checkout_that_vanished_makes_apply_stale(ws: WS) -> None:
    build(ws)
    new = ws.checkout("second")
    planfile = dry_run_out(ws, new)
    os.rmdir(new)
    before = snapshot(*ws.roots())
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 3
    assert doc_of(res)["error"]["differences"][0].startswith(
        f"checkout {new} can no longer be opened")
    assert snapshot(*ws.roots()) == before


def test_a_tampered_blocked_plan_is_stale_not_blocked(ws: WS) -> None:
    """Refused as blocked (exit 1) only when the engine plans the same conflicts now."""
    co = build(ws)
    planfile = dry_run_out(ws)

    def add_conflict(p: dict[str, Any]) -> None:
        op = dict(p["operations"][0], action="CONFLICT", rule="INV-MEM-07")
        p["operations"].append(op)

    _resign(planfile, add_conflict)
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 3
    assert not os.path.lexists(f"{co}/.agents")


def test_apply_shows_the_engines_texts_not_the_files(ws: WS) -> None:
    build(ws)
    planfile = dry_run_out(ws)

    def edit(p: dict[str, Any]) -> None:
        for op in p["operations"]:
            op["reason"] = "EDITED"

    _resign(planfile, edit)
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 0
    assert "EDITED" not in res.stdout
    assert {op["reason"] for op in doc_of(res)["operations"]} == {"target missing"}


def test_the_plans_workspace_missing_is_a_config_error(ws: WS) -> None:
    build(ws)
    planfile = dry_run_out(ws)
    os.rename(ws.root, f"{ws.base}/moved")
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 4
    doc = doc_of(res)
    assert doc["error"]["code"] == "plan.workspace"
    assert ws.root in doc["error"]["message"]


def test_the_plans_project_missing_is_a_config_error(ws: WS) -> None:
    build(ws)
    planfile = dry_run_out(ws)
    os.rename(f"{ws.root}/projects/demo", f"{ws.root}/projects/renamed")
    res = invoke("apply", planfile, "--json")
    assert res.exit_code == 4
    assert doc_of(res)["error"]["code"] == "config.project_not_found"


def test_apply_plan_file_api(ws: WS) -> None:
    from aikito_mem.commands.apply import apply_plan_file

    co = build(ws)
    planfile = dry_run_out(ws)
    result = apply_plan_file(planfile)
    assert result.outcome == "applied"
    assert os.readlink(f"{co}/.agents/memory/top.md") == ws.memory_path("top.md")


def test_compare_names_nothing_for_equal_plans(ws: WS) -> None:
    from aikito_mem.commands.apply import compare

    build(ws)
    plan = ws.project("demo").plan()
    assert compare(plan, ws.project("demo").plan()) == []
    assert compare(plan, plan.evolve(operations=plan.operations[::-1])) == [
        f"the operations of checkout {plan.checkouts[0].path} are in another order"]


def test_a_stale_refusal_lists_the_first_differences_and_counts_the_rest(ws: WS) -> None:
    """A 30-reference plan whose every target changed: the document lists 20 differences
    and counts the others, in JSON and in text — a short document, whatever the plan."""
    from aikito_mem.errors import DIFFERENCES_LISTED

    refs = [f"r{i:02d}.md" for i in range(30)]
    for ref in refs:
        ws.add_file(ref, "x\n")
    co = ws.checkout("main")
    ws.write_config("demo", memory=refs, paths=[co])
    plan = f"{ws.base}/plan.toml"
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                 "--out", plan)
    assert res.exit_code == 0, res.output
    os.makedirs(f"{co}/.agents/memory")
    for ref in refs:
        Path(co, ".agents/memory", ref).write_text("the user's\n")
    before = snapshot(*ws.roots())
    res = invoke("--workspace", ws.root, "apply", plan, "--json")
    doc = doc_of(res)
    assert res.exit_code == 3 == doc["exit_code"]
    error = doc["error"]
    assert len(error["differences"]) == DIFFERENCES_LISTED == 20
    assert error["differences_omitted"] >= 10
    assert error["message"].count("\n  - ") == DIFFERENCES_LISTED + 1  # + "… and N more"
    assert f"… and {error['differences_omitted']} more differences" in error["message"]
    assert len(res.stdout) < 40_000
    assert changed(before, snapshot(*ws.roots())) == set()

    text = invoke("--workspace", ws.root, "apply", plan)
    assert text.exit_code == 3
    lines = text.stderr.splitlines()
    assert lines[0].startswith("aikito: the plan is stale")
    assert len(lines) == 1 + DIFFERENCES_LISTED + 1
    assert lines[-1] == f"  - … and {error['differences_omitted']} more differences"
