"""Moving a tree across filesystems (a tmpfs mount) and removing exactly what was
listed — on real directories."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from aikito_mem import fsutil
from aikito_mem.commands.adopt import treemove
from aikito_mem.commands.adopt.treemove import EntryKind
from tests.helpers.snapshots import snapshot


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


def test_an_entry_added_during_the_copy_is_a_change(tmp_path: Path, tmpfs: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    src = tree(tmpfs / "src")
    real = treemove.verify_copy

    def then_added(*a: Any) -> None:
        real(*a)
        (src / "sub" / "empty" / "new.md").write_text("new\n")

    monkeypatch.setattr(treemove, "verify_copy", then_added)
    with pytest.raises(treemove.TreeChangedError):
        treemove.move(str(src), str(tmp_path / "dst"))
    assert (src / "sub" / "empty" / "new.md").exists() and (src / "a.md").exists()
    assert os.listdir(tmp_path) == ["tmpfs"]


def test_an_endless_entry_swapped_in_is_read_no_further_than_its_listed_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listed file replaced by a character device that never ends (``/dev/zero``)."""
    import signal

    src = tree(tmp_path / "src")
    try:
        os.mknod(tmp_path / "probe", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError as exc:
        pytest.skip(f"cannot create a character device here: {exc.strerror}")
    real = treemove._copy_file

    def swapped(s: str, d: str, entry: Any) -> Any:
        if s.endswith("/a.md"):
            os.unlink(s)
            os.rename(tmp_path / "probe", s)
        return real(s, d, entry)

    def hung(*_: Any) -> None:
        raise AssertionError("the copy did not end")

    monkeypatch.setattr(treemove, "_copy_file", swapped)
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)  # a hang guard, not a timing assertion
    try:
        with pytest.raises(treemove.TreeChangedError):
            treemove.copy_move(str(src), str(tmp_path / "dst"))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert sorted(os.listdir(tmp_path)) == ["src"]


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


def test_a_signal_during_the_copy_stops_before_the_next_write(
        tmp_path: Path, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tree(tmpfs / "src")
    calls: list[int] = []
    copied: list[str] = []
    real = treemove._copy_file

    def copy(s: str, d: str, entry: Any) -> Any:
        copied.append(entry.rel)
        return real(s, d, entry)

    monkeypatch.setattr(treemove, "_copy_file", copy)

    class Stop(Exception):
        pass

    def before_write() -> None:
        calls.append(1)
        if len(calls) == 4:
            raise Stop

    before = snapshot(tmpfs)
    with pytest.raises(Stop):
        treemove.move(str(src), str(tmp_path / "dst"), before_write)
    assert copied == ["a.md"]  # before the move, the root directory, a.md: then stopped
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


def test_removal_never_goes_through_a_directory_swapped_for_a_symlink(tmp_path: Path) -> None:
    """``sub`` moved elsewhere and a symlink to it left in its place: the entries reached
    through the link are the very ones listed, and still nothing is removed there."""
    root = tree(tmp_path / "t")
    entries = treemove.inventory(str(root))
    os.rename(root / "sub", tmp_path / "moved-away")
    os.symlink(tmp_path / "moved-away", root / "sub")
    before = snapshot(tmp_path / "moved-away")
    with pytest.raises(treemove.RemoveIncompleteError):
        treemove.remove_inventoried(str(root), entries)
    assert snapshot(tmp_path / "moved-away") == before


def test_removal_never_goes_into_another_directory_put_in_place(tmp_path: Path) -> None:
    """``sub`` replaced by another real directory whose entries are hard links to the
    listed files (made before the listing, so every entry itself still matches)."""
    root = tree(tmp_path / "t")
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    os.link(root / "sub" / "b.bin", decoy / "b.bin")
    os.link(root / "sub" / "link", decoy / "link", follow_symlinks=False)
    entries = treemove.inventory(str(root))
    os.rename(root / "sub", tmp_path / "moved-away")
    os.rename(decoy, root / "sub")
    before = snapshot(root / "sub")
    with pytest.raises(treemove.RemoveIncompleteError):
        treemove.remove_inventoried(str(root), entries)
    assert snapshot(root / "sub") == before


def test_removal_of_hard_links_inside_the_tree(tmp_path: Path) -> None:
    root = tree(tmp_path / "t")
    treemove.remove_inventoried(str(root), treemove.inventory(str(root)))
    assert not root.exists()


@pytest.mark.parametrize("across", [False, True])
def test_another_entry_than_the_one_expected_is_never_moved(
        tmp_path: Path, tmpfs: Path, across: bool) -> None:
    """[H2] ``expect``: the (st_dev, st_ino) examined.  Another entry at ``src`` is
    renamed back at once (same filesystem) or never copied (across): SwappedError, the
    entry where it was, nothing at ``dst``."""
    src = tree((tmpfs if across else tmp_path) / "src")
    want = content(src)
    st = os.lstat(src)
    dst = tmp_path / "dst"
    with pytest.raises(treemove.SwappedError) as exc:
        treemove.move(str(src), str(dst), lambda: None, (st.st_dev, st.st_ino + 1))
    assert exc.value.moved_back and exc.value.errno == errno.ESTALE
    assert content(src) == want and not os.path.lexists(dst)
    assert no_temporary(tmp_path)
    assert treemove.move(str(src), str(dst), lambda: None, (st.st_dev, st.st_ino)) \
        is (treemove.MoveMethod.COPY if across else treemove.MoveMethod.RENAME)
    assert content(dst) == want
