"""Workspace discovery ([W1], [W2]) against real temporary directories and a fake HOME."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest

from aikito_mem.config.discovery import Workspace, expand_home, resolve_workspace
from aikito_mem.errors import EXIT_CONFIG, ConfigError
from tests.helpers.home import child_env
from tests.helpers.workspace import bare_workspace


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), **extra}


def write_pointer(home: Path, text: str, *, xdg: Path | None = None) -> Path:
    base = xdg if xdg is not None else home / ".config"
    pointer = base / "aikito" / "workspace"
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(text)
    return pointer


# --------------------------------------------------------------------------- order


def test_order_option_beats_env_pointer_and_default(tmp_path: Path, home: Path) -> None:
    opt = bare_workspace(tmp_path / "opt")
    env_ws = bare_workspace(tmp_path / "env")
    ptr = bare_workspace(tmp_path / "ptr")
    bare_workspace(home / "aikito")
    write_pointer(home, f"{ptr}\n")
    environ = env_for(home, AIKITO_DIR=str(env_ws))

    assert resolve_workspace(str(opt), environ=environ) == Workspace(
        root=str(opt), found_via="option", given=str(opt)
    )
    assert resolve_workspace(None, environ=environ) == Workspace(
        root=str(env_ws), found_via="AIKITO_DIR", given=str(env_ws)
    )
    del environ["AIKITO_DIR"]
    assert resolve_workspace(environ=environ) == Workspace(
        root=str(ptr), found_via="pointer file", given=str(ptr)
    )
    (home / ".config" / "aikito" / "workspace").unlink()
    assert resolve_workspace(environ=environ) == Workspace(
        root=str(home / "aikito"), found_via="default", given="~/aikito"
    )


def test_empty_aikito_dir_is_skipped(tmp_path: Path, home: Path) -> None:
    bare_workspace(home / "aikito")
    ws = resolve_workspace(environ=env_for(home, AIKITO_DIR=""))
    assert ws.found_via == "default"


def test_xdg_config_home_is_honoured(tmp_path: Path, home: Path) -> None:
    ws = bare_workspace(tmp_path / "w")
    xdg = tmp_path / "xdg"
    write_pointer(home, "/nonexistent-should-not-be-used\n")
    write_pointer(home, f"{ws}\n", xdg=xdg)
    got = resolve_workspace(environ=env_for(home, XDG_CONFIG_HOME=str(xdg)))
    assert (got.root, got.found_via) == (str(ws), "pointer file")


def test_relative_xdg_config_home_is_ignored(tmp_path: Path, home: Path) -> None:
    ws = bare_workspace(tmp_path / "w")
    write_pointer(home, f"{ws}\n")
    got = resolve_workspace(environ=env_for(home, XDG_CONFIG_HOME="relative/xdg"))
    assert (got.root, got.found_via) == (str(ws), "pointer file")


def test_pointer_first_line_stripped_and_tilde_expanded(home: Path) -> None:
    bare_workspace(home / "spaces" / "ws")
    write_pointer(home, "  ~/spaces/ws  \r\nsecond line ignored\n")
    got = resolve_workspace(environ=env_for(home))
    assert got == Workspace(
        root=str(home / "spaces" / "ws"), found_via="pointer file", given="~/spaces/ws"
    )


@pytest.mark.parametrize("text", ["", "\n", "   \nsecond\n"])
def test_empty_pointer_falls_back_to_default(home: Path, text: str) -> None:
    bare_workspace(home / "aikito")
    write_pointer(home, text)
    assert resolve_workspace(environ=env_for(home)).found_via == "default"


def test_pointer_that_is_a_directory_is_an_error(home: Path) -> None:
    pointer = home / ".config" / "aikito" / "workspace"
    pointer.mkdir(parents=True)
    bare_workspace(home / "aikito")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home))
    assert info.value.code == "config.workspace_pointer"
    assert repr(str(pointer)) in info.value.message
    assert "set AIKITO_DIR, or pass --workspace" in info.value.message


def test_pointer_not_utf8_is_an_error(home: Path) -> None:
    pointer = write_pointer(home, "")
    pointer.write_bytes(b"/w\xff\n")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home))
    assert info.value.code == "config.workspace_pointer"
    assert "not valid UTF-8" in info.value.message


def test_option_tilde_uses_environ_home(home: Path) -> None:
    bare_workspace(home / "w")
    got = resolve_workspace("~/w", environ=env_for(home))
    assert got == Workspace(root=str(home / "w"), found_via="option", given="~/w")


def test_relative_option_resolves_against_cwd(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare_workspace(tmp_path / "here" / "ws")
    monkeypatch.chdir(tmp_path / "here")
    got = resolve_workspace("ws", environ=env_for(home))
    assert got == Workspace(root=str(tmp_path / "here" / "ws"), found_via="option", given="ws")


def test_environ_defaults_to_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = bare_workspace(tmp_path / "w")
    monkeypatch.setenv("AIKITO_DIR", str(ws))
    got = resolve_workspace()
    assert (got.root, got.found_via) == (str(ws), "AIKITO_DIR")


def test_tilde_user_form_is_not_expanded() -> None:
    assert expand_home("~root/x", "/h") == "~root/x"
    assert expand_home("~", "/h") == "/h"
    assert expand_home("~/x", "/h/") == "/h/x"
    assert expand_home("~/x", None) == "~/x"


# --------------------------------------------------------------------------- physical


def test_symlinked_workspace_resolves_to_physical_path(tmp_path: Path, home: Path) -> None:
    real = bare_workspace(tmp_path / "real" / "ws")
    (tmp_path / "a").symlink_to(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "a" / "ws")
    got = resolve_workspace(environ=env_for(home, AIKITO_DIR=str(tmp_path / "link")))
    assert got.root == str(real) == os.path.realpath(tmp_path / "link")
    assert got.given == str(tmp_path / "link")
    assert os.path.isabs(got.root)


def test_dotdot_in_option_is_resolved_physically(tmp_path: Path, home: Path) -> None:
    ws = bare_workspace(tmp_path / "ws")
    (tmp_path / "sub").mkdir()
    got = resolve_workspace(f"{tmp_path}/sub/../ws/", environ=env_for(home))
    assert got.root == str(ws)


def test_workspace_is_frozen(tmp_path: Path, home: Path) -> None:
    got = resolve_workspace(str(bare_workspace(tmp_path / "w")), environ=env_for(home))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        got.root = "/elsewhere"  # type: ignore[misc]


# --------------------------------------------------------------------------- [W2]


def test_missing_workspace_from_env_exact_message(tmp_path: Path, home: Path) -> None:
    missing = str(tmp_path / "x")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home, AIKITO_DIR=missing))
    err = info.value
    assert err.code == "config.workspace_missing"
    assert err.exit_code == EXIT_CONFIG
    assert err.path == missing
    assert err.message == (
        f"workspace {missing!r} (from AIKITO_DIR) does not exist; expected a directory "
        "containing projects/ — if the workspace moved, point aikito at it with: aikito "
        f"init NEWPATH (then aikito sync --moved-from {missing} relinks the checkouts); "
        f"to start a new one here: aikito init {missing}; or set AIKITO_DIR to an existing "
        "workspace or pass --workspace"
    )


def test_missing_workspace_from_option(tmp_path: Path, home: Path) -> None:
    missing = str(tmp_path / "x")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(missing, environ=env_for(home))
    assert info.value.message == (
        f"workspace {missing!r} (from --workspace) does not exist; expected a directory "
        "containing projects/ — if the workspace moved, point aikito at it with: aikito "
        f"init NEWPATH (then aikito sync --moved-from {missing} relinks the checkouts); "
        f"to start a new one here: aikito init {missing}; or pass --workspace an existing "
        "workspace directory"
    )


def test_missing_workspace_from_pointer(tmp_path: Path, home: Path) -> None:
    missing = str(tmp_path / "x")
    pointer = write_pointer(home, missing + "\n")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home))
    assert info.value.code == "config.workspace_missing"
    assert info.value.message.startswith(
        f"workspace {missing!r} (from pointer file {str(pointer)!r}) does not exist;"
    )
    assert f"edit the pointer file {str(pointer)!r}" in info.value.message


def test_missing_default_workspace(home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home))
    default = str(home / "aikito")
    assert info.value.code == "config.workspace_missing"
    assert info.value.message.startswith(
        f"workspace {default!r} (the default ~/aikito) does not exist;"
    )
    assert "set AIKITO_DIR or pass --workspace" in info.value.message


def test_workspace_that_is_a_file(tmp_path: Path, home: Path) -> None:
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(str(f), environ=env_for(home))
    assert info.value.code == "config.workspace_missing"
    assert f"workspace {str(f)!r} (from --workspace) is not a directory" in info.value.message


def test_workspace_below_a_file(tmp_path: Path, home: Path) -> None:
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(str(f / "ws"), environ=env_for(home))
    assert info.value.code == "config.workspace_missing"
    assert "does not exist" in info.value.message


def test_workspace_without_projects(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home, AIKITO_DIR=str(ws)))
    assert info.value.code == "config.workspace_no_projects"
    assert info.value.message == (
        f"workspace {str(ws)!r} (from AIKITO_DIR) has no projects/ directory: "
        f"{ws}/projects does not exist; expected a workspace with projects/<name>/agent.toml "
        f"— create {ws}/projects/ or set AIKITO_DIR to an existing workspace or pass "
        "--workspace"
    )


def test_workspace_whose_projects_is_a_file(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "projects").write_text("")
    (tmp_path / "link").symlink_to(ws)
    with pytest.raises(ConfigError) as info:
        resolve_workspace(str(tmp_path / "link"), environ=env_for(home))
    assert info.value.code == "config.workspace_no_projects"
    assert f"(physically {str(ws)!r})" in info.value.message
    assert "projects is not a directory" in info.value.message


def test_dangling_symlink_workspace(tmp_path: Path, home: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(ConfigError) as info:
        resolve_workspace(str(tmp_path / "link"), environ=env_for(home))
    assert info.value.code == "config.workspace_missing"


@pytest.mark.parametrize(
    ("source", "value"),
    [("AIKITO_DIR", "relative/ws"), ("pointer", "relative/ws"), ("option", "")],
)
def test_relative_env_or_pointer_is_an_error(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, source: str, value: str
) -> None:
    bare_workspace(tmp_path / "relative" / "ws")
    monkeypatch.chdir(tmp_path)  # would succeed if resolved against cwd
    environ = env_for(home)
    option = None
    if source == "AIKITO_DIR":
        environ["AIKITO_DIR"] = value
    elif source == "pointer":
        write_pointer(home, value + "\n")
    else:
        option = value
    with pytest.raises(ConfigError) as info:
        resolve_workspace(option, environ=environ)
    assert info.value.code == "config.workspace_not_absolute"
    assert "is not an absolute path" in info.value.message
    assert repr(value) in info.value.message


# --------------------------------------------------------------------------- pointer file


def pointer_error(home: Path) -> ConfigError:
    bare_workspace(home / "aikito")  # the default exists: an unusable pointer never falls back
    with pytest.raises(ConfigError) as info:
        resolve_workspace(environ=env_for(home))
    err = info.value
    assert err.code == "config.workspace_pointer"
    assert err.exit_code == EXIT_CONFIG
    pointer = str(home / ".config" / "aikito" / "workspace")
    assert err.path == pointer and repr(pointer) in err.message
    assert "set AIKITO_DIR, or pass --workspace" in err.message
    return err


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"/w\x00\n", "contains a NUL character (U+0000)"),
        (b"/w\nsecond\x00line\n", "contains a NUL character"),
        (b"/w\x01x\n", "control character U+0001 in its first line"),
        (b"/a\tb\n", "control character U+0009 in its first line"),
        (b"/a\x1bb\n", "control character U+001B"),
        ("/a\u0085b\n".encode(), "control character U+0085"),
        (b"/w\xff\n", "is not valid UTF-8 (byte offset 2)"),
        (b"/w\nsecond \xfe line\n", "is not valid UTF-8"),
    ],
)
def test_pointer_with_nul_control_or_invalid_utf8_is_an_error(
    home: Path, data: bytes, found: str
) -> None:
    write_pointer(home, "").write_bytes(data)
    assert found in pointer_error(home).message


def test_pointer_white_space_and_crlf_are_stripped(home: Path) -> None:
    bare_workspace(home / "w")
    write_pointer(home, "").write_bytes(b"\t ~/w \t\r\nsecond\tline\r\n")
    assert resolve_workspace(environ=env_for(home)).root == str(home / "w")


def test_pointer_that_is_a_fifo_is_an_error_at_once(home: Path) -> None:
    pointer = home / ".config" / "aikito" / "workspace"
    pointer.parent.mkdir(parents=True)
    os.mkfifo(pointer)
    assert "is a FIFO, not a regular file" in pointer_error(home).message


def test_pointer_linked_to_a_device_is_an_error(home: Path) -> None:
    pointer = home / ".config" / "aikito" / "workspace"
    pointer.parent.mkdir(parents=True)
    pointer.symlink_to("/dev/null")
    assert "is a character device, not a regular file" in pointer_error(home).message


def test_pointer_symlink_to_a_file_is_followed(tmp_path: Path, home: Path) -> None:
    ws = bare_workspace(tmp_path / "w")
    real = tmp_path / "dotfiles-workspace"
    real.write_text(f"{ws}\n")
    pointer = home / ".config" / "aikito" / "workspace"
    pointer.parent.mkdir(parents=True)
    pointer.symlink_to(real)
    assert resolve_workspace(environ=env_for(home)).root == str(ws)


def test_pointer_too_large_is_an_error(home: Path) -> None:
    write_pointer(home, "/w\n" + "#" * (64 * 1024))
    assert "larger than the 65536 bytes" in pointer_error(home).message


def test_pointer_fifo_through_the_cli_exits_4_without_hanging(tmp_path: Path) -> None:
    """A real process: were the FIFO opened blocking, this would wait forever (the
    timeout turns a regression into a failure, not a hang of the suite)."""
    import json
    import subprocess
    import sys

    home = tmp_path / "h"
    (home / ".config" / "aikito").mkdir(parents=True)
    os.mkfifo(home / ".config" / "aikito" / "workspace")
    environ = child_env(home, XDG_CONFIG_HOME=str(home / ".config"))
    for command in (["sync", "project", "demo", "--json"], ["status", "--json"]):
        done = subprocess.run([sys.executable, "-m", "aikito_mem", *command], env=environ,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 4, done
        assert "Traceback" not in done.stderr
        assert json.loads(done.stdout)["error"]["code"] == "config.workspace_pointer"


def test_workspace_option_with_nul_is_a_configuration_error(home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_workspace("/tmp/a\x00b", environ=env_for(home))
    assert info.value.code == "config.workspace_not_absolute"
    assert "NUL" in info.value.message


def test_relative_option_in_a_deleted_directory(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(ConfigError) as info:
        resolve_workspace("ws", environ=env_for(home))
    assert info.value.code == "config.cwd_missing"
    assert resolve_workspace(str(bare_workspace(tmp_path / "abs")), environ=env_for(home))
