"""[L2] git excludes for every segment: ``doctor`` lists each runtime path git neither
ignores nor tracks, ``doctor --fix`` writes anchored patterns into one marked block of
the exclude file ``git rev-parse --git-path info/exclude`` names — real repositories,
linked worktrees, ``--separate-git-dir``, a checkout in a subdirectory, tracked files
under a runtime directory; the block's rewrite as a pure function and a property."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aikito_mem.commands.doctor.git import BEGIN, END, anchored, normalised, rewrite
from tests.helpers.cli import invoke
from tests.helpers.gitrepo import git, init_repo, needs_git, status
from tests.helpers.workspace import WS

CLAUDE = '[agents.claude]\nproject_instruction_path = ".claude/CLAUDE.md"\n'
CODEX = '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n'


def world(ws: WS, files: dict[str, str] | None = None, *, skills: tuple[str, ...] = (
        "lint",), name: str = "repo") -> str:
    """A workspace linking memory, skills and instructions (``AGENTS.md`` and
    ``.claude/CLAUDE.md``) into one repository checkout with ``files`` committed."""
    for skill in ("lint", "review"):
        ws.add_skill(skill)
    ws.add_agent("claude", CLAUDE)
    ws.add_agent("codex", CODEX)
    ws.write_instructions("demo", "# the workspace's instructions\n")
    ws.add_file("style.md", "s\n")
    co = init_repo(f"{ws.checkouts_dir}/{name}", {"README": "r\n", **(files or {})})
    os.makedirs(f"{co}/.claude", exist_ok=True)
    ws.write_config("demo", memory=["style.md"], paths=[co], skills=list(skills))
    return co


def doctor(ws: WS, *args: str) -> dict[str, object]:
    res = invoke("--workspace", ws.root, "doctor", "--json", *args)
    doc = json.loads(res.stdout)
    assert isinstance(doc, dict)
    return doc


def git_checks(doc: dict[str, object]) -> list[dict[str, str]]:
    checks = doc["checks"]
    assert isinstance(checks, list)
    return [c for c in checks if c["id"] == "git.ignore"]


def sync(ws: WS) -> None:
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output


def ignored(co: str, *paths: str) -> set[str]:
    import subprocess

    proc = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=co,
                          capture_output=True, text=True, check=False)
    return set(proc.stdout.splitlines())


# ------------------------------------------------------------------ every segment


@needs_git
def test_every_segment_is_reported_and_fixed_with_anchored_patterns(ws: WS) -> None:
    co = world(ws, {"docs/AGENTS.md": "nested\n", ".agents/AGENTS.md": "the repo's\n"})
    [check] = git_checks(doctor(ws))
    assert check["status"] == "warning"
    assert ("git does not ignore .agents/memory/, .agents/skills/, .claude/CLAUDE.md and "
            "AGENTS.md") in check["message"]
    exclude = f"{co}/.git/info/exclude"
    original = Path(exclude).read_bytes()
    doc = doctor(ws, "--fix")
    [fix] = doc["fixes"]  # type: ignore[misc]
    assert fix["status"] == "applied"
    assert Path(exclude).read_bytes() == original + (
        f"{BEGIN}\n/.agents/memory/\n/.agents/skills/\n/.claude/CLAUDE.md\n/AGENTS.md\n"
        f"{END}\n").encode()
    assert [c["status"] for c in git_checks(doc)] == ["ok"]  # confirmed by check-ignore
    sync(ws)
    assert status(co) == []  # every link of every segment is ignored
    # Anchored: the nested AGENTS.md and the repository's .agents/AGENTS.md are not.
    Path(co, "docs/AGENTS.md").write_text("changed\n")
    Path(co, ".agents/AGENTS.md").write_text("changed\n")
    assert sorted(status(co)) == [" M .agents/AGENTS.md", " M docs/AGENTS.md"]
    assert ignored(co, "docs/AGENTS.md", ".agents/AGENTS.md", "sub/.claude/CLAUDE.md") == set()
    assert not Path(co, ".gitignore").exists()  # never .gitignore
    again = doctor(ws, "--fix")
    assert again["fixes"] == [] and Path(exclude).read_bytes().count(b"/AGENTS.md\n") == 1


@needs_git
def test_tracked_paths_are_never_excluded(ws: WS) -> None:
    """A committed ``AGENTS.md`` is not excluded; a runtime directory holding a committed
    skill is excluded link by link, never as a whole."""
    co = world(ws, {"AGENTS.md": "the repository's\n",
                    ".agents/skills/review/SKILL.md": "committed\n"},
               skills=("lint", "review"))
    sync(ws)
    doc = doctor(ws, "--fix")
    exclude = f"{co}/.git/info/exclude"
    block = Path(exclude).read_text().split(BEGIN + "\n", 1)[1].split(END)[0].splitlines()
    assert block == ["/.agents/memory/", "/.agents/skills/lint", "/.claude/CLAUDE.md"]
    [check] = git_checks(doc)
    assert check["status"] == "ok" and "holds files git tracks" in check["message"]
    assert status(co) == []
    assert ignored(co, "AGENTS.md", ".agents/skills/review/SKILL.md") == set()


@needs_git
def test_the_block_is_rewritten_in_place_when_a_runtime_directory_becomes_tracked(
        ws: WS) -> None:
    co = world(ws, skills=("lint", "review"))
    sync(ws)
    exclude = Path(co, ".git/info/exclude")
    exclude.write_text("# mine\n*.log\n")
    doctor(ws, "--fix")
    with exclude.open("a") as fh:
        fh.write("build/\n")  # the user's line after the block
    # The repository now commits a skill of its own under .agents/skills/.
    Path(co, ".agents/skills/own").mkdir()
    Path(co, ".agents/skills/own/SKILL.md").write_text("own\n")
    git("add", "-f", ".agents/skills/own/SKILL.md", cwd=co)
    git("commit", "-q", "-m", "own skill", cwd=co)
    doc = doctor(ws, "--fix")
    [fix] = doc["fixes"]  # type: ignore[misc]
    assert fix["removed"] == ["/.agents/skills/"]
    assert fix["lines"] == ["/.agents/skills/lint", "/.agents/skills/review"]
    assert exclude.read_text() == (
        f"# mine\n*.log\n{BEGIN}\n/.agents/memory/\n/.claude/CLAUDE.md\n/AGENTS.md\n"
        f"/.agents/skills/lint\n/.agents/skills/review\n{END}\nbuild/\n")
    assert [c["status"] for c in git_checks(doc)] == ["ok"]
    assert status(co) == []


@needs_git
def test_a_users_own_instruction_file_is_not_excluded(ws: WS) -> None:
    """An untracked ``AGENTS.md`` of the user's (a conflict, never linked over) stays
    visible to git: hiding it would hide an uncommitted file."""
    co = world(ws)
    Path(co, "AGENTS.md").write_text("mine, not yet committed\n")
    doctor(ws, "--fix")
    assert "?? AGENTS.md" in status(co)


@needs_git
def test_a_linked_worktree_and_a_separate_git_dir(ws: WS, tmp_path: Path) -> None:
    main = world(ws)
    wt = f"{ws.checkouts_dir}/wt"
    git("worktree", "add", "-q", wt, cwd=main)
    sep = f"{ws.checkouts_dir}/sep"
    os.makedirs(sep)
    git("init", "-q", f"--separate-git-dir={tmp_path}/sep.git", cwd=sep)
    ws.write_config("demo", memory=["style.md"], paths=[main, wt, sep], skills=["lint"])
    doc = doctor(ws, "--fix", "--dry-run")
    paths = sorted(f["path"] for f in doc["fixes"])  # type: ignore[union-attr]
    assert paths == sorted([f"{main}/.git/info/exclude", f"{tmp_path}/sep.git/info/exclude"])
    doctor(ws, "--fix")
    sync(ws)
    for co in (main, wt, sep):
        assert status(co) == [], co


@needs_git
def test_a_checkout_in_a_subdirectory_of_its_repository(ws: WS) -> None:
    top = world(ws, {"svc/README": "svc\n"}, name="mono")
    co = f"{top}/svc"
    ws.write_config("demo", memory=["style.md"], paths=[co], skills=["lint"])
    doctor(ws, "--fix")
    text = Path(top, ".git/info/exclude").read_text()
    assert "/svc/.agents/memory/\n/svc/.agents/skills/\n/svc/AGENTS.md\n" in text
    sync(ws)
    assert status(top) == []
    Path(top, "AGENTS.md").write_text("top's own\n")
    assert "?? AGENTS.md" in status(top)  # not the checkout's: not excluded


# ------------------------------------------------------------------ the block, pure


def test_anchored_patterns() -> None:
    assert anchored("", "AGENTS.md") == "/AGENTS.md"
    assert anchored("svc/", ".agents/memory/") == "/svc/.agents/memory/"
    assert anchored("", "a*b?[c]") == "/a\\*b\\?\\[c]"
    assert normalised(".agents/memory/") == "/.agents/memory/"
    assert normalised("AGENTS.md") == "AGENTS.md"  # unanchored: matches at any depth


def test_rewrite_keeps_every_line_outside_the_block() -> None:
    data = b"# mine\n.agents/memory/\n" + f"{BEGIN}\n/old\n{END}\n".encode() + b"tail\n"
    new = rewrite(data, ["/.agents/memory/", "/AGENTS.md"], drop=["/old"])
    assert new == b"# mine\n.agents/memory/\n" + f"{BEGIN}\n/AGENTS.md\n{END}\n".encode() \
        + b"tail\n"
    assert rewrite(new, ["/AGENTS.md"]) == new  # nothing to do: the same bytes
    assert rewrite(b"no newline", ["/x"]) == f"no newline\n{BEGIN}\n/x\n{END}\n".encode()
    assert rewrite(b"", []) == b""


_LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
_PATTERN = st.sampled_from(["/.agents/memory/", "/.agents/skills/", "/AGENTS.md",
                            "/.claude/CLAUDE.md", "/svc/AGENTS.md"])


@given(st.lists(_LINE, max_size=6), st.lists(_PATTERN, max_size=5),
       st.lists(_PATTERN, max_size=5))
def test_rewrite_properties(outside: list[str], first: list[str], second: list[str]) -> None:
    """Lines outside the block survive in order; a rewrite is idempotent; every wanted
    pattern is present exactly once, however many runs."""
    outside = [line for line in outside if line.strip() not in (BEGIN, END)]
    data = "".join(f"{line}\n" for line in outside).encode()
    once = rewrite(data, first)
    twice = rewrite(once, second)
    assert rewrite(twice, second) == twice
    lines = twice.decode().splitlines()
    if BEGIN in lines:
        i, j = lines.index(BEGIN), lines.index(END)
        assert [*lines[:i], *lines[j + 1:]] == [line for line in data.decode().splitlines()]
        block = lines[i + 1:j]
        assert len(block) == len(set(block))
        present = {normalised(x) for x in lines}
        assert {*first, *second} <= present
    else:
        assert not {*first, *second} - {normalised(x) for x in outside}


def test_a_file_changed_while_being_fixed_is_left_as_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exclude file is read again just before the rename: a line another process
    wrote after the fix read the file is never lost (nothing is written; run again)."""
    from aikito_mem.commands.doctor import git as doctor_git

    info = tmp_path / "info"
    info.mkdir()
    exclude = info / "exclude"
    exclude.write_text("*.log\n")
    real = doctor_git.rewrite

    def racing(data: bytes, wanted: object, drop: object = ()) -> bytes:
        with exclude.open("a") as fh:  # another writer, after the read
            fh.write("theirs/\n")
        return real(data, wanted, drop)  # type: ignore[arg-type]

    monkeypatch.setattr(doctor_git, "rewrite", racing)
    fix = doctor_git.apply_fix(doctor_git.Fix(str(exclude), ("/.agents/memory/",), ("/co",)))
    assert fix.status == "failed" and "changed while being fixed" in (fix.error or "")
    assert exclude.read_text() == "*.log\ntheirs/\n"
    assert os.listdir(info) == ["exclude"]  # no temporary file left
