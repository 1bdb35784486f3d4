"""The folding directory of the test helpers [F4] folds names as APFS does: one entry for
every spelling of a name (case and normal form), the name kept as created, ``EEXIST``
for a second name of one fold, real inodes in listings and lookups."""

from __future__ import annotations

import fcntl
import os
import unicodedata

import pytest

from aikito_mem import fsutil
from tests.helpers.foldfs import FoldDir, fold, mounted

NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")


def test_fold_is_nfc_of_the_case_fold() -> None:
    assert NFC != NFD
    assert fold(NFC) == fold(NFD) == fold("CAFÉ.MD") == NFC
    assert fold("Notes.md") == fold("NOTES.MD") == "notes.md"
    assert fold("Straße") == fold("STRASSE")


def test_any_spelling_reaches_the_entry_created(foldfs: FoldDir) -> None:
    with open(foldfs / "Notes.md", "w") as handle:
        handle.write("hello")
    made = os.lstat(foldfs / "Notes.md")
    for spelling in ("notes.md", "NOTES.MD", "nOtEs.Md"):
        found = os.lstat(foldfs / spelling)
        assert (found.st_dev, found.st_ino) == (made.st_dev, made.st_ino)
    assert (foldfs / "NOTES.MD").read_text() == "hello"
    # use_ino: the inode is the backing file's.
    assert made.st_ino == os.lstat(os.path.join(foldfs.backing, "Notes.md")).st_ino


def test_a_second_name_of_one_fold_is_eexist(foldfs: FoldDir) -> None:
    (foldfs / "Notes.md").write_text("one")
    with pytest.raises(FileExistsError):
        os.open(foldfs / "NOTES.MD", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with pytest.raises(FileExistsError):
        os.mkdir(foldfs / "notes.md")
    with pytest.raises(FileExistsError):
        os.symlink("elsewhere", foldfs / "NoTeS.mD")
    os.mkdir(foldfs / "Dir")
    with pytest.raises(FileExistsError):
        os.mkdir(foldfs / "DIR")
    assert sorted(os.listdir(foldfs.path)) == ["Dir", "Notes.md"]
    assert sorted(os.listdir(foldfs.backing)) == ["Dir", "Notes.md"]


def test_nfc_and_nfd_are_one_entry(foldfs: FoldDir) -> None:
    (foldfs / NFD).write_text("accent")
    assert (foldfs / NFC).read_text() == "accent"
    assert os.lstat(foldfs / NFC).st_ino == os.lstat(foldfs / NFD).st_ino
    with pytest.raises(FileExistsError):
        os.open(foldfs / "CAFÉ.MD", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    # The name is kept in the form it was created in.
    assert os.listdir(foldfs.path) == [NFD]


def test_readdir_spells_names_as_created_with_real_inodes(foldfs: FoldDir) -> None:
    for name in ("Notes.md", "README", "lower.txt"):
        (foldfs / name).write_text(name)
    with os.scandir(foldfs.path) as entries:
        listed = {entry.name: entry.inode() for entry in entries}
    assert sorted(listed) == ["Notes.md", "README", "lower.txt"]
    for name, inode in listed.items():
        assert inode != 0
        assert inode == os.lstat(foldfs / name.upper()).st_ino


def test_symlink_and_readlink_through_any_spelling(foldfs: FoldDir) -> None:
    os.symlink("../workspace/memory/Notes.md", foldfs / "Notes.md")
    assert os.readlink(foldfs / "notes.md") == "../workspace/memory/Notes.md"
    assert os.path.islink(foldfs / "NOTES.MD")
    assert os.readlink(os.path.join(foldfs.backing, "Notes.md")) == "../workspace/memory/Notes.md"
    os.unlink(foldfs / "NOTES.md")
    assert os.listdir(foldfs.path) == []


def test_a_case_only_rename_on_the_backing_dir_is_seen(foldfs: FoldDir) -> None:
    (foldfs / "Notes.md").write_text("x")
    before = os.lstat(foldfs / "notes.md").st_ino
    os.rename(os.path.join(foldfs.backing, "Notes.md"), os.path.join(foldfs.backing, "notes.md"))
    assert os.listdir(foldfs.path) == ["notes.md"]
    assert os.lstat(foldfs / "NOTES.MD").st_ino == before


def test_a_rename_onto_another_spelling_of_itself_respells_it(foldfs: FoldDir) -> None:
    (foldfs / "Notes.md").write_text("x")
    os.rename(foldfs / "Notes.md", foldfs / "notes.md")
    assert os.listdir(foldfs.path) == ["notes.md"]


def test_no_replace_rename_refuses_another_spelling(foldfs: FoldDir) -> None:
    (foldfs / "Notes.md").write_text("kept")
    (foldfs / "tmp").write_text("new")
    fd = os.open(foldfs.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(FileExistsError):
            fsutil.rename_noreplace("tmp", "NOTES.MD", dir_fd=fd)
        fsutil.rename_noreplace("tmp", "Other.md", dir_fd=fd)
    finally:
        os.close(fd)
    assert (foldfs / "notes.md").read_text() == "kept"
    assert sorted(os.listdir(foldfs.path)) == ["Notes.md", "Other.md"]


def test_an_unlinked_open_file_leaves_no_hidden_entry(foldfs: FoldDir) -> None:
    (foldfs / "held").write_text("x")
    fd = os.open(foldfs / "HELD", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.unlink(foldfs / "held")
        assert os.listdir(foldfs.path) == []
    finally:
        os.close(fd)


def test_times_modes_and_hard_links_pass_through(foldfs: FoldDir) -> None:
    (foldfs / "File").write_text("x")
    os.chmod(foldfs / "file", 0o600)
    os.utime(foldfs / "FILE", ns=(1_000_000_000, 2_000_000_123))
    st = os.lstat(os.path.join(foldfs.backing, "File"))
    assert st.st_mode & 0o777 == 0o600
    assert st.st_mtime_ns == 2_000_000_123
    os.link(foldfs / "file", foldfs / "Hard")
    assert os.lstat(foldfs / "HARD").st_nlink == 2


def test_mount_and_unmount(foldfs: FoldDir) -> None:
    # The fixture's mount is its own filesystem; a second one unmounts when the block ends.
    assert os.path.ismount(foldfs.path)
    other = os.path.join(foldfs.backing, "..", "other")
    with mounted(os.path.join(foldfs.backing, "..", "other-backing"), other) as second:
        assert os.path.ismount(second.path)
        assert os.lstat(second.path).st_dev != os.lstat(foldfs.path).st_dev
    assert not os.path.ismount(other)


def test_unavailable_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from tests.helpers import foldfs

    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = foldfs.unavailable()
    assert reason is not None and "fusermount3" in reason
