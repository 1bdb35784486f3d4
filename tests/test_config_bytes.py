"""agent.toml's bytes on a plain sync ([K4], [E2], [§12]): the engine compares the live
bytes with the ones it parsed and hashes them only for a registration's compare-and-swap
(and a clean's re-check); a plan that records no digest is verified by parsing the live
bytes again and comparing what the plan read of them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from aikito_mem import StalePlanError
from tests.helpers.workspace import WS


def build(ws: WS) -> str:
    ws.add_file("top.md", "top\n")
    ws.add_file("team/a.md", "a\n")
    co = ws.checkout("main")
    ws.write_config("demo", memory=["top.md"], paths=[co])
    return co


def test_the_parse_keeps_the_exact_bytes_and_hashes_them_when_asked(ws: WS) -> None:
    build(ws)
    raw = Path(ws.config_path("demo")).read_bytes()
    config = ws.project("demo").config
    assert config.data == raw
    assert config.sha256 == hashlib.sha256(raw).hexdigest()


def test_only_a_plan_that_registers_records_the_digest(ws: WS) -> None:
    build(ws)
    raw = Path(ws.config_path("demo")).read_bytes()
    plain = ws.project("demo").plan()
    assert plain.register is None
    assert (plain.config_sha256, plain.config_digest) == (None, None)
    extra = ws.checkout("second")
    registering = ws.project("demo").plan(path=extra)
    assert registering.register is not None
    digest = hashlib.sha256(raw).hexdigest()
    assert (registering.config_sha256, registering.config_digest) == (digest, digest)


def test_a_plan_without_digest_goes_stale_when_the_live_bytes_list_other_references(
        ws: WS) -> None:
    co = build(ws)
    project = ws.project("demo")
    plan = project.plan()
    assert plan.config_digest is None and plan.has_changes
    ws.write_config("demo", memory=["top.md", "team/a.md"], paths=[co])
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any("memory list changed" in d for d in info.value.differences)
    assert not os.path.lexists(f"{co}/.agents/memory/top.md")


def test_a_plan_without_digest_survives_bytes_that_say_the_same(ws: WS) -> None:
    co = build(ws)
    project = ws.project("demo")
    plan = project.plan()
    config = Path(ws.config_path("demo"))
    config.write_bytes(b"# a comment changes the bytes, not the plan\n" + config.read_bytes())
    result = project.execute(plan)
    assert result.outcome == "applied"
    assert os.readlink(f"{co}/.agents/memory/top.md") == ws.memory_path("top.md")


def test_a_project_reloaded_on_other_bytes_of_the_same_length_reads_them(ws: WS) -> None:
    """The lock-time re-read compares bytes, not their length or a digest: one changed
    byte is another configuration ([E3])."""
    co = build(ws)
    project = ws.project("demo")
    config = Path(ws.config_path("demo"))
    raw = config.read_bytes()
    assert b'"top.md"' in raw
    config.write_bytes(raw.replace(b'"top.md"', b'"top.mx"'))
    ws.add_file("top.mx", "x\n")
    result = project.sync()
    assert result.plan.memory == ("top.mx",)
    assert os.path.lexists(f"{co}/.agents/memory/top.mx")
