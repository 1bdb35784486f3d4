"""Moving a tree across filesystems (a tmpfs mount) and removing exactly what was
listed — on real directories."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aikito_mem import fsutil, treemove
from aikito_mem.treemove import EntryKind
from tests import mounts
from tests.snapshots import snapshot


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    with mounts.tmpfs(tmp_path / "tmpfs") as mnt:
        yield mnt


def tree(base: Path) -> Path:
    """``base`` with files, a symlink, an empty directory, a hard link and odd modes."""
    (base / "sub" / "empty").mkdir(parents=True)
    (base / "a.md").write_text("a\n")
    (base / "sub" / "b.bin").write_bytes(os.urandom(3 << 20))
    os.symlink("../a.md", base / "sub" / "link")
    os.link(base / "a.md", base / "hard.md")
    os.chmod(base / "sub" / "b.bin", 0o640)
    os.chmod(base / "sub", 0o750)
    return base


def content(root: Path) -> dict[str, tuple[str, int, bytes | str | None]]:
    """Type, permission bits and content (bytes or link literal) of every entry."""
    out: dict[str, tuple[str, int, bytes | str | None]] = {}
    for e in treemove.inventory(str(root)):
        p = f"{root}/{e.rel}" if e.rel else str(root)
        st = os.lstat(p)
        body: bytes | str | None = None
        if e.kind is EntryKind.FILE:
            body = Path(p).read_bytes()
        elif e.kind is EntryKind.LINK:
            body = os.readlink(p)
        mode = stat.S_IMODE(st.st_mode) if e.kind is not EntryKind.LINK else 0
        out[e.rel] = (e.kind.value, mode, body)
    return out


def no_temporary(directory: Path) -> bool:
    return not any(fsutil.is_temp_name(n) for n in os.listdir(directory))


# -- inventory --------------------------------------------------------------------------


def test_inventory_lists_the_root_first_in_preorder_never_through_links(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("")
    os.symlink(tmp_path / "outside", root / "sub" / "out")
    rels = [e.rel for e in treemove.inventory(str(root))]
    assert rels == ["", "a.md", "hard.md", "sub", "sub/b.bin", "sub/empty", "sub/link",
                    "sub/out"]
    os.mkfifo(root / "pipe")
    with pytest.raises(treemove.SpecialFileError):
        treemove.inventory(str(root))
    kinds = {e.rel: e.kind for e in treemove.inventory(str(root), special=True)}
    assert kinds["pipe"] is EntryKind.OTHER and kinds["sub/out"] is EntryKind.LINK


# -- move -------------------------------------------------------------------------------


def test_move_on_one_filesystem_renames_and_never_replaces(tmp_path: Path) -> None:
    src = tree(tmp_path / "src")
    ino = os.lstat(src).st_ino
    (tmp_path / "taken").mkdir()
    (tmp_path / "file").write_text("mine")
    before = snapshot(tmp_path)
    for dst in ("taken", "file"):
        with pytest.raises(FileExistsError):
            treemove.move(str(src), str(tmp_path / dst))
    assert snapshot(tmp_path) == before
    assert treemove.move(str(src), str(tmp_path / "dst")) is treemove.MoveMethod.RENAME
    assert os.lstat(tmp_path / "dst").st_ino == ino and not src.exists()


def test_move_across_filesystems_copies_verifies_and_removes(tmp_path: Path,
                                                             tmpfs: Path) -> None:
    src = tree(tmpfs / "src")
    want = content(src)
    mtime = os.lstat(src / "sub" / "b.bin").st_mtime_ns
    dst = tmp_path / "dst"
    assert treemove.move(str(src), str(dst)) is treemove.MoveMethod.COPY
    assert not src.exists()
    assert content(dst) == want
    assert os.lstat(dst / "sub" / "b.bin").st_mtime_ns == mtime
    # A hard link inside the tree becomes a separate file with the same bytes.
    assert os.lstat(dst / "a.md").st_ino != os.lstat(dst / "hard.md").st_ino
    assert no_temporary(tmp_path)
    # A single file too.
    (tmpfs / "one.md").write_text("one\n")
    assert treemove.move(str(tmpfs / "one.md"), str(tmp_path / "one.md")) \
        is treemove.MoveMethod.COPY
    assert (tmp_path / "one.md").read_text() == "one\n" and not (tmpfs / "one.md").exists()


def test_a_file_removed_during_the_copy_is_a_change_not_a_failure(
        tmp_path: Path, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tree(tmpfs / "src")
    real = treemove._copy_file

    def racing(s: str, d: str, entry: Any) -> Any:
        if s.endswith("/a.md"):
            os.unlink(src / "sub" / "b.bin")
        return real(s, d, entry)

    monkeypatch.setattr(treemove, "_copy_file", racing)
    before = snapshot(tmpfs)
    with pytest.raises(treemove.TreeChangedError):
        treemove.move(str(src), str(tmp_path / "dst"))
    assert set(before) - set(snapshot(tmpfs)) == {str(src / "sub" / "b.bin")}
    assert os.listdir(tmp_path) == ["tmpfs"]  # no temporary copy left


def test_a_file_that_grows_while_copied_is_a_change(tmp_path: Path, tmpfs: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    src = tree(tmpfs / "src")
    real_write = fsutil.write_all
    grown: list[int] = []

    def write_all(fd: int, data: bytes) -> None:
        if not grown:
            with open(src / "sub" / "b.bin", "ab") as f:
                f.write(b"more")
            grown.append(1)
        real_write(fd, data)

    monkeypatch.setattr(fsutil, "write_all", write_all)
    with pytest.raises(treemove.TreeChangedError):
        treemove.move(str(src), str(tmp_path / "dst"))
    assert (src / "a.md").exists() and os.listdir(tmp_path) == ["tmpfs"]


def test_a_failed_verification_keeps_the_original(tmp_path: Path, tmpfs: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    src = tree(tmpfs / "src")
    real = treemove._sha256_file

    def flipped(path: str) -> tuple[int, str]:
        size, digest = real(path)
        return size, digest[::-1]

    monkeypatch.setattr(treemove, "_sha256_file", flipped)
    before = snapshot(tmpfs)
    with pytest.raises(OSError) as info:
        treemove.move(str(src), str(tmp_path / "dst"))
    assert info.value.errno == errno.EIO
    assert snapshot(tmpfs) == before and os.listdir(tmp_path) == ["tmpfs"]


def test_a_signal_during_the_copy_stops_before_the_next_write(tmp_path: Path,
                                                               tmpfs: Path) -> None:
    src = tree(tmpfs / "src")
    calls: list[int] = []

    class Stop(Exception):
        pass

    def before_write() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise Stop

    before = snapshot(tmpfs)
    with pytest.raises(Stop):
        treemove.move(str(src), str(tmp_path / "dst"), before_write)
    assert snapshot(tmpfs) == before and os.listdir(tmp_path) == ["tmpfs"]


def test_a_change_after_the_copy_is_placed_keeps_both(tmp_path: Path, tmpfs: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    src = tree(tmpfs / "src")
    real = fsutil.rename_noreplace

    def then_changed(a: str, b: str) -> None:
        real(a, b)
        (src / "late.md").write_text("late\n")

    monkeypatch.setattr(fsutil, "rename_noreplace", then_changed)
    with pytest.raises(treemove.OriginalKeptError) as info:
        treemove.move(str(src), str(tmp_path / "dst"))
    assert isinstance(info.value.cause, treemove.TreeChangedError)
    assert (src / "late.md").exists() and (src / "sub" / "b.bin").exists()
    assert (tmp_path / "dst" / "sub" / "b.bin").exists()


# -- removal ----------------------------------------------------------------------------


def test_removal_keeps_what_changed_or_appeared_and_removes_the_rest(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    (root / "keep").mkdir()
    (root / "keep" / "x.md").write_text("x\n")
    entries = treemove.inventory(str(root))
    (root / "keep" / "new.md").write_text("appeared\n")
    with open(root / "sub" / "b.bin", "ab") as f:
        f.write(b"grown")
    with pytest.raises(treemove.RemoveIncompleteError) as info:
        treemove.remove_inventoried(str(root), entries)
    kept = {os.path.relpath(p, root) for p in info.value.kept}
    assert kept == {"keep", "sub/b.bin", "sub", "."}
    assert info.value.failed == ()
    left = sorted(os.path.relpath(p, root) for p in snapshot(root))
    assert left == [".", "keep", "keep/new.md", "sub", "sub/b.bin"]


def test_removal_never_follows_a_directory_swapped_for_a_symlink(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    entries = treemove.inventory(str(root))
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    for name in ("b.bin", "link"):
        os.link(root / "sub" / name, decoy / name, follow_symlinks=False)
    (decoy / "empty").mkdir()
    os.rename(root / "sub", tmp_path / "moved-away")
    os.symlink(decoy, root / "sub")
    before = snapshot(decoy)
    with pytest.raises(treemove.RemoveIncompleteError):
        treemove.remove_inventoried(str(root), entries)
    assert snapshot(decoy) == before


def test_removal_of_hard_links_inside_the_tree(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    treemove.remove_inventoried(str(root), treemove.inventory(str(root)))
    assert not root.exists()
