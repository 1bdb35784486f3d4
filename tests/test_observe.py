"""The observation room: the walk of ``.agents/memory`` ([P5], [E5]) — identities observed
the way verification re-observes them, mount points recognised, no path argument longer
than one name."""

from __future__ import annotations

import os
from pathlib import Path

from aikito_mem.model import Kind
from aikito_mem.world.observe import Observer, lstat, mount_points, with_identity
from tests.helpers.workspace import WS


def tree(ws: WS) -> str:
    base = ws.runtime(ws.checkout("co"))
    os.makedirs(f"{base}/team/sub")
    Path(base, "team/a.md").write_text("a")
    os.symlink("/elsewhere", f"{base}/team/sub/link")
    return base


def test_scan_records_directories_with_the_identity_lstat_gives(ws: WS) -> None:
    base = tree(ws)
    entries = dict(Observer().scan(base, lstat(base)))
    assert set(entries) == {"team", "team/a.md", "team/sub", "team/sub/link"}
    for rel, obs in entries.items():
        live = lstat(f"{base}/{rel}")
        assert (obs.kind, obs.dev, obs.ino) == (live.kind, live.dev, live.ino), rel
    assert entries["team/sub/link"].literal == "/elsewhere"


def test_scan_of_one_level(ws: WS) -> None:
    base = tree(ws)
    entries = dict(Observer().scan(base, lstat(base), recursive=False))
    assert set(entries) == {"team"}
    assert entries["team"].kind is Kind.DIR


def test_scan_closes_every_descriptor(ws: WS) -> None:
    base = tree(ws)
    before = set(os.listdir("/proc/self/fd"))
    Observer().scan(base, lstat(base))
    assert set(os.listdir("/proc/self/fd")) == before


def test_mount_table_decodes_escaped_mount_points(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_bytes(
        b"22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        b"90 22 0:50 / /srv/a\\040b\\011c\\134d rw - tmpfs none rw\n"
        b"91 22 0:51 / /srv/\\303\\251t\\303\\251 rw - tmpfs none rw\n"
    )
    assert mount_points(str(info)) == frozenset({"/proc", "/srv/a b\tc\\d", "/srv/été"})
    assert mount_points(str(tmp_path / "missing")) is None


def test_look_reads_a_links_literal_and_a_directorys_identity(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    os.symlink("d", tmp_path / "l")
    observer = Observer()
    link = observer.look(f"{tmp_path}/l")
    assert (link.kind, link.literal) == (Kind.LINK, "d")
    d = f"{tmp_path}/d"
    assert observer.look(d) == with_identity(d, lstat(d))
    assert observer.look(d, identity=False) == lstat(d)
    assert observer.look(f"{tmp_path}/gone").kind is Kind.ABSENT


def test_on_the_way_stops_at_the_first_entry_that_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink("/elsewhere", tmp_path / "a" / "b" / "c")
    way = Observer().on_the_way(str(tmp_path), "a/b/c/d/e.md")
    assert [(rel, obs.kind) for rel, obs in way] == [
        ("a", Kind.DIR), ("a/b", Kind.DIR), ("a/b/c", Kind.LINK)]
    assert way[-1][1].literal == "/elsewhere"
    assert Observer().on_the_way(str(tmp_path), "top.md") == ()
    assert [rel for rel, _ in Observer().on_the_way(str(tmp_path), "a/x/y/z")] == ["a", "a/x"]
