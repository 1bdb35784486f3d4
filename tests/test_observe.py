"""The observation room: the walk of ``.agents/memory`` ([P5], [E5]) — identities observed
the way verification re-observes them, mount points recognised, no path argument longer
than one name."""

from __future__ import annotations

import os
from pathlib import Path

from aikito_mem.model import Kind
from aikito_mem.world.observe import Observer, lstat, mount_points
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
