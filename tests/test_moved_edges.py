"""A workspace that moved, at the edges ([L4], [P2]), on real trees:

- after ``mv ws w2 && ln -s w2 ws``, ``--moved-from ws`` was refused ("still holds a
  workspace") though ``ws`` leads to this very workspace: OLD is accepted when it
  resolves to the current workspace (same ``st_dev``/``st_ino``) and the links whose
  literal is OLD + the canonical remainder are relinked; the remedy of a conflict names
  the flag for such a root too;
- an owned link into OLD for a reference, skill or instructions the user dropped since
  stayed for ever a foreign entry under ``--moved-from``: it is the engine's and is
  UNLINKed (dry run and real run agreeing); without the flag it is kept, as before.

Foreign entries are asserted byte- and inode-identical afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aikito_mem import Project
from aikito_mem.errors import ConfigError, UnsafePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.model import Action
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS


class World:
    """A workspace synced into a checkout (every segment), a foreign link around."""

    def __init__(self, ws: WS) -> None:
        self.ws = ws
        ws.add_file("g.md", "g\n")
        ws.add_file("team/a.md", "a\n")
        ws.add_skill("review")
        ws.add_skill("lint")
        ws.write_instructions("demo", "# be nice\n")
        ws.add_agent("codex", '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n')
        self.co = ws.checkout("main")
        Path(self.co, "README.md").write_text("mine\n")
        self.outside = f"{ws.base}/outside.md"
        Path(self.outside).write_text("x\n")
        ws.write_config("demo", memory=["g.md", "team/a.md"], paths=[self.co],
                        skills=["review", "lint"])
        assert ws.project("demo").sync().success
        os.symlink(self.outside, f"{self.co}/.agents/memory/mine.md")
        self.old = ws.root

    def literals(self) -> dict[str, str]:
        return {str(p.relative_to(self.co)): os.readlink(p)
                for p in Path(self.co).rglob("*") if p.is_symlink()}

    def foreign(self) -> dict[str, Any]:
        return snapshot(f"{self.co}/README.md", f"{self.co}/.agents/memory/mine.md")

    def sync(self, workspace: str, *args: str) -> Any:
        return invoke("--workspace", workspace, "sync", "project", "demo", "--json", *args,
                      catch=True)


@pytest.fixture
def w(ws: WS) -> World:
    return World(ws)


def test_moved_from_a_symlink_to_this_very_workspace_relinks(w: World) -> None:
    """``mv ws w2 && ln -s w2 ws``: OLD still has ``projects/`` (through the link), but it
    is this workspace by identity — accepted, and every link into OLD relinked."""
    new = f"{w.ws.base}/w2"
    os.rename(w.old, new)
    os.symlink(new, w.old)
    before = w.foreign()
    project = Project.load("demo", workspace=new)
    plain = project.plan()
    conflicts = [op for op in plain.operations if op.action is Action.CONFLICT]
    assert conflicts and all(f"--moved-from {w.old}" in (op.remedy or "") for op in conflicts)
    dry = w.sync(new, "--moved-from", w.old, "--dry-run")
    real = w.sync(new, "--moved-from", w.old)
    assert dry.exit_code == real.exit_code == 0, (dry.output, real.output)
    assert [(o["action"], o["target"]) for o in one_json(dry.stdout)["operations"]] == [
        (o["action"], o["target"]) for o in one_json(real.stdout)["operations"]]
    relinked = [o for o in one_json(real.stdout)["operations"] if o["rule"] == "L4"]
    assert len(relinked) == 5  # two references, two skills, AGENTS.md
    for rel, literal in w.literals().items():
        if rel != ".agents/memory/mine.md":
            assert literal.startswith(f"{new}/"), (rel, literal)
    assert w.foreign() == before
    assert not project.plan().has_changes


def test_moved_from_another_workspace_that_exists_is_still_refused(w: World) -> None:
    """The identity is what is accepted, not any OLD with ``projects/``: a copy of the
    workspace (another directory) is another workspace."""
    new = f"{w.ws.base}/w2"
    os.rename(w.old, new)
    os.makedirs(f"{w.old}/projects")
    with pytest.raises(ConfigError, match="still holds a workspace"):
        Project.load("demo", workspace=new).plan(moved_from=w.old)


def test_the_guard_accepts_the_identity_and_refuses_another_workspace(w: World) -> None:
    new = f"{w.ws.base}/w2"
    os.rename(w.old, new)
    os.symlink(new, w.old)
    plan = Project.load("demo", workspace=new).plan(moved_from=w.old)
    os.unlink(w.old)
    os.makedirs(f"{w.old}/projects")  # now another workspace holds OLD
    before = snapshot(str(w.ws.base))
    with pytest.raises(UnsafePlanError):
        execute(plan)
    assert snapshot(str(w.ws.base)) == before


def _moved_after_dropping(w: World) -> str:
    """The user drops a reference, a skill and the instructions' content, then moves the
    workspace — the links for them still name the old root."""
    new = f"{w.ws.base}/ws-moved"
    os.rename(w.old, new)
    cfg = Path(new, "projects", "demo", "agent.toml")
    text = cfg.read_text().replace('    "g.md",\n', "").replace('    "review",\n', "")
    assert text != cfg.read_text()
    cfg.write_text(text)
    Path(new, "projects", "demo", "AGENTS.md").write_text("")
    return new


STALE = {".agents/memory/g.md": "memory/g.md", ".agents/skills/review": "skills/review",
         "AGENTS.md": "projects/demo/AGENTS.md"}


def test_a_stale_link_into_the_old_root_is_unlinked_under_moved_from(w: World) -> None:
    new = _moved_after_dropping(w)
    for rel, src in STALE.items():
        assert w.literals()[rel] == f"{w.old}/{src}"
    before = w.foreign()
    dry = w.sync(new, "--moved-from", w.old, "--dry-run")
    real = w.sync(new, "--moved-from", w.old)
    assert dry.exit_code == real.exit_code == 0, (dry.output, real.output)
    ops = [(o["action"], o["target"]) for o in one_json(real.stdout)["operations"]
           if o["action"] != "NOOP"]
    assert [(o["action"], o["target"]) for o in one_json(dry.stdout)["operations"]
            if o["action"] != "NOOP"] == ops
    for rel in STALE:
        assert ("UNLINK", f"{w.co}/{rel}") in ops
        assert rel not in w.literals()
    assert w.literals()[".agents/memory/team/a.md"] == f"{new}/memory/team/a.md"  # relinked
    assert w.foreign() == before
    assert not Project.load("demo", workspace=new).plan().has_changes


def test_without_the_flag_a_stale_link_into_the_old_root_is_kept(w: World) -> None:
    new = _moved_after_dropping(w)
    res = w.sync(new)
    doc = one_json(res.stdout)
    kept = {f["path"] for f in doc["findings"]}
    assert f"{w.co}/.agents/memory/g.md" in kept and f"{w.co}/.agents/skills/review" in kept
    for rel, src in STALE.items():
        assert w.literals()[rel] == f"{w.old}/{src}"


def test_the_guard_refuses_an_unlink_into_the_old_root_without_the_flag(w: World) -> None:
    """[E9]: the UNLINK of a link into OLD is accepted only for the plan's own
    ``moved_from``."""
    new = _moved_after_dropping(w)
    plan = Project.load("demo", workspace=new).plan(moved_from=w.old)
    target = f"{w.co}/.agents/memory/g.md"
    assert any(op.action is Action.UNLINK and op.target == target for op in plan.operations)
    before = snapshot(w.co)
    with pytest.raises(UnsafePlanError, match="aikito does not own"):
        execute(plan.evolve(moved_from=None))
    assert snapshot(w.co) == before
