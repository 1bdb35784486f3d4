"""A checkout moved or removed while its lock is held is a stale plan ([E2], [E3]).

The lock is ``flock`` on a descriptor of the checkout root, and that descriptor keeps the
directory it opened even once the directory is renamed away (``mv co co.old``, ``git
worktree remove``) or removed (``rm -rf co``).  Verification therefore looks at each
active checkout's path again: a path that no longer exists, or that now names another
directory or a symlink, makes the plan stale — exit 3 / :class:`StalePlanError`, the
difference named, and nothing written in any checkout (the whole tree snapshotted after
the change and after the run: bytes, modes and inode numbers).

The change is injected after the locks are taken and before verification (the
verification function wrapped), for a sync through the API and the command line, a
clean, and ``aikito apply`` of a saved plan.  The changed checkout is the second one in
lock order, so a run that missed it would already have written in the first.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

import aikito_mem.executor.verify as verify_mod
from aikito_mem.cli import cli
from aikito_mem.errors import StalePlanError
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

MEMORY = ["top.md", "team/a.md"]


def _renamed(co: str) -> None:
    os.rename(co, f"{co}.old")


def _removed(co: str) -> None:
    shutil.rmtree(co)


def _replaced_by_a_directory(co: str) -> None:
    os.rename(co, f"{co}.old")
    os.mkdir(co)


def _replaced_by_a_symlink(co: str) -> None:
    os.rename(co, f"{co}.old")
    os.mkdir(f"{co}.other")
    os.symlink(f"{co}.other", co)


def _replaced_by_a_symlink_to_itself(co: str) -> None:
    # The path still resolves to the locked directory — through a symlink the plan never
    # saw, and a checkout root is never reached through its own final symlink.
    os.rename(co, f"{co}.old")
    os.symlink(f"{co}.old", co)


GONE = "checkout {co} no longer exists"
MOVED = "checkout {co} was moved or replaced since planning"
CHANGES: dict[str, tuple[Callable[[str], None], str]] = {
    "renamed away": (_renamed, GONE),
    "removed": (_removed, GONE),
    "replaced by another directory": (_replaced_by_a_directory, MOVED),
    "replaced by a symlink to another directory": (_replaced_by_a_symlink, MOVED),
    "replaced by a symlink to itself moved": (_replaced_by_a_symlink_to_itself, MOVED),
}
MODES = ["api sync", "sync", "clean", "apply"]


def _world(ws: WS, *, synced: bool) -> tuple[str, str]:
    """Two registered checkouts ``a`` and ``b``; with ``synced`` both already linked (what
    a clean removes), else never synced (a sync creates everything in both)."""
    for ref in MEMORY:
        ws.add_file(ref, f"{ref}\n")
    a, b = ws.checkout("a"), ws.checkout("b")
    ws.write_config("demo", memory=MEMORY, paths={"a": a, "b": b})
    if synced:
        assert ws.project("demo").sync().success
        assert os.path.islink(ws.runtime(b, "top.md"))
    return a, b


def _change_under_the_lock(monkeypatch: pytest.MonkeyPatch, ws: WS, co: str,
                           change: Callable[[str], None]) -> dict[str, Any]:
    """Wrap verification: the first call makes ``change`` to ``co`` (another process,
    while the run holds its locks) and snapshots everything before verifying."""
    original = verify_mod.verify
    seen: dict[str, Any] = {}

    def changed_then_verify(*args: Any, **kwargs: Any) -> list[str]:
        if "before" not in seen:
            change(co)
            seen["before"] = snapshot(*ws.roots())
        return original(*args, **kwargs)

    monkeypatch.setattr(verify_mod, "verify", changed_then_verify)
    return seen


def _stale_document(stdout: str, expected: str) -> None:
    doc = json.loads(stdout)
    assert (doc["outcome"], doc["exit_code"], doc["error"]["code"]) == ("stale", 3,
                                                                         "sync.stale")
    assert expected in doc["error"]["differences"], doc["error"]
    assert doc["operations"]
    assert {op["status"] for op in doc["operations"]} == {"not_applied"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CHANGES))
def test_a_checkout_changed_under_the_lock_is_stale_and_nothing_is_written(
        ws: WS, monkeypatch: pytest.MonkeyPatch, case: str, mode: str) -> None:
    change, words = CHANGES[case]
    _a, b = _world(ws, synced=mode == "clean")
    expected = words.format(co=b)
    runner = CliRunner()
    planfile = f"{ws.base}/plan.toml"
    if mode == "apply":
        res = runner.invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                  "--dry-run", "--out", planfile, "--json"],
                            catch_exceptions=False)
        assert res.exit_code == 0, res.output
    seen = _change_under_the_lock(monkeypatch, ws, b, change)
    if mode == "api sync":
        with pytest.raises(StalePlanError) as info:
            ws.project("demo").sync()
        assert info.value.exit_code == 3
        assert expected in info.value.differences, info.value.differences
        assert {s.value for s in info.value.result.statuses} == {"not_applied"}
    else:
        args = {"sync": ["--workspace", ws.root, "sync", "project", "demo", "--json"],
                "clean": ["--workspace", ws.root, "clean", "project", "demo", "--json"],
                "apply": ["apply", planfile, "--json"]}[mode]
        res = runner.invoke(cli, args, catch_exceptions=False)
        assert res.exit_code == 3, res.output
        _stale_document(res.stdout, expected)
    assert snapshot(*ws.roots()) == seen["before"]
