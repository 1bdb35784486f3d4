"""``aikito init`` never overwrites, never writes through a symlink, and its dry run is
exactly the real run: proven with before/after snapshots of every tree around (the
workspace, its parent, an outside directory, the home directory)."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from aikito_mem import signals
from aikito_mem.commands.init.run import InitStatus, init_project, init_workspace
from aikito_mem.errors import (
    ConfigError,
    ExecutionError,
    InterruptedError_,
    StalePlanError,
)
from tests.helpers import mounts
from tests.helpers.snapshots import snapshot


def _fresh(tmp: Path, home: str) -> tuple[str | None, dict[str, str]]:
    return None, {"HOME": home}


def _partial(tmp: Path, home: str) -> tuple[str | None, dict[str, str]]:
    (tmp / "ws" / "memory").mkdir(parents=True)
    (tmp / "ws" / "memory" / "a.md").write_text("a\n")
    os.symlink(str(tmp / "outside"), tmp / "ws" / "skills")
    return str(tmp / "ws"), {"HOME": home, "AIKITO_DIR": str(tmp / "elsewhere")}


def _complete(tmp: Path, home: str) -> tuple[str | None, dict[str, str]]:
    init_workspace(str(tmp / "ws"), environ={"HOME": home})
    return str(tmp / "ws"), {"HOME": home}


def _nested(tmp: Path, home: str) -> tuple[str | None, dict[str, str]]:
    return str(tmp / "a" / "b" / "ws"), {"HOME": home, "XDG_CONFIG_HOME": str(tmp / "xdg")}


WORLDS = {"fresh": _fresh, "partial": _partial, "complete": _complete, "nested": _nested}


def _trees(tmp: Path, home: str) -> dict[str, object]:
    return snapshot(tmp, home)


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_workspace_dry_run_writes_nothing_and_predicts_the_real_run(
    home: str, tmp_path: Path, world: str
) -> None:
    (tmp_path / "outside").mkdir()
    path, environ = WORLDS[world](tmp_path, home)
    before = _trees(tmp_path, home)
    dry = init_workspace(path, dry_run=True, environ=environ)
    assert _trees(tmp_path, home) == before
    real = init_workspace(path, environ=environ)
    assert dry.findings == real.findings
    assert [(e.path, e.kind, e.role) for e in dry.entries] == [
        (e.path, e.kind, e.role) for e in real.entries]
    expected = {InitStatus.PLANNED: InitStatus.CREATED, InitStatus.EXISTED: InitStatus.EXISTED}
    assert [expected[e.status] for e in dry.entries] == [e.status for e in real.entries]
    created = {e.path for e in real.entries if e.status is InitStatus.CREATED}
    after = _trees(tmp_path, home)
    # Exactly the reported paths appeared; everything that was there is byte-identical,
    # except the times of the directories that received a new entry.
    assert set(after) - set(before) == created
    parents = {os.path.dirname(p) for p in created}
    for p, entry in before.items():
        if p in parents:
            assert after[p][:3] == entry[:3]
        else:
            assert after[p] == entry, p


def test_project_dry_run_writes_nothing_and_predicts_the_real_run(
    home: str, tmp_path: Path
) -> None:
    root = init_workspace(str(tmp_path / "ws"), environ={"HOME": home}).workspace
    (tmp_path / "co").mkdir()
    before = _trees(tmp_path, home)
    dry = init_project(root, "demo", str(tmp_path / "co"), dry_run=True, environ={"HOME": home})
    assert _trees(tmp_path, home) == before
    assert [e.status for e in dry.entries] == [InitStatus.PLANNED, InitStatus.PLANNED]
    real = init_project(root, "demo", str(tmp_path / "co"), environ={"HOME": home})
    assert [e.path for e in dry.entries] == [e.path for e in real.entries]
    assert (dry.checkout, dry.registered_as) == (real.checkout, real.registered_as)
    assert [e.status for e in real.entries] == [InitStatus.CREATED, InitStatus.CREATED]


def _not_a_workspace(tmp: Path) -> tuple[Callable[..., object], tuple[object, ...]]:
    (tmp / "code").mkdir()
    (tmp / "code" / "x.py").write_text("")
    return init_workspace, (str(tmp / "code"),)


def _wrong_type(tmp: Path) -> tuple[Callable[..., object], tuple[object, ...]]:
    (tmp / "ws").mkdir()
    (tmp / "ws" / "memory").write_text("")
    return init_workspace, (str(tmp / "ws"),)


def _project_exists(tmp: Path) -> tuple[Callable[..., object], tuple[object, ...]]:
    root = init_workspace(str(tmp / "ws"), environ={"HOME": str(tmp)}).workspace
    init_project(root, "demo", environ={"HOME": str(tmp)})
    return init_project, (root, "demo")


@pytest.mark.parametrize("make", [_not_a_workspace, _wrong_type, _project_exists])
def test_dry_run_refuses_what_the_real_run_refuses(
    home: str, tmp_path: Path, make: Callable[[Path], tuple[Callable[..., object], tuple]]
) -> None:
    fn, args = make(tmp_path)
    before = _trees(tmp_path, home)
    codes = []
    for dry_run in (True, False):
        with pytest.raises(ConfigError) as info:
            fn(*args, dry_run=dry_run, environ={"HOME": home})
        codes.append(info.value.code)
    assert codes[0] == codes[1]
    assert _trees(tmp_path, home) == before


# -- the world changes between planning and writing ---------------------------------------


def _on_write(monkeypatch: pytest.MonkeyPatch, n: int, act: Callable[[], None]) -> None:
    """Run ``act`` just before the ``n``-th write (``signals.check`` runs before each, and
    once when planning starts)."""
    calls = {"n": 0}
    real = signals.check

    def check() -> None:
        calls["n"] += 1
        if calls["n"] == n + 1:
            act()
        real()

    monkeypatch.setattr(signals, "check", check)


def test_workspace_root_appearing_as_a_symlink_is_never_written_through(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _on_write(monkeypatch, 1, lambda: os.symlink(str(outside), tmp_path / "ws"))
    with pytest.raises(StalePlanError) as info:
        init_workspace(str(tmp_path / "ws"), environ={"HOME": home})
    assert info.value.exit_code == 3
    assert os.listdir(outside) == []
    assert os.readlink(tmp_path / "ws") == str(outside)
    assert info.value.result.count(InitStatus.CREATED) == 0


def test_a_directory_swapped_for_a_symlink_is_never_written_through(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"

    def swap() -> None:  # agents/ was just created by init; replace it with a link
        os.rmdir(root / "agents")
        os.symlink(str(outside), root / "agents")

    Path(home, ".codex").mkdir()  # Codex detected: init writes agents/ and agents/codex.toml
    _on_write(monkeypatch, 6, swap)  # root, projects, memory, skills, agents, agents/codex
    with pytest.raises(ExecutionError) as info:
        init_workspace(str(root), environ={"HOME": home})
    assert info.value.exit_code == 5
    assert os.listdir(outside) == []
    report = info.value.result
    assert report.count(InitStatus.CREATED) == 5
    assert "replaced by a symlink" in info.value.message


def test_an_entry_appearing_is_never_overwritten(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    root.mkdir()

    def appear() -> None:
        (root / "layout.toml").write_text("theirs\n")

    # projects, memory, skills, agents, the one registry file, subagents, then layout.toml
    Path(home, ".codex").mkdir()
    _on_write(monkeypatch, 7, appear)
    with pytest.raises(StalePlanError) as info:
        init_workspace(str(root), environ={"HOME": home})
    assert (root / "layout.toml").read_text() == "theirs\n"
    assert info.value.differences == (f"{root}/layout.toml appeared since planning",)
    assert not [n for n in os.listdir(root) if n.startswith(".")]  # no temporary file left


def test_project_config_appearing_is_never_overwritten(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = init_workspace(str(tmp_path / "ws"), environ={"HOME": home}).workspace
    config = Path(root, "projects", "demo", "agent.toml")
    _on_write(monkeypatch, 2, lambda: config.write_text("memory = ['theirs']\n"))
    with pytest.raises(StalePlanError):
        init_project(root, "demo", environ={"HOME": home})
    assert config.read_text() == "memory = ['theirs']\n"


def test_a_failing_write_stops_and_reports_what_was_created(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_mkdir = os.mkdir
    made: list[str] = []

    def mkdir(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        if len(made) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        made.append(name)
        real_mkdir(name, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(ExecutionError) as info:
        init_workspace(str(tmp_path / "ws"), environ={"HOME": home})
    monkeypatch.undo()
    assert info.value.exit_code == 5
    assert "No space left on device" in info.value.message
    report = info.value.result
    assert [e.path for e in report.entries if e.status is InitStatus.CREATED] == [
        f"{tmp_path}/ws", f"{tmp_path}/ws/projects"]
    # Running again converges: it adds only what is missing.
    again = init_workspace(str(tmp_path / "ws"), environ={"HOME": home})
    assert again.count(InitStatus.EXISTED) == 2


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_before_the_next_write(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int, code: int
) -> None:
    _on_write(monkeypatch, 3, lambda: signal.raise_signal(signum))
    with signals.installed(), pytest.raises(InterruptedError_) as info:
        init_workspace(str(tmp_path / "ws"), environ={"HOME": home})
    assert info.value.exit_code == code
    created = [e.path for e in info.value.result.entries if e.status is InitStatus.CREATED]
    assert created == [f"{tmp_path}/ws", f"{tmp_path}/ws/projects"]
    assert os.listdir(tmp_path / "ws") == ["projects"]


# -- a read-only file system --------------------------------------------------------------


@pytest.fixture
def readonly_dir(tmp_path: Path):  # type: ignore[no-untyped-def]
    with mounts.tmpfs(tmp_path / "ro", "ro,size=1m") as mnt:
        yield mnt


@pytest.mark.mount
@pytest.mark.parametrize("dry_run", [True, False])
def test_read_only_target_is_refused_before_any_write(
    home: str, tmp_path: Path, readonly_dir: Path, dry_run: bool
) -> None:
    before = _trees(tmp_path, home)
    with pytest.raises(ConfigError) as info:
        init_workspace(str(readonly_dir / "ws"), dry_run=dry_run, environ={"HOME": home})
    assert info.value.code == "config.init_not_writable"
    assert _trees(tmp_path, home) == before


@pytest.mark.mount
def test_read_only_config_directory_leaves_the_pointer_unwritten(
    home: str, tmp_path: Path, readonly_dir: Path
) -> None:
    environ = {"HOME": home, "XDG_CONFIG_HOME": str(readonly_dir)}
    for dry_run in (True, False):
        report = init_workspace(str(tmp_path / "ws"), dry_run=dry_run, environ=environ)
        assert [f.code for f in report.findings] == ["init.pointer"]
        assert "cannot write" in report.findings[0].message
        assert not any(e.role in ("pointer", "config_dir") for e in report.entries)
    assert os.path.isdir(tmp_path / "ws" / "projects")
    assert os.listdir(readonly_dir) == []


def test_an_existing_workspace_swapped_for_a_symlink_is_never_written_through(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    root.mkdir()

    def swap() -> None:
        os.rename(root, tmp_path / "moved")
        os.symlink(str(outside), root)

    _on_write(monkeypatch, 1, swap)
    with pytest.raises(ExecutionError):
        init_workspace(str(root), environ={"HOME": home})
    assert os.listdir(outside) == []
    assert os.listdir(tmp_path / "moved") == []


@pytest.mark.mount
@pytest.mark.parametrize("dry_run", [True, False])
def test_read_only_project_directory_is_refused_before_any_write(
    home: str, tmp_path: Path, dry_run: bool
) -> None:
    mounts.need_root()
    root = init_workspace(str(tmp_path / "ws"), environ={"HOME": home}).workspace
    with mounts.tmpfs(Path(root, "projects", "demo"), "ro,size=1m"):
        before = _trees(tmp_path, home)
        with pytest.raises(ConfigError) as info:
            init_project(root, "demo", dry_run=dry_run, environ={"HOME": home})
        assert info.value.code == "config.init_not_writable"
        assert _trees(tmp_path, home) == before
