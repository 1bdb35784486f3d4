"""[E5] An ``aikito adopt`` SIGKILLed between its steps converges when run again, for each
kind adopt takes ([L5]): a memory file, a memory directory (below a directory the move
created), a skill at ``.agents/skills/NAME``, a skill in an agent's own skills directory
([N1]), an instruction file.

A real process is killed just before the ``agent.toml`` edit (after the move) and just
before the link (after the edit).  Either way the content exists exactly once, whole, at
its destination in the workspace, and TARGET is absent.  The same ``aikito adopt TARGET``
then finishes what the killed run would have done — the name listed through the one
compare-and-swap writer, TARGET linked back, nothing moved (``method`` ``resume``); once
the name is listed, ``aikito sync project`` links it back too.  A TARGET that is absent
for any other reason is still ``adopt.missing``, and the resume is refused as stale when
its destination is replaced between the checks ([H2])."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from aikito_mem.commands.adopt import run as adopt_run
from tests.helpers.adopt import CLAUDE_SKILLS, CODEX, adopt_json, adopt_world, killed_at
from tests.helpers.cli import invoke
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

MARK = "adopted-once-7f3c"
CONFIG = 'paths = [{co}]\nmemory = ["style.md"]\nskills = ["base"]\n'
@attrs.frozen
class Kind:
    """One kind of TARGET: where it is in the checkout, what it holds (path relative to
    it → text), its destination relative to the workspace, the ``agent.toml`` list."""

    rel: str
    files: dict[str, str]
    destination: str
    key: str | None
    ref: str


KINDS = {
    "memory-file": Kind(".agents/memory/g.md", {"": f"g {MARK}\n"}, "memory/g.md",
                        "memory", "g.md"),
    "memory-dir": Kind(".agents/memory/deep/kb", {"a.md": f"a {MARK}\n",
                                                  "sub/b.md": f"b {MARK}\n"},
                       "memory/deep/kb", "memory", "deep/kb"),
    "skill": Kind(".agents/skills/review", {"SKILL.md": f"# review {MARK}\n",
                                            "scripts/run.sh": f"echo {MARK}\n"},
                  "skills/review", "skills", "review"),
    "agent-skill": Kind(".claude/skills/review", {"SKILL.md": f"# review {MARK}\n"},
                        "skills/review", "skills", "review"),
    "instructions": Kind("AGENTS.md", {"": f"# instructions {MARK}\n"},
                         "projects/demo/AGENTS.md", None, "AGENTS.md"),
}


@pytest.fixture
def world(ws: WS) -> tuple[WS, Path]:
    """Project ``demo`` (memory ``style.md``, skill ``base``, synced) with checkout ``co``;
    agents codex (``AGENTS.md``) and claude-code (``.claude/CLAUDE.md``,
    ``.claude/skills``, detected)."""
    ws.add_file("style.md", "style\n")
    co = adopt_world(ws, CONFIG, {"codex": CODEX, "claude-code": CLAUDE_SKILLS})
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    return ws, co


def make(co: Path, kind: Kind) -> Path:
    target = co / kind.rel
    for rel, text in kind.files.items():
        path = target / rel if rel else target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return target


def copies(base: Path) -> list[str]:
    """Every regular file below ``base`` (never through a symlink) holding the mark."""
    found = []
    for top, _dirs, names in os.walk(base):
        for name in names:
            path = Path(top, name)
            if path.is_file() and not path.is_symlink() and MARK in path.read_text():
                found.append(path.read_text())
    return sorted(found)


def once(ws: WS, kind: Kind, target: Path) -> None:
    """The content exists exactly once, whole, at its destination; TARGET holds none."""
    assert copies(ws.base) == sorted(kind.files.values())
    dest = Path(ws.root, kind.destination)
    for rel, text in kind.files.items():
        assert (dest / rel if rel else dest).read_text() == text
    assert not target.exists() or target.is_symlink()


def listed(ws: WS, kind: Kind) -> bool:
    if kind.key is None:
        return True
    with open(ws.config_path("demo"), "rb") as f:
        return kind.ref in tomllib.load(f).get(kind.key, [])


def linked(ws: WS, kind: Kind, target: Path, co: Path) -> None:
    dest = f"{ws.root}/{kind.destination}"
    assert os.readlink(target) == dest
    if kind.key is None:  # every instruction target of the checkout
        assert os.readlink(co / ".claude/CLAUDE.md") == dest


@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.parametrize("step", ["register", "link"])
def test_a_kill_mid_adopt_and_the_same_adopt_again_finishes_it(
    world: tuple[WS, Path], name: str, step: str
) -> None:
    ws, co = world
    kind = KINDS[name]
    target = make(co, kind)
    killed_at(ws, target, step)
    assert not os.path.lexists(target)
    once(ws, kind, target)
    assert listed(ws, kind) is (step == "link" or kind.key is None)
    rc, doc = adopt_json(ws, target)
    assert (rc, doc["contract_version"], doc["outcome"], doc["method"], doc["segment"]) == (
        0, 4, "adopted", "resume", "memory" if name.startswith("memory") else
        "instructions" if kind.key is None else "skills"), doc
    register = "applied" if step == "register" and kind.key is not None else "skipped"
    assert [s["status"] for s in doc["steps"]] == ["skipped", register, "applied"], doc
    assert "an adopt stopped after its move" in doc["steps"][0]["detail"]
    assert doc["content_at"] == f"{ws.root}/{kind.destination}"
    assert listed(ws, kind)
    linked(ws, kind, target, co)
    once(ws, kind, target)
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    linked(ws, kind, target, co)
    once(ws, kind, target)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_kill_after_the_edit_and_a_sync_links_it(world: tuple[WS, Path], name: str) -> None:
    """Listed, TARGET missing: the next ``aikito sync project`` links it."""
    ws, co = world
    kind = KINDS[name]
    target = make(co, kind)
    killed_at(ws, target, "link")
    assert listed(ws, kind) and not os.path.lexists(target)
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    linked(ws, kind, target, co)
    once(ws, kind, target)


def test_the_resume_in_a_dry_run_and_in_text(world: tuple[WS, Path]) -> None:
    """The dry run names the resume and writes nothing; the text says the content is
    already there."""
    ws, co = world
    kind = KINDS["skill"]
    target = make(co, kind)
    killed_at(ws, target, "register")
    before = snapshot(ws.base, ws.home)
    rc, doc = adopt_json(ws, target, "--dry-run")
    assert (rc, doc["outcome"], doc["method"]) == (0, "planned", "resume"), doc
    assert [s["status"] for s in doc["steps"]] == ["skipped", "planned", "planned"]
    assert changed(before, snapshot(ws.base, ws.home)) == set()
    res = invoke("--workspace", ws.root, "adopt", str(target))
    assert res.exit_code == 0, res.output
    assert "already there, moved by an adopt that was stopped" in res.stdout
    assert "[skipped]" in res.stdout and "done: review adopted" in res.stdout


def _missing(ws: WS, target: Path) -> None:
    before = snapshot(ws.base, ws.home)
    for args in (("--dry-run",), ()):
        rc, doc = adopt_json(ws, target, *args)
        assert (rc, doc["error"]["code"]) == (1, "adopt.missing"), doc
        assert [s["status"] for s in doc["steps"]] == ["not_applied"] * 3
    assert changed(before, snapshot(ws.base, ws.home)) == set()


@pytest.mark.parametrize("name", sorted(KINDS))
def test_absent_everywhere_is_still_nothing_to_adopt(world: tuple[WS, Path],
                                                     name: str) -> None:
    ws, co = world
    _missing(ws, co / KINDS[name].rel)


@pytest.mark.parametrize("how", ["symlink", "memory-symlink", "file-for-a-skill",
                                 "empty-instructions", "symlinked-instructions",
                                 "not-a-place", "no-parent"])
def test_what_no_adopt_left_is_never_resumed(world: tuple[WS, Path], tmp_path: Path,
                                             how: str) -> None:
    """The resume takes only a real entry of the destination's kind, never a symlink (a
    directory for a skill, a file or a directory for memory, an instruction file with
    content), for a place adopt takes whose directories exist: else ``adopt.missing``,
    nothing written."""
    ws, co = world
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "SKILL.md").write_text("mine\n")
    target = co / ".agents/skills/review"
    if how == "symlink":
        os.symlink(elsewhere, f"{ws.root}/skills/review")
    elif how == "memory-symlink":
        os.symlink(elsewhere / "SKILL.md", ws.memory_path("g.md"))
        target = co / ".agents/memory/g.md"
    elif how == "symlinked-instructions":
        Path(ws.root, "projects/demo/real.md").write_text("# mine\n")
        os.symlink("real.md", f"{ws.root}/projects/demo/AGENTS.md")
        target = co / "AGENTS.md"
    elif how == "file-for-a-skill":
        Path(ws.root, "skills/review").write_text("a file\n")
    elif how == "empty-instructions":
        Path(ws.root, "projects/demo/AGENTS.md").write_text("")
        target = co / "AGENTS.md"
    elif how == "not-a-place":
        os.makedirs(f"{ws.root}/memory/x")
        (co / ".agents/other").mkdir()
        target = co / ".agents/other/x"
    else:
        os.makedirs(f"{ws.root}/memory/deep/kb")
        target = co / ".agents/memory/deep/kb"
    _missing(ws, target)


def test_a_destination_replaced_between_the_checks_is_stale(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """[H2] The resume's destination is checked by identity under the lock: another
    directory put there after the first check is never listed nor linked (exit 3)."""
    from aikito_mem.executor import lock

    ws, co = world
    kind = KINDS["skill"]
    target = make(co, kind)
    killed_at(ws, target, "register")
    cfg = Path(ws.config_path("demo")).read_bytes()
    dest = Path(ws.root, kind.destination)
    real = lock.Locks.acquire

    def swapped(self: Any, *a: Any) -> Any:
        os.rename(dest, ws.base / "away")
        dest.mkdir()
        (dest / "SKILL.md").write_text("another\n")
        return real(self, *a)

    monkeypatch.setattr(lock.Locks, "acquire", swapped)
    rc, doc = adopt_json(ws, target)
    assert (rc, doc["outcome"], doc["error"]["code"]) == (3, "stale", "adopt.stale"), doc
    assert Path(ws.config_path("demo")).read_bytes() == cfg
    assert not os.path.lexists(target)


def test_a_failed_link_of_a_resume_leaves_the_content_where_it_was(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The link fails after the edit: the name is taken off the list again and the
    content stays at its destination (it was there before this run: never moved)."""
    ws, co = world
    kind = KINDS["memory-dir"]
    target = make(co, kind)
    killed_at(ws, target, "register")
    cfg = Path(ws.config_path("demo")).read_bytes()

    def fails(*a: Any) -> Callable[[], None]:
        raise OSError(5, "Input/output error", str(target))

    monkeypatch.setattr(adopt_run._Run, "link", fails)
    rc, doc = adopt_json(ws, target)
    assert (rc, doc["outcome"], doc["error"]["code"]) == (5, "failed", "adopt.link_failed"), doc
    assert [s["status"] for s in doc["steps"]] == ["skipped", "undone", "failed"]
    assert doc["content_at"] == f"{ws.root}/{kind.destination}"
    assert "the content stays at" in doc["error"]["message"]
    assert Path(ws.config_path("demo")).read_bytes() == cfg
    assert not os.path.lexists(target)
    once(ws, kind, target)
