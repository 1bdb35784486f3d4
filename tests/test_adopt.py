"""``aikito adopt`` (issue 6): a file, a directory, a cross-filesystem move (tmpfs), every
refusal, failures that leave the content in exactly one complete place, and the byte-
preserving ``memory`` list edit."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from aikito_mem import adopt as adopt_mod
from aikito_mem.adopt import add_memory_reference, adopt, rename_noreplace
from aikito_mem.api import Project
from aikito_mem.cli import cli
from aikito_mem.errors import ConfigError
from aikito_mem.model import Action
from tests.snapshots import snapshot

CONFIG = """\
# the demo project
name = "demo"
paths = [{paths}]  # checkouts
memory = [
    "style.md",  # house style
    "team/a.md",
]

[hooks]
x = 1
"""


def make(tmp: Path, checkout: Path | None = None) -> tuple[Path, Path]:
    ws = tmp / "ws"
    (ws / "projects" / "demo").mkdir(parents=True)
    (ws / "memory" / "team").mkdir(parents=True)
    (ws / "memory" / "style.md").write_text("style\n")
    (ws / "memory" / "team" / "a.md").write_text("a\n")
    co = checkout or tmp / "co"
    co.mkdir(exist_ok=True)
    (ws / "projects" / "demo" / "agent.toml").write_text(
        CONFIG.format(paths=json.dumps(str(co))))
    Project.load("demo", str(ws)).sync()
    return ws, co


def rt(co: Path) -> Path:
    return co / ".agents" / "memory"


def cli_adopt(ws: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--workspace", str(ws), "adopt", *args],
                              catch_exceptions=False)


def clean(ws: Path, co: Path) -> None:
    """The next sync of the checkout has nothing to do."""
    plan = Project.load("demo", str(ws)).plan(str(co))
    assert not plan.has_changes and not plan.blocked
    assert {op.action for op in plan.operations} == {Action.NOOP}


def config_of(ws: Path) -> str:
    return (ws / "projects" / "demo" / "agent.toml").read_text()


def test_adopt_a_file(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (rt(co) / "glossary.md").write_text("terms\n")
    res = cli_adopt(ws, str(rt(co) / "glossary.md"), "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["schema"] == "aikito.adopt/1" and d["outcome"] == "adopted"
    root = ws.resolve()
    assert d["destination"] == f"{root}/memory/glossary.md" and d["reference"] == "glossary.md"
    assert d["method"] == "rename" and d["kind"] == "file"
    assert d["content_at"] == d["destination"]
    assert [s["status"] for s in d["steps"]] == ["applied", "applied", "applied"]
    assert d["sync"]["outcome"] == "applied"
    assert (ws / "memory" / "glossary.md").read_text() == "terms\n"
    assert os.readlink(rt(co) / "glossary.md") == f"{root}/memory/glossary.md"
    # Bytes and comments preserved; one element added.
    assert config_of(ws) == CONFIG.format(paths=json.dumps(str(co))).replace(
        '    "team/a.md",\n', '    "team/a.md",\n    "glossary.md",\n')
    clean(ws, co)


def test_adopt_a_directory_through_a_relative_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ws, co = make(tmp_path)
    d = rt(co) / "decisions" / "adr"
    (d / "sub").mkdir(parents=True)
    (d / "0001.md").write_text("one\n")
    (d / "sub" / "deep.md").write_bytes(os.urandom(4096))
    os.symlink("0001.md", d / "latest.md")
    before = {p.relative_to(d): p.read_bytes() for p in d.rglob("*") if p.is_file()}
    monkeypatch.chdir(co)
    res = cli_adopt(ws, ".agents/memory/decisions/adr")
    assert res.exit_code == 0, res.output
    assert "done: decisions/adr adopted" in res.stdout
    dest = ws / "memory" / "decisions" / "adr"
    assert {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()} \
        == before
    assert os.readlink(dest / "latest.md") == "0001.md"
    assert os.path.islink(rt(co) / "decisions" / "adr")
    assert tomllib.loads(config_of(ws))["memory"] == ["style.md", "team/a.md",
                                                      "decisions/adr"]
    clean(ws, co)


def test_adopt_a_conflicting_reference_already_listed(tmp_path: Path) -> None:
    """The common conflict: a real file where a listed reference's link should be."""
    ws, co = make(tmp_path)
    text = config_of(ws).replace('"team/a.md",', '"team/a.md",\n    "later.md",')
    (ws / "projects" / "demo" / "agent.toml").write_text(text)
    (rt(co) / "later.md").write_text("written by an agent\n")
    assert Project.load("demo", str(ws)).plan().blocked
    d = adopt(str(rt(co) / "later.md"), str(ws))
    assert d["outcome"] == "adopted" and d["exit_code"] == 0
    assert [s["status"] for s in d["steps"]] == ["applied", "skipped", "applied"]
    assert config_of(ws) == text
    clean(ws, co)


def test_adopt_without_a_memory_key(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    cfg = ws / "projects" / "demo" / "agent.toml"
    cfg.write_text(f'paths = ["{co}"]\n\n# tables\n[hooks]\nx = 1\n')
    (rt(co) / "a.md").write_text("a\n")
    assert adopt(str(rt(co) / "a.md"), str(ws))["outcome"] == "adopted"
    assert cfg.read_text() == f'paths = ["{co}"]\nmemory = ["a.md"]\n\n# tables\n[hooks]\nx = 1\n'
    clean(ws, co)


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (rt(co) / "g.md").write_text("g\n")
    before = snapshot(tmp_path)
    res = cli_adopt(ws, str(rt(co) / "g.md"), "--dry-run")
    assert res.exit_code == 0
    assert "would move" in res.stdout and "dry run: nothing was written" in res.stdout
    d = json.loads(cli_adopt(ws, str(rt(co) / "g.md"), "--dry-run", "--json").stdout)
    assert d["outcome"] == "planned" and d["content_at"] == str(rt(co).resolve() / "g.md")
    assert [s["status"] for s in d["steps"]] == ["planned"] * 3
    assert snapshot(tmp_path) == before


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if os.getuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_adopt_across_filesystems(tmp_path: Path, tmpfs: Path) -> None:
    ws, co = make(tmp_path, tmpfs / "co")
    assert os.stat(co).st_dev != os.stat(ws).st_dev
    (rt(co) / "big.md").write_bytes(os.urandom(3 << 20))
    want = hashlib.sha256((rt(co) / "big.md").read_bytes()).hexdigest()
    tree = rt(co) / "kb"
    (tree / "n").mkdir(parents=True)
    (tree / "n" / "x.md").write_text("x\n")
    os.symlink("n/x.md", tree / "x")
    os.chmod(tree / "n" / "x.md", 0o640)
    d = adopt(str(rt(co) / "big.md"), str(ws))
    assert d["outcome"] == "adopted" and d["method"] == "copy", d
    assert hashlib.sha256((ws / "memory" / "big.md").read_bytes()).hexdigest() == want
    d = adopt(str(tree), str(ws))
    assert d["outcome"] == "adopted" and d["method"] == "copy", d
    assert (ws / "memory" / "kb" / "n" / "x.md").read_text() == "x\n"
    assert stat.S_IMODE(os.stat(ws / "memory" / "kb" / "n" / "x.md").st_mode) == 0o640
    assert os.readlink(ws / "memory" / "kb" / "x") == "n/x.md"
    assert sorted(os.listdir(ws / "memory")) == ["big.md", "kb", "style.md", "team"]
    assert os.path.islink(rt(co) / "kb") and os.path.islink(rt(co) / "big.md")
    clean(ws, co)


def test_cross_filesystem_verification_failure_keeps_the_original(
        tmp_path: Path, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, co = make(tmp_path, tmpfs / "co")
    (rt(co) / "deep" / "kb").mkdir(parents=True)
    (rt(co) / "deep" / "kb" / "a.md").write_text("a\n")

    def corrupt(*_: Any) -> None:
        raise OSError(5, "the copy differs from what was read")

    monkeypatch.setattr(adopt_mod, "_verify_copy", corrupt)
    before_cfg = config_of(ws)
    d = adopt(str(rt(co) / "deep" / "kb"), str(ws))
    assert d["outcome"] == "failed" and d["exit_code"] == 5
    assert d["content_at"] == str(rt(co).resolve() / "deep" / "kb")
    assert "still at" in d["error"]["message"]
    assert [s["status"] for s in d["steps"]] == ["failed", "not_applied", "not_applied"]
    assert (rt(co) / "deep" / "kb" / "a.md").read_text() == "a\n"
    # The temporary copy and the directory created for it are removed.
    assert sorted(os.listdir(ws / "memory")) == ["style.md", "team"]
    assert config_of(ws) == before_cfg


def test_register_failure_says_where_the_content_is(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ws, co = make(tmp_path)
    (rt(co) / "g.md").write_text("g\n")
    from aikito_mem import config_edit as register

    def fail(*_: Any) -> None:
        raise ConfigError("disk says no", code="config.register_failed")

    monkeypatch.setattr(register, "swap_config", fail)
    res = cli_adopt(ws, str(rt(co) / "g.md"), "--json")
    d = json.loads(res.stdout)
    assert res.exit_code == 5 and d["outcome"] == "partial"
    dest = f"{ws.resolve()}/memory/g.md"
    assert d["content_at"] == dest and dest in d["error"]["message"]
    assert [s["status"] for s in d["steps"]] == ["applied", "failed", "not_applied"]
    assert (ws / "memory" / "g.md").read_text() == "g\n"
    assert not os.path.lexists(rt(co) / "g.md")


def test_link_back_blocked_by_another_conflict(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    os.unlink(rt(co) / "style.md")
    (rt(co) / "style.md").write_text("a real file in the way\n")
    (rt(co) / "g.md").write_text("g\n")
    res = cli_adopt(ws, str(rt(co) / "g.md"))
    assert res.exit_code == 1
    assert "the link was not created" in res.stderr
    assert (ws / "memory" / "g.md").read_text() == "g\n"
    assert "g.md" in tomllib.loads(config_of(ws))["memory"]


# -- refusals: nothing is written ---------------------------------------------------------


def refused(ws: Path, target: Path | str, code: str, tmp_path: Path) -> dict[str, Any]:
    before = snapshot(tmp_path)
    res = cli_adopt(ws, str(target), "--json")
    d: dict[str, Any] = json.loads(res.stdout)
    assert res.exit_code == 1, d
    assert d["outcome"] == "refused" and d["error"]["code"] == f"adopt.{code}", d
    assert [s["status"] for s in d["steps"]] == ["not_applied"] * 3
    assert snapshot(tmp_path) == before
    return d


def test_refuses_a_symlink(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    refused(ws, rt(co) / "style.md", "symlink", tmp_path)  # aikito's own link
    os.symlink("/etc/hostname", rt(co) / "foreign")
    refused(ws, rt(co) / "foreign", "symlink", tmp_path)


def test_refuses_paths_outside_agents_memory(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (co / "README.md").write_text("")
    refused(ws, co / "README.md", "outside", tmp_path)
    refused(ws, rt(co), "outside", tmp_path)
    (co / ".agents" / "other").write_text("")
    refused(ws, co / ".agents" / "other", "outside", tmp_path)
    stranger = tmp_path / "stranger" / ".agents" / "memory"
    stranger.mkdir(parents=True)
    (stranger / "x.md").write_text("")
    d = refused(ws, stranger / "x.md", "not_registered", tmp_path)
    assert "register the checkout first" in d["error"]["message"]
    # Inside aikito's link to a workspace directory: physically outside the checkout.
    (ws / "memory" / "team" / "b.md").write_text("")
    refused(ws, rt(co) / "team" / "a.md", "symlink", tmp_path)
    refused(ws, rt(co) / "nothing.md", "missing", tmp_path)


def test_refuses_through_a_symlinked_directory(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (rt(co) / "real").mkdir()
    (rt(co) / "real" / "x.md").write_text("")
    os.symlink("real", rt(co) / "alias")
    refused(ws, rt(co) / "alias" / "x.md", "through_symlink", tmp_path)


def test_refuses_an_existing_destination(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (ws / "memory" / "g.md").write_text("already here\n")
    (rt(co) / "g.md").write_text("mine\n")
    d = refused(ws, rt(co) / "g.md", "destination_exists", tmp_path)
    assert "merge by hand" in d["error"]["message"]
    # Something (even a broken symlink) at the destination counts.
    os.unlink(ws / "memory" / "g.md")
    os.symlink("nowhere", ws / "memory" / "g.md")
    refused(ws, rt(co) / "g.md", "destination_exists", tmp_path)


def test_refuses_a_destination_parent_that_is_not_a_directory(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (ws / "memory" / "docs").write_text("a file")
    (rt(co) / "docs").mkdir()
    (rt(co) / "docs" / "x.md").write_text("")
    refused(ws, rt(co) / "docs" / "x.md", "destination_parent", tmp_path)


@pytest.mark.parametrize("name", [" lead.md", "trail ", "ctl\x01.md", "zw\u200b.md"])
def test_refuses_names_violating_c3(tmp_path: Path, name: str) -> None:
    ws, co = make(tmp_path)
    (rt(co) / name).write_text("")
    d = refused(ws, rt(co) / name, "reference_invalid", tmp_path)
    assert "[C3]" in d["error"]["message"]


def test_refuses_prefix_and_case_clashes(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    # team/ holds aikito's link for team/a.md, and memory/team exists.
    (rt(co) / "team" / "b.md").write_text("")
    refused(ws, rt(co) / "team", "destination_exists", tmp_path)
    # kb/a.md is listed but its source is missing: adopting kb/ would swallow it.
    text = config_of(ws).replace('"team/a.md",', '"team/a.md",\n    "kb/a.md",')
    (ws / "projects" / "demo" / "agent.toml").write_text(text)
    (rt(co) / "kb").mkdir()
    (rt(co) / "kb" / "a.md").write_text("")
    d = refused(ws, rt(co) / "kb", "reference_clash", tmp_path)
    assert "inside memory reference" in d["error"]["message"]
    # docs is listed (source missing): a file below it cannot become a reference.
    text = config_of(ws).replace('"kb/a.md",', '"docs",')
    (ws / "projects" / "demo" / "agent.toml").write_text(text)
    (rt(co) / "docs").mkdir()
    (rt(co) / "docs" / "x.md").write_text("")
    d = refused(ws, rt(co) / "docs" / "x.md", "reference_clash", tmp_path)
    assert "inside memory reference 'docs'" in d["error"]["message"]
    (rt(co) / "Style.md").write_text("")
    d = refused(ws, rt(co) / "Style.md", "reference_clash", tmp_path)
    assert "case folding" in d["error"]["message"]


def test_refuses_the_notes_runtime_path(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (ws / "projects" / "demo" / "memory" / "notes").mkdir(parents=True)
    (rt(co) / "notes").mkdir()
    refused(ws, rt(co) / "notes", "notes", tmp_path)


def test_ambiguous_checkout_needs_project(tmp_path: Path) -> None:
    ws, co = make(tmp_path)
    (ws / "projects" / "twin").mkdir()
    (ws / "projects" / "twin" / "agent.toml").write_text(f'paths = ["{co}"]\n')
    (rt(co) / "g.md").write_text("g\n")
    d = refused(ws, rt(co) / "g.md", "ambiguous_project", tmp_path)
    assert "--project" in d["error"]["message"]
    res = cli_adopt(ws, str(rt(co) / "g.md"), "--project", "demo")
    assert res.exit_code == 0, res.output
    assert (ws / "memory" / "g.md").read_text() == "g\n"


def test_workspace_error_exit_4(tmp_path: Path) -> None:
    res = cli_adopt(tmp_path / "none", str(tmp_path), "--json")
    assert res.exit_code == 4
    assert json.loads(res.stdout)["error"]["code"] == "config.workspace_missing"


# -- the primitives -----------------------------------------------------------------------


def test_rename_noreplace(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    with pytest.raises(FileExistsError):
        rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_text() == "b"
    (tmp_path / "d").mkdir()
    with pytest.raises(FileExistsError):
        rename_noreplace(str(tmp_path / "a"), str(tmp_path / "d"))
    rename_noreplace(str(tmp_path / "a"), str(tmp_path / "c"))
    assert (tmp_path / "c").read_text() == "a" and not (tmp_path / "a").exists()


@pytest.mark.parametrize(("old", "new"), [
    ('memory = []\n', 'memory = ["x"]\n'),
    ('memory = [ ]  # none\n', 'memory = [ "x" ]  # none\n'),
    ('memory = ["a", "b",]\n', 'memory = ["a", "b", "x",]\n'),
    ('memory = [\n  "a",  # c\n]\n', 'memory = [\n  "a",  # c\n  "x",\n]\n'),
    ('memory = [\n  "a"\n]\n', 'memory = [\n  "a",\n  "x"\n]\n'),
    ('name = "p"\n', 'name = "p"\nmemory = ["x"]\n'),
    ('', 'memory = ["x"]\n'),
    ('# top\n\n# about t\n[t]\nk = 1\n', '# top\n\nmemory = ["x"]\n# about t\n[t]\nk = 1\n'),
    ('memory = ["a"] # ] tricky\n[paths]\nl = "/x"\n',
     'memory = ["a", "x"] # ] tricky\n[paths]\nl = "/x"\n'),
])
def test_add_memory_reference(old: str, new: str) -> None:
    assert add_memory_reference(old, "x") == new
    assert tomllib.loads(new)["memory"] == [*tomllib.loads(old).get("memory", []), "x"]


def test_add_memory_reference_escapes_and_refuses_odd_layouts() -> None:
    out = add_memory_reference('memory = []\n', 'q"uote\\.md')
    assert tomllib.loads(out)["memory"] == ['q"uote\\.md']
    with pytest.raises(ConfigError):
        add_memory_reference('[x]\nmemory = []\nmemory2 = 1\n[memory]\n', "a")


def test_cross_filesystem_refuses_special_files_and_cleans_up(tmp_path: Path,
                                                             tmpfs: Path) -> None:
    ws, co = make(tmp_path, tmpfs / "co")
    tree = rt(co) / "deep" / "kb"
    tree.mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    os.mkfifo(tree / "pipe")
    before = snapshot(tmp_path)
    d = adopt(str(tree), str(ws))
    assert d["outcome"] == "refused" and d["error"]["code"] == "adopt.file_type", d
    assert d["content_at"] == str(tree.resolve())
    assert snapshot(tmp_path) == before


def test_busy_checkout_exit_6(tmp_path: Path) -> None:
    import fcntl

    ws, co = make(tmp_path)
    (rt(co) / "g.md").write_text("g\n")
    fd = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        before = snapshot(tmp_path)
        res = cli_adopt(ws, str(rt(co) / "g.md"), "--lock-timeout", "0", "--json")
        assert res.exit_code == 6
        d = json.loads(res.stdout)
        assert d["outcome"] == "busy" and d["content_at"] == str(rt(co).resolve() / "g.md")
        assert snapshot(tmp_path) == before
    finally:
        os.close(fd)
