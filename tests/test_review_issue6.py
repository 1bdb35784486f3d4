"""`aikito adopt`: regressions for bugs found on real directories.

Each test reproduces one bug on real directories (tmpfs where needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aikito_mem import adopt as adopt_mod
from aikito_mem.adopt import adopt
from aikito_mem.cli import cli
from tests.test_adopt import make, rt, tmpfs  # noqa: F401 - tmpfs is a fixture

# -- adopt ---------------------------------------------------------------------------------


def test_adopt_an_unexaminable_target_is_reported_not_a_traceback(tmp_path: Path) -> None:
    """An OSError while examining TARGET (ENAMETOOLONG here; EACCES, ELOOP, an unreadable
    subdirectory of a cross-filesystem tree alike) escaped ``adopt`` as a traceback."""
    ws, co = make(tmp_path)
    target = rt(co) / ("a" * 300)
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "adopt", str(target), "--json"],
                             catch_exceptions=False)
    d = json.loads(res.stdout)
    assert res.exit_code == 5 and d["exit_code"] == 5, d
    assert d["error"]["code"] == "adopt.examine_failed"
    assert [s["status"] for s in d["steps"]] == ["not_applied"] * 3


def test_cross_filesystem_removal_keeps_what_changed_after_the_last_check(
        tmp_path: Path, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """After the copy is placed, the original was removed with ``shutil.rmtree``: a note an
    agent wrote (or a file it appended to) after the last inventory check was deleted with
    it although the copy does not hold it.  Only what was copied may be removed."""
    ws, co = make(tmp_path, tmpfs / "co")
    tree = rt(co) / "kb"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    (tree / "sub" / "b.md").write_text("b\n")
    real = adopt_mod.inventory
    calls: list[str] = []
    physical = str(tree.resolve())

    def racing_inventory(root: str) -> Any:
        out = real(root)
        if root == physical:
            calls.append(root)
            # validate, start of the copy, before the rename, after the rename: the
            # agent writes just after the last check.
            if len(calls) == 4:
                (tree / "sub" / "late.md").write_text("written during adopt\n")
                with open(tree / "a.md", "a") as f:
                    f.write("appended during adopt\n")
        return out

    monkeypatch.setattr(adopt_mod, "inventory", racing_inventory)
    d = adopt(str(tree), str(ws))
    assert len(calls) == 4
    assert d["exit_code"] != 0 and d["outcome"] == "partial", d
    # The new and the changed content survive where they were written ...
    assert (tree / "sub" / "late.md").read_text() == "written during adopt\n"
    assert (tree / "a.md").read_text() == "a\nappended during adopt\n"
    # ... and the verified copy is complete at the destination.
    assert (ws / "memory" / "kb" / "a.md").read_text() == "a\n"
    assert (ws / "memory" / "kb" / "sub" / "b.md").read_text() == "b\n"
    assert d["content_at"] == f"{ws.resolve()}/memory/kb"
    assert str(tree.resolve()) in d["error"]["message"]


def test_cross_filesystem_removal_still_removes_everything_copied(
        tmp_path: Path, tmpfs: Path) -> None:  # noqa: F811
    ws, co = make(tmp_path, tmpfs / "co")
    tree = rt(co) / "kb"
    (tree / "sub" / "empty").mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    os.symlink("a.md", tree / "sub" / "link")
    (tree / "sub" / "b.md").write_text("b\n")
    os.link(tree / "sub" / "b.md", tree / "b-again.md")  # unlinking one moves the other's ctime
    d = adopt(str(tree), str(ws))
    assert d["outcome"] == "adopted" and d["method"] == "copy", d
    assert os.path.islink(tree)
    assert os.readlink(ws / "memory" / "kb" / "sub" / "link") == "a.md"
    assert (ws / "memory" / "kb" / "sub" / "empty").is_dir()
