"""Stateful models of users, configuration edits and aikito runs over a real directory tree:
:class:`SafetyMachine` for memory and :class:`SegmentsMachine` for the skills and project
instructions segments of §13 (with a small memory list beside them).

One :class:`SafetyMachine` run owns a fresh temporary directory ``D`` holding the
workspace ``D/ws``, the checkout ``D/co``, an ``outside`` directory that foreign links point
at, and ``D/plans`` for saved plans.  Hypothesis interleaves:

* configuration edits: add / remove references (files, directories, nested ``a/b.md``,
  a directory reference ``team`` against nested ``team/…`` ones, ``notes``);
* sources deleted and re-created (a new inode), project notes (current and legacy), the
  project memory root created empty or removed (the legacy → current migration);
* user interference at targets and in parents: regular files, directories (empty or not),
  foreign and dangling links, links to another resource, owned *relative* links,
  ``.DS_Store``, ``.agents`` / ``.agents/memory`` / ``team`` replaced, the user deleting
  aikito's links, the user cleaning up, ``rm -rf .agents``;
* aikito: ``Project.sync``, ``plan`` + ``execute``, the CLI ``sync``, dry runs (API and CLI
  with ``--out``), saved-plan apply (``Project.execute`` and CLI ``apply``), possibly long
  after the plan was saved; ``aikito clean`` ([L3]: ``clean project demo`` and
  ``clean CO``, by the API and the CLI), after which no owned link is left and a second
  clean has nothing to do; the workspace moved and moved back with ``--moved-from``
  ([L4]), relinked in place both ways;
* places a checkout can never be ([H1]) listed beside the real checkout: the home
  directory (home-like: it holds a ``.claude/``), a directory inside the workspace, the
  workspace's parent; and, where mounts are available (root), ``<ws>/memory/team``
  bind-mounted at ``.agents/memory/team`` as a dev container mounts a volume, with
  ``aikito adopt`` of it ([H2]) — always refused, exit 4, nothing changed.

Documented outcomes (``ConflictError``, ``StalePlanError``, exits 1 and 3) are tolerated;
any other exception or exit code fails.  Invariants after every step:

* every foreign entry (anything the model says the *user* created) is unchanged: type,
  inode, content hash, link literal (a user-made *directory* may only disappear when the
  executed plan pruned it — a container emptied of aikito's links, SPEC [P2]);
* every other symlink under ``.agents/memory`` is owned ([O1]/[O2]) and every absolute
  literal is exactly a canonical path;
* aikito never changes anything outside ``co/.agents`` (workspace, ``outside``, the rest
  of the checkout); a dry run changes nothing at all; a refused run (conflict, stale at
  verification) changes nothing at all;
* after a clean successful sync or apply, a re-plan is only NOOP/SKIP;
* nothing ever appears in or changes under the home directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile

import pytest
from click.testing import CliRunner
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from aikito_mem import Project
from aikito_mem.cli import cli
from aikito_mem.commands.clean import Cleaner
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.errors import ConflictError, StalePlanError
from aikito_mem.executor.planfile import read_plan, write_plan
from aikito_mem.model import Action, Plan, Status, SyncResult
from aikito_mem.planner.memory import history, literal_resolves_to
from tests.helpers import mounts
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

# -- the pools -----------------------------------------------------------------------------

#: Reference → kind of its source ("f" file, "d" directory).
REFS = {
    "a.md": "f", "b.md": "f", "glossary": "d", "docs": "d", "team": "d",
    "team/a.md": "f", "team/b.md": "f", "team/sub/c.md": "f", "notes": "d",
}
#: Sources that may be deleted / re-created (``team`` and ``team/sub`` always exist).
LEAVES = [r for r in REFS if r not in ("team",)]
#: Places below ``.agents/memory`` where the user may put things.
USER_TARGETS = [*REFS, ".DS_Store", "team/.DS_Store", "team/sub", "stray.md", "old"]
USER_KINDS = ["file", "dir", "dir_with_file", "foreign_link", "dangling", "other_resource",
              "owned_relative", "outside_dir_link"]
PARENTS = [".agents", ".agents/memory"]
PARENT_KINDS = ["file", "outside_dir_link", "dangling"]


def _sig(path: str) -> tuple[object, ...] | None:
    try:
        st_ = os.lstat(path)
    except FileNotFoundError:
        return None
    if os.path.islink(path):
        return ("link", st_.st_ino, os.readlink(path))
    if os.path.isdir(path):
        return ("dir", st_.st_ino)
    if os.path.isfile(path):
        with open(path, "rb") as fh:
            return ("file", st_.st_ino, hashlib.sha256(fh.read()).hexdigest())
    return ("other", st_.st_ino)


def _real_dirs_upto(base: str, rel: str) -> bool:
    """Every existing ancestor of ``base/rel`` below ``base`` is a real directory."""
    parts = rel.split("/")[:-1]
    path = base
    for part in parts:
        path = f"{path}/{part}"
        if not os.path.lexists(path):
            return True
        if os.path.islink(path) or not os.path.isdir(path):
            return False
    return True


class _UserTree(RuleBasedStateMachine):
    """What both machines share: a temporary tree ``D`` (``self.d``), the checkout
    ``self.co``, ``outside``, and the model of what the *user* made there (``foreign``:
    path → signature)."""

    d: str
    co: str
    outside: str
    foreign: dict[str, tuple[object, ...]]

    #: [H1] places listed beside the real checkout (home, inside or around the workspace).
    refused: list[str]
    #: [H2] the checkout path where ``<ws>/memory/team`` is bind-mounted, if it is.
    mounted: str | None = None
    #: [L8] a runtime directory (``.agents/memory``) made a mount point (bind-mounted onto
    #: itself, its entries unchanged), if it is: never removed, by a clean or a sync.
    runtime_mounted: str | None = None

    def teardown(self) -> None:
        self._unmount()
        shutil.rmtree(self.d, ignore_errors=True)

    def _unmount(self) -> None:
        """The user unmounts what is mounted in the checkout (before removing what holds
        a mount, or at the end)."""
        if self.mounted is not None:
            mounts.unmount(self.mounted)
            with contextlib.suppress(OSError):
                os.rmdir(self.mounted)  # the user's mount point goes with the mount
            self.mounted = None
        if self.runtime_mounted is not None:
            mounts.unmount(self.runtime_mounted)  # the directory stays, as it was
            self.runtime_mounted = None

    def _holds_a_mount(self, path: str) -> bool:
        return any(m is not None and (m + "/").startswith(path + "/")
                   for m in (self.mounted, self.runtime_mounted))

    def _refused_place(self, where: str) -> str:
        """A place [H1] refuses: the (home-like) home, a directory inside the workspace,
        the workspace's parent (which contains it)."""
        home = os.environ["HOME"]
        os.makedirs(f"{home}/.claude", exist_ok=True)
        inside = f"{self.ws}/memory/team/sub"
        os.makedirs(inside, exist_ok=True)
        return {"home": home, "inside": inside, "around": self.d}[where]

    def _toggle_refused(self, where: str, present: bool) -> bool:
        """List or unlist a refused place; whether the listing changed."""
        path = self._refused_place(where)
        if present == (path in self.refused):
            return False
        if present:
            self.refused.append(path)
        else:
            self.refused.remove(path)
        return True

    def _home_untouched(self) -> None:
        """[H1]: no run ever writes into the home directory."""
        home = os.environ["HOME"]
        for rel in ("AGENTS.md", ".claude/CLAUDE.md", ".agents"):
            assert not os.path.lexists(f"{home}/{rel}"), f"aikito wrote ~/{rel}"

    def _project(self) -> Project:
        return Project.load("demo", workspace=self.ws)

    def _foreign_put(self, path: str) -> None:
        sig = _sig(path)
        assert sig is not None
        self.foreign[path] = sig

    def _mkdirs_user(self, path: str) -> None:
        """``mkdir -p`` of the parents of ``path`` by the user (foreign directories)."""
        missing = []
        parent = os.path.dirname(path)
        while not os.path.lexists(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        for p in reversed(missing):
            os.mkdir(p)
            self._foreign_put(p)

    def _replace_parent(self, rel: str, kind: str) -> None:
        """The user puts a file, a link to a directory outside or a dangling link where
        the runtime directory ``rel`` of the checkout would be."""
        path = f"{self.co}/{rel}"
        if os.path.lexists(path) or not _real_dirs_upto(self.co, rel):
            return
        self._mkdirs_user(path)
        if kind == "file":
            with open(path, "w") as fh:
                fh.write("not a directory\n")
        elif kind == "outside_dir_link":
            os.symlink(f"{self.outside}/dir", path)
        else:
            os.symlink(f"{self.outside}/gone", path)
        self._foreign_put(path)


class SafetyMachine(_UserTree):
    def __init__(self) -> None:
        super().__init__()
        #: The workspace ``D/ws`` with its checkouts directory ``D/co`` as the checkout.
        self.builder = WS(tempfile.mkdtemp(prefix="aikito-stateful-"))
        self.d = d = str(self.builder.base)
        self.ws = self.builder.root
        self.co = self.builder.checkouts_dir
        self.outside = f"{d}/outside"
        self.plans = f"{d}/plans"
        self.rt = self.builder.runtime(self.co)
        for p in (f"{self.ws}/memory/team/sub", f"{self.ws}/projects/demo",
                  f"{self.outside}/dir", self.plans):
            os.makedirs(p)
        with open(f"{self.outside}/secret.md", "w") as fh:
            fh.write("outside\n")
        for ref in REFS:
            self._make_source(ref)
        self.refs: list[str] = []
        self.refused = []
        #: Foreign entries: absolute path → signature when the user made it.
        self.foreign: dict[str, tuple[object, ...]] = {}
        self.saved: list[str] = []
        self.counter = 0
        self._write_config()

    # -- helpers ---------------------------------------------------------------------------

    def _make_source(self, ref: str) -> None:
        if REFS.get(ref) == "d":
            self.builder.add_file(f"{ref}/inside.md", ref)
        else:
            self.builder.add_file(ref, f"{ref}\n")

    def _write_config(self) -> None:
        self.builder.write_config("demo", memory=self.refs,
                                  paths=[self.co, f"{self.d}/offline-checkout",
                                         *self.refused])

    def _outside_agents(self) -> dict[str, tuple[object, ...]]:
        return snapshot(self.d, skip=(f"{self.co}/.agents", self.plans, self.co))

    def _co_rest(self) -> dict[str, tuple[object, ...]]:
        return {p: s for p, s in snapshot(self.co, skip=(f"{self.co}/.agents",)).items()
                if p != self.co}

    def _forget_below(self, path: str) -> None:
        for p in [p for p in self.foreign if p == path or p.startswith(path + "/")]:
            del self.foreign[p]

    def _run(self, how: str) -> tuple[Plan | None, SyncResult | None, bool]:
        """Run aikito; return (plan, result, clean success).  Checks refusals wrote nothing."""
        before_all = snapshot(self.d, skip=(self.plans,))
        before_out = self._outside_agents()
        before_rest = self._co_rest()
        plan: Plan | None = None
        result: SyncResult | None = None
        ok = False
        refused = False
        try:
            if how == "sync":
                result = self._project().sync()
            elif how == "plan_execute":
                project = self._project()
                result = project.execute(project.plan())
            elif how.startswith("apply:"):
                path = how.split(":", 1)[1]
                result = self._project().execute(read_plan(path))
            elif how.startswith("clean:"):
                result = _cleaner(self.ws, self.co, how.split(":", 1)[1]).run()
            else:
                raise AssertionError(how)
            plan = result.plan
            ok = True
        except ConflictError as exc:
            plan = exc.plan
            refused = True
        except StalePlanError as exc:
            result = exc.result
            plan = result.plan if result is not None else None
            refused = result is None or (all(
                s is not Status.APPLIED for s in result.statuses
            ) and result.outcome == "stale" and not exc.message.startswith(
                "the plan went stale during execution"))
        event(f"{how.split(':')[0]}: " + ("ok" if ok else "refused" if refused else "stale"))
        self._after_run(plan, before_out, before_rest)
        if refused:
            assert snapshot(self.d, skip=(self.plans,)) == before_all, \
                "a refused run (conflict / stale before any write) wrote something"
        if ok and result is not None:
            self._check_statuses(result)
        return plan, result, ok

    def _run_cli(self, args: list[str]) -> tuple[int, Plan | None]:
        before_out = self._outside_agents()
        before_rest = self._co_rest()
        res = CliRunner().invoke(cli, ["--workspace", self.ws, *args], catch_exceptions=True)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise res.exception
        assert res.exit_code in (0, 1, 3), (res.exit_code, res.output)
        doc = json.loads(res.stdout)
        assert doc["exit_code"] == res.exit_code
        event(f"cli {args[0]}: {doc['outcome']}")
        pruned = {op["target"] for op in doc["operations"]
                  if op["action"] == "UNLINK" and op.get("entry") == "directory"}
        self._after_run(None, before_out, before_rest, pruned)
        return res.exit_code, None

    def _after_run(self, plan: Plan | None, before_out: dict[str, tuple[object, ...]],
                   before_rest: dict[str, tuple[object, ...]],
                   pruned: set[str] | None = None) -> None:
        assert self._outside_agents() == before_out, \
            "aikito changed something outside the checkout's .agents"
        assert self._co_rest() == before_rest
        pruned = set(pruned or ())
        if plan is not None:
            pruned |= {op.target for op in plan.operations
                      if op.action is Action.UNLINK and op.entry == "directory"}
        for path, sig in list(self.foreign.items()):
            if sig[0] == "dir" and not os.path.lexists(path):
                assert path in pruned, f"user directory {path} vanished"
                del self.foreign[path]

    def _check_statuses(self, result: SyncResult) -> None:
        for op, status in zip(result.plan.operations, result.statuses, strict=True):
            if op.action in (Action.CREATE, Action.UNLINK):
                assert status is Status.APPLIED
                if op.action is Action.CREATE:
                    assert os.readlink(op.target) == op.source
            elif op.action is Action.NOOP:
                assert status is Status.UNCHANGED

    def _assert_converged(self) -> None:
        plan = self._project().plan()
        bad = [op for op in plan.operations if op.action not in (Action.NOOP, Action.SKIP)]
        assert not bad, f"after a clean sync the re-plan still has {bad}"

    # -- configuration -------------------------------------------------------------------

    @rule(ref=st.sampled_from(list(REFS)))
    def add_ref(self, ref: str) -> None:
        if ref in self.refs:
            return
        for other in self.refs:
            if other.startswith(ref + "/") or ref.startswith(other + "/"):
                return
        self.refs.append(ref)
        self._write_config()

    @rule(ref=st.sampled_from(list(REFS)))
    def remove_ref(self, ref: str) -> None:
        if ref in self.refs:
            self.refs.remove(ref)
            self._write_config()

    @rule(ref=st.sampled_from(LEAVES))
    def delete_source(self, ref: str) -> None:
        path = f"{self.ws}/memory/{ref}"
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)

    @rule(ref=st.sampled_from(LEAVES))
    def recreate_source(self, ref: str) -> None:
        self.delete_source(ref)
        self._make_source(ref)

    @rule(which=st.sampled_from(["current", "legacy", "root_only"]), present=st.booleans())
    def project_notes(self, which: str, present: bool) -> None:
        pm = f"{self.ws}/projects/demo/memory"
        path = {"current": f"{pm}/notes", "legacy": f"{self.ws}/memory/demo/notes",
                "root_only": pm}[which]
        if present:
            os.makedirs(path, exist_ok=True)
            if which != "root_only":
                with open(f"{path}/note.md", "w") as fh:
                    fh.write("a note\n")
        elif os.path.lexists(path):
            shutil.rmtree(path)

    # -- the user in the checkout --------------------------------------------------------

    @rule(rel=st.sampled_from(USER_TARGETS), kind=st.sampled_from(USER_KINDS),
          other=st.sampled_from(list(REFS)))
    def user_puts(self, rel: str, kind: str, other: str) -> None:
        path = f"{self.rt}/{rel}"
        if os.path.lexists(path) or not _real_dirs_upto(self.co, f".agents/memory/{rel}"):
            return
        self._mkdirs_user(path)
        self.counter += 1
        if kind == "file":
            with open(path, "w") as fh:
                fh.write(f"user file {self.counter}\n")
        elif kind in ("dir", "dir_with_file"):
            os.mkdir(path)
            if kind == "dir_with_file":
                self._foreign_put(path)
                path = f"{path}/mine.txt"
                with open(path, "w") as fh:
                    fh.write("mine\n")
        elif kind == "foreign_link":
            os.symlink(f"{self.outside}/secret.md", path)
        elif kind == "outside_dir_link":
            os.symlink(f"{self.outside}/dir", path)
        elif kind == "dangling":
            os.symlink(f"{self.outside}/nowhere-{self.counter}", path)
        elif kind == "other_resource":
            if other == rel:
                other = "a.md" if rel != "a.md" else "b.md"
            os.symlink(f"{self.ws}/memory/{other}", path)
        elif kind == "owned_relative":
            # A link the user made that *is* owned by [O1] (relative literal resolving to
            # the canonical source): aikito may treat it as its own.
            depth = rel.count("/") + 3  # .agents/memory/<dirs>
            os.symlink("../" * depth + f"ws/memory/{rel}", path)
            assert literal_resolves_to(os.readlink(path), os.path.dirname(path),
                                       f"{self.ws}/memory/{rel}")
            return
        self._foreign_put(path)

    @rule(rel=st.sampled_from(PARENTS), kind=st.sampled_from(PARENT_KINDS))
    def user_replaces_parent(self, rel: str, kind: str) -> None:
        self._replace_parent(rel, kind)

    @rule(i=st.integers(0, 1000))
    def user_cleans_up(self, i: int) -> None:
        if not self.foreign:
            return
        path = sorted(self.foreign)[i % len(self.foreign)]
        if self._holds_a_mount(path):
            self._unmount()  # the user unmounts before removing what holds the mount
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        self._forget_below(path)

    @rule()
    def user_removes_agents(self) -> None:
        self._unmount()  # the user unmounts before removing what holds the mount
        path = f"{self.co}/.agents"
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
        self._forget_below(path)

    @rule(rel=st.sampled_from(list(REFS)))
    def user_deletes_aikito_link(self, rel: str) -> None:
        path = f"{self.rt}/{rel}"
        if path in self.foreign or not _real_dirs_upto(self.co, f".agents/memory/{rel}"):
            return
        if os.path.islink(path):
            os.unlink(path)

    # -- places a checkout can never be, and the workspace's own copy ---------------------

    @rule(where=st.sampled_from(["home", "inside", "around"]), present=st.booleans())
    def list_refused_checkout(self, where: str, present: bool) -> None:
        """[H1]: while such a place is listed, it is an invalid checkout and every run is
        blocked (a refused run writes nothing: checked by ``_run``)."""
        if self._toggle_refused(where, present):
            event(f"refused checkout listed: {where}")
            self._write_config()

    @rule(present=st.booleans())
    def bind_memory_team(self, present: bool) -> None:
        """[H2]: ``<ws>/memory/team`` bind-mounted at ``.agents/memory/team`` (root only)."""
        if not present:
            self._unmount()
            return
        target = f"{self.rt}/team"
        if self.mounted is not None or self.runtime_mounted is not None or \
                os.path.lexists(target) or \
                not _real_dirs_upto(self.co, ".agents/memory/team/x"):
            return
        self._mkdirs_user(target)
        os.mkdir(target)
        if mounts.try_bind(f"{self.ws}/memory/team", target):
            self.mounted = target
        else:
            os.rmdir(target)

    @rule(present=st.booleans())
    def mount_runtime_directory(self, present: bool) -> None:
        """[L8]: ``.agents/memory`` a mount point (a volume mounted there; here itself,
        bind-mounted onto itself as root — else nothing happens): a clean keeps it and
        says so, a second clean is a NOOP, and no run ever ends in EBUSY (the
        invariants, and ``clean``'s own assertions)."""
        if not present:
            if self.runtime_mounted is not None:
                mounts.unmount(self.runtime_mounted)
                self.runtime_mounted = None
            return
        if self.mounted is not None or self.runtime_mounted is not None or \
                not os.path.isdir(self.rt) or not _real_dirs_upto(self.co, ".agents/memory/x"):
            return
        if mounts.try_bind(self.rt, self.rt):
            self.runtime_mounted = self.rt
            event("runtime directory mounted")

    @rule(child=st.booleans(), dry_run=st.booleans())
    def adopt_mounted(self, child: bool, dry_run: bool) -> None:
        """[H2]: adopting the mounted copy (or a file in it) is refused, exit 4, and
        nothing changes anywhere — the workspace's files are never removed through it."""
        from aikito_mem.commands.adopt.run import adopt

        if self.mounted is None:
            return
        before = snapshot(self.d, skip=(self.plans,))
        target = f"{self.mounted}/inside.md" if child else self.mounted
        if not os.path.lexists(target):
            return
        report = adopt(target, self.ws, dry_run=dry_run)
        event(f"adopt through a bind mount: {report.exit_code}")
        assert report.exit_code == 4, report
        assert snapshot(self.d, skip=(self.plans,)) == before

    # -- aikito --------------------------------------------------------------------------

    @rule(how=st.sampled_from(["sync", "plan_execute"]))
    def sync(self, how: str) -> None:
        _plan, _result, ok = self._run(how)
        if ok:
            self._assert_converged()

    @rule(how=st.sampled_from(["project", "path", "cli"]))
    def clean(self, how: str) -> None:
        """[L3]: every link this workspace owns goes, foreign entries stay (the
        invariants), and a second clean has nothing to do."""
        if how == "cli":
            ok = self._run_cli(["clean", "project", "demo", "--json"])[0] == 0
        else:
            ok = self._run(f"clean:{how}")[2]
        if not ok:
            return
        agents = f"{self.co}/.agents"
        if os.path.isdir(agents) and not os.path.islink(agents):
            for dirpath, dirnames, filenames in os.walk(agents):
                for name in dirnames + filenames:
                    path = f"{dirpath}/{name}"
                    assert not os.path.islink(path) or path in self.foreign, \
                        f"clean left aikito's link {path}"
        again = _cleaner(self.ws, self.co, how).plan()
        assert not again.has_changes
        if self.runtime_mounted is not None:
            # [L8]: the mount point stays, and the plan says so — every time.
            assert os.path.isdir(self.runtime_mounted)
            if not os.listdir(self.runtime_mounted):
                assert self.runtime_mounted in {f.path for f in again.findings
                                                if f.code == "clean.mount_point"}

    @rule()
    def workspace_moves(self) -> None:
        """[L4]: ``mv`` the workspace, ``sync --moved-from OLD`` there, ``mv`` it back and
        sync ``--moved-from`` the other way: each relink names the workspace it is in,
        foreign entries stay (the invariants), and the round trip leaves every link
        canonical again."""
        if self.refused or self.mounted is not None:
            # A listed place inside the workspace would go offline with it (and come back
            # refused), a bind mount of it would not move: the round trip is not one move.
            return
        moved = f"{self.d}/ws-moved"
        os.rename(self.ws, moved)
        try:
            try:
                there = Project.load("demo", workspace=moved).sync(moved_from=self.ws)
            except (ConflictError, StalePlanError):
                there = None
            event(f"moved: {there.outcome if there is not None else 'refused'}")
            for op in there.plan.operations if there is not None else ():
                if op.rule == "L4":
                    assert op.source is not None and op.source.startswith(moved + "/")
                    assert os.readlink(op.target) == op.source
        finally:
            os.rename(moved, self.ws)
        try:
            back = self._project().sync(moved_from=moved)
        except (ConflictError, StalePlanError):
            back = None
        if there is not None:
            assert back is not None, "the way back was refused after the way there applied"
            self._assert_converged()

    @rule()
    def cli_sync(self) -> None:
        code, _ = self._run_cli(["sync", "project", "demo", "--json"])
        if code == 0:
            self._assert_converged()

    @rule(via_cli=st.booleans())
    def dry_run(self, via_cli: bool) -> None:
        before = snapshot(self.d, skip=(self.plans,))
        if via_cli:
            self.counter += 1
            out = f"{self.plans}/cli-{self.counter}.toml"
            res = CliRunner().invoke(cli, ["--workspace", self.ws, "sync", "project", "demo",
                                           "--dry-run", "--json", "--out", out])
            assert res.exit_code in (0, 1), res.output
            self.saved.append(out)
        else:
            self._project().dry_run()
        assert snapshot(self.d, skip=(self.plans,)) == before, "a dry run wrote something"

    @rule()
    def save_plan(self) -> None:
        before = snapshot(self.d, skip=(self.plans,))
        plan = self._project().plan()
        self.counter += 1
        path = f"{self.plans}/api-{self.counter}.toml"
        write_plan(plan, path)
        self.saved.append(path)
        assert snapshot(self.d, skip=(self.plans,)) == before

    @rule(i=st.integers(0, 1000), via_cli=st.booleans())
    def apply_saved(self, i: int, via_cli: bool) -> None:
        if not self.saved:
            return
        path = self.saved[-1 - (i % len(self.saved))] if i % 3 else self.saved[-1]
        if via_cli:
            code, _ = self._run_cli(["apply", path, "--json"])
            if code == 0:
                self._assert_applied_plan_converged(path)
            return
        _plan, _result, ok = self._run(f"apply:{path}")
        if ok:
            self._assert_applied_plan_converged(path)

    def _assert_applied_plan_converged(self, path: str) -> None:
        """A saved plan converges what it planned; entries that appeared after it was made
        (not targets of the plan, so not re-verified per [P5]) are the next sync's job."""
        from aikito_mem.executor.planfile import read_plan

        touched = {op.target for op in read_plan(path).operations}
        plan = self._project().plan()
        bad = [op for op in plan.operations
               if op.action not in (Action.NOOP, Action.SKIP) and op.target in touched]
        assert not bad, f"after applying {path} the re-plan still has {bad}"

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def foreign_entries_unchanged(self) -> None:
        for path, sig in self.foreign.items():
            live = _sig(path)
            assert live == sig, f"foreign entry {path} changed: {sig} -> {live}"

    @invariant()
    def home_untouched(self) -> None:
        self._home_untouched()

    @invariant()
    def every_other_link_is_owned(self) -> None:
        agents = f"{self.co}/.agents"
        if os.path.islink(agents) or not os.path.isdir(self.rt) or os.path.islink(self.rt):
            return
        notes_history = (f"{self.ws}/projects/demo/memory/notes",
                         f"{self.ws}/memory/demo/notes")
        for dirpath, dirnames, filenames in os.walk(self.rt):
            for name in dirnames + filenames:
                path = f"{dirpath}/{name}"
                if not os.path.islink(path) or path in self.foreign:
                    continue
                rel = path[len(self.rt) + 1:]
                literal = os.readlink(path)
                cands = history(self.ws, rel, notes_history)
                if literal.startswith("/"):
                    assert literal in cands, f"aikito link {path} -> {literal!r}"
                else:
                    assert any(literal_resolves_to(literal, dirpath, c) for c in cands)


# -- skills and project instructions (§13) ------------------------------------------------

#: Skills that may be selected; ``zeta`` is never selected (a user's entry, or a stale one).
SKILLS = ["alpha", "beta", "gamma"]
SKILL_SPOTS = [*SKILLS, "zeta"]
#: The registry files a rule may add or remove, and the target each names ([G3]).
AGENTS = {"codex": "AGENTS.md", "claude-code": ".claude/CLAUDE.md"}
INSTRUCTION_TARGETS = list(AGENTS.values())
SEGMENT_PARENTS = [".agents", ".agents/skills", ".claude"]
SKILL_KINDS = ["file", "dir", "dir_with_file", "foreign_link", "dangling", "other_skill"]
INSTRUCTION_KINDS = ["file", "dir", "foreign_link", "dangling"]


class SegmentsMachine(_UserTree):
    """Users, configuration and registry edits and aikito runs over the skills and
    instructions segments (with a small memory list beside them): ``D/ws``, the checkout
    ``D/co`` and ``outside``.  Detection of ``claude-code`` is ``$HOME/.claude``, toggled by
    a rule.  Invariants after every step: foreign entries unchanged; every other link at a
    skill or instruction target is owned, its literal exactly the canonical source; nothing
    outside the checkout changes; a dry run and a wholly refused run change nothing; after a
    run, every segment without a conflict re-plans as NOOP/SKIP only ([G7], [E6])."""

    def __init__(self) -> None:
        super().__init__()
        #: The workspace ``D/ws`` with its checkouts directory ``D/co`` as the checkout.
        self.builder = WS(tempfile.mkdtemp(prefix="aikito-segments-"))
        self.d = d = str(self.builder.base)
        self.ws, self.co, self.outside = self.builder.root, self.builder.checkouts_dir, \
            f"{d}/outside"
        for p in (f"{self.ws}/projects/demo", f"{self.ws}/agents", f"{self.ws}/skills",
                  f"{self.outside}/dir"):
            os.makedirs(p)
        with open(f"{self.outside}/secret.md", "w") as fh:
            fh.write("outside\n")
        self.builder.add_file("a.md", "a\n")
        for name in SKILL_SPOTS:
            self._make_skill(name)
        self.instructions = self.builder.write_instructions("demo", "# rules\n")
        for agent in AGENTS:
            self._write_agent(agent)
        self.home = self.builder.home  # the suite's throw-away home ([G4] detection)
        shutil.rmtree(f"{self.home}/.claude", ignore_errors=True)
        os.mkdir(f"{self.home}/.claude")
        self.skills: list[str] = ["alpha"]
        self.refused = []
        self.foreign: dict[str, tuple[object, ...]] = {}
        self.counter = 0
        with open(f"{self.co}/README.md", "w") as fh:
            fh.write("the user's own\n")
        self._foreign_put(f"{self.co}/README.md")
        self._write_config()

    # -- helpers ---------------------------------------------------------------------------

    def _make_skill(self, name: str) -> None:
        self.builder.add_skill(name)

    def _write_agent(self, agent: str) -> None:
        self.builder.add_agent(agent, f'[agents.{agent}]\ndisplay_name = "{agent}"\n'
                               f'project_instruction_path = "{AGENTS[agent]}"\n'
                               f'[agents.{agent}.detect]\npaths = [".{agent.split("-")[0]}"]\n')

    def _write_config(self) -> None:
        self.builder.write_config("demo", memory=["a.md"], paths=[self.co, *self.refused],
                                  skills=self.skills)

    def _outside_co(self) -> dict[str, tuple[object, ...]]:
        return snapshot(self.d, skip=(self.co,))

    def _user_link_or_file(self, path: str, kind: str, other: str) -> None:
        self.counter += 1
        if kind == "file":
            with open(path, "w") as fh:
                fh.write(f"user file {self.counter}\n")
        elif kind in ("dir", "dir_with_file"):
            os.mkdir(path)
            if kind == "dir_with_file":
                self._foreign_put(path)
                path = f"{path}/mine.txt"
                with open(path, "w") as fh:
                    fh.write("mine\n")
        elif kind == "foreign_link":
            os.symlink(f"{self.outside}/secret.md", path)
        elif kind == "dangling":
            os.symlink(f"{self.outside}/nowhere-{self.counter}", path)
        else:  # a link to another skill's canonical source: not this target's owner
            os.symlink(f"{self.ws}/skills/{other}", path)
        self._foreign_put(path)

    def _run(self, how: str) -> None:
        before_all = snapshot(self.d)
        before_out = self._outside_co()
        wrote_nothing = False
        plan: Plan | None = None
        if how == "cli":
            res = CliRunner().invoke(cli, ["--workspace", self.ws, "sync", "project", "demo",
                                           "--json"], catch_exceptions=True)
            if res.exception is not None and not isinstance(res.exception, SystemExit):
                raise res.exception
            assert res.exit_code in (0, 1), (res.exit_code, res.output)
            doc = json.loads(res.stdout)
            event(f"segments cli: {doc['outcome']}")
            wrote_nothing = all(op["status"] != "applied" for op in doc["operations"])
        else:
            try:
                if how == "sync":
                    result = self._project().sync()
                else:
                    project = self._project()
                    result = project.execute(project.plan())
                event(f"segments {how}: {result.outcome}")
                plan = result.plan
            except ConflictError as exc:
                event(f"segments {how}: blocked")
                assert exc.result is not None
                plan = exc.result.plan
                wrote_nothing = all(s is not Status.APPLIED for s in exc.result.statuses)
        assert self._outside_co() == before_out, "aikito wrote outside the checkout"
        if wrote_nothing:
            assert snapshot(self.d) == before_all, "a run that applied nothing wrote"
        if plan is not None:
            for op in plan.operations:
                if op.action is Action.CREATE and op.source is not None:
                    assert not os.path.lexists(op.target) or op.target in self.foreign \
                        or os.readlink(op.target) == op.source or \
                        op.segment in plan.blocked_segments
        self._assert_converged()

    def _assert_converged(self) -> None:
        """Every segment without a conflict re-plans as NOOP/SKIP only (a second sync
        would perform no mutating syscall, [G7])."""
        plan = self._project().plan()
        bad = [op for op in plan.operations if op.segment not in plan.blocked_segments
               and op.action not in (Action.NOOP, Action.SKIP)]
        assert not bad, f"after a sync the re-plan still has {bad}"

    @initialize(planted=st.lists(st.tuples(st.sampled_from(SKILL_SPOTS),
                                           st.sampled_from(SKILL_KINDS)), max_size=3),
                instruction=st.sampled_from([None, *INSTRUCTION_KINDS]),
                first_sync=st.booleans())
    def start(self, planted: list[tuple[str, str]], instruction: str | None,
              first_sync: bool) -> None:
        """Every run starts with some of the user's own entries among the skills and at
        ``.claude/CLAUDE.md`` (after a first sync or before any)."""
        if first_sync:
            self._run("sync")
        for name, kind in planted:
            self.user_puts_skill(name, kind, "gamma")
        if instruction is not None:
            self.user_puts_instruction(".claude/CLAUDE.md", instruction)

    # -- configuration and workspace ---------------------------------------------------------

    @rule(name=st.sampled_from(SKILLS))
    def add_skill(self, name: str) -> None:
        if name not in self.skills:
            self.skills.append(name)
            self._write_config()

    @rule(name=st.sampled_from(SKILLS))
    def remove_skill(self, name: str) -> None:
        if name in self.skills:
            self.skills.remove(name)
            self._write_config()

    @rule(name=st.sampled_from(SKILLS), recreate=st.booleans())
    def delete_skill_source(self, name: str, recreate: bool) -> None:
        shutil.rmtree(f"{self.ws}/skills/{name}", ignore_errors=True)
        if recreate:
            self._make_skill(name)

    @rule(state=st.sampled_from(["content", "blank", "empty", "absent"]))
    def agents_md(self, state: str) -> None:
        if state == "absent":
            if os.path.lexists(self.instructions):
                os.unlink(self.instructions)
            return
        with open(self.instructions, "w") as fh:
            fh.write({"content": "# rules\n", "blank": " \n\t\n", "empty": ""}[state])

    @rule(agent=st.sampled_from(list(AGENTS)), present=st.booleans())
    def registry_file(self, agent: str, present: bool) -> None:
        path = f"{self.ws}/agents/{agent}.toml"
        if present:
            self._write_agent(agent)
        elif os.path.lexists(path):
            os.unlink(path)

    @rule(present=st.booleans())
    def claude_installed(self, present: bool) -> None:
        path = f"{self.home}/.claude"
        if present and not os.path.lexists(path):
            os.mkdir(path)
        elif not present and os.path.lexists(path):
            shutil.rmtree(path)

    # -- the user in the checkout --------------------------------------------------------

    @rule(name=st.sampled_from(SKILL_SPOTS), kind=st.sampled_from(SKILL_KINDS),
          other=st.sampled_from(SKILLS))
    def user_puts_skill(self, name: str, kind: str, other: str) -> None:
        rel = f".agents/skills/{name}"
        path = f"{self.co}/{rel}"
        if os.path.lexists(path) or not _real_dirs_upto(self.co, rel):
            return
        if kind == "other_skill" and other == name:
            other = "beta" if name != "beta" else "gamma"
        self._mkdirs_user(path)
        self._user_link_or_file(path, kind, other)

    @rule(rel=st.sampled_from(INSTRUCTION_TARGETS), kind=st.sampled_from(INSTRUCTION_KINDS))
    def user_puts_instruction(self, rel: str, kind: str) -> None:
        path = f"{self.co}/{rel}"
        if os.path.lexists(path) or not _real_dirs_upto(self.co, rel):
            return
        self._mkdirs_user(path)
        self._user_link_or_file(path, kind, "alpha")

    @rule(rel=st.sampled_from(SEGMENT_PARENTS),
          kind=st.sampled_from(["file", "outside_dir_link", "dangling"]))
    def user_replaces_parent(self, rel: str, kind: str) -> None:
        self._replace_parent(rel, kind)

    @rule(i=st.integers(0, 1000))
    def user_cleans_up(self, i: int) -> None:
        candidates = sorted(p for p in self.foreign if p != f"{self.co}/README.md")
        if not candidates:
            return
        path = candidates[i % len(candidates)]
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        for p in [p for p in self.foreign if p == path or p.startswith(path + "/")]:
            del self.foreign[p]

    @rule(rel=st.sampled_from([*(f".agents/skills/{n}" for n in SKILLS),
                               *INSTRUCTION_TARGETS]))
    def user_deletes_aikito_link(self, rel: str) -> None:
        path = f"{self.co}/{rel}"
        if path not in self.foreign and _real_dirs_upto(self.co, rel) and os.path.islink(path):
            os.unlink(path)

    @rule(where=st.sampled_from(["home", "inside", "around"]), present=st.booleans())
    def list_refused_checkout(self, where: str, present: bool) -> None:
        """[H1]: the home (with its ``.claude/``: claude-code is detected, so an accepted
        home would get ``~/.claude/CLAUDE.md``), inside or around the workspace."""
        if self._toggle_refused(where, present):
            self._write_config()

    # -- aikito --------------------------------------------------------------------------

    @rule(how=st.sampled_from(["sync", "plan_execute", "cli"]))
    def sync(self, how: str) -> None:
        self._run(how)

    @rule()
    def dry_run(self) -> None:
        before = snapshot(self.d)
        self._project().dry_run()
        assert snapshot(self.d) == before, "a dry run wrote something"

    @rule(how=st.sampled_from(["project", "path"]), dry=st.booleans())
    def clean(self, how: str, dry: bool) -> None:
        """[L3] in every segment: owned skill and instruction links (and memory's) go,
        directories the clean empties are pruned, foreign entries stay; nothing outside
        the checkout changes; a dry run changes nothing; a second clean has nothing to
        do."""
        before_all = snapshot(self.d)
        before_out = self._outside_co()
        cleaner = _cleaner(self.ws, self.co, how)
        if dry:
            cleaner.plan()
            assert snapshot(self.d) == before_all, "a dry-run clean wrote something"
            return
        result = cleaner.run()
        event(f"segments clean {how}: {result.outcome}")
        assert self._outside_co() == before_out, "clean wrote outside the checkout"
        for op in result.plan.operations:
            if op.action is Action.UNLINK and op.entry == "directory":
                self.foreign.pop(op.target, None)  # a user's directory the clean emptied
        # A target dropped from the registry is not looked at ([L3], [G3]).
        places = [f"{self.co}/{rel}" for agent, rel in AGENTS.items()
                  if os.path.exists(f"{self.ws}/agents/{agent}.toml")]
        skills = f"{self.co}/.agents/skills"
        if os.path.isdir(skills) and not os.path.islink(skills):
            places += [f"{skills}/{n}" for n in os.listdir(skills)]
        for path in places:
            if os.path.islink(path) and _real_dirs_upto(self.co, path[len(self.co) + 1:]):
                assert path in self.foreign, f"clean left aikito's link {path}"
        again = _cleaner(self.ws, self.co, how).plan()
        assert not again.has_changes
        if self.runtime_mounted is not None:
            # [L8]: the mount point stays, and the plan says so — every time.
            assert os.path.isdir(self.runtime_mounted)
            if not os.listdir(self.runtime_mounted):
                assert self.runtime_mounted in {f.path for f in again.findings
                                                if f.code == "clean.mount_point"}

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def foreign_entries_unchanged(self) -> None:
        for path, sig in self.foreign.items():
            assert _sig(path) == sig, f"foreign entry {path} changed: {sig} -> {_sig(path)}"

    @invariant()
    def home_untouched(self) -> None:
        self._home_untouched()

    @invariant()
    def every_other_link_is_owned(self) -> None:
        skills = f"{self.co}/.agents/skills"
        places: list[tuple[str, str]] = []
        if os.path.isdir(skills) and not os.path.islink(skills) and \
                _real_dirs_upto(self.co, ".agents/skills/x"):
            places += [(f"{skills}/{n}", f"{self.ws}/skills/{n}") for n in os.listdir(skills)]
        for rel in INSTRUCTION_TARGETS:
            if _real_dirs_upto(self.co, rel):
                places.append((f"{self.co}/{rel}", self.instructions))
        for path, canonical in places:
            if os.path.islink(path) and path not in self.foreign:
                assert os.readlink(path) == canonical, (path, os.readlink(path))



def _cleaner(ws: str, co: str, how: str) -> Cleaner:
    """``aikito clean project demo`` (``how`` ``project``) or ``aikito clean CO``."""
    workspace = resolve_workspace(ws)
    return Cleaner(workspace, "demo", None) if how == "project" else \
        Cleaner(workspace, None, co)


def _machine_settings(*, long: bool = False) -> settings:
    """Examples and steps from the active profile, bounded: the default machine keeps
    ``make test`` (profile ``ci``: 40 examples × 50 steps) well under its budget; the
    ``slow`` variant (``make test-long``) runs many more, longer, sequences."""
    current = settings()
    examples = current.max_examples
    steps = current.stateful_step_count
    if long:
        examples, steps = min(max(examples // 3, 100), 400), max(steps, 120)
    else:
        examples, steps = min(examples, 40), min(steps, 50)
    return settings(current, max_examples=examples, stateful_step_count=steps, deadline=None)


SafetyMachine.TestCase.settings = _machine_settings()
TestSafetyMachine = SafetyMachine.TestCase


class LongSafetyMachine(SafetyMachine):
    pass


LongSafetyMachine.TestCase.settings = _machine_settings(long=True)

SegmentsMachine.TestCase.settings = _machine_settings()
TestSegmentsMachine = SegmentsMachine.TestCase


@pytest.mark.slow
class TestSafetyMachineLong(LongSafetyMachine.TestCase):  # type: ignore[misc, valid-type]
    pass
