"""[P6] as a structural guard, not a timing: the observation calls a warm plan makes, counted
through the ``Observer.calls`` seam, grow by at most 2 per resource (one ``readlink`` of the
target, one ``lstat`` of the source) — shared parents are looked up once."""

from __future__ import annotations

import pytest

import aikito_mem.api as api_mod
from aikito_mem.observe import Observer
from tests.conftest import WS


def _warm_plan_calls(ws: WS, refs: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    for ref in refs:
        ws.add_file(ref, ref)
    co = ws.checkout("co")
    ws.write_config("demo", memory=refs, paths=[co])
    ws.project("demo").sync()
    observers: list[Observer] = []

    class Counting(Observer):
        def __init__(self) -> None:
            super().__init__()
            observers.append(self)

    monkeypatch.setattr(api_mod, "Observer", Counting)
    plan = ws.project("demo").plan()
    assert {op.action.value for op in plan.operations} == {"NOOP"}
    return sum(o.calls for o in observers)


@pytest.mark.parametrize("nested", [False, True])
def test_warm_plan_costs_two_observations_per_resource(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, nested: bool
) -> None:
    def refs(n: int) -> list[str]:
        return [f"team/sub/r{i}.md" if nested else f"r{i}.md" for i in range(n)]

    small = _warm_plan_calls(WS(tmp_path_factory.mktemp("small")), refs(20), monkeypatch)
    large = _warm_plan_calls(WS(tmp_path_factory.mktemp("large")), refs(220), monkeypatch)
    assert 200 < large - small <= 2 * 200, (small, large)


def test_version_imports_only_the_cli_library() -> None:
    """§12 start-up: ``aikito --version`` imports click and nothing of the engine — a
    structural check through ``-X importtime``, not a timing."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "aikito_mem", "--version"],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("aikito ")
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "click" in imported
    heavy = {"attr", "attrs", "tomllib", "hashlib", "aikito_mem.model", "aikito_mem.api",
             "aikito_mem.config", "aikito_mem.render", "aikito_mem.execute"}
    assert not (heavy & imported), sorted(heavy & imported)
