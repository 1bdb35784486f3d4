"""The filesystem toolbox: safe reads, atomic replace, temporary names, no-replace rename."""

from __future__ import annotations

import errno
import hashlib
import os

import pytest

from aikito_mem import fsutil


def test_read_regular_reads_bytes(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"abc\x00def")
    data, st = fsutil.read_regular(str(p))
    assert data == b"abc\x00def"
    assert st.st_size == 7


def test_read_regular_refuses_fifo_without_blocking(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    with pytest.raises(fsutil.NotRegularFileError) as info:
        fsutil.read_regular(str(p))
    assert "FIFO" in str(info.value)


def test_read_regular_refuses_directory(tmp_path):
    with pytest.raises(fsutil.NotRegularFileError):
        fsutil.read_regular(str(tmp_path))


def test_read_regular_does_not_follow_a_final_symlink(tmp_path):
    (tmp_path / "real").write_text("x")
    os.symlink("real", tmp_path / "link")
    with pytest.raises(OSError) as info:
        fsutil.read_regular(str(tmp_path / "link"))
    assert info.value.errno == errno.ELOOP
    data, _ = fsutil.read_regular(str(tmp_path / "link"), follow=True)
    assert data == b"x"


def test_read_regular_limit(tmp_path):
    p = tmp_path / "big"
    p.write_bytes(b"x" * 100)
    with pytest.raises(fsutil.FileTooLargeError):
        fsutil.read_regular(str(p), limit=99)
    assert fsutil.read_regular(str(p), limit=100)[0] == b"x" * 100


def test_sha256_matches_hashlib():
    assert fsutil.sha256_hex(b"agent") == hashlib.sha256(b"agent").hexdigest()


def test_temp_names_are_recognised_and_fresh():
    a, b = fsutil.temp_name("agent.toml"), fsutil.temp_name("agent.toml")
    assert a != b
    assert fsutil.is_temp_name(a)
    assert not fsutil.is_temp_name("agent.toml")
    assert not fsutil.is_temp_name(".agent.toml.swp")


def test_atomic_replace_writes_mode_and_leaves_no_temp(tmp_path):
    (tmp_path / "f").write_text("old")
    fd = fsutil.open_dir(str(tmp_path))
    try:
        fsutil.atomic_replace(fd, "f", b"new", mode=0o4640)
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"new"
    assert (os.stat(tmp_path / "f").st_mode & 0o7777) == 0o640  # set-id dropped
    assert os.listdir(tmp_path) == ["f"]


def test_atomic_replace_check_abandons_the_write(tmp_path):
    (tmp_path / "f").write_text("old")
    fd = fsutil.open_dir(str(tmp_path))

    def refuse() -> None:
        raise RuntimeError("changed")

    try:
        with pytest.raises(RuntimeError):
            fsutil.atomic_replace(fd, "f", b"new", before_rename=refuse)
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f"]


def test_rename_noreplace_never_replaces(tmp_path):
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    with pytest.raises(FileExistsError):
        fsutil.rename_noreplace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b").read_text() == "b"
    fsutil.rename_noreplace(str(tmp_path / "a"), str(tmp_path / "c"))
    assert (tmp_path / "c").read_text() == "a"
    assert not (tmp_path / "a").exists()


def test_is_blank(tmp_path):
    p = tmp_path / "f"
    for data, blank in [(b"", True), (b" \t\r\n\n", True), (b"\n# x\n", False),
                        (b" " * 200000 + b"x", False), (b"\x0b", False)]:
        p.write_bytes(data)
        assert fsutil.is_blank(str(p), chunk=4096) is blank
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(fsutil.NotRegularFileError):
        fsutil.is_blank(str(tmp_path / "fifo"))
    os.symlink("f", tmp_path / "link")
    with pytest.raises(OSError):
        fsutil.is_blank(str(tmp_path / "link"))
    assert fsutil.is_blank(str(tmp_path / "link"), follow=True) is False


# -- create_new, rename_noreplace(dir_fd=), open_subdir -----------------------------------


def _in_dir(path, fn):
    fd = fsutil.open_dir(str(path))
    try:
        return fn(fd)
    finally:
        os.close(fd)


def test_create_new_creates_a_whole_file_with_umask_permissions(tmp_path):
    old = os.umask(0o027)
    try:
        _in_dir(tmp_path, lambda fd: fsutil.create_new(fd, "f", b"data\n"))
    finally:
        os.umask(old)
    assert (tmp_path / "f").read_bytes() == b"data\n"
    assert os.stat(tmp_path / "f").st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["f"]


@pytest.mark.parametrize("kind", ["file", "dir", "dangling symlink", "symlink to dir"])
def test_create_new_never_replaces_anything(tmp_path, kind):
    from tests.helpers.snapshots import snapshot

    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "d" / "f"
    target.parent.mkdir()
    if kind == "file":
        target.write_text("mine")
    elif kind == "dir":
        target.mkdir()
    elif kind == "dangling symlink":
        os.symlink(str(outside / "nothing"), target)
    else:
        os.symlink(str(outside), target)
    before = snapshot(tmp_path)
    with pytest.raises(FileExistsError):
        _in_dir(target.parent, lambda fd: fsutil.create_new(fd, "f", b"new"))
    assert snapshot(tmp_path) == before


def test_create_new_removes_its_temporary_file_on_failure(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil, "write_all", full)
    with pytest.raises(OSError) as info:
        _in_dir(tmp_path, lambda fd: fsutil.create_new(fd, "f", b"x"))
    assert info.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path) == []


def test_rename_noreplace_relative_to_a_directory(tmp_path):
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    with pytest.raises(FileExistsError):
        _in_dir(tmp_path, lambda fd: fsutil.rename_noreplace("a", "b", dir_fd=fd))
    assert (tmp_path / "b").read_text() == "b"
    _in_dir(tmp_path, lambda fd: fsutil.rename_noreplace("a", "c", dir_fd=fd))
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]


def test_rename_noreplace_fallback_without_renameat2(tmp_path, monkeypatch):
    import ctypes

    def no_libc(*args, **kwargs):
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    with pytest.raises(FileExistsError):
        _in_dir(tmp_path, lambda fd: fsutil.rename_noreplace("a", "b", dir_fd=fd))
    assert (tmp_path / "b").read_text() == "b"
    _in_dir(tmp_path, lambda fd: fsutil.rename_noreplace("a", "c", dir_fd=fd))
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]


def test_open_subdir_never_follows_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "file").write_text("x")
    os.symlink("real", tmp_path / "link")
    fd = fsutil.open_subdir(None, str(tmp_path))
    try:
        os.close(fsutil.open_subdir(fd, "real"))
        with pytest.raises(OSError) as info:
            fsutil.open_subdir(fd, "link")
        assert info.value.errno in (errno.ELOOP, errno.ENOTDIR)
        with pytest.raises(OSError) as info:
            fsutil.open_subdir(fd, "file")
        assert info.value.errno == errno.ENOTDIR
    finally:
        os.close(fd)


def test_create_new_never_replaces_an_entry_that_appears_during_the_write(tmp_path, monkeypatch):
    real_create_temp = fsutil.create_temp

    def racing(dir_fd, name, mode=0o600):
        made = real_create_temp(dir_fd, name, mode)
        (tmp_path / "f").write_text("theirs")  # appears after the existence check
        return made

    monkeypatch.setattr(fsutil, "create_temp", racing)
    with pytest.raises(FileExistsError):
        _in_dir(tmp_path, lambda fd: fsutil.create_new(fd, "f", b"ours"))
    assert (tmp_path / "f").read_text() == "theirs"
    assert os.listdir(tmp_path) == ["f"]


def test_sha256_hasher_is_incremental_sha256():
    import hashlib

    h = fsutil.sha256_hasher()
    h.update(b"ab")
    h.update(b"c")
    assert h.hexdigest() == hashlib.sha256(b"abc").hexdigest() == fsutil.sha256_hex(b"abc")
