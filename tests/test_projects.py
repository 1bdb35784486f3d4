"""The projects room: reading ``agent.toml`` ([C7]), listing projects, the checkout that
contains a path, and a deleted current directory — on real temporary directories."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from aikito_mem import Project
from aikito_mem.config.projects import list_projects, load_project_config
from aikito_mem.errors import ConfigError, ProjectNotFoundError
from aikito_mem.world.containment import find_checkouts
from tests.helpers import mounts
from tests.helpers.cli import Env, one_json
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS


def make_project(tmp_path: Path, text: str | None = "", name: str = "demo") -> Path:
    project = tmp_path / "ws" / "projects" / name
    project.mkdir(parents=True)
    if text is not None:
        (project / "agent.toml").write_text(text)
    return tmp_path / "ws"


def test_load_reads_bytes_and_uses_environ_home(tmp_path: Path) -> None:
    text = 'paths = ["~/code"]\nmemory = ["a"]\n'
    ws = make_project(tmp_path, text)
    cfg = load_project_config(str(ws), "demo", environ={"HOME": "/fake/home"})
    assert cfg.name == "demo"
    assert cfg.project_dir == f"{ws}/projects/demo"
    assert cfg.config_path == f"{ws}/projects/demo/agent.toml"
    assert cfg.memory == ("a",)
    assert cfg.candidates[0].path == "/fake/home/code"
    assert cfg.sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_empty_agent_toml_is_a_valid_empty_config(tmp_path: Path) -> None:
    ws = make_project(tmp_path, "")
    cfg = load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert cfg.memory == () and cfg.candidates == ()


def test_missing_project_directory(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "projects").mkdir(parents=True)
    with pytest.raises(ProjectNotFoundError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    err = info.value
    assert isinstance(err, ConfigError)
    assert (err.code, err.exit_code, err.project) == ("config.project_not_found", 4, "demo")
    assert err.message == (
        f"project 'demo' not found: expected {ws}/projects/demo/agent.toml, found nothing "
        "— create agent.toml there or check the project name"
    )


def test_project_directory_without_agent_toml(tmp_path: Path) -> None:
    ws = make_project(tmp_path, None)
    with pytest.raises(ProjectNotFoundError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert info.value.message == (
        f"project 'demo' not found: expected {ws}/projects/demo/agent.toml, the directory "
        f"{ws}/projects/demo/ exists but has no agent.toml — create "
        f"{ws}/projects/demo/agent.toml to register the project, or check the project name"
    )


def test_project_path_is_a_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "projects").mkdir(parents=True)
    (ws / "projects" / "demo").write_text("")
    with pytest.raises(ProjectNotFoundError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert "is not a directory" in info.value.message


def test_agent_toml_is_a_directory(tmp_path: Path) -> None:
    ws = make_project(tmp_path, None)
    (ws / "projects" / "demo" / "agent.toml").mkdir()
    with pytest.raises(ConfigError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert not isinstance(info.value, ProjectNotFoundError)
    assert info.value.code == "config.unreadable"
    assert info.value.message.startswith(
        f"{ws}/projects/demo/agent.toml: cannot read agent.toml: it is a directory;"
    )


def test_agent_toml_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    ws = make_project(tmp_path, None)
    os.mkfifo(ws / "projects" / "demo" / "agent.toml")
    with pytest.raises(ConfigError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert info.value.code == "config.unreadable"
    assert "not a regular file" in info.value.message


def test_agent_toml_dangling_symlink(tmp_path: Path) -> None:
    ws = make_project(tmp_path, None)
    (ws / "projects" / "demo" / "agent.toml").symlink_to(tmp_path / "gone.toml")
    with pytest.raises(ConfigError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert info.value.code == "config.unreadable"
    assert "dangling" in info.value.message


def test_agent_toml_symlink_to_file_is_followed(tmp_path: Path) -> None:
    ws = make_project(tmp_path, None)
    real = tmp_path / "real.toml"
    real.write_text('memory = ["x"]\n')
    (ws / "projects" / "demo" / "agent.toml").symlink_to(real)
    assert load_project_config(str(ws), "demo", environ={"HOME": "/h"}).memory == ("x",)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_agent_toml_unreadable(tmp_path: Path) -> None:
    ws = make_project(tmp_path, "")
    path = ws / "projects" / "demo" / "agent.toml"
    path.chmod(0)
    try:
        with pytest.raises(ConfigError) as info:
            load_project_config(str(ws), "demo", environ={"HOME": "/h"})
        assert info.value.code == "config.unreadable"
    finally:
        path.chmod(0o644)


def test_load_reports_parse_errors_with_real_path(tmp_path: Path) -> None:
    ws = make_project(tmp_path, 'memory = "x.md"\n')
    with pytest.raises(ConfigError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert info.value.code == "config.memory_type"
    assert info.value.message.startswith(f"{ws}/projects/demo/agent.toml: key 'memory'")


@pytest.mark.parametrize("name", ["", "a/b", ".", "..", "a\x00b", "/abs"])
def test_invalid_project_names(tmp_path: Path, name: str) -> None:
    ws = make_project(tmp_path, "")
    with pytest.raises(ConfigError) as info:
        load_project_config(str(ws), name, environ={"HOME": "/h"})
    assert info.value.code == "config.project_name"
    assert repr(name) in info.value.message


def test_list_projects(tmp_path: Path) -> None:
    ws = make_project(tmp_path, "", name="zeta")
    for name in ("alpha", "mid"):
        (ws / "projects" / name).mkdir()
        (ws / "projects" / name / "agent.toml").write_text("")
    (ws / "projects" / "no-config").mkdir()
    (ws / "projects" / "stray.toml").write_text("")
    (ws / "projects" / "broken").mkdir()
    (ws / "projects" / "broken" / "agent.toml").symlink_to(tmp_path / "gone")
    assert list_projects(str(ws)) == ("alpha", "broken", "mid", "zeta")


def test_list_projects_without_projects_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        list_projects(str(tmp_path))
    assert info.value.code == "config.workspace_no_projects"


def test_agent_toml_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    ws = make_project(tmp_path, None)
    (ws / "projects" / "demo" / "agent.toml").symlink_to("/dev/null")
    with pytest.raises(ConfigError) as info:
        load_project_config(str(ws), "demo", environ={"HOME": "/h"})
    assert info.value.code == "config.unreadable"
    assert "not a regular file (a character device)" in info.value.message


def test_agent_toml_fifo_via_cli_is_exit_4_and_never_hangs(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.cfg.unlink()
    os.mkfifo(env.cfg)
    code, doc = env.json("demo", "--dry-run")
    assert code == 4 and doc["error"]["code"] == "config.unreadable"
    assert str(env.cfg) in doc["error"]["message"]


def test_config_is_pure_and_reading_lives_here() -> None:
    """Reading files is not parsing: config.py opens nothing."""
    import aikito_mem.config.agent_toml as config
    import aikito_mem.config.candidates as candidates
    import aikito_mem.config.names as names

    for module in (config, candidates, names):
        source = Path(str(module.__file__)).read_text()
        for call in ("open(", "read_regular", "scandir", "os.stat", "os.lstat", "realpath",
                     "aikito_mem.world.observe"):
            assert call not in source, (module.__name__, call)


# --------------------------------------------------------------------------- containment


@pytest.fixture
def two(ws: WS) -> tuple[WS, str, str]:
    """Projects ``demo`` (checkout ``co``) and ``other`` (checkout ``oc``)."""
    co, oc = ws.checkout("co"), ws.checkout("oc")
    ws.write_config("demo", memory=[], paths=[co])
    ws.write_config("other", memory=[], paths=[oc])
    return ws, co, oc


def test_find_checkouts_by_path(two: tuple[WS, str, str]) -> None:
    ws, co, _oc = two
    os.makedirs(f"{co}/src/deep")
    for path, rel in ((co, ""), (f"{co}/src/deep", "src/deep")):
        search = find_checkouts(path, ws.root)
        assert [(m.config.name, m.checkout, m.label, m.root, m.relative)
                for m in search.matches] == [("demo", co, "1", co, rel)]
        assert search.broken == ()
    assert find_checkouts(ws.checkouts_dir, ws.root).matches == ()
    assert find_checkouts(f"{co}x", ws.root).matches == ()  # a sibling, not a child


def test_find_checkouts_under(two: tuple[WS, str, str]) -> None:
    ws, co, _oc = two
    under = ".agents/memory"
    assert find_checkouts(f"{co}/{under}", ws.root, under=under).matches == ()
    assert find_checkouts(f"{co}/src", ws.root, under=under).matches == ()
    match, = find_checkouts(f"{co}/{under}/a/b.md", ws.root, under=under).matches
    assert (match.config.name, match.relative) == ("demo", f"{under}/a/b.md")


def test_find_checkouts_lists_broken_projects_and_only_raises(
    two: tuple[WS, str, str]
) -> None:
    ws, co, _oc = two
    ws.write_config("broken", raw=b"memory = 3\n")
    search = find_checkouts(co, ws.root)
    assert [m.config.name for m in search.matches] == ["demo"]
    assert search.broken == ("broken",)
    with pytest.raises(ConfigError):
        find_checkouts(co, ws.root, only="broken")
    assert [m.config.name for m in find_checkouts(co, ws.root, only="demo").matches] == ["demo"]
    assert find_checkouts(co, ws.root, only="other").matches == ()


def test_find_checkouts_ignores_offline_and_invalid(ws: WS) -> None:
    co = ws.checkout("co")
    gone = f"{ws.checkouts_dir}/gone"
    ws.write_config("demo", memory=[], paths=[gone, co])
    assert find_checkouts(gone, ws.root).matches == ()


def test_find_checkouts_through_a_symlinked_spelling(ws: WS) -> None:
    real = ws.checkout("real")
    alias = f"{ws.base}/alias"
    os.symlink(real, alias)
    ws.write_config("demo", memory=[], paths=[alias])
    match, = find_checkouts(f"{real}/sub", ws.root).matches
    assert (match.checkout, match.root, match.relative) == (real, real, "sub")


@pytest.fixture
def bind_mount(ws: WS):  # type: ignore[no-untyped-def]
    """``<base>/bind``: a bind mount of checkout ``co`` (root only)."""
    co = ws.checkout("co")
    with mounts.bind(co, f"{ws.base}/bind") as bind:
        yield co, str(bind)


def test_find_checkouts_through_a_bind_mount(ws: WS, bind_mount: tuple[str, str]) -> None:
    co, bind = bind_mount
    os.makedirs(f"{co}/src")
    ws.write_config("demo", memory=[], paths=[co])
    match, = find_checkouts(f"{bind}/src", ws.root).matches
    assert (match.config.name, match.checkout, match.root, match.relative) == (
        "demo", co, bind, "src")
    # and the other way round: registered through the mount, searched from the original
    ws.write_config("demo", memory=[], paths=[bind])
    match, = find_checkouts(f"{co}/src", ws.root).matches
    assert (match.checkout, match.root, match.relative) == (bind, co, "src")


def test_for_directory_through_a_bind_mount(ws: WS, bind_mount: tuple[str, str]) -> None:
    co, bind = bind_mount
    ws.write_config("demo", memory=[], paths=[co])
    assert Project.for_directory(bind, ws.root).name == "demo"


def test_for_directory_relative_to_the_current_directory(
    two: tuple[WS, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, _co, oc = two
    monkeypatch.chdir(oc)
    assert Project.for_directory(".", ws.root).name == "other"


# --------------------------------------------------------------------------- deleted cwd


@pytest.fixture
def gone_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    return gone


@pytest.mark.parametrize("args", [(), (".",), ("demo", "rel/co"), ("demo", ".")])
def test_deleted_current_directory_is_a_configuration_error(
    tmp_path: Path, gone_cwd: Path, args: tuple[str, ...]
) -> None:
    env = Env(tmp_path / "w")
    before = snapshot(env.base)
    for extra in ((), ("--dry-run",)):
        code, doc = env.json(*args, *extra)
        assert code == 4, doc
        assert doc["outcome"] == "config_error"
        assert doc["error"]["code"] == "config.cwd_missing"
        assert "current directory no longer exists" in doc["error"]["message"]
    text = env.sync(*args)
    assert text.exit_code == 4
    assert "cd into an existing directory" in text.stderr
    assert "Traceback" not in text.stderr
    assert changed(before, snapshot(env.base)) == set()


def test_deleted_current_directory_with_relative_workspace(
    tmp_path: Path, gone_cwd: Path
) -> None:
    env = Env(tmp_path / "w")
    result = env.run("--workspace", "ws", "sync", "project", "demo", "--json",
                     workspace=False)
    assert result.exit_code == 4
    assert one_json(result.stdout)["error"]["code"] == "config.cwd_missing"


def test_deleted_current_directory_api(tmp_path: Path, gone_cwd: Path) -> None:
    env = Env(tmp_path / "w")
    with pytest.raises(ConfigError) as info:
        Project.for_directory(".", str(env.ws))
    assert info.value.code == "config.cwd_missing"
    # an absolute directory does not need the current one
    assert Project.for_directory(str(env.co), str(env.ws)).name == "demo"
