"""The writer's own check ([E9], :mod:`aikito_mem.executor.guard`): plans built in memory with
``attrs.evolve`` — never compared with a fresh plan — are refused by the guard alone.

Each tampered plan below passes verification ([E2]: its recorded observations are the
live ones), so nothing but the guard stands between it and the write: every case is run
twice, once as it is (``UnsafePlanError``, exit 4, the whole tree identical) and once
with :func:`aikito_mem.executor.guard.check` replaced by a no-op, which shows the write the guard
prevented really happens.  Then: the engine's own plans always pass it (no false
refusal), for hand-picked flows and for random worlds.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings

from aikito_mem.api import Project
from aikito_mem.errors import ConflictError, ExecutionError, StalePlanError, UnsafePlanError
from aikito_mem.executor import guard
from aikito_mem.executor.execute import Locks, execute
from aikito_mem.executor.verify import verify
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutPlan,
    CheckoutState,
    Kind,
    Observed,
    Operation,
    Plan,
    SegmentName,
)
from aikito_mem.values import replace
from aikito_mem.world.observe import lstat_link, with_identity
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.strategies import World as RandomWorld
from tests.helpers.strategies import fs_examples, worlds
from tests.helpers.workspace import WS


@dataclass
class World:
    ws: WS
    co: str
    unlisted: str
    outside: str
    new: str

    @property
    def mem(self) -> str:
        return f"{self.co}/.agents/memory"

    def roots(self) -> list[str]:
        return self.ws.roots()

    def project(self) -> Project:
        return self.ws.project("demo")


@pytest.fixture
def w(ws: WS) -> World:
    for ref in ("top.md", "team/a.md", "old.md", "other.md", "gone/x.md"):
        ws.add_file(ref, f"{ref}\n")
    ws.add_notes("demo")
    co = ws.checkout("main")
    mem = f"{co}/.agents/memory"
    os.makedirs(f"{mem}/gone")
    os.makedirs(f"{mem}/userdir")  # the user's own empty directory
    os.symlink(ws.memory_path("old.md"), f"{mem}/old.md")
    os.symlink(ws.memory_path("gone/x.md"), f"{mem}/gone/x.md")
    os.symlink("/elsewhere/mine", f"{mem}/mine")
    Path(mem, "notes.txt").write_text("the user's notes\n")
    ws.write_config("demo", memory=["top.md", "team/a.md"], paths=[co])
    unlisted = ws.checkout("unlisted")
    new = ws.checkout("new")
    outside = f"{ws.base}/outside"
    os.makedirs(f"{outside}/emptydir")
    Path(outside, "file").write_text("outside\n")
    os.symlink(f"{outside}/file", f"{outside}/link")
    return World(ws, co, unlisted, outside, new)


def live(path: str) -> Observed:
    """The observation verification will compare with (identity included)."""
    obs = lstat_link(path)
    return with_identity(path, obs) if obs.kind is Kind.DIR else obs


def the(plan: Plan, name: str, action: Action) -> int:
    for i, op in enumerate(plan.operations):
        if op.target.endswith("/" + name) and op.action is action:
            return i
    raise AssertionError((name, action))


def replace_op(plan: Plan, index: int, **changes: object) -> Plan:
    ops = list(plan.operations)
    ops[index] = attrs.evolve(ops[index], **changes)
    return plan.evolve(operations=tuple(ops))


def add_op(plan: Plan, op: Operation) -> Plan:
    return plan.evolve(operations=(*plan.operations, op))


def escape(w: World, path: str) -> str:
    """``<checkout>/.agents/memory/../../…/<path>``: lexically below the memory root."""
    return f"{w.mem}/{os.path.relpath(path, w.mem)}"


# --------------------------------------------------------------------------- tampered plans

Tamper = Callable[[World, Plan], Plan]


def _create_dotdot(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), target=escape(w, f"{w.outside}/evil"))


def _create_absolute_outside(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), target=f"{w.outside}/evil")


def _create_unlisted_checkout(w: World, p: Plan) -> Plan:
    root = live(w.unlisted)
    co = CheckoutPlan("evil", w.unlisted, CheckoutState.ACTIVE,
                      dirs=(("", root), (".agents", ABSENT), (".agents/memory", ABSENT)))
    op = attrs.evolve(p.operations[the(p, "top.md", Action.CREATE)], checkout=w.unlisted,
                      target=f"{w.unlisted}/.agents/memory/top.md")
    return add_op(p.evolve(checkouts=(*p.checkouts, co)), op)


def _create_beside_memory(w: World, p: Plan) -> Plan:
    # Same length as ".agents/memory": a prefix test by slicing would accept it.
    return replace_op(p, the(p, "top.md", Action.CREATE),
                      target=f"{w.co}/.agents/MEMORY/top.md")


def _unlink_foreign_link_through_dotdot(w: World, p: Plan) -> Plan:
    # The user's own link ``b`` names ``<ws>/memory/a/../b``: not aikito's literal for
    # ``b`` ([O1]), but exactly the "canonical" path of the unclean runtime path a/../b.
    os.symlink(f"{w.ws.root}/memory/a/../b", f"{w.mem}/b")
    os.mkdir(f"{w.mem}/a")
    return replace_op(p, the(p, "old.md", Action.UNLINK), target=f"{w.mem}/a/../b",
                      observed=live(f"{w.mem}/b"))


def _op_for_listed_checkout_not_in_plan(w: World, p: Plan) -> Plan:
    # agent.toml lists both checkouts; the plan drops one but keeps an operation for it,
    # which the writer would then silently never apply.
    w.ws.write_config("demo", memory=["top.md", "team/a.md"], paths=[w.co, w.new])
    p = w.project().plan()
    return p.evolve(checkouts=p.checkouts[:1])


def _source_outside(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), source=f"{w.outside}/file")


def _source_other_resource(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE),
                      source=w.ws.memory_path("team/a.md"))


def _source_relative(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), source="../../../outside/file")


def _source_missing(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), source=None)


def _source_legacy_notes(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "notes", Action.CREATE),
                      source=w.ws.notes_path("demo", legacy=True))


def _create_unwanted_reference(w: World, p: Plan) -> Plan:
    op = attrs.evolve(p.operations[the(p, "top.md", Action.CREATE)],
                      target=f"{w.mem}/other.md", source=w.ws.memory_path("other.md"),
                      resource="other.md")
    return add_op(p, op)


def _create_as_directory(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), entry="directory")


def _unlink_users_link(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "old.md", Action.UNLINK), target=f"{w.mem}/mine",
                      observed=live(f"{w.mem}/mine"))


def _unlink_users_file(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "old.md", Action.UNLINK), target=f"{w.mem}/notes.txt",
                      observed=live(f"{w.mem}/notes.txt"))


def _unlink_link_outside(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "old.md", Action.UNLINK),
                      target=escape(w, f"{w.outside}/link"), observed=live(f"{w.outside}/link"))


def _unlink_entry_word(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "old.md", Action.UNLINK), entry="file")


def _rmdir_outside(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "gone", Action.UNLINK),
                      target=escape(w, f"{w.outside}/emptydir"),
                      observed=live(f"{w.outside}/emptydir"))


def _rmdir_users_empty_dir(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "gone", Action.UNLINK), target=f"{w.mem}/userdir",
                      observed=live(f"{w.mem}/userdir"))


def _rmdir_memory_root(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "gone", Action.UNLINK), target=w.mem, observed=live(w.mem))


def _checkout_twice(w: World, p: Plan) -> Plan:
    return p.evolve(checkouts=(*p.checkouts, p.checkouts[0]))


def _op_for_absent_checkout(w: World, p: Plan) -> Plan:
    return replace_op(p, the(p, "top.md", Action.CREATE), checkout=w.unlisted)


def _register_other_file(w: World, p: Plan) -> Plan:
    # A byte copy of agent.toml elsewhere: the compare-and-swap digest still matches.
    copy = f"{w.outside}/agent.toml"
    shutil.copyfile(w.ws.config_path("demo"), copy)
    return p.evolve(config_path=copy)


def _register_another_path(w: World, p: Plan) -> Plan:
    return p.evolve(register=w.unlisted)


def _register_without_digest(w: World, p: Plan) -> Plan:
    return p.evolve(config_sha256=None)


def _explicit_path_elsewhere(w: World, p: Plan) -> Plan:
    # Named explicitly: new.  The plan's checkout: unlisted.
    return _create_unlisted_checkout(w, p.evolve(explicit_path=w.new))


@dataclass(frozen=True)
class Case:
    tamper: Tamper
    #: Plan with the explicit, unregistered checkout ``new`` (registration planned).
    explicit: bool = False
    #: Without the guard, the write it prevents happens (else another check catches it).
    unguarded_writes: bool = True


CASES: dict[str, Case] = {
    "create-target-dotdot": Case(_create_dotdot),
    "create-target-absolute-outside": Case(_create_absolute_outside),
    "create-in-unlisted-checkout": Case(_create_unlisted_checkout),
    "create-beside-memory-root": Case(_create_beside_memory),
    "unlink-foreign-link-through-dotdot": Case(_unlink_foreign_link_through_dotdot),
    "op-for-listed-checkout-not-in-plan": Case(_op_for_listed_checkout_not_in_plan,
                                               unguarded_writes=False),
    "create-source-outside": Case(_source_outside),
    "create-source-other-resource": Case(_source_other_resource),
    "create-source-relative": Case(_source_relative),
    "create-source-none": Case(_source_missing, unguarded_writes=False),
    "create-source-legacy-notes": Case(_source_legacy_notes),
    "create-unwanted-reference": Case(_create_unwanted_reference),
    "create-entry-directory": Case(_create_as_directory),
    "unlink-users-link": Case(_unlink_users_link),
    "unlink-users-file": Case(_unlink_users_file, unguarded_writes=False),
    "unlink-link-outside": Case(_unlink_link_outside),
    "unlink-entry-word": Case(_unlink_entry_word),
    "rmdir-outside": Case(_rmdir_outside),
    "rmdir-users-empty-dir": Case(_rmdir_users_empty_dir),
    "rmdir-memory-root": Case(_rmdir_memory_root, unguarded_writes=False),
    "checkout-twice": Case(_checkout_twice),
    "op-for-checkout-not-in-plan": Case(_op_for_absent_checkout),
    "register-other-file": Case(_register_other_file, explicit=True),
    "register-another-path": Case(_register_another_path, explicit=True),
    "register-without-digest": Case(_register_without_digest, explicit=True,
                                    unguarded_writes=False),
    "explicit-path-elsewhere": Case(_explicit_path_elsewhere, explicit=True),
}


def _tampered(w: World, name: str) -> Plan:
    case = CASES[name]
    project = w.project()
    plan = project.plan(w.new) if case.explicit else project.plan()
    assert not plan.blocked and plan.has_changes
    return case.tamper(w, plan)


@pytest.mark.parametrize("name", sorted(CASES))
def test_guard_alone_refuses_a_tampered_plan(w: World, name: str) -> None:
    plan = _tampered(w, name)
    with Locks() as locks:  # what the guard sees has passed verification ([E2])
        locks.acquire([c.path for c in plan.checkouts if c.state is CheckoutState.ACTIVE], 1.0)
        assert verify(plan, locks) == []
    before = snapshot(*w.roots())
    with pytest.raises(UnsafePlanError) as info:
        w.project().execute(plan)
    err = info.value
    assert err.exit_code == 4 and err.code == "plan.unsafe"
    assert err.refusals and all(r in err.message for r in err.refusals)
    assert err.plan is plan
    assert changed(before, snapshot(*w.roots())) == set()


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c.unguarded_writes))
def test_without_the_guard_the_tampered_write_happens(
    w: World, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control experiment: the guard is what refuses these plans."""
    plan = _tampered(w, name)
    monkeypatch.setattr(guard, "check", lambda plan, **_: None)
    before = snapshot(*w.roots())
    with contextlib.suppress(StalePlanError, ExecutionError, ConflictError):
        w.project().execute(plan)
    assert changed(before, snapshot(*w.roots())) != set()


def test_refusal_names_path_expectation_and_finding(w: World) -> None:
    plan = _unlink_users_link(w, w.project().plan())
    with pytest.raises(UnsafePlanError) as info:
        w.project().execute(plan)
    (refusal,) = info.value.refusals
    assert f"UNLINK '{w.mem}/mine'" in refusal
    assert "'/elsewhere/mine'" in refusal and "does not own" in refusal
    assert w.ws.memory_path("mine") in refusal  # what would be owned
    assert "nothing was written" in info.value.message


def test_every_refusal_is_named(w: World) -> None:
    p = w.project().plan()
    p = _source_outside(w, _unlink_users_link(w, _rmdir_users_empty_dir(w, p)))
    with pytest.raises(UnsafePlanError) as info:
        w.project().execute(p)
    assert len(info.value.refusals) == 3


def test_cli_reports_a_refusal_as_one_json_document(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal reaches the command line as any configuration error does: exit 4, one
    JSON document, every operation ``not_applied`` (``aikito apply`` never executes a
    file's plan as it is, so a sync whose planning is tampered with stands in for it)."""
    import json

    from click.testing import CliRunner

    from aikito_mem.cli import cli

    real = Project.plan_locked

    def tampered(self: Project, *args: object, **kwargs: object) -> Plan:
        return _unlink_users_link(w, real(self, *args, **kwargs))  # type: ignore[arg-type]

    monkeypatch.setattr(Project, "plan_locked", tampered)
    before = snapshot(*w.roots())
    res = CliRunner().invoke(cli, ["--workspace", w.ws.root, "sync", "project", "demo",
                                   "--json"], catch_exceptions=False)
    doc = json.loads(res.stdout)
    assert res.exit_code == 4 == doc["exit_code"]
    assert doc["outcome"] == "config_error" and doc["error"]["code"] == "plan.unsafe"
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}
    assert changed(before, snapshot(*w.roots())) == set()


def test_cli_text_lists_each_refusal_on_a_line_of_its_own(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text form of a refusal: one head line, then one line per refused write —
    never a literal ``\\n`` inside a line, and "nothing was written" said once."""
    from click.testing import CliRunner

    from aikito_mem.cli import cli

    real = Project.plan_locked

    def tampered(self: Project, *args: object, **kwargs: object) -> Plan:
        plan = real(self, *args, **kwargs)  # type: ignore[arg-type]
        return _source_outside(w, _unlink_users_link(w, plan))

    monkeypatch.setattr(Project, "plan_locked", tampered)
    res = CliRunner().invoke(cli, ["--workspace", w.ws.root, "sync", "project", "demo"],
                             catch_exceptions=False)
    assert res.exit_code == 4
    lines = res.stderr.splitlines()
    assert lines[0].startswith("aikito: refused: the plan asks for 2 writes")
    assert [line[:4] for line in lines[1:]] == ["  - ", "  - "]
    assert sorted(line.split()[1] for line in lines[1:]) == ["CREATE", "UNLINK"]
    assert not any("\\n" in line for line in lines)
    assert res.stderr.count("nothing was written") == 1


def test_segment_table_has_memory_rules() -> None:
    rule = guard.SEGMENTS[SegmentName.MEMORY]
    assert rule.root == ".agents/memory" and rule.prunes and not rule.single_component


# --------------------------------------------------------------------------- no false refusal


def test_engine_plans_pass_the_guard(w: World) -> None:
    """sync (create, unlink, prune), an explicit checkout with registration, prepare."""
    project = w.project()
    plan = project.plan()
    assert {op.action for op in plan.operations} >= {Action.CREATE, Action.UNLINK}
    assert any(op.entry == "directory" for op in plan.operations)
    guard.check(plan)
    assert project.sync().outcome == "applied"
    result = w.project().sync(w.new)
    assert result.registered and result.outcome == "applied"
    shutil.rmtree(f"{w.new}/.agents")
    prepared = w.project().prepare("claude", path=w.new)
    assert prepared.result.outcome == "applied"


def test_legacy_notes_replacement_passes_the_guard(ws: WS) -> None:
    """The one replacement of [P1]: UNLINK of the legacy-notes link + CREATE of the current
    one on the same target."""
    ws.add_notes("demo", legacy=True)
    co = ws.checkout("co")
    ws.write_config("demo", memory=[], paths=[co])
    ws.project("demo").sync()
    assert os.readlink(f"{co}/.agents/memory/notes") == ws.notes_path("demo", legacy=True)
    ws.add_notes("demo")
    plan = ws.project("demo").plan()
    assert [op.action for op in plan.operations] == [Action.UNLINK, Action.CREATE]
    assert ws.project("demo").execute(plan).outcome == "applied"
    assert os.readlink(f"{co}/.agents/memory/notes") == ws.notes_path("demo")


def test_relative_owned_link_is_unlinked(ws: WS) -> None:
    """[O1]: a relative literal that normalises to the canonical path is owned."""
    ws.add_file("old.md")
    co = ws.checkout("co")
    mem = f"{co}/.agents/memory"
    os.makedirs(mem)
    os.symlink(os.path.relpath(ws.memory_path("old.md"), mem), f"{mem}/old.md")
    ws.write_config("demo", memory=[], paths=[co])
    assert ws.project("demo").sync().outcome == "applied"
    assert not os.path.lexists(f"{mem}/old.md")


def test_guard_reuses_the_engines_parse(w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """[P6]: the live agent.toml bytes the engine already parsed — the parse handed to the
    guard explicitly by whoever planned — are not parsed again."""
    import aikito_mem.config.agent_toml as config

    project = w.project()
    plan = project.plan()
    calls: list[str] = []
    real = config.parse_project_config

    def counting(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        calls.append("parse")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(config, "parse_project_config", counting)
    guard.check(plan, config=project.config, home=project.home)
    assert calls == []
    guard.check(plan)  # nothing handed over: the live bytes are parsed
    assert calls == ["parse"]
    # Bytes it never parsed (a comment added): parsed, and still the same configuration.
    with open(w.ws.config_path("demo"), "a") as fh:
        fh.write("# edited\n")
    guard.check(plan, config=project.config, home=project.home)
    assert calls == ["parse", "parse"]


def test_memo_is_keyed_by_the_live_bytes(w: World) -> None:
    """Neither the plan nor the caller picks the configuration the guard uses: agent.toml
    now lists another checkout, whatever the plan (or its digests) say and whatever parse
    the caller hands over."""
    project = w.project()
    plan = project.plan()
    w.ws.write_config("demo", memory=["top.md", "team/a.md"], paths=[w.unlisted])
    with pytest.raises(UnsafePlanError) as info:
        guard.check(plan.evolve(config_digest=hashlib.sha256(b"").hexdigest()),
                    config=project.config, home=project.home)
    assert any("is not one aikito may write to" in r for r in info.value.refusals)


@pytest.fixture(scope="module")
def fs_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("guard")


class _N:
    n = 0


@settings(max_examples=fs_examples(25), deadline=None)
@given(worlds(max_refs=4))
def test_random_engine_plans_pass_the_guard(fs_base: Path, world: RandomWorld) -> None:
    _N.n += 1
    ws = WS(fs_base / f"ex{_N.n}")
    world.materialise(ws)
    for path in [None, *(c.path for c in ws.project(world.project).plan().checkouts
                         if c.state is CheckoutState.ACTIVE)]:
        plan = ws.project(world.project).plan(path)
        guard.check(plan)  # blocked plans included: the guard judges every write


# --------------------------------------------------------------------------- direct checks


def test_unlink_of_a_non_link_claiming_an_owned_literal_is_refused(w: World) -> None:
    """The observation says "directory" but carries the canonical literal: only a symlink
    can be owned ([O1]), whatever literal is claimed."""
    p = w.project().plan()
    obs = live(f"{w.mem}/userdir")
    plan = replace_op(p, the(p, "old.md", Action.UNLINK), target=f"{w.mem}/userdir",
                      observed=replace(obs, literal=w.ws.memory_path("userdir")))
    with pytest.raises(UnsafePlanError) as info:
        guard.check(plan)
    assert any("aikito only unlinks its own links" in r for r in info.value.refusals)


def test_a_segment_without_rules_cannot_write(w: World) -> None:
    """The rules are a table of segment → root, source, history; an operation of a segment
    without a row (or outside its own root) is refused."""
    p = w.project().plan()
    plan = replace_op(p, the(p, "top.md", Action.CREATE), segment=SegmentName.SKILLS)
    with pytest.raises(UnsafePlanError) as info:
        guard.check(plan)
    assert any("segment 'skills'" in r or ".agents/skills/" in r
               for r in info.value.refusals), info.value.refusals


def test_an_unreadable_agent_toml_refuses(w: World) -> None:
    plan = w.project().plan()
    os.unlink(w.ws.config_path("demo"))
    with pytest.raises(UnsafePlanError) as info:
        guard.check(plan)
    assert "agent.toml cannot be loaded" in info.value.refusals[0]


def test_an_explicit_checkout_that_is_no_directory_refuses(w: World) -> None:
    plan = w.project().plan(w.new)
    os.rmdir(w.new)
    with pytest.raises(UnsafePlanError) as info:
        guard.check(plan)
    assert "checkout named explicitly cannot be used" in info.value.refusals[0]


def test_a_plan_without_writes_is_not_examined(w: World) -> None:
    w.project().sync()
    plan = w.project().plan()
    assert not plan.has_changes
    os.unlink(w.ws.config_path("demo"))
    guard.check(plan)  # nothing to write: nothing to refuse


def test_registration_under_home_is_written_as_tilde_and_passes(w: World) -> None:
    """[K4]: a checkout under the home directory is registered as ``~/…``; that value is
    the one the guard derives for the explicit path, any other is refused."""
    home = os.environ["HOME"]
    co = f"{home}/code/demo"
    os.makedirs(co)
    plan = w.project().plan(co)
    assert plan.register == "~/code/demo"
    guard.check(plan)
    with pytest.raises(UnsafePlanError):
        guard.check(plan.evolve(register="~/code/other"))
    assert w.project().execute(plan).registered


def test_the_guard_expands_home_from_the_runs_environment(ws: WS) -> None:
    """[H5]: a project loaded with ``environ=`` is checked against the checkouts its own
    ``HOME`` expands ``~/…`` to — also when the guard parses ``agent.toml`` afresh."""
    home = f"{ws.base}/their-home"
    os.makedirs(f"{home}/code/demo")
    ws.add_file("a.md", "a\n")
    ws.write_config("demo", memory=["a.md"], paths=["~/code/demo"])
    environ = {"HOME": home, "PATH": os.environ.get("PATH", "")}
    project = Project.load("demo", workspace=ws.root, environ=environ)
    plan = project.plan()
    # No parse handed over: the guard reads and parses agent.toml itself.
    result = execute(plan, environ=environ)
    assert result.outcome == "applied"
    assert os.readlink(f"{home}/code/demo/.agents/memory/a.md") == ws.memory_path("a.md")


def test_a_parse_made_with_another_home_is_not_reused(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[H5], [P6]: the caller's parse is re-used only when it expanded ``~`` with the home
    of the run's environment; handed over with another home, the live bytes are parsed
    again with the environment's."""
    import aikito_mem.config.agent_toml as config

    project = w.project()
    plan = project.plan()
    homes: list[object] = []
    real = config.parse_project_config

    def counting(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        homes.append(kwargs.get("home"))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(config, "parse_project_config", counting)
    environ = {"HOME": project.home or "/", "PATH": os.environ.get("PATH", "")}
    guard.check(plan, environ=environ, config=project.config, home=project.home)
    assert homes == []
    guard.check(plan, environ=environ, config=project.config, home=f"{w.ws.base}/elsewhere")
    assert homes == [project.home or "/"]
