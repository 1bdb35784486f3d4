"""``aikito clean`` at the edges of a link's life ([L8], [L4], [L3]): a runtime directory
that is a mount point is kept and said so (exit 0, a second clean is a NOOP) where its
``rmdir`` ended in EBUSY, exit 5, for ever; a killed relink's leftover at
``.NAME.aikito-relink`` is removed and listed (a foreign entry there is kept, a
finding); ``clean --moved-from OLD`` owns the links into the old root; an empty PATH or
NAME is a usage error, never the current directory.

Pure planner cells first, then real checkouts (real tmpfs and bind mounts as root,
skipped with the reason otherwise; unmounted in ``finally``), foreign entries asserted
byte- and inode-identical afterwards, the dry run and the real run agreeing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aikito_mem.commands.clean import Cleaner
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.layout import relink_name
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutState,
    Kind,
    Observed,
    PlannedTarget,
    SegmentName,
)
from aikito_mem.planner.clean import build_clean_plan, owner, place
from aikito_mem.views.clean import CleanCheckout
from tests.helpers import mounts
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

W = "/ws"
CO = "/co"
DIR = Observed(Kind.DIR, None, 1, 2)
FILE = Observed(Kind.FILE, None, 1, 3)
_MEM, _SKILLS, _INSTR = SegmentName.MEMORY, SegmentName.SKILLS, SegmentName.INSTRUCTIONS
TARGETS = ("AGENTS.md", ".claude/CLAUDE.md")


def link(literal: str) -> Observed:
    return Observed(Kind.LINK, literal, 1, 9)


def plan_of(co: CleanCheckout, moved_from: str | None = None,
            skill_dirs: tuple[str, ...] = ()) -> Any:
    return build_clean_plan(workspace=W, workspace_source="option", project="demo",
                            config_path="", checkouts=(co,),
                            targets=tuple(PlannedTarget(t) for t in TARGETS),
                            skill_dirs=tuple(PlannedTarget(d) for d in skill_dirs),
                            moved_from=moved_from)


def removals(plan: Any) -> list[str]:
    return sorted(op.target.removeprefix(f"{CO}/") for op in plan.operations
                  if op.action is Action.UNLINK)


def full(**kw: Any) -> CleanCheckout:
    """A checkout holding only aikito's links, in every segment."""
    base: dict[str, Any] = dict(
        root=DIR, agents=DIR, agents_entries=(("memory", DIR), ("skills", DIR)),
        memory=DIR, memory_entries=(("a.md", link(f"{W}/memory/a.md")),),
        skills=DIR, skills_entries=(("review", link(f"{W}/skills/review")),),
        targets=(("AGENTS.md", link(f"{W}/projects/demo/AGENTS.md")),
                 (".claude/CLAUDE.md", link(f"{W}/projects/demo/AGENTS.md"))),
        parents=((".claude", DIR, ("CLAUDE.md", "skills")),),
        agent_skills=((".claude/skills", DIR,
                       (("review", link(f"{W}/skills/review")),)),),
    )
    base.update(kw)
    return CleanCheckout("1", CO, CheckoutState.ACTIVE, **base)


EVERYTHING = [".agents", ".agents/memory", ".agents/memory/a.md", ".agents/skills",
              ".agents/skills/review", ".claude", ".claude/CLAUDE.md", ".claude/skills",
              ".claude/skills/review", "AGENTS.md"]


# =================================================================== pure: mount points


@pytest.mark.parametrize(("mount", "kept"), [
    (".agents/memory", {".agents/memory", ".agents"}),
    (".agents/skills", {".agents/skills", ".agents"}),
    (".agents", {".agents"}),
    (".claude", {".claude"}),
    (".claude/skills", {".claude/skills", ".claude"}),
])
def test_a_mount_point_is_kept_with_a_finding_and_its_links_removed(mount: str,
                                                                    kept: set[str]) -> None:
    """[L8]: decided in the plan, from what observation found — never by catching the
    ``rmdir``'s EBUSY: the mount point is not pruned (nor, then, the directories above
    it, which it keeps non-empty), aikito's links in it are removed, one warning says so."""
    assert removals(plan_of(full(), skill_dirs=(".claude/skills",))) == EVERYTHING
    plan = plan_of(full(mounts=(mount,)), skill_dirs=(".claude/skills",))
    assert removals(plan) == sorted(set(EVERYTHING) - kept)
    assert not plan.blocked
    found = [(f.code, f.severity, f.path) for f in plan.findings]
    assert found == [("clean.mount_point", "warning", f"{CO}/{mount}")]
    assert "mount point" in plan.findings[0].message


def test_a_second_clean_of_an_empty_mount_point_is_a_noop_that_says_so() -> None:
    co = full(agents_entries=(("memory", DIR),), memory_entries=(), skills=ABSENT,
              skills_entries=(), targets=(), parents=(), agent_skills=(),
              mounts=(".agents/memory",))
    plan = plan_of(co)
    assert plan.operations == () and not plan.has_changes
    assert [f.code for f in plan.findings] == ["clean.mount_point"]


def test_a_mount_point_holding_something_foreign_is_kept_as_any_directory() -> None:
    co = full(memory_entries=(("mine.txt", FILE),), mounts=(".agents/memory",))
    plan = plan_of(co)
    assert ".agents/memory" not in removals(plan)
    assert [f.code for f in plan.findings] == ["clean.foreign_entry"]


# =================================================================== pure: temporary names


@pytest.mark.parametrize(("segment", "rel", "literal", "owned"), [
    (_MEM, relink_name("a.md"), f"{W}/memory/a.md", True),
    (_MEM, f"team/{relink_name('a.md')}", f"{W}/memory/team/a.md", True),
    (_MEM, relink_name("notes"), f"{W}/projects/demo/memory/notes", True),
    (_MEM, relink_name("a.md"), f"{W}/memory/b.md", False),
    (_MEM, relink_name("a.md"), f"{W}/memory/{relink_name('a.md')}", False),
    (_SKILLS, relink_name("review"), f"{W}/skills/review", True),
    (_SKILLS, relink_name("review"), f"{W}/skills/other", False),
    (_INSTR, relink_name("AGENTS.md"), f"{W}/projects/demo/AGENTS.md", True),
    (_INSTR, f".claude/{relink_name('CLAUDE.md')}", f"{W}/projects/demo/AGENTS.md", True),
    (_INSTR, relink_name("AGENTS.md"), "/elsewhere/AGENTS.md", False),
])
def test_a_relink_leftover_is_provably_the_engines(segment: SegmentName, rel: str,
                                                   literal: str, owned: bool) -> None:
    """[L8]: a link at ``.NAME.aikito-relink`` is the engine's exactly when its literal is
    one a link at NAME is owned for — what a relink writes there."""
    link_dir = {_MEM: f"{CO}/.agents/memory", _SKILLS: f"{CO}/.agents/skills",
                _INSTR: CO}[segment]
    if "/" in rel:
        link_dir = f"{link_dir}/{rel.rpartition('/')[0]}"
    assert (owner(segment, rel, literal, link_dir, W, "demo") is not None) is owned


def test_an_instruction_targets_relink_name_is_a_place_clean_looks() -> None:
    targets = frozenset(TARGETS)
    assert place(relink_name("AGENTS.md"), targets) == (_INSTR, relink_name("AGENTS.md"))
    assert place(f".claude/{relink_name('CLAUDE.md')}", targets) is not None
    assert place(relink_name("GEMINI.md"), targets) is None  # no target of the registry


def test_relink_leftovers_are_removed_and_listed_foreign_ones_kept() -> None:
    temp_i = relink_name("AGENTS.md")
    co = full(memory_entries=(("a.md", link(f"{W}/memory/a.md")),
                              (relink_name("a.md"), link(f"{W}/memory/a.md")),
                              (relink_name("b.md"), FILE)),
              skills_entries=((relink_name("review"), link(f"{W}/skills/review")),),
              targets=(("AGENTS.md", link(f"{W}/projects/demo/AGENTS.md")),
                       (temp_i, link(f"{W}/projects/demo/AGENTS.md")),
                       (".claude/CLAUDE.md", ABSENT),
                       (f".claude/{relink_name('CLAUDE.md')}", FILE)),
              parents=((".claude", DIR, (relink_name("CLAUDE.md"),)),), agent_skills=())
    plan = plan_of(co)
    gone = removals(plan)
    for rel in (f".agents/memory/{relink_name('a.md')}", f".agents/skills/"
                f"{relink_name('review')}", temp_i):
        assert rel in gone
        op = next(op for op in plan.operations if op.target == f"{CO}/{rel}")
        assert "interrupted relink" in op.reason
    kept = sorted(f.path.removeprefix(f"{CO}/") for f in plan.findings if f.path)
    assert kept == [f".agents/memory/{relink_name('b.md')}",
                    f".claude/{relink_name('CLAUDE.md')}"]
    assert ".claude" not in gone and ".agents/memory" not in gone


# =================================================================== pure: --moved-from


OLD = "/old-ws"


@pytest.mark.parametrize(("segment", "rel", "literal", "owned"), [
    (_MEM, "a.md", f"{OLD}/memory/a.md", True),
    (_MEM, "team/a.md", f"{OLD}/memory/team/a.md", True),
    (_MEM, "notes", f"{OLD}/projects/demo/memory/notes", True),
    (_MEM, "notes", f"{OLD}/memory/demo/notes", True),
    (_MEM, "a.md", f"{OLD}/memory/b.md", False),
    (_MEM, "a.md", f"{OLD}//memory/a.md", False),
    (_MEM, "a.md", f"{OLD}x/memory/a.md", False),
    (_SKILLS, "review", f"{OLD}/skills/review", True),
    (_INSTR, "AGENTS.md", f"{OLD}/projects/demo/AGENTS.md", True),
    (_INSTR, "AGENTS.md", f"{OLD}/projects/other/AGENTS.md", False),
    (_MEM, "a.md", f"{W}/memory/a.md", True),  # the current workspace's: as before
])
def test_clean_moved_from_owns_the_old_roots_links(segment: SegmentName, rel: str,
                                                   literal: str, owned: bool) -> None:
    link_dir = {_MEM: f"{CO}/.agents/memory", _SKILLS: f"{CO}/.agents/skills",
                _INSTR: CO}[segment]
    assert (owner(segment, rel, literal, link_dir, W, "demo", OLD) is not None) is owned
    if literal.startswith(OLD):
        assert owner(segment, rel, literal, link_dir, W, "demo") is None  # not without


def test_an_old_root_that_is_a_prefix_of_the_workspace_keeps_its_links_owned() -> None:
    """A workspace moved *into* its old root: a current link starts with OLD too."""
    assert owner(_MEM, "a.md", "/x/ws/memory/a.md", f"{CO}/.agents/memory", "/x/ws",
                 "demo", "/x") == "/x/ws/memory/a.md"


# =================================================================== real checkouts


class World:
    """A workspace with every segment synced into a checkout; a foreign file around."""

    def __init__(self, ws: WS) -> None:
        self.ws = ws
        ws.add_file("g.md", "g\n")
        ws.add_skill("review")
        ws.write_instructions("demo", "# be nice\n")
        ws.add_agent("codex", '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n')
        ws.add_agent("claude", '[agents.claude]\nproject_instruction_path = '
                     '".claude/CLAUDE.md"\n[agents.claude.detect]\npaths = [".claude"]\n')
        os.makedirs(f"{ws.home}/.claude", exist_ok=True)
        self.co = ws.checkout("main")
        Path(self.co, "README.md").write_text("the user's own\n")
        ws.write_config("demo", memory=["g.md"], paths=[self.co], skills=["review"])
        assert ws.project("demo").sync().success

    def cleaner(self, **kw: Any) -> Cleaner:
        return Cleaner(resolve_workspace(self.ws.root), "demo", None, **kw)

    def cli(self, *args: str) -> Any:
        return invoke("--workspace", self.ws.root, "clean", *args, catch=True)

    def links(self) -> list[str]:
        return sorted(str(p.relative_to(self.co)) for p in Path(self.co).rglob("*")
                      if p.is_symlink())


@pytest.fixture
def w(ws: WS) -> World:
    return World(ws)


@pytest.mark.parametrize("rel", [".agents/memory", ".agents", ".claude"])
@pytest.mark.parametrize("kind", ["tmpfs", "bind"])
def test_clean_keeps_a_mounted_runtime_directory_and_says_so(w: World, rel: str,
                                                             kind: str) -> None:
    """The issue: ``clean`` ended in EBUSY on its last ``rmdir`` and exited 5 for ever.
    Now: exit 0, aikito's links removed, the mount point kept and named, the dry run
    saying exactly that, and a second clean a NOOP (exit 0)."""
    mounts.need_root()
    where = f"{w.co}/{rel}"
    held = {p: os.readlink(f"{w.co}/{p}") for p in w.links() if p.startswith(f"{rel}/")}
    # A tmpfs hides what was there: the links are made again on it; a bind mount of the
    # directory onto itself keeps its entries.
    context = mounts.tmpfs(where) if kind == "tmpfs" else mounts.bind(where, where)
    with context:
        if kind == "tmpfs":
            for p, literal in held.items():
                os.makedirs(os.path.dirname(f"{w.co}/{p}"), exist_ok=True)
                os.symlink(literal, f"{w.co}/{p}")
        foreign = snapshot(f"{w.co}/README.md")
        dry = w.cli("project", "demo", "--dry-run", "--json")
        assert dry.exit_code == 0, dry.output
        real = w.cli("project", "demo", "--json")
        assert real.exit_code == 0, real.output
        for doc in (one_json(dry.stdout), one_json(real.stdout)):
            assert [f["path"] for f in doc["findings"] if f["code"] == "clean.mount_point"
                    ] == [where]
            assert where not in {op["target"] for op in doc["operations"]}
        assert [op["target"] for op in one_json(dry.stdout)["operations"]] == [
            op["target"] for op in one_json(real.stdout)["operations"]]
        assert w.links() == []
        assert os.path.isdir(where) and os.listdir(where) == []
        assert snapshot(f"{w.co}/README.md") == foreign
        kept = snapshot(w.co)
        again = w.cli("project", "demo")
        assert again.exit_code == 0, again.output
        assert "nothing to clean" in again.stdout
        if rel.startswith(".agents"):  # aikito's own, pruned whenever empty: said again
            assert "mount point" in again.output
        assert snapshot(w.co) == kept


def test_a_sync_never_prunes_a_mount_point_below_memory(w: World) -> None:
    """[P2] obeys the same rule: an emptied or empty mount point below ``.agents/memory``
    is never a directory the plan removes — a finding, exit 0, every run."""
    mounts.need_root()
    where = f"{w.co}/.agents/memory/mnt"
    with mounts.tmpfs(where):
        for _ in range(2):
            res = invoke("--workspace", w.ws.root, "sync", "project", "demo", "--json",
                         catch=True)
            assert res.exit_code == 0, res.output
            doc = one_json(res.stdout)
            assert where not in {op["target"] for op in doc["operations"]}
            assert where in {f["path"] for f in doc["findings"]}
        assert os.path.isdir(where)


def _killed_relinks(w: World) -> dict[str, str]:
    """What a relink killed between its fresh link and the rename leaves, in every
    segment: the fresh link under the relink name, naming the canonical source."""
    root = w.ws.root
    left = {f".agents/memory/{relink_name('g.md')}": f"{root}/memory/g.md",
            f".agents/skills/{relink_name('review')}": f"{root}/skills/review",
            relink_name("AGENTS.md"): f"{root}/projects/demo/AGENTS.md",
            f".claude/{relink_name('CLAUDE.md')}": f"{root}/projects/demo/AGENTS.md"}
    for rel, literal in left.items():
        os.symlink(literal, f"{w.co}/{rel}")
    return left


def test_clean_removes_and_lists_a_killed_relinks_leftovers(w: World) -> None:
    """After a killed relink, clean neither removed nor listed ``.AGENTS.md.aikito-relink``
    (and kept the memory and skills ones as foreign): the engine's own leftovers go."""
    left = _killed_relinks(w)
    foreign = snapshot(f"{w.co}/README.md")
    dry = one_json(w.cli("project", "demo", "--dry-run", "--json").stdout)
    listed = {op["target"] for op in dry["operations"]}
    assert {f"{w.co}/{rel}" for rel in left} <= listed
    res = w.cli("project", "demo", "--json")
    assert res.exit_code == 0, res.output
    assert {op["target"] for op in one_json(res.stdout)["operations"]} == listed
    assert os.listdir(w.co) == ["README.md"]  # everything went, the directories too
    assert snapshot(f"{w.co}/README.md") == foreign


def test_clean_keeps_a_foreign_entry_at_a_relink_name(w: World) -> None:
    temp = f"{w.co}/{relink_name('AGENTS.md')}"
    nested = f"{w.co}/.claude/{relink_name('CLAUDE.md')}"
    Path(temp).write_text("mine\n")
    os.symlink("/elsewhere", nested)
    before = snapshot(temp, nested)
    doc = one_json(w.cli("project", "demo", "--json").stdout)
    assert {temp, nested} <= {f["path"] for f in doc["findings"]
                              if f["code"] == "clean.foreign_entry"}
    assert snapshot(temp, nested) == before
    assert os.path.isdir(f"{w.co}/.claude")  # holds the user's link


def test_a_sync_removes_a_killed_relinks_leftovers_and_lists_them(w: World) -> None:
    left = _killed_relinks(w)
    plan = w.ws.project("demo").plan()
    unlinks = {op.target for op in plan.operations if op.action is Action.UNLINK}
    assert {f"{w.co}/{rel}" for rel in left} <= unlinks
    assert w.ws.project("demo").sync().success
    assert not [p for p in w.links() if "aikito-relink" in p]


@pytest.mark.parametrize("args", [("",), ("project", "demo", ""), ("project", ""),
                                  ("", "--dry-run")])
def test_an_empty_path_or_name_is_a_usage_error(w: World, args: tuple[str, ...],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``aikito clean "$UNSET"`` cleaned the current directory: now exit 2, nothing
    touched, even when the current directory is a checkout."""
    monkeypatch.chdir(w.co)
    before = snapshot(w.co)
    res = w.cli(*args)
    assert res.exit_code == 2, res.output
    assert "empty" in res.stderr and res.stdout == ""
    assert snapshot(w.co) == before


def test_clean_moved_from_removes_the_links_into_the_old_root(w: World) -> None:
    """[L4] on clean (a decision: ``clean`` takes ``--moved-from`` too): after ``mv`` of
    the workspace, ``clean PATH --moved-from OLD`` owns the links naming OLD + the
    canonical remainder of their place; without the flag they are foreign, kept."""
    old, new = w.ws.root, f"{w.ws.base}/ws-moved"
    Path(w.co, ".agents", "memory", "mine.md").symlink_to(f"{old}/memory/other.md")
    os.rename(old, new)
    plain = invoke("--workspace", new, "clean", w.co, "--json", catch=True)
    assert plain.exit_code == 0, plain.output
    assert one_json(plain.stdout)["summary"]["unlink"] == 0
    before = snapshot(f"{w.co}/.agents/memory/mine.md", f"{w.co}/README.md")
    dry = invoke("--workspace", new, "clean", w.co, "--moved-from", old, "--dry-run",
                 "--json", catch=True)
    real = invoke("--workspace", new, "clean", w.co, "--moved-from", old, "--json",
                  catch=True)
    assert dry.exit_code == real.exit_code == 0, (dry.output, real.output)
    ops = [(op["action"], op["target"]) for op in one_json(real.stdout)["operations"]]
    assert [(op["action"], op["target"]) for op in one_json(dry.stdout)["operations"]] == ops
    assert w.links() == [".agents/memory/mine.md"]
    assert snapshot(f"{w.co}/.agents/memory/mine.md", f"{w.co}/README.md") == before
    assert json.dumps(one_json(real.stdout)["moved_from"]) == json.dumps(old)


def test_clean_moved_from_into_a_workspace_that_exists_is_refused(w: World) -> None:
    other = f"{w.ws.base}/other-ws"
    os.makedirs(f"{other}/projects")
    res = w.cli(w.co, "--moved-from", other)
    assert res.exit_code == 4, res.output
    assert "still holds a workspace" in res.stderr


def test_a_directory_below_memory_bind_mounted_onto_itself_is_never_pruned(w: World
                                                                           ) -> None:
    """[L8] [P2]: a mount the walk cannot tell by its inode (a directory bind-mounted onto
    itself: the same device, the same inode) is found in the mount table — by a sync,
    whose [P2] pruning would otherwise ``rmdir`` it once emptied (EBUSY, exit 5, every
    run), and by a clean, which removes aikito's links in it and keeps it."""
    mounts.need_root()
    cfg = Path(w.ws.config_path("demo"))
    cfg.write_text(cfg.read_text().replace('"g.md"', '"g.md", "team/a.md"'))
    w.ws.add_file("team/a.md", "a\n")
    assert w.ws.project("demo").sync().success
    team = f"{w.co}/.agents/memory/team"
    with mounts.bind(team, team):
        cfg.write_text(cfg.read_text().replace(', "team/a.md"', ""))  # team/a.md dropped
        for _ in range(2):
            res = invoke("--workspace", w.ws.root, "sync", "project", "demo", "--json",
                         catch=True)
            assert res.exit_code == 0, res.output
            doc = one_json(res.stdout)
            assert team not in {op["target"] for op in doc["operations"]}
            assert team in {f["path"] for f in doc["findings"]}
        assert os.path.islink(f"{team}/a.md")  # never written into: a mount
        res = w.cli("project", "demo", "--json")
        assert res.exit_code == 0, res.output
        doc = one_json(res.stdout)
        assert team in {f["path"] for f in doc["findings"] if f["code"] == "clean.mount_point"}
        assert os.path.isdir(team) and os.listdir(team) == []
        assert w.cli("project", "demo").exit_code == 0
