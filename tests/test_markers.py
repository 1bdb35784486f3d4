"""Git conflict markers [G5]: complete groups at column 0 only; files and trees."""

from __future__ import annotations

import os

import pytest

from aikito_mem.commands.doctor.markers import MarkedFile, conflict_groups, scan

GROUP = b"<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (GROUP, (1,)),
        (b"intro\n" + GROUP + b"mid\n" + GROUP, (2, 8)),
        (b"<<<<<<< HEAD\nours\n>>>>>>> b\n", ()),  # no =======
        (b"=======\n>>>>>>> b\n", ()),  # no <<<<<<<
        (b"<<<<<<< HEAD\n=======\n", ()),  # not closed
        (b" <<<<<<< HEAD\n=======\n>>>>>>> b\n", ()),  # not at column 0
        (b"# title\n=======\n", ()),  # a setext heading is not a conflict
        (b"<<<<<<< a\r\n=======\r\n>>>>>>> b\r\n", (1,)),
        (b"", ()),
    ],
)
def test_conflict_groups(data, expected):
    assert conflict_groups(data) == expected


def test_scan_files_and_trees_without_following_links(tmp_path):
    (tmp_path / "agent.toml").write_bytes(b"memory = []\n" + GROUP)
    tree = tmp_path / "skill"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "SKILL.md").write_bytes(GROUP)
    (tree / "clean.md").write_text("fine\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_bytes(GROUP)
    os.symlink(outside, tree / "link")
    os.mkfifo(tree / "fifo")
    found = scan([str(tmp_path / "agent.toml"), str(tree), str(tmp_path / "missing")])
    assert found == (MarkedFile(str(tmp_path / "agent.toml"), (2,)),
                     MarkedFile(str(tree / "sub" / "SKILL.md"), (1,)))
