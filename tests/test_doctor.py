"""``aikito doctor``: each check on real directories and real git repositories,
the ``aikito.doctor/1`` document, exit codes, ``--strict``, and zero writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from aikito_mem.commands.doctor.checks import check_index, run
from aikito_mem.commands.doctor.git import BEGIN
from aikito_mem.commands.doctor.report import Check, DoctorReport
from tests.helpers.programs import executable
from tests.helpers.snapshots import snapshot

HAS_GIT = shutil.which("git") is not None


def make_ws(tmp: Path, paths: list[Path] | None = None, memory: list[str] | None = None) -> Path:
    ws = tmp / "ws"
    (ws / "projects" / "demo" / "memory" / "notes").mkdir(parents=True)
    (ws / "memory").mkdir()
    (ws / "memory" / "style.md").write_text("s\n")
    text = f"paths = {json.dumps([str(p) for p in paths or []])}\n" \
           f"memory = {json.dumps(memory if memory is not None else ['style.md'])}\n"
    (ws / "projects" / "demo" / "agent.toml").write_text(text)
    return ws


def doctor(ws: Path | None, *extra: str, env: dict[str, str] | None = None) -> Result:
    args = ["--workspace", str(ws)] if ws is not None else []
    return CliRunner().invoke(cli, [*args, "doctor", *extra], env=env,
                              catch_exceptions=False)


def checks(report: DoctorReport, check_id: str) -> list[Check]:
    return [c for c in report.checks if c.id == check_id]


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_healthy_workspace(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    res = doctor(ws, "--json")
    assert res.exit_code == 0, res.stdout
    d = json.loads(res.stdout)
    assert d["schema"] == "aikito.doctor/1" and d["contract_version"] == 1
    assert d["workspace"] == str(ws.resolve()) and d["workspace_source"] == "option"
    assert d["summary"] == {"ok": len(d["checks"]), "warning": 0, "error": 0}
    ids = {c["id"] for c in d["checks"]}
    assert {"workspace.source", "memory.root", "project.config", "notes.dir"} <= ids
    for c in d["checks"]:
        assert set(c) == {"id", "status", "message", "remedy", "path", "project"}
    text = doctor(ws)
    assert text.exit_code == 0 and "0 errors" in text.stdout
    assert "memory.root" not in text.stdout  # ok checks only with -v
    assert "memory.root" in doctor(ws, "-v").stdout


def test_workspace_source_and_cwd_independence(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_ws(tmp_path)
    [src] = checks(run(str(ws)), "workspace.source")
    assert src.status == "ok" and "the --workspace option" in src.message
    assert "does not depend on the current directory" in src.message
    monkeypatch.chdir(tmp_path)
    d = run("ws")
    [src] = checks(d, "workspace.source")
    assert src.status == "warning" and "relative path 'ws'" in src.message
    assert str(ws.resolve()) in src.remedy
    assert d.exit_code == 0
    assert run("ws", strict=True).exit_code == 1
    home = tmp_path / "home"
    d = run(None, environ={"HOME": str(home), "AIKITO_DIR": str(ws)})
    assert checks(d, "workspace.source")[0].status == "ok"
    assert d.workspace_source == "AIKITO_DIR"
    (home / ".config" / "aikito").mkdir(parents=True)
    (home / ".config" / "aikito" / "workspace").write_text(f"{ws}\n")
    d = run(None, environ={"HOME": str(home)})
    assert d.workspace_source == "pointer file"
    assert "the pointer file" in checks(d, "workspace.source")[0].message


def test_unresolvable_workspace_exit_4(tmp_path: Path) -> None:
    res = doctor(tmp_path / "missing", "--json")
    assert res.exit_code == 4
    d = json.loads(res.stdout)
    assert d["error"]["code"] == "config.workspace_missing"
    assert d["checks"][0]["id"] == "workspace.source" and d["checks"][0]["status"] == "error"


def test_memory_root_missing_or_not_a_directory(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    shutil.rmtree(ws / "memory")
    [root] = checks(run(str(ws)), "memory.root")
    assert root.status == "error" and "does not exist" in root.message
    assert (root.remedy, root.commands) == ("create it", (f"mkdir {ws.resolve()}/memory",))
    (ws / "projects" / "demo" / "agent.toml").write_text("paths = []\n")
    [root] = checks(run(str(ws)), "memory.root")
    assert root.status == "warning"  # no project references shared memory
    (ws / "memory").write_text("")
    d = run(str(ws))
    [root] = checks(d, "memory.root")
    assert root.status == "error" and "is not a directory" in root.message
    assert d.exit_code == 1


def test_notes_dir_checks(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    [notes] = checks(run(str(ws)), "notes.dir")
    assert notes.status == "ok" and notes.project == "demo"
    (ws / "projects" / "demo" / "memory" / "notes").rmdir()
    (ws / "projects" / "demo" / "memory" / "notes").write_text("")
    d = run(str(ws))
    [notes] = checks(d, "notes.dir")
    assert notes.status == "error" and d.exit_code == 1
    (ws / "projects" / "demo" / "memory" / "notes").unlink()
    (ws / "projects" / "demo" / "memory" / "notes").symlink_to(tmp_path / "gone")
    [notes] = checks(run(str(ws)), "notes.dir")
    assert notes.status == "warning" and notes.commands[0].startswith("mkdir -p ")


@pytest.mark.parametrize("where", ["no project memory", "empty project memory"])
def test_a_project_without_notes_is_fine(tmp_path: Path, where: str) -> None:
    """A project that simply has no notes (nothing at its notes location, [S2]) is not
    warned about: an ``ok`` check, listed with ``-v`` only."""
    ws = make_ws(tmp_path)
    (ws / "projects" / "demo" / "memory" / "notes").rmdir()
    if where == "no project memory":
        (ws / "projects" / "demo" / "memory").rmdir()
    d = run(str(ws))
    [notes] = checks(d, "notes.dir")
    assert notes.status == "ok" and "has no notes" in notes.message
    assert "mkdir -p" in notes.message and d.exit_code == 0
    assert run(str(ws), strict=True).exit_code == 0
    res = doctor(ws)
    assert "notes.dir" not in res.stdout and res.stdout.splitlines()[-1] == \
        "doctor: 4 ok, 0 warnings, 0 errors"
    assert "has no notes" in doctor(ws, "-v").stdout


def test_unwritable_directories(tmp_path: Path) -> None:
    """Read-only bind mounts: writability is checked with os.access, never by writing."""
    ws = make_ws(tmp_path)
    mounted: list[Path] = []
    try:
        for d in (ws / "memory", ws / "projects" / "demo" / "memory" / "notes"):
            if os.getuid() != 0 or subprocess.run(
                    ["mount", "--bind", str(d), str(d)], capture_output=True).returncode:
                pytest.skip("needs root and mount --bind")
            mounted.append(d)
            if subprocess.run(["mount", "-o", "remount,ro,bind", str(d)],
                              capture_output=True).returncode:
                pytest.skip("cannot remount read-only")
        d = run(str(ws))
        assert checks(d, "memory.root")[0].status == "error"
        assert "not writable" in checks(d, "notes.dir")[0].message
    finally:
        for d in reversed(mounted):
            subprocess.run(["umount", str(d)], check=False)


def test_legacy_notes_next_to_current(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    assert checks(run(str(ws)), "notes.legacy") == []
    (ws / "memory" / "demo" / "notes").mkdir(parents=True)
    [hint] = checks(run(str(ws)), "notes.legacy")
    assert hint.status == "warning" and "ignored" in hint.message
    assert hint.path == f"{ws.resolve()}/memory/demo/notes"
    shutil.rmtree(ws / "projects" / "demo" / "memory")
    [hint] = checks(run(str(ws)), "notes.legacy")
    assert hint.status == "ok" and hint.remedy.startswith("to migrate")


INDEX = """\
# Memory index

- [Style](style.md)
- [Team A](team/a.md "with a title")
- [Gone](team/gone.md)
- [Style again](./style.md#usage)
- [Site](https://example.com/x.md) and [mail](mailto:a@b) and [top](#memory-index)
- [Spaced](<team/with space.md>) [Encoded](team/with%20space.md)

```
[not a link](nowhere.md)
```
Inline `[code](nowhere.md)` is not a link either.
"""


def test_index_dangling_and_duplicate(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    mem = ws / "memory"
    (mem / "team").mkdir()
    (mem / "team" / "a.md").write_text("")
    (mem / "team" / "with space.md").write_text("")
    (mem / "MEMORY.md").write_text(INDEX)
    found = check_index(str(mem / "MEMORY.md"))
    errors = [c for c in found if c.status == "error"]
    warnings = [c for c in found if c.status == "warning"]
    assert len(errors) == 1 and ":5:" in errors[0].message
    assert "team/gone.md" in errors[0].message
    assert len(warnings) == 2  # style.md listed twice, with space listed twice
    assert any(":6:" in w.message and "first on line 3" in w.message for w in warnings)
    assert any(":8:" in w.message for w in warnings)
    d = run(str(ws))
    assert d.exit_code == 1
    assert len([c for c in checks(d, "index.links") if c.status == "error"]) == 1
    # A clean index under a project notes directory is checked too.
    notes = ws / "projects" / "demo" / "memory" / "notes"
    (notes / "n.md").write_text("")
    (notes / "MEMORY.md").write_text("- [n](n.md)\n")
    d = run(str(ws))
    ok = [c for c in checks(d, "index.links") if c.status == "ok"]
    assert len(ok) == 1 and ok[0].project == "demo" and "1 link," in ok[0].message


def test_index_text_output(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    (ws / "memory" / "MEMORY.md").write_text("[a](missing.md)\n[b](style.md)\n[c](style.md)\n")
    res = doctor(ws)
    assert res.exit_code == 1
    assert "error    index.links" in res.stdout and "warning  index.links" in res.stdout
    assert "remedy: fix or remove that entry" in res.stdout


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_ignore_checkout_and_worktree(tmp_path: Path) -> None:
    repo, wt, plain = tmp_path / "repo", tmp_path / "wt", tmp_path / "plain"
    repo.mkdir()
    plain.mkdir()
    git("init", "-q", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=repo)
    git("worktree", "add", "-q", str(wt), cwd=repo)
    ws = make_ws(tmp_path, [repo, wt, plain])
    d = run(str(ws))
    found = checks(d, "git.ignore")
    assert len(found) == 2  # the plain directory is not a work tree: not checked
    exclude = f"{repo.resolve()}/.git/info/exclude"
    for c in found:
        assert c.status == "warning"
        assert "git does not ignore .agents/memory/ and .agents/skills/" in c.message
        assert c.path == exclude  # the worktree shares the main repository's exclude
        assert c.remedy == f"to add /.agents/memory/ and /.agents/skills/ to {exclude}, run"
        assert c.commands == ("aikito doctor --fix",
                              f"printf '%s\\n' /.agents/memory/ >> {exclude}\n"
                              f"printf '%s\\n' /.agents/skills/ >> {exclude}")
        assert c.remedy_text == (f"{c.remedy}: aikito doctor --fix, or: printf '%s\\n' "
                                 f"/.agents/memory/ >> {exclude}; printf '%s\\n' "
                                 f"/.agents/skills/ >> {exclude}")
    assert d.exit_code == 0 and run(str(ws), strict=True).exit_code == 1
    with open(exclude, "a") as fh:
        fh.write(".agents/memory/\n")
    found = checks(run(str(ws)), "git.ignore")
    assert [c.status for c in found] == ["warning", "warning"]
    assert all("does not ignore .agents/skills/ —" in c.message for c in found)
    with open(exclude, "a") as fh:
        fh.write(".agents/skills/\n")
    found = checks(run(str(ws)), "git.ignore")
    assert [c.status for c in found] == ["ok", "ok"]
    assert all("git ignores .agents/memory/ and .agents/skills/" in c.message
               for c in found)


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_ignore_via_gitignore_after_sync(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / ".gitignore").write_text(".agents/\n")
    ws = make_ws(tmp_path, [repo])
    from aikito_mem.api import Project

    Project.load("demo", str(ws)).sync()
    assert [c.status for c in checks(run(str(ws)), "git.ignore")] == ["ok"]


def test_broken_project_config_is_an_error(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    (ws / "projects" / "bad").mkdir()
    (ws / "projects" / "bad" / "agent.toml").write_text("memory = [1]\n")
    (ws / "projects" / "demo" / "agent.toml").write_text('memory = []\nmemroy = []\n')
    d = run(str(ws))
    configs = {c.project: c for c in checks(d, "project.config")}
    assert configs["bad"].status == "error" and "memory[0]" in configs["bad"].message
    assert configs["demo"].status == "warning" and "did you mean" in configs["demo"].message
    assert d.exit_code == 1


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_doctor_writes_nothing(tmp_path: Path) -> None:
    repo, wt = tmp_path / "repo", tmp_path / "wt"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=repo)
    git("worktree", "add", "-q", str(wt), cwd=repo)
    ws = make_ws(tmp_path, [repo, wt, tmp_path / "offline"])
    (ws / "memory" / "MEMORY.md").write_text("[x](gone.md) [s](style.md) [s](style.md)\n")
    (ws / "memory" / "demo" / "notes").mkdir(parents=True)
    before = snapshot(tmp_path)
    for extra in ((), ("--json",), ("--strict", "-v")):
        assert doctor(ws, *extra).exit_code == 1
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_ignore_names_an_exclude_file_whose_path_is_not_utf8(tmp_path: Path) -> None:
    """A worktree whose main repository lives at a non-UTF-8 path: ``git rev-parse
    --git-path info/exclude`` prints that path; it is decoded as the os module does."""
    main = os.fsdecode(bytes(tmp_path) + b"/main\xfe")
    os.mkdir(main)
    git("init", "-q", cwd=Path(main))
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=Path(main))
    co = tmp_path / "co"
    git("worktree", "add", "-q", str(co), cwd=Path(main))
    ws = make_ws(tmp_path, [co])
    res = doctor(ws, "--json")
    [check] = [c for c in json.loads(res.stdout)["checks"] if c["id"] == "git.ignore"]
    assert check["status"] == "warning"
    assert check["path"] == os.path.join(main, ".git", "info", "exclude")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_questions_never_run_the_fsmonitor_hook(tmp_path: Path) -> None:
    """``git check-ignore`` reads the index, which runs a configured ``core.fsmonitor``
    hook: an arbitrary command that may write.  Doctor asks git read-only questions."""
    co = tmp_path / "co"
    co.mkdir()
    git("init", "-q", cwd=co)
    (co / "f").write_text("f\n")
    git("add", "f", cwd=co)
    git("commit", "-q", "-m", "init", cwd=co)
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    hook.chmod(0o755)
    git("config", "core.fsmonitor", str(hook), cwd=co)
    ws = make_ws(tmp_path, [co])
    assert [c.status for c in checks(run(str(ws)), "git.ignore")] == ["warning"]
    assert not marker.exists()


def test_index_check_is_linear_in_the_index_size(tmp_path: Path) -> None:
    """A large MEMORY.md (under the 4 MiB limit) with many ``[](<`` must not make the link
    pattern rescan the line from every ``[`` (quadratic: hours for 4 MiB)."""
    import sys

    index = tmp_path / "MEMORY.md"
    index.write_text("[](<" * 100_000 + "\n[ok](MEMORY.md)\n")
    code = ("import sys; from aikito_mem.commands.doctor.checks import check_index; "
            "print(len(check_index(sys.argv[1])))")
    proc = subprocess.run([sys.executable, "-c", code, str(index)], capture_output=True,
                          text=True, timeout=20, cwd=Path(__file__).parent.parent)
    assert proc.returncode == 0, proc.stderr


def test_names_that_are_not_utf8_are_printed_escaped(tmp_path: Path) -> None:
    """Names that are not UTF-8 reach the output as lone surrogates: the text shows the raw
    byte (``\\xfe``), the JSON escapes it — never a UnicodeEncodeError."""
    ws = make_ws(tmp_path)
    odd = os.fsdecode(bytes(ws) + b"/memory/d\xfe")
    os.mkdir(odd)
    with open(os.path.join(odd, "MEMORY.md"), "w") as f:
        f.write("[gone](gone.md)\n")
    text = doctor(ws)
    assert text.exit_code == 1, text.output
    assert "d\\xfe/MEMORY.md" in text.stdout
    d = json.loads(doctor(ws, "--json").stdout)
    assert any(c["path"] == os.path.join(odd, "MEMORY.md") for c in d["checks"])


def test_a_very_deep_memory_tree_is_checked_without_recursion(tmp_path: Path) -> None:
    """``os.walk`` recurses (Python 3.11): 1,100 nested directories under ``<ws>/memory``
    would raise RecursionError."""
    ws = make_ws(tmp_path)
    fd = os.open(ws / "memory", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1100):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        index = os.open("MEMORY.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(index, b"[gone](gone.md)\n")
        os.close(index)
    finally:
        os.close(fd)
    (ws / "memory" / "loop").mkdir()
    os.symlink("MEMORY.md", ws / "memory" / "loop" / "MEMORY.md")  # a symlink loop
    try:
        report = run(str(ws))
    finally:  # pytest's own tmp cleanup (shutil.rmtree) recurses too: leave no deep tree
        subprocess.run(["rm", "-rf", str(ws / "memory" / "d")], check=True)
    by_path = {c.path: c for c in checks(report, "index.links")}
    [deep] = [c for p, c in by_path.items() if p and p.endswith("/d/MEMORY.md")]
    assert deep.status == "error"
    assert by_path[str(ws / "memory" / "loop" / "MEMORY.md")].status == "warning"


FAKE_GIT = """#!/bin/sh
# A git that answers "inside a work tree" and blocks on the question named by $BLOCK_ON.
for arg in "$@"; do
  case "$arg" in "$BLOCK_ON") exec sleep 600 ;; esac
done
case "$*" in
  *--is-inside-work-tree*) echo true ;;
  *check-ignore*) exit 1 ;;
  *--git-path*) echo .git/info/exclude ;;
esac
"""


@pytest.mark.parametrize("question", ["--is-inside-work-tree", "check-ignore", "--git-path"])
def test_a_git_that_blocks_is_a_finding_for_its_checkout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, question: str) -> None:
    """``doctor`` died with a ``TimeoutExpired`` traceback when a git call blocked (only
    the first question was guarded): each question has a time limit, and a git that does
    not answer is a warning for that checkout; every other check still runs."""
    import aikito_mem.world.git

    bin_dir = tmp_path / "bin"
    executable(bin_dir, "git", FAKE_GIT)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BLOCK_ON", question)
    monkeypatch.setattr(aikito_mem.world.git, "GIT_TIMEOUT", 0.2)
    co = tmp_path / "co"
    co.mkdir()
    ws = make_ws(tmp_path, [co])
    res = doctor(ws, "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    [check] = [c for c in d["checks"] if c["id"] == "git.ignore"]
    assert check["status"] == "warning"
    assert "did not answer within 0.2 s" in check["message"]
    assert question in check["message"] and str(co) in check["message"]
    assert {"workspace.source", "memory.root", "project.config", "notes.dir"} <= {
        c["id"] for c in d["checks"]}
    text = doctor(ws)
    assert "git did not answer" in text.stdout and "Traceback" not in text.output


def test_a_checkout_path_the_system_refuses_is_a_config_error_of_its_project(
        tmp_path: Path) -> None:
    """A NUL in a ``paths`` entry: that project's ``project.config`` is an error; the other
    projects are checked as usual."""
    ws = make_ws(tmp_path)
    (ws / "projects" / "nul").mkdir()
    (ws / "projects" / "nul" / "agent.toml").write_text('paths = ["/srv/a\\u0000b"]\n')
    report = run(str(ws))
    configs = {c.project: c for c in checks(report, "project.config")}
    assert configs["nul"].status == "error"
    assert configs["demo"].status == "ok"
    assert report.exit_code == 1
    res = doctor(ws, "--json")
    assert res.exit_code == 1 and json.loads(res.stdout)["error"] is None


def test_checkout_paths_that_cannot_be_examined_are_an_error_of_their_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever stops the examination of one project's checkouts (a path the system
    refuses) is that project's ``project.config`` error; doctor goes on."""
    import aikito_mem.world.checkouts

    ws = make_ws(tmp_path)
    (ws / "projects" / "odd").mkdir()
    (ws / "projects" / "odd" / "agent.toml").write_text("paths = []\n")
    real = aikito_mem.world.checkouts.slots

    def slots(config: Any, *args: Any, **kwargs: Any) -> Any:
        if config.name == "odd":
            raise ValueError("embedded null byte")
        return real(config, *args, **kwargs)

    monkeypatch.setattr(aikito_mem.world.checkouts, "slots", slots)
    report = run(str(ws))
    configs = {c.project: c for c in checks(report, "project.config")}
    assert configs["odd"].status == "error" and "embedded null byte" in configs["odd"].message
    assert configs["demo"].status == "ok"
    assert report.exit_code == 1


# ------------------------------------------------------------------------- doctor --fix


def repo_and_worktree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A git repository, a second checkout of it (``git worktree add``), and a workspace
    registering both; returns (repo, worktree, workspace)."""
    repo, wt = tmp_path / "repo", tmp_path / "wt"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "README").write_text("r\n")
    git("add", "README", cwd=repo)
    git("commit", "-q", "-m", "init", cwd=repo)
    git("worktree", "add", "-q", str(wt), cwd=repo)
    return repo, wt, make_ws(tmp_path, [repo, wt])


def porcelain(checkout: Path) -> list[str]:
    proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          cwd=checkout, capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_fix_appends_each_line_once_per_repository(tmp_path: Path) -> None:
    repo, wt, ws = repo_and_worktree(tmp_path)
    exclude = repo.resolve() / ".git" / "info" / "exclude"
    original = exclude.read_bytes()
    res = doctor(ws, "--fix")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1] == (
        f"fixed    git.ignore        added /.agents/memory/ and /.agents/skills/ to {exclude} "
        "(read by 2 checkouts)")
    assert res.stdout.splitlines()[-1] == "doctor: 6 ok, 0 warnings, 0 errors; 1 fix applied"
    data = exclude.read_bytes()
    assert data.startswith(original)  # the lines before are untouched
    assert data[len(original):] == (
        BEGIN.encode() + b"\n/.agents/memory/\n/.agents/skills/\n# <<< aikito\n")
    assert [c.status for c in checks(run(str(ws)), "git.ignore")] == ["ok", "ok"]
    # Idempotent: a second --fix finds nothing to do and writes nothing.
    again = doctor(ws, "--fix")
    assert again.stdout.splitlines()[-1] == "doctor: 6 ok, 0 warnings, 0 errors; nothing to fix"
    assert exclude.read_bytes() == data
    # After a sync, git status shows nothing under .agents/ in either checkout.
    from aikito_mem.api import Project

    (ws / "memory" / "style.md").write_text("s\n")
    Project.load("demo", str(ws)).sync()
    assert os.path.islink(repo / ".agents" / "memory" / "style.md")
    assert os.path.islink(wt / ".agents" / "memory" / "style.md")
    for checkout in (repo, wt):
        assert not [line for line in porcelain(checkout) if ".agents/" in line]
    assert data.count(b"/.agents/memory/\n") == data.count(b"/.agents/skills/\n") == 1


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_without_fix_git_status_shows_the_links(tmp_path: Path) -> None:
    """The reason for the fix: after a sync, an unignored runtime tree is untracked."""
    repo, _wt, ws = repo_and_worktree(tmp_path)
    from aikito_mem.api import Project

    Project.load("demo", str(ws)).sync()
    assert "?? .agents/memory/style.md" in porcelain(repo)


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_fix_dry_run_writes_nothing(tmp_path: Path) -> None:
    repo, _wt, ws = repo_and_worktree(tmp_path)
    exclude = repo.resolve() / ".git" / "info" / "exclude"
    before = snapshot(tmp_path)
    res = doctor(ws, "--fix", "--dry-run")
    assert res.exit_code == 0
    assert res.stdout.splitlines()[1] == (
        f"to fix   git.ignore        would add /.agents/memory/ and /.agents/skills/ to "
        f"{exclude} (read by 2 checkouts)")
    assert res.stdout.splitlines()[-1] == (
        "doctor: 4 ok, 2 warnings, 0 errors; 1 fix to apply (--dry-run)")
    doc = json.loads(doctor(ws, "--fix", "--dry-run", "--json").stdout)
    assert (doc["fix"], doc["dry_run"]) == (True, True)
    assert doc["fixes"] == [{
        "id": "git.ignore", "status": "planned",
        "message": f"would add /.agents/memory/ and /.agents/skills/ to {exclude} "
                   "(read by 2 checkouts)",
        "path": str(exclude), "lines": ["/.agents/memory/", "/.agents/skills/"], "removed": [],
        "checkouts": [str(repo.resolve()), str((tmp_path / "wt").resolve())],
        "error": None}]
    assert snapshot(tmp_path) == before
    plain = json.loads(doctor(ws, "--json").stdout)
    assert (plain["fix"], plain["dry_run"], plain["fixes"]) == (False, False, [])
    assert snapshot(tmp_path) == before


def test_dry_run_without_fix_is_a_usage_error(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    res = doctor(ws, "--dry-run")
    assert res.exit_code == 2
    assert "--dry-run goes with --fix" in res.stderr


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_fix_appends_only_what_is_missing_after_a_last_line_without_newline(
        tmp_path: Path) -> None:
    repo, _wt, ws = repo_and_worktree(tmp_path)
    exclude = repo.resolve() / ".git" / "info" / "exclude"
    exclude.write_bytes(b"*.log\n.agents/memory/\n# mine, no newline")
    assert doctor(ws, "--fix").exit_code == 0
    # .agents/memory/ (an earlier version's line, outside any block) counts as present.
    assert exclude.read_bytes() == (
        b"*.log\n.agents/memory/\n# mine, no newline\n"
        + BEGIN.encode() + b"\n/.agents/skills/\n# <<< aikito\n")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_fix_creates_a_missing_exclude_file_and_info_directory(tmp_path: Path) -> None:
    repo, _wt, ws = repo_and_worktree(tmp_path)
    info = repo.resolve() / ".git" / "info"
    (info / "exclude").unlink()
    info.rmdir()
    assert doctor(ws, "--fix").exit_code == 0
    assert (info / "exclude").read_text().splitlines()[1:] == [
        "/.agents/memory/", "/.agents/skills/", "# <<< aikito"]
    assert oct((info / "exclude").stat().st_mode & 0o777) == oct(0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
@pytest.mark.parametrize("where", ["exclude", "info"])
def test_fix_never_writes_through_a_symlink(tmp_path: Path, where: str) -> None:
    """An exclude file (or ``info`` directory) that is a symlink is refused: the fix
    fails (exit 1) and the file it points to is unchanged."""
    repo, _wt, ws = repo_and_worktree(tmp_path)
    info = repo.resolve() / ".git" / "info"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "exclude").write_text("precious\n")
    if where == "exclude":
        (info / "exclude").unlink()
        (info / "exclude").symlink_to(elsewhere / "exclude")
    else:
        (info / "exclude").unlink()
        info.rmdir()
        info.symlink_to(elsewhere)
    before = snapshot(elsewhere)
    res = doctor(ws, "--fix", "--json")
    assert res.exit_code == 1
    [fix] = json.loads(res.stdout)["fixes"]
    assert fix["status"] == "failed"
    assert "symlink; aikito never writes through one" in fix["error"]
    assert snapshot(elsewhere) == before
    text = doctor(ws, "--fix")
    assert text.stdout.splitlines()[1].startswith(
        f"failed   git.ignore        could not add /.agents/memory/ and /.agents/skills/ to "
        f"{info / 'exclude'}: ")
    assert text.stdout.splitlines()[-1].endswith("; 1 fix failed")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_fix_refuses_an_exclude_file_that_is_not_a_regular_file(tmp_path: Path,
                                                                 kind: str) -> None:
    """A FIFO (git itself blocks on one: doctor reports that git did not answer) or a
    directory at ``info/exclude`` is refused at once (non-blocking open), never written."""
    from aikito_mem.commands.doctor.git import Fix, apply_fix

    info = tmp_path / "info"
    info.mkdir()
    exclude = info / "exclude"
    if kind == "fifo":
        os.mkfifo(exclude)
    else:
        exclude.mkdir()
    fixed = apply_fix(Fix(str(exclude), (".agents/memory/",), ("/co",)))
    assert fixed.status == "failed"
    assert fixed.error is not None
    assert "not a regular file" in fixed.error
    assert fixed.message.startswith(f"could not add .agents/memory/ to {exclude}: ")


def test_fix_adds_only_the_lines_still_missing_when_it_writes(tmp_path: Path) -> None:
    """The file is read again through the ``info`` descriptor that writes: a line
    written since the fix was planned (another doctor, the user) is not added twice."""
    from aikito_mem.commands.doctor.git import Fix, apply_fix

    (tmp_path / "info").mkdir()
    exclude = tmp_path / "info" / "exclude"
    exclude.write_text("/.agents/memory/\n")
    fix = Fix(str(exclude), ("/.agents/memory/", "/.agents/skills/"), ("/co",))
    done = apply_fix(fix)
    assert (done.status, done.lines) == ("applied", ("/.agents/skills/",))
    assert done.message == f"added /.agents/skills/ to {exclude}"
    assert exclude.read_text() == f"/.agents/memory/\n{BEGIN}\n/.agents/skills/\n# <<< aikito\n"
    again = apply_fix(fix)  # nothing left to add: nothing written
    assert again.status == "unchanged"
    assert again.message == f"{exclude} lists /.agents/memory/ and /.agents/skills/ already"
    assert exclude.read_text() == f"/.agents/memory/\n{BEGIN}\n/.agents/skills/\n# <<< aikito\n"


def test_fix_writes_nothing_after_a_signal(tmp_path: Path) -> None:
    """[E5]: no write starts after a signal was received."""
    import signal

    from aikito_mem import signals
    from aikito_mem.commands.doctor.git import Fix, apply_fix
    from aikito_mem.errors import InterruptedError_

    info = tmp_path / "info"
    exclude = info / "exclude"
    with signals.installed():
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(InterruptedError_):
            apply_fix(Fix(str(exclude), (".agents/memory/",), ("/co",)))
    assert not info.exists()  # not even the directory was created


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_gitignore_that_re_includes_is_reported_not_appended_again(tmp_path: Path) -> None:
    repo, wt, ws = repo_and_worktree(tmp_path)
    exclude = repo.resolve() / ".git" / "info" / "exclude"
    assert doctor(ws, "--fix").exit_code == 0
    data = exclude.read_bytes()
    (repo / ".gitignore").write_text("!.agents/skills/\n")
    res = doctor(ws, "--fix", "--json")
    doc = json.loads(res.stdout)
    assert doc["fixes"] == [] and exclude.read_bytes() == data
    [repo_check] = [c for c in doc["checks"]
                    if c["id"] == "git.ignore" and str(repo.resolve()) in c["message"]]
    assert repo_check["status"] == "warning"
    assert "although" in repo_check["message"] and "re-includes" in repo_check["message"]
    assert [c["status"] for c in doc["checks"] if c["id"] == "git.ignore"
            and str(wt.resolve()) in c["message"]] == ["ok"]
