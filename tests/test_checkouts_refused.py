"""[H1] Places a checkout can never be, on real directories: ``/``, the home directory and
its ancestors, the workspace root, anything inside the workspace, any ancestor of it —
compared by the kernel's identity (a symlink spelling or a bind mount is the same place).

As an explicit PATH (``sync project NAME PATH``, ``init project``, ``Project.plan(path=)``)
it is a configuration error (exit 4, nothing written, nothing registered); listed in
``agent.toml`` it is an ``invalid`` checkout whose segments are blocked (exit 1, nothing
written anywhere for them), which ``status`` shows and ``doctor`` reports as an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from aikito_mem import Project
from aikito_mem.errors import ConfigError, UnsafePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.model import CheckoutState
from aikito_mem.world import checkouts as _checkouts
from aikito_mem.world.observe import Observer
from tests.helpers import mounts
from tests.helpers.cli import invoke, one_json
from tests.helpers.segments import SegWorld
from tests.helpers.snapshots import Entry, changed, snapshot

REFUSED = "config.checkout_refused"
IN_WS = "config.checkout_in_workspace"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SegWorld:
    """:class:`SegWorld` (skills, instructions, memory; checkout ``<base>/co``) whose home
    is ``<base>/people/u``: its ancestor ``<base>/people`` is this test's own directory."""
    home = tmp_path / "people" / "u"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return SegWorld(tmp_path)


#: name → (the place, relative to the world, and the error code).
PLACES: dict[str, tuple[Callable[[SegWorld], str], str]] = {
    "home": (lambda w: str(w.home), REFUSED),
    "home-ancestor": (lambda w: str(w.home.parent), REFUSED),
    "home-symlink": (lambda w: _link(w, "to-home", w.home), REFUSED),
    "workspace": (lambda w: str(w.ws), IN_WS),
    "workspace-symlink": (lambda w: _link(w, "to-ws", w.ws), IN_WS),
    "memory-dir": (lambda w: _mkdir(w.ws / "memory" / "team"), IN_WS),
    "skills-dir": (lambda w: str(w.ws / "skills" / "alpha"), IN_WS),
    "project-dir": (lambda w: str(w.project_dir), IN_WS),
    "elsewhere-in-ws": (lambda w: _mkdir(w.ws / "old" / "code"), IN_WS),
    "through-symlink-into-ws": (lambda w: _link(w, "to-ws-old", w.ws) + "/old", IN_WS),
    "workspace-ancestor": (lambda w: str(w.base), REFUSED),
}


def _link(w: SegWorld, name: str, to: Path) -> str:
    link = w.base / "co" / name
    link.symlink_to(to)
    return str(link)


def _mkdir(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def _watch(w: SegWorld) -> dict[str, Entry]:
    return snapshot(w.base)


# --------------------------------------------------------------------------- the one test


@pytest.mark.parametrize("name", sorted(PLACES))
def test_refusal_by_identity(world: SegWorld, name: str) -> None:
    make, code = PLACES[name]
    if name == "through-symlink-into-ws":
        (world.ws / "old").mkdir()
    path = os.path.realpath(make(world))
    st = os.stat(path)
    observer = Observer()
    places = _checkouts.Places.of(str(world.ws), str(world.project_dir), str(world.home),
                                  observer)
    found = _checkouts.refusal(path, (st.st_dev, st.st_ino), places)
    assert found is not None and found[0] == code, (name, found)


def test_the_root_directory_and_a_plain_checkout(world: SegWorld) -> None:
    observer = Observer()
    places = _checkouts.Places.of(str(world.ws), str(world.project_dir), str(world.home),
                                  observer)
    root = os.stat("/")
    assert _checkouts.refusal("/", (root.st_dev, root.st_ino), places) == (
        REFUSED, "is the root directory /")
    co = os.stat(world.co)
    assert _checkouts.refusal(str(world.co), (co.st_dev, co.st_ino), places) is None
    beside = world.home.parent / "v"  # a sibling of home is a place like any other
    beside.mkdir()
    st = os.stat(beside)
    assert _checkouts.refusal(str(beside), (st.st_dev, st.st_ino), places) is None


def test_no_string_comparison_a_bind_mount_of_the_workspace(world: SegWorld) -> None:
    """``<base>/co/mnt`` is the workspace bind-mounted: no path string names the workspace,
    the kernel's identity does."""
    (world.ws / "old").mkdir()
    with mounts.bind(world.ws, world.co / "mnt") as mnt:
        for where in (mnt, mnt / "old"):
            before = _watch(world)
            code, doc = world.json(str(where), "--no-register")
            assert code == 4 and doc["error"]["code"] == IN_WS, doc
            assert changed(before, _watch(world)) == set()


def test_a_bind_mount_of_home(world: SegWorld) -> None:
    with mounts.bind(world.home, world.co / "h") as mnt:
        code, doc = world.json(str(mnt), "--dry-run")
        assert code == 4 and doc["error"]["code"] == REFUSED, doc
        assert "home directory" in doc["error"]["message"]


# --------------------------------------------------------------------------- explicit PATH


@pytest.mark.parametrize("name", sorted(PLACES))
def test_explicit_path_is_a_configuration_error(world: SegWorld, name: str) -> None:
    make, code = PLACES[name]
    if name == "through-symlink-into-ws":
        (world.ws / "old").mkdir()
    path = make(world)
    before = _watch(world)
    for args in (("--dry-run",), (), ("--no-register",), ("--check",)):
        rc, doc = world.json(path, *args)
        assert rc == 4, (args, doc)
        assert doc["outcome"] == "config_error" and doc["error"]["code"] == code
        assert "a checkout is a project's own working copy, never /, the home directory" \
            in doc["error"]["message"]
        assert "nothing was written or registered" in doc["error"]["message"]
    assert changed(before, _watch(world)) == set()  # agent.toml included: not registered


def test_explicit_root_directory(world: SegWorld) -> None:
    rc, doc = world.json("/", "--dry-run")
    assert rc == 4 and doc["error"]["code"] == REFUSED
    assert "checkout / is the root directory /" in doc["error"]["message"]


def test_the_reported_session_cd_home_and_sync_dot(
    world: SegWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cd ~ && aikito sync project demo .`` created ``~/.claude/CLAUDE.md`` (Claude Code's
    user-global instructions), ``~/AGENTS.md`` and ``~/.agents``: now nothing at all."""
    monkeypatch.chdir(world.home)
    before = _watch(world)
    for args in ((".",), (".", "--dry-run"), ("~",)):
        res = world.sync(*args)
        assert res.exit_code == 4, res.output
        assert "is your home directory" in res.output
        assert "Traceback" not in res.output
    assert changed(before, _watch(world)) == set()
    for name in (".claude/CLAUDE.md", "AGENTS.md", ".agents"):
        assert not os.path.lexists(world.home / name)


def test_api_plan_and_prepare_with_an_explicit_path(world: SegWorld) -> None:
    project = Project.load("demo", workspace=str(world.ws))
    before = _watch(world)
    with pytest.raises(ConfigError) as info:
        project.plan(path=str(world.home))
    assert info.value.code == REFUSED and info.value.path == str(world.home)
    with pytest.raises(ConfigError) as info:
        project.sync(path=str(world.ws))
    assert info.value.code == IN_WS
    with pytest.raises(ConfigError) as info:
        project.prepare("codex", path=str(world.home))
    assert info.value.code == REFUSED
    assert changed(before, _watch(world)) == set()


def test_the_home_of_the_run_s_environment(world: SegWorld, tmp_path: Path) -> None:
    """``Project.load(..., environ=)``: the home that environment names is refused, the
    process's own home is not special to that run."""
    other = tmp_path / "elsewhere-home"
    other.mkdir()
    project = Project.load("demo", workspace=str(world.ws), environ={"HOME": str(other)})
    with pytest.raises(ConfigError) as info:
        project.plan(path=str(other))
    assert info.value.code == REFUSED and "home directory" in info.value.message
    plan = project.plan(path=str(world.co))
    assert plan.checkouts[0].state is CheckoutState.ACTIVE


# --------------------------------------------------------------------------- listed


@pytest.mark.parametrize("name", ["home", "workspace", "memory-dir", "workspace-ancestor"])
def test_listed_is_an_invalid_checkout_blocking_every_segment(
    world: SegWorld, name: str
) -> None:
    make, _code = PLACES[name]
    bad = make(world)
    world.write_config(paths=[str(world.co), bad])
    before = _watch(world)
    for args in ((), ("--dry-run",)):
        rc, doc = world.json(*args)
        assert rc == 1 and doc["outcome"] == "blocked", doc
        states = {c["path"]: c["state"] for c in doc["checkouts"]}
        assert states == {str(world.co): "active", os.path.realpath(bad): "invalid"}
        conflicts = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
        assert {op["segment"] for op in conflicts} == {"skills", "instructions", "memory"}
        assert all(op["checkout"] == os.path.realpath(bad) for op in conflicts)
        assert all("a checkout is a project's own working copy" in op["reason"]
                   for op in conflicts)
        assert all(not seg["success"] for seg in doc["segments"].values())
    # [E1]: the blocked segments write nothing anywhere — not in the good checkout either.
    assert changed(before, _watch(world)) == set()


def test_bare_sync_status_and_doctor_obey(world: SegWorld) -> None:
    world.write_config(paths=[str(world.home)])
    before = _watch(world)
    res = world.run("sync", "--json")
    assert res.exit_code == 1, res.output
    res = world.run("status", "--json")
    assert res.exit_code == 1, res.output
    project, = one_json(res.stdout)["projects"]
    assert [c["state"] for c in project["checkouts"]] == ["invalid"]
    res = world.run("status")
    assert "invalid" in res.output
    res = world.run("doctor", "--json")
    assert res.exit_code == 1, res.output
    errors = [c for c in one_json(res.stdout)["checks"] if c["status"] == "error"]
    assert [c["id"] for c in errors] == ["checkout.refused"]
    assert errors[0]["path"] == str(world.home)
    assert changed(before, _watch(world)) == set()


def test_prepare_of_a_listed_refused_checkout(world: SegWorld) -> None:
    world.write_config(paths=[str(world.home)])
    before = _watch(world)
    with pytest.raises(ConfigError) as info:
        Project.load("demo", workspace=str(world.ws)).prepare("codex")
    assert info.value.code == REFUSED and "home directory" in info.value.message
    assert changed(before, _watch(world)) == set()


def test_the_writer_refuses_a_plan_that_names_a_refused_checkout(world: SegWorld) -> None:
    """A plan built by hand with the home directory as an active checkout (the planner's
    classification bypassed) is refused by the writer's own check ([E9]): nothing is
    written."""
    world.write_config(paths=[str(world.home)])
    project = Project.load("demo", workspace=str(world.ws))
    slot = _checkouts.classify(project.config.candidates[0], Observer())
    assert slot.state is CheckoutState.ACTIVE  # classify alone does not refuse
    plan = project._plan((slot,), Observer(), explicit=None, register=None)
    assert plan.has_changes
    before = _watch(world)
    with pytest.raises(UnsafePlanError) as info:
        execute(plan)
    assert "is not one aikito may write to" in info.value.message
    assert changed(before, _watch(world)) == set()


# --------------------------------------------------------------------------- init


def test_init_project_refuses_the_places(world: SegWorld, tmp_path: Path) -> None:
    for path, code in ((world.home, REFUSED), (world.ws / "memory", IN_WS),
                       (tmp_path, REFUSED)):
        before = _watch(world)
        res = invoke("--workspace", str(world.ws), "init", "project", "fresh", str(path),
                     catch=True)
        assert res.exit_code == 4, res.output
        assert "a checkout is a project's own working copy" in res.output
        assert changed(before, _watch(world)) == set()
        assert not (world.ws / "projects" / "fresh").exists()
        del code


def test_a_workspace_inside_a_checkout_s_runtime_tree(tmp_path: Path) -> None:
    """``aikito init CO/.agents`` then ``aikito init project demo CO``: CO contains the
    workspace, so it is refused (exit 4), and nothing is created for the project."""
    co = tmp_path / "CO"
    co.mkdir()
    res = invoke("init", str(co / ".agents"), catch=True)
    assert res.exit_code == 0, res.output
    before = snapshot(tmp_path)
    res = invoke("--workspace", str(co / ".agents"), "init", "project", "demo", str(co),
                 catch=True)
    assert res.exit_code == 4, res.output
    assert "contains the workspace" in res.output
    assert changed(before, snapshot(tmp_path)) == set()
