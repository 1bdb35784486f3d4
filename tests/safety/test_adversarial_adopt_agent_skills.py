"""An adversary's review of ``aikito adopt`` from an agent's own skills directory ([L5]
[N1] [H2]) and of the committed-symlink SKIP ([L1]): every attempt to make adopt move,
overwrite or remove what it does not own — ``.claude`` or ``.claude/skills`` a symlink
(into the workspace, elsewhere, into another checkout), NAME a symlink, hard links,
mounts, nested symlinks, a ``<ws>/skills/NAME`` that is a symlink, registry paths that
leave the checkout, a NAME swapped between the last check and the move, a kill mid-adopt —
ends refused with nothing changed, or adopted with the content existing exactly once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.adopt import CLAUDE_SKILLS as CLAUDE
from tests.helpers.adopt import adopt_json, adopt_world, killed_at, refused
from tests.helpers.adopt import skill_dir as make_skill
from tests.helpers.cli import invoke
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

CONFIG = 'paths = [{co}]\nmemory = []\nskills = ["base"]\n'
@pytest.fixture
def world(ws: WS) -> tuple[WS, Path]:
    """Project ``demo`` (skill ``base``), checkout ``co``; agent claude-code with
    ``.claude/skills``, detected."""
    return ws, adopt_world(ws, CONFIG, {"claude-code": CLAUDE})


# ----------------------------------------------------------------- symlinks on the way


@pytest.mark.parametrize("linked", [".claude", ".agents"])
def test_a_directory_linked_to_another_checkouts_is_refused(
    world: tuple[WS, Path], linked: str
) -> None:
    """``co/.claude`` → ``other/.claude`` (or ``co/.agents`` → ``other/.agents``; another
    registered checkout): the path named ends with the same words as the other
    checkout's, yet is reached through a symlink below the checkout; adopt never takes
    the other checkout's entry through it."""
    ws, co = world
    other = Path(ws.checkout("other"))
    ws.write_config("demo", raw=CONFIG.format(co=f"{json.dumps(str(co))}, "
                                                 f"{json.dumps(str(other))}"))
    if linked == ".claude":
        make_skill(other / ".claude" / "skills")
        rel = ".claude/skills/review"
    else:
        (other / ".agents/memory").mkdir(parents=True)
        (other / ".agents/memory/x.md").write_text("mine\n")
        rel = ".agents/memory/x.md"
    os.symlink(other / linked, co / linked)
    refused(ws, co / rel, "through_symlink")
    rc, doc = adopt_json(ws, other / rel, "--dry-run")  # named as it is: adoptable
    assert rc == 0 and doc["checkout"] == str(other), doc


def test_claude_skills_a_symlink_into_the_workspace_skills_is_unsafe(
    world: tuple[WS, Path]
) -> None:
    """``co/.claude/skills`` → ``<ws>/skills``: ``.claude/skills/base`` is the workspace's
    own ``base`` (exit 4, nothing changed)."""
    ws, co = world
    (co / ".claude").mkdir()
    os.symlink(f"{ws.root}/skills", co / ".claude/skills")
    refused(ws, co / ".claude/skills/base", "in_workspace", 4)


@pytest.mark.parametrize("into", ["elsewhere", "home"])
def test_claude_a_symlink_out_of_the_checkout_is_refused(
    world: tuple[WS, Path], into: str
) -> None:
    """``co/.claude`` → a directory outside every checkout (or ``~/.claude``, the agent's
    user-wide directory): never adopted from there."""
    ws, co = world
    outside = Path(ws.home, ".claude") if into == "home" else ws.base / "elsewhere/.claude"
    make_skill(outside / "skills")
    os.symlink(outside, co / ".claude")
    rc, doc = adopt_json(ws, co / ".claude/skills/review", "--dry-run")
    assert rc == 1 and doc["error"]["code"] in ("adopt.not_registered", "adopt.outside"), doc
    refused(ws, co / ".claude/skills/review", doc["error"]["code"][6:], 1, outside)


def test_name_a_symlink_to_a_real_skill_is_refused(world: tuple[WS, Path]) -> None:
    ws, co = world
    real = make_skill(ws.base / "elsewhere")
    (co / ".claude/skills").mkdir(parents=True)
    os.symlink(real, co / ".claude/skills/review")
    refused(ws, co / ".claude/skills/review", "symlink", 1, real)


def test_a_workspace_skill_that_is_a_symlink_to_target_is_never_an_identical_copy(
    world: tuple[WS, Path]
) -> None:
    """``<ws>/skills/review`` → TARGET itself: the same tree seen twice, never a copy to
    replace TARGET by (refused, TARGET whole)."""
    ws, co = world
    target = make_skill(co / ".claude/skills")
    os.symlink(target, f"{ws.root}/skills/review")
    refused(ws, target, "destination_exists")


def test_a_workspace_skill_bind_mounted_from_target_is_the_same_object(
    world: tuple[WS, Path]
) -> None:
    """[H2]: ``<ws>/skills/review`` a bind mount of TARGET — one directory, two names —
    is never "an identical copy": refused (exit 4) before any removal, TARGET whole."""
    from tests.helpers import mounts

    ws, co = world
    target = make_skill(co / ".claude/skills")
    with mounts.bind(target, f"{ws.root}/skills/review"):
        before = snapshot(target)
        refused(ws, target, "same_object", 4)
        assert snapshot(target) == before
    assert (target / "SKILL.md").read_text() == "# review\n"


# ------------------------------------------------------------------ mounts, hard links


@pytest.mark.parametrize("at", [".claude/skills", ".claude/skills/review/scripts"])
def test_a_bind_mount_on_the_way_or_inside_name_is_unsafe(
    world: tuple[WS, Path], at: str
) -> None:
    """A bind mount at ``.claude/skills`` or inside NAME: what is mounted may be anyone's
    (exit 4, nothing changed)."""
    from tests.helpers import mounts

    ws, co = world
    make_skill(co / ".claude/skills")
    source = ws.base / "mounted"
    (source / "review" / "scripts").mkdir(parents=True)
    (source / "review" / "SKILL.md").write_text("# review\n")
    mount_from = source if at == ".claude/skills" else source / "review" / "scripts"
    with mounts.bind(mount_from, co / at):
        refused(ws, co / ".claude/skills/review", "mount_point", 4)
    assert (source / "review" / "SKILL.md").read_text() == "# review\n"


def test_a_hard_linked_file_and_a_nested_symlink_move_as_they_are(
    world: tuple[WS, Path]
) -> None:
    """A file of NAME hard-linked from outside, and a symlink in NAME to a file outside:
    moved as they are (the same inode, the same literal); what is outside is untouched."""
    ws, co = world
    target = make_skill(co / ".claude/skills")
    outside = ws.base / "outside"
    outside.mkdir()
    (outside / "shared.txt").write_text("shared\n")
    (outside / "secret.txt").write_text("secret\n")
    os.link(outside / "shared.txt", target / "shared.txt")
    os.symlink(outside / "secret.txt", target / "secret")
    ino = os.lstat(outside / "shared.txt").st_ino
    kept = snapshot(outside / "secret.txt")
    rc, doc = adopt_json(ws, target)
    assert rc == 0 and doc["method"] == "rename", doc
    moved = Path(ws.root, "skills/review")
    assert os.lstat(moved / "shared.txt").st_ino == ino
    assert (outside / "shared.txt").read_text() == "shared\n"
    assert os.readlink(moved / "secret") == str(outside / "secret.txt")
    assert snapshot(outside / "secret.txt") == kept
    assert os.readlink(target) == str(moved)


# ------------------------------------------------------------------ races and kills


def _swap_before_move(monkeypatch: pytest.MonkeyPatch, target: Path, away: Path,
                      put: Any) -> None:
    """Just before adopt's move (after its last check, under the lock): NAME renamed to
    ``away`` and ``put()`` makes something new at NAME — once."""
    from aikito_mem.commands.adopt import treemove

    real = treemove.move
    done: list[bool] = []

    def swapped(src: str, dst: str, *rest: Any) -> Any:
        if not done:
            done.append(True)
            os.rename(target, away)
            put()
        return real(src, dst, *rest)

    monkeypatch.setattr(treemove, "move", swapped)


def _directory_swapped_in(ws: WS, co: Path, monkeypatch: pytest.MonkeyPatch
                          ) -> tuple[Path, Path, bytes]:
    """Skill ``review`` in ``.claude/skills``, swapped just before the move (to ``away``)
    for a directory holding ``other.txt``; returns TARGET, ``away`` and the ``agent.toml``
    bytes before."""
    target = make_skill(co / ".claude/skills")
    away = ws.base / "away"
    cfg = Path(ws.config_path("demo")).read_bytes()

    def other() -> None:
        target.mkdir()
        (target / "other.txt").write_text("other\n")

    _swap_before_move(monkeypatch, target, away, other)
    return target, away, cfg


def test_name_swapped_for_a_symlink_before_the_move_loses_nothing(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """NAME swapped for a symlink to the user's directory between the last check and the
    move: the link is refused, the symlink moved back where it was, nothing listed; the
    user's directory and the real NAME untouched."""
    ws, co = world
    target = make_skill(co / ".claude/skills")
    mine = ws.base / "mine"
    mine.mkdir()
    (mine / "data.txt").write_text("mine\n")
    away = ws.base / "away"
    kept = snapshot(mine)
    cfg = Path(ws.config_path("demo")).read_bytes()
    _swap_before_move(monkeypatch, target, away, lambda: os.symlink(mine, target))
    rc, doc = adopt_json(ws, target)
    assert rc == 3 and doc["outcome"] == "stale", doc
    assert os.readlink(target) == str(mine)
    assert not os.path.lexists(f"{ws.root}/skills/review")
    assert snapshot(mine) == kept and (away / "SKILL.md").read_text() == "# review\n"
    assert Path(ws.config_path("demo")).read_bytes() == cfg


def test_name_swapped_for_another_directory_before_the_move_is_stale(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """[H2] A directory swapped in at NAME after the last identity check: the rename (by
    path) moves it, the moved entry's (st_dev, st_ino) is not the one checked, so it is
    renamed back and the run refused as stale (exit 3) — nothing listed, nothing in the
    workspace, the examined directory untouched where it was put."""
    ws, co = world
    target, away, cfg = _directory_swapped_in(ws, co, monkeypatch)
    rc, doc = adopt_json(ws, target)
    assert (rc, doc["outcome"], doc["error"]["code"]) == (3, "stale", "adopt.stale"), doc
    assert "another entry than the one examined" in doc["error"]["message"]
    assert [s["status"] for s in doc["steps"]] == ["failed", "not_applied", "not_applied"]
    assert doc["content_at"] == str(target)
    assert sorted(os.listdir(target)) == ["other.txt"] and not os.path.islink(target)
    assert not os.path.lexists(f"{ws.root}/skills/review")
    assert (away / "SKILL.md").read_text() == "# review\n"
    assert Path(ws.config_path("demo")).read_bytes() == cfg


def test_a_swapped_entry_is_never_moved_back_over_a_new_one(
    world: tuple[WS, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swapped-in directory was moved, and NAME is taken again before it can be moved
    back: the rename back (no-replace) never goes over it, even empty; stale (exit 3,
    ``partial``), each of the three directories once, nothing listed, the report names
    where."""
    from aikito_mem import fsutil
    from aikito_mem.commands.adopt import treemove

    ws, co = world
    target, away, cfg = _directory_swapped_in(ws, co, monkeypatch)
    real = fsutil.rename_noreplace

    def retaken(src: str, dst: str, **kw: Any) -> None:
        real(src, dst, **kw)
        if src == str(target):
            target.mkdir()  # empty: a plain rename would go over it

    monkeypatch.setattr(treemove.fsutil, "rename_noreplace", retaken)
    rc, doc = adopt_json(ws, target)
    moved = Path(ws.root, "skills/review")
    assert (rc, doc["outcome"], doc["error"]["code"]) == (3, "partial", "adopt.stale"), doc
    assert doc["content_at"] == str(moved)
    assert "it could not be moved back" in doc["error"]["message"]
    assert os.listdir(target) == [] and not os.path.islink(target)
    assert sorted(os.listdir(moved)) == ["other.txt"]
    assert (away / "SKILL.md").read_text() == "# review\n"
    assert Path(ws.config_path("demo")).read_bytes() == cfg


@pytest.mark.parametrize("step", ["register", "link"])
def test_sigkill_mid_adopt_keeps_the_content_once_and_a_sync_converges(
    world: tuple[WS, Path], step: str
) -> None:
    """SIGKILL just before the ``agent.toml`` edit, or just before the link: the skill's
    content exists exactly once, complete, at ``<ws>/skills/NAME``; TARGET is absent
    (never a half-moved tree).  Not listed (the kill before the edit), the same adopt
    again lists it and links it back; listed, a sync links it back: the checkout
    converges."""
    ws, co = world
    target = make_skill(co / ".claude/skills")
    killed_at(ws, target, step)
    moved = Path(ws.root, "skills/review")
    assert not os.path.lexists(target)
    assert sorted(p.name for p in moved.rglob("*")) == ["SKILL.md", "run.sh", "scripts"]
    assert (moved / "SKILL.md").read_text() == "# review\n"
    listed = '"review"' in Path(ws.config_path("demo")).read_text()
    assert listed is (step == "link")
    if not listed:  # [E5] the same adopt again finishes it (tests/safety/test_adopt_recovery.py)
        rc, doc = adopt_json(ws, target)
        assert (rc, doc["outcome"], doc["method"]) == (0, "adopted", "resume"), doc
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 0, res.output
    assert os.readlink(target) == str(moved)
    assert sorted(p.name for p in moved.rglob("*")) == ["SKILL.md", "run.sh", "scripts"]


# ------------------------------------------------------------------ registry files


@pytest.mark.parametrize("skills_path", ["../skills", "/abs/skills", ".git/skills",
                                         "a/.GIT/skills", ".Agents/skills"])
def test_a_registry_path_out_of_the_checkout_or_into_git_is_a_configuration_error(
    world: tuple[WS, Path], skills_path: str
) -> None:
    """``project_skills_path`` that leaves the checkout, is absolute, or names ``.git`` /
    ``.agents`` in any case: adopt of a directory there is a configuration error naming
    the registry file (exit 4) — or, outside the checkout, not a place adopt takes
    (exit 1); nothing moved."""
    ws, co = world
    ws.add_agent("evil", f'[agents.evil]\nproject_skills_path = "{skills_path}"\n')
    where = co / skills_path.lstrip("/") if not skills_path.startswith("/") else \
        co / "abs/skills"
    target = make_skill(where)
    before = snapshot(ws.base)
    for args in (("--dry-run",), ()):
        rc, doc = adopt_json(ws, target, *args)
        if skills_path.startswith(".."):  # not in any checkout: not a place adopt takes
            assert (rc, doc["error"]["code"]) == (1, "adopt.outside"), doc["error"]
            continue
        assert rc == 4 and "agents/evil.toml" in doc["error"]["message"], doc["error"]
        assert "project_skills_path" in doc["error"]["message"]
    assert changed(before, snapshot(ws.base)) == set()


def test_two_registry_files_with_nested_skills_directories_are_a_configuration_error(
    world: tuple[WS, Path]
) -> None:
    """Agent ``other`` names ``.claude``, which holds claude-code's ``.claude/skills``:
    which agent's skill ``.claude/skills/review`` is, is undecidable — exit 4, nothing
    moved."""
    ws, co = world
    ws.add_agent("other", '[agents.other]\nproject_skills_path = ".claude"\n')
    target = make_skill(co / ".claude/skills")
    before = snapshot(ws.base)
    rc, doc = adopt_json(ws, target)
    assert rc == 4 and "project_skills_path" in doc["error"]["message"], doc
    assert changed(before, snapshot(ws.base)) == set()
