"""§10 Python API: [A1]–[A3].

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import contextlib
import enum
import os
import stat
import time

import pytest

from tests.conformance._support import ACTIONS, hold_lock


def test_A1_plan_and_operations_frozen(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = Project.load("demo", workspace=str(w.ws)).plan(path=None)
    with pytest.raises(AttributeError):
        plan.operations = ()
    assert isinstance(plan.operations, tuple)
    op = plan.operations[0]
    with pytest.raises(AttributeError):
        op.target = "/tmp/elsewhere"
    for attr in ("action", "target", "source", "checkout", "resource", "rule", "reason"):
        assert hasattr(op, attr), attr
    assert isinstance(op.action, enum.Enum)
    assert op.action.value == "CREATE"
    assert {a.value for a in type(op.action)} == ACTIONS
    assert str(op.target) == str(w.rt("a.md"))
    assert str(op.source) == w.src("a.md")


def test_A2_error_hierarchy_importable():
    import aikito_mem as m
    # AMBIGUOUS: the spec names the classes but only shows three imported from the
    # package; we expect every named error to be importable from `aikito_mem`.
    base = m.AikitoError
    for name in ("ConfigError", "ProjectNotFoundError", "ConflictError", "StalePlanError",
                 "ExecutionError", "LockBusyError", "ProjectPrepareConflictError"):
        assert issubclass(getattr(m, name), base), name
    assert issubclass(m.ProjectNotFoundError, m.ConfigError)
    assert issubclass(m.ProjectPrepareConflictError, m.ConflictError)


def test_A2_errors_carry_exit_codes_and_data(api_env):
    w = api_env
    import aikito_mem as m
    with pytest.raises(m.ProjectNotFoundError) as ei:
        m.Project.load("nosuch", workspace=str(w.ws))
    assert getattr(ei.value, "exit_code", 4) == 4
    assert "nosuch" in str(ei.value)
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    p = m.Project.load("demo", workspace=str(w.ws))
    plan = p.plan()
    with pytest.raises(m.ConflictError) as ei:
        p.execute(plan)
    assert getattr(ei.value, "exit_code", 1) == 1
    assert not (w.co / ".agents").exists()
    w.agent(memory=["a.md"])
    p = m.Project.load("demo", workspace=str(w.ws))
    plan = p.plan()
    w.agent(memory=[])
    with pytest.raises(m.StalePlanError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).execute(plan)
    assert ei.value.differences
    assert getattr(ei.value, "exit_code", 3) == 3
    assert not (w.co / ".agents").exists()


def test_A2_config_error_exit_code_attribute(api_env):
    w = api_env
    import aikito_mem as m
    w.agent(raw='memory = "x.md"\n')
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).plan()
    # README documents `.exit_code`
    assert ei.value.exit_code == 4


def test_A3_prepare_single_checkout(api_env, capfd):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.notes_current()
    w.agent(memory=["a.md"], paths=[str(w.co), str(w.tmp / "off")])
    before_toml = w.toml.read_bytes()
    prepared = Project.load("demo", workspace=str(w.ws)).prepare("claude")
    out, err = capfd.readouterr()
    assert out == "" and err == "", "prepare prints nothing [A3]"
    assert prepared.agent == "claude"
    assert str(getattr(prepared.checkout, "path", prepared.checkout)) == str(w.co)
    assert prepared.result is not None and prepared.project is not None
    assert os.readlink(w.rt("a.md")) == w.src("a.md")
    assert w.rt("notes").is_symlink()
    assert w.toml.read_bytes() == before_toml


def test_A3_prepare_has_no_force_kwarg(api_env):
    w = api_env
    from aikito_mem import Project
    w.agent(memory=[])
    p = Project.load("demo", workspace=str(w.ws))
    with pytest.raises(TypeError):
        p.prepare("claude", force=True)
    assert not (w.co / ".agents").exists()


def test_A3_prepare_none_or_several_active_is_config_error(api_env):
    w = api_env
    import aikito_mem as m
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(memory=[], paths=[str(w.co), str(co2)])
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).prepare("claude")
    assert str(w.co) in str(ei.value) and str(co2) in str(ei.value)
    w.agent(memory=[], paths=[str(w.tmp / "off")])
    with pytest.raises(m.ConfigError):
        m.Project.load("demo", workspace=str(w.ws)).prepare("claude")


def test_A3_prepare_explicit_path_touches_only_that_checkout_and_never_registers(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    co2 = w.tmp / "co2"
    co2.mkdir()
    new = w.tmp / "unregistered"
    new.mkdir()
    w.agent(memory=["a.md"], paths=[str(w.co), str(co2)])
    before = w.toml.read_bytes()
    Project.load("demo", workspace=str(w.ws)).prepare("claude", path=str(co2))
    assert (co2 / ".agents/memory/a.md").is_symlink()
    assert not (w.co / ".agents").exists()
    with contextlib.suppress(Exception):
        Project.load("demo", workspace=str(w.ws)).prepare("claude", path=str(new))
    assert w.toml.read_bytes() == before, "Project.prepare never registers [K4][A3]"


def test_A3_prepare_conflict_raises_with_conflicts(api_env):
    w = api_env
    import aikito_mem as m
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    w.rt().mkdir(parents=True)
    w.rt("a.md").write_text("user")
    with pytest.raises(m.ProjectPrepareConflictError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).prepare("claude")
    e = ei.value
    assert isinstance(e, m.ConflictError)
    assert e.project is not None
    assert len(e.conflicts) == 2

    def get(c, k):
        return c[k] if isinstance(c, dict) else getattr(c, k)

    paths = {str(get(c, "path")) for c in e.conflicts}
    assert str(w.rt("a.md")) in paths and str(w.rt("gone.md")) in paths
    assert all(get(c, "reason") for c in e.conflicts)
    assert w.rt("a.md").read_text() == "user"


def test_A3_agents_registry_checked(api_env):
    w = api_env
    import aikito_mem as m
    w.mem("a.md")
    w.agent(memory=["a.md"])
    (w.ws / "agents").mkdir()
    (w.ws / "agents" / "claude.toml").write_text("")
    with pytest.raises(m.ConfigError):
        m.Project.load("demo", workspace=str(w.ws)).prepare("codex")
    assert not (w.co / ".agents").exists()
    prepared = m.Project.load("demo", workspace=str(w.ws)).prepare("claude")
    assert prepared.agent == "claude"
    assert w.rt("a.md").is_symlink()


def test_A3_prepare_without_agents_dir_accepts_any_agent(api_env):
    w = api_env
    from aikito_mem import Project
    w.agent(memory=[])
    Project.load("demo", workspace=str(w.ws)).prepare("anything")


def test_A_load_with_discovery(api_env, monkeypatch):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    monkeypatch.setenv("AIKITO_DIR", str(w.ws))
    plan = Project.load("demo").plan()
    assert [o.action.value for o in plan.operations] == ["CREATE"]


def test_A3_prepare_holds_the_checkout_lock(api_env):
    import threading
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    box = {}

    def go():
        try:
            box["r"] = Project.load("demo", workspace=str(w.ws)).prepare("claude")
        except BaseException as e:  # pragma: no cover
            box["e"] = e

    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.4)
    try:
        assert not (w.co / ".agents").exists(), "prepare must wait for the checkout lock [A3][E3]"
    finally:
        os.close(fd)
    t.join(20)
    assert "e" not in box, box
    assert w.rt("a.md").is_symlink()


def test_A3_prepare_umask_no_widening(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("d/a.md")
    w.agent(memory=["d/a.md"])
    old = os.umask(0o077)
    try:
        Project.load("demo", workspace=str(w.ws)).prepare("claude")
    finally:
        os.umask(old)
    for p in (w.co / ".agents", w.rt(), w.rt("d")):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0
