"""[P6] and [G7] as structural guards, not timings: the observation calls a warm plan makes,
counted through the ``Observer.calls`` seam, grow by at most 2 per memory resource (one
``readlink`` of the target, one ``lstat`` of the source; shared parents are looked up once)
and stay within 4 per resource in every segment (skills, instructions); the agent registry
is read once per run and agent detection is asked per run, never per checkout."""

from __future__ import annotations

import os

import pytest

import aikito_mem.api as api_mod
from aikito_mem.world.observe import Observer
from tests.helpers.cli import imported_modules
from tests.helpers.workspace import WS


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
    proc, imported = imported_modules("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("aikito ")
    assert "click" in imported
    heavy = {"attr", "attrs", "tomllib", "hashlib", "aikito_mem.model", "aikito_mem.api",
             "aikito_mem.config.agent_toml", "aikito_mem.render", "aikito_mem.executor.execute"}
    assert not (heavy & imported), sorted(heavy & imported)


# -- skills and instructions [G7] ---------------------------------------------------------

_REGISTRY = {
    "claude-code": '[agents.claude-code]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
                   '[agents.claude-code.detect]\npaths = [".claude"]\n',
    "codex": '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n'
             '[agents.codex.detect]\ncommands = ["codex"]\n',
}


class _Counts:
    def __init__(self) -> None:
        self.calls = 0
        self.registry_loads = 0
        self.detections = 0


def _segments_ws(ws: WS, *, checkouts: int, skills: int, targets: bool, refs: int = 3,
                 home: str) -> None:
    for i in range(refs):
        ws.add_file(f"r{i}.md", "x")
    names = [f"skill-{i}" for i in range(skills)]
    for name in names:
        ws.add_skill(name, content=name)
    os.makedirs(f"{ws.root}/agents", exist_ok=True)
    if targets:
        for agent, text in _REGISTRY.items():
            ws.add_agent(agent, text)
        ws.write_instructions("demo", "# rules\n")
    os.makedirs(f"{home}/.claude", exist_ok=True)  # claude-code detected: .claude is made
    cos = [ws.checkout(f"co{i}") for i in range(checkouts)]
    ws.write_config("demo", memory=[f"r{i}.md" for i in range(refs)], paths=cos,
                    skills=names or None)


def _warm_segments(ws: WS, monkeypatch: pytest.MonkeyPatch, **kw: object) -> _Counts:
    import aikito_mem.world as project_mod
    import aikito_mem.world.segments as segments_mod

    _segments_ws(ws, home=ws.home, **kw)  # type: ignore[arg-type]
    first = ws.project("demo").sync()
    assert first.outcome == "applied", first.outcome
    counts = _Counts()
    observers: list[Observer] = []

    class Counting(Observer):
        def __init__(self) -> None:
            super().__init__()
            observers.append(self)

    # The observation pass's registry (read, or decided by the listing of agents/).
    real_load, real_detected = project_mod.load_registry, vars(segments_mod)["detected"]

    def load(workspace: str) -> object:
        counts.registry_loads += 1
        return real_load(workspace)

    def detected(*args: object) -> bool:
        counts.detections += 1
        return bool(real_detected(*args))

    with monkeypatch.context() as m:
        m.setattr(api_mod, "Observer", Counting)
        m.setattr(project_mod, "load_registry", load)
        m.setattr("aikito_mem.world.segments.detected", detected)
        plan = ws.project("demo").plan()
    assert {op.action.value for op in plan.operations} == {"NOOP"}, plan.operations
    assert {op.segment.value for op in plan.operations} >= (
        {"skills"} if kw.get("skills") else set()) | (
        {"instructions"} if kw.get("targets") else set())
    counts.calls = sum(o.calls for o in observers)
    return counts


def test_warm_skills_cost_at_most_two_observations_per_skill_and_checkout(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[G7]/[P6]: per selected skill, a warm plan reads the target's link once per
    checkout and examines the source once per run."""
    few = _warm_segments(WS(tmp_path_factory.mktemp("few")), monkeypatch, checkouts=3,
                         skills=5, targets=False)
    many = _warm_segments(WS(tmp_path_factory.mktemp("many")), monkeypatch, checkouts=3,
                          skills=45, targets=False)
    per_skill = (many.calls - few.calls) / 40
    assert 3 <= per_skill <= 2 * 3, (few.calls, many.calls)  # 3 checkouts


def test_warm_plan_with_segments_stays_within_the_per_resource_bound(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[G7]/[P6]: W1's shape — 5 skills and 2 instruction targets per checkout — costs each
    extra checkout at most 4 observations per resource of every segment; the registry is
    read once per run and detection is never asked when every target's directory exists."""
    def run(n: int) -> _Counts:
        return _warm_segments(WS(tmp_path_factory.mktemp(f"co{n}")), monkeypatch,
                              checkouts=n, skills=5, targets=True)

    one, five = run(1), run(5)
    resources = 3 + 5 + 2  # memory references, skills, instruction targets
    per_checkout = (five.calls - one.calls) / 4
    assert per_checkout <= 4 * resources, (one.calls, five.calls)
    assert one.registry_loads == five.registry_loads == 1
    assert one.detections == five.detections == 0


def test_detection_is_asked_once_per_run_not_per_checkout(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[G4]: detection matters only where a target's directory is missing; it is asked per
    run (planning, and the re-check at execution), however many checkouts miss it."""
    import aikito_mem.world.segments as segments_mod

    ws = WS(tmp_path_factory.mktemp("detect"))
    _segments_ws(ws, checkouts=4, skills=0, targets=True, home=ws.home)
    os.rmdir(f"{ws.home}/.claude")  # nothing detected: .claude/ is never made
    asked: list[object] = []
    real = vars(segments_mod)["detected"]

    def detected(*args: object) -> bool:
        asked.append(args[0])
        return bool(real(*args))

    monkeypatch.setattr("aikito_mem.world.segments.detected", detected)
    for _ in range(2):  # cold and warm alike
        asked.clear()
        result = ws.project("demo").sync()
        skipped = [op for op in result.plan.operations if op.action.value == "SKIP"]
        assert len(skipped) == 4, result.plan.operations
        # claude-code's table: once while planning and, when there is something to write,
        # once more as execution re-checks it ([G4]) — never once per checkout.
        assert 1 <= len(asked) <= 2, asked
