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
