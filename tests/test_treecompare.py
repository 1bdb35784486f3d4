"""Comparing two trees: identical content (types, bytes, link literals; never modes or
times), every kind of difference named, and a unified diff for small text files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aikito_mem.commands.adopt import treecompare, treemove
from aikito_mem.commands.adopt.treecompare import Difference
from aikito_mem.commands.adopt.treemove import EntryKind


def tree(base: Path) -> Path:
    (base / "sub" / "empty").mkdir(parents=True)
    (base / "a.md").write_text("a\n")
    (base / "sub" / "b.bin").write_bytes(bytes(range(256)) * 64)
    os.symlink("../a.md", base / "sub" / "link")
    return base



def test_identical_trees_have_no_difference(tmp_path: Path) -> None:
    a, b = tree(tmp_path / "a"), tmp_path / "b"
    b.mkdir()
    for e in treemove.inventory(str(a))[1:]:
        src, dst = a / e.rel, b / e.rel
        if e.kind is EntryKind.DIR:
            dst.mkdir()
        elif e.kind is EntryKind.LINK:
            os.symlink(os.readlink(src), dst)
        else:
            dst.write_bytes(src.read_bytes())
    os.chmod(b / "a.md", 0o600)  # permission bits are not content
    entries, differences = treecompare.compare(str(a), str(b))
    assert differences == () and entries == treemove.inventory(str(a))


def test_every_difference_is_named(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for base in (a, b):
        base.mkdir()
        (base / "same.md").write_text("same\n")
    (a / "text.md").write_text("one\ntwo\n")
    (b / "text.md").write_text("one\nTWO\n")  # same size: compared byte by byte
    (a / "only-a").write_text("")
    (b / "only-b").mkdir()
    os.symlink("x", a / "link")
    os.symlink("y", b / "link")
    (a / "kind").mkdir()
    (b / "kind").write_text("")
    os.mkfifo(a / "pipe")
    os.mkfifo(b / "pipe")
    _, differences = treecompare.compare(str(a), str(b), ("here", "there"))
    assert differences == (
        Difference("kind", "directory here, regular file there"),
        Difference("link", "symlink to 'x' here, to 'y' there"),
        Difference("only-a", "only here (regular file)"),
        Difference("only-b", "only there (directory)"),
        Difference("pipe", "a special file (its content cannot be compared)"),
        Difference("text.md", "content differs"),
    )
    diff = treecompare.diff_text(str(a), str(b), differences, label_a="A", label_b="B")
    assert diff == "--- B/text.md\n+++ A/text.md\n@@ -1,2 +1,2 @@\n one\n-TWO\n+two\n"


def test_diff_text_only_for_small_text_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"x\0y")
    b.write_bytes(b"x\0z")
    d = (Difference("", "content differs"),)
    assert treecompare.diff_text(str(a), str(b), d, label_a="a", label_b="b") is None
    a.write_text("x\n" * 10)
    b.write_text("y\n" * 10)
    assert treecompare.diff_text(str(a), str(b), d, label_a="a", label_b="b", limit=10) is None
    text = treecompare.diff_text(str(a), str(b), d, label_a="a", label_b="b", max_lines=5)
    assert text is not None and text.endswith("… 18 more diff lines\n")


def test_a_tree_that_changes_while_compared_is_reported(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    real = treecompare._same_bytes

    def racing(x: str, y: str) -> bool:
        (a / "sub" / "late.md").write_text("late\n")
        return real(x, y)

    monkeypatch.setattr(treecompare, "_same_bytes", racing)
    with pytest.raises(treemove.TreeChangedError):
        treecompare.compare(str(a), str(b))
