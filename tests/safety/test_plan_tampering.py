"""A saved plan is untrusted input ([E9]): edited plan files, checksum recomputed.

Every edit below is made the way an adversary would make it — change the TOML document,
recompute the checksum (it catches accidents, not tampering) — and then ``aikito apply``
is run.  Each attack is refused (exit 3 or 4), with one JSON document, and the whole tree
(workspace, checkouts, an unlisted directory, an outside directory, HOME) is byte-,
inode- and timestamp-identical afterwards.  Edits of fields that only carry text (reasons,
remedies, findings) or bookkeeping are harmless: the run does exactly what the genuine
plan does and never shows the edited text.  A hypothesis property mutates real saved plans
at random: never a write outside the engine's own targets, never a traceback.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from click.testing import Result
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from aikito_mem.model import (
    Candidate,
    CheckoutPlan,
    Finding,
    InstructionSource,
    Observed,
    Operation,
    Plan,
    PlannedTarget,
)
from aikito_mem.model import SourceCheck as SourceCheckModel
from aikito_mem.values import fields
from tests.helpers.cli import invoke
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.strategies import fs_examples
from tests.helpers.workspace import WS

Doc = dict[str, Any]

# --------------------------------------------------------------------------- the world


@dataclass
class World:
    ws: WS
    co: str
    offline: str
    unlisted: str
    other_co: str
    outside: str
    home: str
    planfile: str

    @property
    def mem(self) -> str:
        return f"{self.co}/.agents/memory"

    def roots(self) -> list[str]:
        return [str(self.ws.base), self.home]


def build(base: Path | str) -> World:
    """A workspace with a plan that creates, unlinks, prunes, keeps and skips:

    ``co/main`` (listed, active): ``glossary`` linked (NOOP), ``top.md``, ``team/a.md`` and
    ``notes`` to create, ``old.md`` and ``gone/x.md`` aikito's stale links (UNLINK, and
    ``gone`` pruned), ``mine`` the user's own link (preserved).  ``co/offline`` is listed
    but absent.  ``co/unlisted`` is listed by no project; ``co/other`` by project
    ``other`` only.  ``outside/`` holds a file, a symlink and an empty directory.
    """
    ws = WS(base)
    for ref in ("top.md", "team/a.md", "old.md", "other.md", "gone/x.md", "glossary"):
        ws.add_file(ref, f"{ref}\n")
    ws.add_notes("demo")
    co = ws.checkout("main")
    Path(co, "README.md").write_text("the user's work\n")
    mem = f"{co}/.agents/memory"
    os.makedirs(f"{mem}/gone")
    os.symlink(ws.memory_path("glossary"), f"{mem}/glossary")
    os.symlink(ws.memory_path("old.md"), f"{mem}/old.md")
    os.symlink(ws.memory_path("gone/x.md"), f"{mem}/gone/x.md")
    os.symlink("/elsewhere/mine", f"{mem}/mine")
    offline = f"{ws.checkouts_dir}/offline"
    ws.write_config("demo", memory=["top.md", "team/a.md", "glossary"], paths=[co, offline])
    unlisted = ws.checkout("unlisted")
    Path(unlisted, "README.md").write_text("not a checkout of any project\n")
    other_co = ws.checkout("other")
    ws.write_config("other", memory=["other.md"], paths=[other_co])
    outside = f"{ws.base}/outside"
    os.makedirs(f"{outside}/emptydir")
    Path(outside, "file.toml").write_text('paths = ["/x"]\n')
    os.symlink(f"{outside}/file.toml", f"{outside}/link")
    os.makedirs(f"{ws.base}/plans")
    planfile = f"{ws.base}/plans/plan.toml"
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run", "--out",
              planfile, "--json")
    assert res.exit_code == 0, res.output
    return World(ws, co, offline, unlisted, other_co, outside, os.environ["HOME"], planfile)


def checksum(payload: Doc) -> str:
    """The checksum as anyone can recompute it (no aikito code involved)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load(w: World) -> Doc:
    return tomllib.loads(Path(w.planfile).read_text())


def save(w: World, doc: Doc, *, resign: bool = True) -> None:
    if resign:
        doc["checksum"] = checksum(doc["plan"])
    Path(w.planfile).write_text(tomli_w.dumps(doc))


def ops(p: Doc, action: str | None = None) -> list[Doc]:
    return [o for o in p["operations"] if action is None or o["action"] == action]


def op_at(p: Doc, name: str, action: str | None = None) -> Doc:
    """The operation whose target ends with ``/<name>`` (and has ``action``)."""
    found = [o for o in ops(p, action) if o["target"].endswith("/" + name)]
    assert found, (name, action)
    return found[0]


def link_obs(path: str) -> Doc:
    st_ = os.lstat(path)
    return {"kind": "symlink", "literal": os.readlink(path), "dev": st_.st_dev,
            "ino": st_.st_ino}


def dir_obs(path: str) -> Doc:
    st_ = os.lstat(path)
    return {"kind": "directory", "dev": st_.st_dev, "ino": st_.st_ino}


# --------------------------------------------------------------------------- attacks

Mutation = Callable[[Doc, World], None]


def _escape_create(p: Doc, w: World) -> None:
    o = op_at(p, "top.md", "CREATE")
    o["target"] = f"{w.mem}/../../../outside/evil"


def _absolute_outside_create(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["target"] = f"{w.outside}/evil"


def _create_into_unlisted(p: Doc, w: World) -> None:
    o = op_at(p, "top.md", "CREATE")
    o["checkout"] = w.unlisted
    o["target"] = f"{w.unlisted}/.agents/memory/top.md"


def _create_checkout_only(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["checkout"] = w.unlisted


def _swap_source_outside(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["source"] = f"{w.outside}/file.toml"


def _swap_source_other_resource(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["source"] = w.ws.memory_path("team/a.md")


def _swap_source_relative(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["source"] = "../../../outside/file.toml"


def _swap_source_legacy_notes(p: Doc, w: World) -> None:
    op_at(p, "notes", "CREATE")["source"] = w.ws.notes_path("demo", legacy=True)


def _create_unlisted_reference(p: Doc, w: World) -> None:
    o = copy.deepcopy(op_at(p, "top.md", "CREATE"))
    o.update(target=f"{w.mem}/other.md", source=w.ws.memory_path("other.md"),
             resource="other.md")
    p["operations"].append(o)


def _unlink_users_link(p: Doc, w: World) -> None:
    o = op_at(p, "old.md", "UNLINK")
    o["target"] = f"{w.mem}/mine"
    o["observed"] = link_obs(f"{w.mem}/mine")


def _add_unlink_users_link(p: Doc, w: World) -> None:
    o = copy.deepcopy(op_at(p, "old.md", "UNLINK"))
    o.update(target=f"{w.mem}/mine", observed=link_obs(f"{w.mem}/mine"))
    o.pop("source", None)
    p["operations"].append(o)


def _unlink_link_outside(p: Doc, w: World) -> None:
    o = op_at(p, "old.md", "UNLINK")
    o["target"] = f"{w.mem}/../../../outside/link"
    o["observed"] = link_obs(f"{w.outside}/link")


def _unlink_link_outside_absolute(p: Doc, w: World) -> None:
    o = op_at(p, "old.md", "UNLINK")
    o["target"] = f"{w.outside}/link"
    o["observed"] = link_obs(f"{w.outside}/link")


def _rmdir_outside(p: Doc, w: World) -> None:
    o = op_at(p, "gone", "UNLINK")
    o["target"] = f"{w.mem}/../../../outside/emptydir"
    o["observed"] = dir_obs(f"{w.outside}/emptydir")


def _rmdir_memory_root(p: Doc, w: World) -> None:
    o = op_at(p, "gone", "UNLINK")
    o["target"] = w.mem
    o["observed"] = dir_obs(w.mem)


def _action_noop_to_unlink(p: Doc, w: World) -> None:
    o = op_at(p, "glossary", "NOOP")
    o["action"] = "UNLINK"
    o["rule"] = "INV-MEM-06"


def _action_skip_to_create(p: Doc, w: World) -> None:
    op_at(p, "top.md", "SKIP")["action"] = "CREATE"


def _action_create_to_unlink(p: Doc, w: World) -> None:
    o = op_at(p, "top.md", "CREATE")
    o["action"] = "UNLINK"
    o["target"] = f"{w.mem}/mine"
    o["observed"] = link_obs(f"{w.mem}/mine")


def _entry_link_to_directory(p: Doc, w: World) -> None:
    op_at(p, "old.md", "UNLINK")["entry"] = "directory"


def _entry_create_directory(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["entry"] = "directory"


def _rule(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["rule"] = "INV-MEM-05"


def _resource(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["resource"] = "team/a.md"


def _observed_unlink_literal(p: Doc, w: World) -> None:
    # Claim aikito's link old.md points elsewhere: the observation no longer verifies.
    op_at(p, "old.md", "UNLINK")["observed"]["literal"] = "/elsewhere/mine"


def _observed_create_kind(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["observed"] = {"kind": "symlink", "literal": "/x",
                                               "dev": 1, "ino": 2}


def _observed_dev_ino(p: Doc, w: World) -> None:
    o = op_at(p, "glossary", "NOOP")["observed"]
    o["ino"] += 1
    o["dev"] += 1


def _observed_gen(p: Doc, w: World) -> None:
    o = p["checkouts"][0]["dirs"][0]["observed"]
    o["gen"] = (o.get("gen") or 0) + 1
    o["ino"] += 1  # where the filesystem has no generation numbers, the inode decides


def _drop_operation(p: Doc, w: World) -> None:
    p["operations"].remove(op_at(p, "old.md", "UNLINK"))


def _drop_prune(p: Doc, w: World) -> None:
    p["operations"].remove(op_at(p, "gone", "UNLINK"))


def _duplicate_operation(p: Doc, w: World) -> None:
    p["operations"].append(copy.deepcopy(op_at(p, "top.md", "CREATE")))


def _reorder_operations(p: Doc, w: World) -> None:
    p["operations"].reverse()


def _retarget_checkout(p: Doc, w: World) -> None:
    """Move the whole active checkout to an unlisted directory, consistently."""
    text = json.dumps(p).replace(w.co, w.unlisted)
    p.clear()
    p.update(json.loads(text))
    p["checkouts"][0]["dirs"] = p["checkouts"][0]["dirs"][:1]
    p["checkouts"][0]["dirs"][0]["observed"] = dir_obs(w.unlisted)


def _add_checkout(p: Doc, w: World) -> None:
    co = copy.deepcopy(p["checkouts"][0])
    co.update(path=w.unlisted, label="3", dirs=[{"rel": "", "observed": dir_obs(w.unlisted)}])
    p["checkouts"].append(co)
    o = copy.deepcopy(op_at(p, "top.md", "CREATE"))
    o.update(checkout=w.unlisted, target=f"{w.unlisted}/.agents/memory/top.md")
    p["operations"].append(o)


def _drop_checkout(p: Doc, w: World) -> None:
    p["checkouts"] = p["checkouts"][:1]
    p["operations"] = [o for o in p["operations"] if o["checkout"] != w.offline]


def _reorder_checkouts(p: Doc, w: World) -> None:
    p["checkouts"].reverse()


def _checkout_label(p: Doc, w: World) -> None:
    p["checkouts"][0]["label"] = "laptop"


def _checkout_state(p: Doc, w: World) -> None:
    p["checkouts"][1]["state"] = "active"


def _checkout_reason(p: Doc, w: World) -> None:
    # An offline checkout with a reason "active"... and ACTIVE state: still refused.
    p["checkouts"][1]["reason"] = "fine"
    p["checkouts"][1]["state"] = "active"


def _dirs_drop(p: Doc, w: World) -> None:
    p["checkouts"][0]["dirs"] = p["checkouts"][0]["dirs"][:2]


def _dirs_rel(p: Doc, w: World) -> None:
    p["checkouts"][0]["dirs"][3]["rel"] = "../../outside"


def _workspace_other(p: Doc, w: World) -> None:
    other = f"{w.ws.base}/outside"
    os.makedirs(f"{other}/projects/demo", exist_ok=True)
    Path(other, "projects/demo/agent.toml").write_text(
        f'memory = ["top.md"]\npaths = ["{w.unlisted}"]\n')
    p["workspace"] = other


def _workspace_missing(p: Doc, w: World) -> None:
    p["workspace"] = f"{w.ws.base}/nowhere"


def _workspace_relative(p: Doc, w: World) -> None:
    p["workspace"] = "ws"


def _workspace_dotdot(p: Doc, w: World) -> None:
    p["workspace"] = f"{w.ws.root}/memory/.."


def _project_other(p: Doc, w: World) -> None:
    p["project"] = "other"


def _project_traversal(p: Doc, w: World) -> None:
    p["project"] = "../projects/demo"


def _config_path(p: Doc, w: World) -> None:
    p["config_path"] = f"{w.outside}/file.toml"


def _register_elsewhere(p: Doc, w: World) -> None:
    p["config_path"] = f"{w.outside}/file.toml"
    p["explicit_path"] = w.co
    p["register"] = w.co
    p["config_sha256"] = hashlib.sha256(Path(w.outside, "file.toml").read_bytes()).hexdigest()


def _register_unlisted(p: Doc, w: World) -> None:
    p["register"] = w.unlisted
    p["config_sha256"] = hashlib.sha256(
        Path(w.ws.config_path("demo")).read_bytes()).hexdigest()


def _register_without_digest(p: Doc, w: World) -> None:
    p["explicit_path"] = w.unlisted
    p["register"] = w.unlisted


def _explicit_unlisted(p: Doc, w: World) -> None:
    p["explicit_path"] = w.unlisted


def _config_sha256(p: Doc, w: World) -> None:
    p["explicit_path"] = w.co
    p["config_sha256"] = "0" * 64


def _memory_list(p: Doc, w: World) -> None:
    p["memory"].append("other.md")


def _candidates_add(p: Doc, w: World) -> None:
    p["candidates"].append({"label": "3", "raw": w.unlisted, "path": w.unlisted,
                            "absolute": True})


def _candidates_fields(p: Doc, w: World) -> None:
    c = p["candidates"][1]
    c.update(label="x", raw=w.unlisted, path=w.unlisted, absolute=False)


def _project_memory_exists(p: Doc, w: World) -> None:
    p["project_memory_exists"] = False


def _notes_source(p: Doc, w: World) -> None:
    p["notes_source"] = f"{w.outside}/emptydir"


def _notes_location(p: Doc, w: World) -> None:
    p["notes_location"] = "legacy"


def _sources_drop_identity(p: Doc, w: World) -> None:
    for s in p["sources"]:
        s["identity"] = False


def _sources_path(p: Doc, w: World) -> None:
    p["sources"][0]["path"] = f"{w.outside}/emptydir"


def _sources_observed(p: Doc, w: World) -> None:
    p["sources"][0]["observed"]["kind"] = "regular file"


def _sources_drop(p: Doc, w: World) -> None:
    p["sources"] = []


def _segment(p: Doc, w: World) -> None:
    op_at(p, "top.md", "CREATE")["segment"] = "skills"


def _skills(p: Doc, w: World) -> None:
    p["skills"] = ["evil"]


def _worktrees(p: Doc, w: World) -> None:
    p["worktrees"] = True  # [L6]: the key is off in agent.toml


def _instructions(p: Doc, w: World) -> None:
    p["instructions"] = {"path": f"{w.outside}/file.toml", "state": "content",
                         "problem": "none", "checks": []}


def _instruction_targets(p: Doc, w: World) -> None:
    p["instruction_targets"] = [{"rel": "../outside/evil.md", "agents": ["claude"],
                                 "detected": True}]


def _skill_dirs(p: Doc, w: World) -> None:
    # [N1]: a per-agent skills directory the live registry does not name.
    p["skill_dirs"] = [{"rel": "../outside/skills", "agents": ["claude"], "detected": True}]


def _agent(p: Doc, w: World) -> None:
    p["agent"] = "claude"


def _moved_from(p: Doc, w: World) -> None:
    # [L4]: a plan claiming the workspace moved from a workspace that exists — whose
    # links are its own — and relinking the user's link into it.
    other = f"{w.outside}/otherws"
    os.makedirs(f"{other}/projects")
    literal = f"{other}/projects/demo/memory/notes"
    os.symlink(literal, f"{w.mem}/notes")
    p["moved_from"] = other
    op = op_at(p, "notes", "CREATE")
    op.update(rule="L4", reason=f"relinked from {other}",
              observed={"kind": "symlink", "literal": literal,
                        "ino": os.lstat(f"{w.mem}/notes").st_ino})


def _kind(p: Doc, w: World) -> None:
    p["kind"] = "clean"  # a clean is never saved: the guard's clean rules never apply


#: name → (fields of the plan document it edits, the edit).  Each is refused, exit 3 or 4.
ATTACKS: dict[str, tuple[tuple[str, ...], Mutation]] = {
    "kind": (("kind",), _kind),
    "moved_from": (("moved_from",), _moved_from),
    "target-dotdot-outside": (("operations.target",), _escape_create),
    "target-absolute-outside": (("operations.target",), _absolute_outside_create),
    "target-unlisted-dir": (("operations.target", "operations.checkout"),
                            _create_into_unlisted),
    "checkout-of-op-unlisted": (("operations.checkout",), _create_checkout_only),
    "source-outside": (("operations.source",), _swap_source_outside),
    "source-other-resource": (("operations.source",), _swap_source_other_resource),
    "source-relative": (("operations.source",), _swap_source_relative),
    "source-legacy-notes": (("operations.source",), _swap_source_legacy_notes),
    "create-unlisted-reference": (("operations",), _create_unlisted_reference),
    "unlink-users-link": (("operations.target", "operations.observed"), _unlink_users_link),
    "add-unlink-users-link": (("operations",), _add_unlink_users_link),
    "unlink-link-outside": (("operations.target",), _unlink_link_outside),
    "unlink-link-outside-absolute": (("operations.target",), _unlink_link_outside_absolute),
    "rmdir-outside": (("operations.target",), _rmdir_outside),
    "rmdir-memory-root": (("operations.target",), _rmdir_memory_root),
    "action-noop-to-unlink": (("operations.action", "operations.rule"),
                              _action_noop_to_unlink),
    "action-skip-to-create": (("operations.action",), _action_skip_to_create),
    "action-create-to-unlink-users-link": (("operations.action",), _action_create_to_unlink),
    "entry-link-to-directory": (("operations.entry",), _entry_link_to_directory),
    "entry-create-directory": (("operations.entry",), _entry_create_directory),
    "rule": (("operations.rule",), _rule),
    "resource": (("operations.resource",), _resource),
    "observed-unlink-literal": (("operations.observed", "observed.literal"),
                                _observed_unlink_literal),
    "observed-create-kind": (("operations.observed", "observed.kind"), _observed_create_kind),
    "observed-dev-ino": (("observed.dev", "observed.ino"), _observed_dev_ino),
    "observed-gen": (("observed.gen",), _observed_gen),
    "drop-operation": (("operations",), _drop_operation),
    "drop-prune": (("operations",), _drop_prune),
    "duplicate-operation": (("operations",), _duplicate_operation),
    "reorder-operations": (("operations",), _reorder_operations),
    "checkout-moved-to-unlisted": (("checkouts.path", "checkouts.dirs"), _retarget_checkout),
    "add-checkout": (("checkouts",), _add_checkout),
    "drop-checkout": (("checkouts",), _drop_checkout),
    "reorder-checkouts": (("checkouts",), _reorder_checkouts),
    "checkout-label": (("checkouts.label",), _checkout_label),
    "checkout-state": (("checkouts.state",), _checkout_state),
    "checkout-reason-and-state": (("checkouts.reason", "checkouts.state"), _checkout_reason),
    "dirs-drop": (("checkouts.dirs",), _dirs_drop),
    "dirs-rel": (("dirs.rel",), _dirs_rel),
    "dirs-observed": (("dirs.observed",), _observed_gen),
    "workspace-other": (("workspace",), _workspace_other),
    "workspace-missing": (("workspace",), _workspace_missing),
    "workspace-relative": (("workspace",), _workspace_relative),
    "workspace-dotdot": (("workspace",), _workspace_dotdot),
    "project-other": (("project",), _project_other),
    "project-traversal": (("project",), _project_traversal),
    "config-path": (("config_path",), _config_path),
    "register-elsewhere": (("register", "config_path", "config_sha256", "explicit_path"),
                           _register_elsewhere),
    "register-unlisted": (("register",), _register_unlisted),
    "register-without-digest": (("register",), _register_without_digest),
    "explicit-unlisted": (("explicit_path",), _explicit_unlisted),
    "config-sha256": (("config_sha256",), _config_sha256),
    "memory-list": (("memory",), _memory_list),
    "candidates-add": (("candidates",), _candidates_add),
    "candidates-fields": (("candidates.label", "candidates.raw", "candidates.path",
                           "candidates.absolute"), _candidates_fields),
    "project-memory-exists": (("project_memory_exists",), _project_memory_exists),
    "notes-source": (("notes_source",), _notes_source),
    "notes-location": (("notes_location",), _notes_location),
    "sources-identity": (("sources.identity",), _sources_drop_identity),
    "sources-path": (("sources.path",), _sources_path),
    "sources-observed": (("sources.observed",), _sources_observed),
    "sources-drop": (("sources",), _sources_drop),
    "segment": (("operations.segment",), _segment),
    "skills": (("skills",), _skills),
    "worktrees": (("worktrees",), _worktrees),
    "instructions": (("instructions", "instructions.path", "instructions.state",
                      "instructions.problem", "instructions.checks"), _instructions),
    "instruction-targets": (("instruction_targets", "instruction_targets.rel",
                             "instruction_targets.agents", "instruction_targets.detected"),
                            _instruction_targets),
    "skill-dirs": (("skill_dirs",), _skill_dirs),
    "agent": (("agent",), _agent),
}


def _refused(w: World, res: Result, codes: tuple[int, ...], before: dict[str, Any]) -> Doc:
    assert res.exit_code in codes, res.output
    assert "Traceback" not in res.output
    doc: Doc = json.loads(res.stdout)  # exactly one JSON document
    assert doc["exit_code"] == res.exit_code
    assert doc["outcome"] in ("stale", "config_error")
    assert doc["error"]["message"]
    assert {op["status"] for op in doc["operations"]} <= {"not_applied"}
    assert changed(before, snapshot(*w.roots())) == set()
    return doc


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_tampered_plan_is_refused_and_nothing_changes(ws: WS, name: str) -> None:
    w = build(ws.base)
    doc = load(w)
    ATTACKS[name][1](doc["plan"], w)
    save(w, doc)
    before = snapshot(*w.roots())
    res = invoke("apply", w.planfile, "--json")
    _refused(w, res, (3, 4), before)
    assert os.path.lexists(f"{w.mem}/old.md")  # nothing of the genuine plan was done
    assert not os.path.lexists(f"{w.mem}/top.md")


# --------------------------------------------------------------------------- harmless edits


def _texts(p: Doc, w: World) -> None:
    for o in p["operations"]:
        o["reason"] = "all is well"
        o["remedy"] = "trust me"
    for c in p["checkouts"]:
        c["reason"] = "EDITED"
    p["findings"] = [{"code": "x", "severity": "info", "message": "EDITED", "path": "/"}]
    p["workspace_source"] = "a friend"


def _bookkeeping(p: Doc, w: World) -> None:
    p["config_digest"] = "0" * 64  # re-parsed, found equal
    p["home"] = "/"  # the live HOME expands '~', never the plan's


HARMLESS: dict[str, tuple[tuple[str, ...], Mutation]] = {
    "texts": (("operations.reason", "operations.remedy", "checkouts.reason", "findings",
               "findings.code", "findings.severity", "findings.message", "findings.path",
               "workspace_source"), _texts),
    "bookkeeping": (("config_digest", "home"), _bookkeeping),
}


def _genuine_result(base: Path) -> dict[str, Any]:
    w = build(base)
    res = invoke("apply", w.planfile, "--json")
    assert res.exit_code == 0, res.output
    return {"links": _links(w), "doc": json.loads(res.stdout)}


def _links(w: World) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for dirpath, dirnames, filenames in os.walk(w.mem):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, w.mem)
            out[rel] = os.readlink(path) if os.path.islink(path) else None
    return out


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_edited_texts_are_harmless_and_never_shown(
    tmp_path: Path, name: str
) -> None:
    genuine = _genuine_result(tmp_path / "genuine")
    w = build(tmp_path / "edited")
    doc = load(w)
    HARMLESS[name][1](doc["plan"], w)
    save(w, doc)
    res = invoke("apply", w.planfile, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["outcome"] == "applied"
    # Exactly what the genuine plan does (paths differ only by the base directory).
    assert _links(w) == {
        rel: (lit.replace(str(tmp_path / "genuine"), str(tmp_path / "edited"))
              if lit else lit)
        for rel, lit in genuine["links"].items()
    }
    assert "all is well" not in res.stdout and "trust me" not in res.stdout
    assert "EDITED" not in res.stdout and "a friend" not in res.stdout


def _fields(cls: type, prefix: str) -> set[str]:
    return {f"{prefix}{f.name}" for f in fields(cls)}


def test_every_field_of_the_plan_document_is_attacked() -> None:
    """Coverage of the suites above: each field of the plan document is edited by at
    least one case (attacks, or harmless edits for pure texts)."""
    required = _fields(Plan, "")
    required |= _fields(Operation, "operations.")
    required |= _fields(CheckoutPlan, "checkouts.")
    required |= {"dirs.rel", "dirs.observed"}
    required |= _fields(Candidate, "candidates.")
    required |= _fields(SourceCheckModel, "sources.")
    required |= _fields(Observed, "observed.")
    required |= _fields(Finding, "findings.")
    required |= _fields(InstructionSource, "instructions.")
    required |= _fields(PlannedTarget, "instruction_targets.")
    covered = {f for fields, _ in (*ATTACKS.values(), *HARMLESS.values()) for f in fields}
    assert required - covered == set()


# --------------------------------------------------------------------------- malformed


def _nest(depth: int) -> str:
    return "x = " + "[" * depth + "]" * depth + "\n"


MALFORMED: dict[str, Callable[[Doc, World], bytes | None]] = {
    "create-without-source": lambda d, w: op_at(d["plan"], "top.md", "CREATE").pop("source")
    and None,
    "register-without-digest": lambda d, w: d["plan"].update(
        explicit_path=w.co, register=w.co) or None,
    "action-word": lambda d, w: op_at(d["plan"], "top.md", "CREATE").update(
        action="DELETE") or None,
    "entry-word": lambda d, w: op_at(d["plan"], "top.md", "CREATE").update(
        entry="file") or None,
    "kind-word": lambda d, w: op_at(d["plan"], "top.md", "CREATE")["observed"].update(
        kind="hardlink") or None,
    "state-word": lambda d, w: d["plan"]["checkouts"][0].update(state="online") or None,
    "target-type": lambda d, w: op_at(d["plan"], "top.md", "CREATE").update(
        target=["/x"]) or None,
    "target-nul": lambda d, w: op_at(d["plan"], "top.md", "CREATE").update(
        target=f"{w.mem}/top.md\0") or None,
    "target-relative": lambda d, w: op_at(d["plan"], "top.md", "CREATE").update(
        target="top.md") or None,
    "unlink-without-literal": lambda d, w: op_at(d["plan"], "old.md", "UNLINK")[
        "observed"].pop("literal") and None,
    "dev-type": lambda d, w: d["plan"]["sources"][0]["observed"].update(dev="1") or None,
    "missing-operations": lambda d, w: d["plan"].pop("operations") and None,
    "unknown-key": lambda d, w: d["plan"].update(surprise=1) or None,
    "bytes-not-hex": lambda d, w: op_at(d["plan"], "top.md", "CREATE").update(
        target={"bytes": "zz"}) or None,
    "nested-too-deep": lambda d, w: _nest(100_000).encode() + tomli_w.dumps(d).encode(),
    "nested-in-plan": lambda d, w: tomli_w.dumps(d).encode() + b"\n[plan.deep]\n"
    + _nest(50_000).encode(),
    "not-utf8": lambda d, w: tomli_w.dumps(d).encode().replace(b"top.md", b"top\xff.md"),
    "schema": lambda d, w: d.update(schema="aikito.plan/0") or None,
    "truncated": lambda d, w: tomli_w.dumps(d).encode()[:1000],
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_plan_file_is_a_config_error(ws: WS, name: str) -> None:
    w = build(ws.base)
    doc = load(w)
    data = MALFORMED[name](doc, w)
    if data is None:
        save(w, doc)
    else:
        Path(w.planfile).write_bytes(data)
    before = snapshot(*w.roots())
    res = invoke("apply", w.planfile, "--json")
    out = _refused(w, res, (4,), before)
    assert out["error"]["code"].startswith("plan.")


def test_oversize_plan_file_is_refused_unread(ws: WS) -> None:
    from aikito_mem.executor.planfile import MAX_PLAN_BYTES

    w = build(ws.base)
    os.truncate(w.planfile, MAX_PLAN_BYTES + 1)  # sparse: costs no disk
    before = snapshot(*w.roots())
    res = invoke("apply", w.planfile, "--json")
    out = _refused(w, res, (4,), before)
    assert "larger than" in out["error"]["message"]


def test_plan_file_that_is_a_fifo_is_refused_without_blocking(ws: WS) -> None:
    w = build(ws.base)
    os.unlink(w.planfile)
    os.mkfifo(w.planfile)
    before = snapshot(*w.roots())
    res = invoke("apply", w.planfile, "--json")
    out = _refused(w, res, (4,), before)
    assert "FIFO" in out["error"]["message"]


def test_malformed_plan_file_text_output_has_no_traceback(ws: WS) -> None:
    w = build(ws.base)
    doc = load(w)
    op_at(doc["plan"], "top.md", "CREATE").pop("source")
    save(w, doc)
    res = invoke("apply", w.planfile)
    assert res.exit_code == 4
    assert "plan.operations[" in res.stderr and ".source is missing" in res.stderr
    assert "Traceback" not in res.output


# --------------------------------------------------------------------------- property

_MISSING = object()


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every location in the document (tables' keys, arrays' indices), depth first."""
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for key in node:
            out.append((*prefix, key))
            out.extend(_paths(node[key], (*prefix, key)))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            out.append((*prefix, i))
            out.extend(_paths(item, (*prefix, i)))
    return out


def _values(w: World) -> list[Any]:
    """Replacement values an adversary would try in this world."""
    mem = w.mem
    return [
        f"{mem}/../../../outside/evil", f"{w.outside}/evil", f"{w.outside}/link",
        f"{w.outside}/emptydir", f"{w.outside}/file.toml",
        f"{w.unlisted}/.agents/memory/top.md", w.unlisted, w.other_co, w.co, w.offline,
        f"{mem}/mine", f"{mem}/top.md", f"{mem}/old.md", f"{mem}/gone", mem,
        w.ws.memory_path("other.md"), w.ws.memory_path("top.md"),
        w.ws.notes_path("demo", legacy=True), "/etc/passwd", "../../x", "", "/",
        "CREATE", "UNLINK", "NOOP", "SKIP", "CONFLICT", "directory", "link", "symlink",
        "absent", "regular file", "active", "offline", "INV-MEM-01", "INV-MEM-06",
        "other", "demo", w.ws.root, "0" * 64, 0, 1, -1, 2**63, True, False, 1.5, [], {},
        {"bytes": "ff"}, {"kind": "symlink", "literal": "/elsewhere/mine", "dev": 0,
                          "ino": 0},
    ]


def _get(doc: Any, location: tuple[Any, ...]) -> Any:
    for step in location:
        doc = doc[step]
    return doc


def _apply_edit(doc: Doc, location: tuple[Any, ...], kind: str, value: Any) -> None:
    parent: Any = doc
    for step in location[:-1]:
        parent = parent[step]
    last = location[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif kind == "swap" and isinstance(parent, list) and len(parent) > 1:
        other = (last + 1) % len(parent)
        parent[last], parent[other] = parent[other], parent[last]
    else:
        parent[last] = value


def _allowed_changes(w: World, genuine_targets: set[str]) -> set[str]:
    """Paths the genuine plan may change: its targets, the directories holding them (their
    mtimes change) and the directories it creates."""
    allowed = set(genuine_targets)
    for target in genuine_targets:
        parent = os.path.dirname(target)
        while parent.startswith(w.co):
            allowed.add(parent)
            parent = os.path.dirname(parent)
    return allowed


@settings(max_examples=fs_examples(30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_edits_never_write_outside_the_engines_targets(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    w = build(tmp_path_factory.mktemp("tamper"))
    doc = load(w)
    genuine = {o["target"] for o in ops(doc["plan"]) if o["action"] in ("CREATE", "UNLINK")}
    values = _values(w)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="edits")):
        locations = _paths(doc["plan"])
        if not locations:
            break
        location = data.draw(st.sampled_from(locations), label="location")
        kind = data.draw(st.sampled_from(["set", "set", "set", "delete", "duplicate", "swap"]),
                         label="kind")
        # Mostly a value of the same type (edits that still parse reach the engine).
        current = _get(doc["plan"], location)
        same = [v for v in values if type(v) is type(current)]
        pool = same if same and data.draw(st.integers(0, 4), label="typed") else values
        value = data.draw(st.sampled_from(pool), label="value")
        _apply_edit(doc["plan"], location, kind, copy.deepcopy(value))
    try:
        save(w, doc)
    except (TypeError, ValueError):
        event("edit not expressible in TOML")
        return  # e.g. None, or a value tomli-w cannot write

    before = snapshot(*w.roots())
    res = invoke("apply", w.planfile, "--json")
    event(f"exit {res.exit_code}")
    assert "Traceback" not in res.output
    out = json.loads(res.stdout)
    assert out["exit_code"] == res.exit_code
    assert res.exit_code in (0, 3, 4), res.output
    moved = changed(before, snapshot(*w.roots()))
    if res.exit_code != 0:
        assert moved == set(), res.output
    assert moved <= _allowed_changes(w, genuine), sorted(moved)


# --------------------------------------------------------------------------- no look outside

_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes):
        _OPENED.append(os.fsdecode(args[0]))


def test_paths_only_the_file_names_are_never_opened(ws: WS) -> None:
    """Verification of a saved plan looks only at paths the engine derives as well: a
    source check pointing outside (identity: opened for the generation number) is named
    as a difference, never opened — a device or a FIFO there cannot be touched."""
    import sys

    global _OPENED
    w = build(ws.base)
    doc = load(w)
    secret = f"{w.outside}/file.toml"
    st_ = os.stat(secret)
    doc["plan"]["sources"].append({"path": secret, "identity": True, "observed": {
        "kind": "regular file", "dev": st_.st_dev, "ino": st_.st_ino}})
    save(w, doc)
    sys.addaudithook(_audit)  # cannot be removed: inert while _OPENED is None
    _OPENED = []
    try:
        res = invoke("apply", w.planfile, "--json")
    finally:
        opened, _OPENED = _OPENED, None
    assert res.exit_code == 3
    assert f"the plan checks {secret}, which is no source planning afresh derives" in \
        json.loads(res.stdout)["error"]["differences"]
    assert secret not in opened
