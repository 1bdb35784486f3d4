"""The CLI's last safety net: an environment failure outside the executor's own reporting
(here ``flock`` failing with ENOLCK, as on some network filesystems) is exit 5 with one
JSON document and no traceback; nothing is written."""

from __future__ import annotations

import errno
import json
import os

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli
from tests.conftest import WS


def test_flock_failure_is_exit_5_without_traceback(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])

    def broken_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr("aikito_mem.lock.fcntl.flock", broken_flock)
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo", "--json"])
    assert res.exit_code == 5, res.output
    doc = json.loads(res.output)
    assert doc["outcome"] == "failed"
    assert doc["exit_code"] == 5
    assert "No locks available" in doc["error"]["message"]
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert not os.path.lexists(f"{co}/.agents")

    text = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo"])
    assert text.exit_code == 5
    assert "Traceback" not in text.output
    assert "No locks available" in text.output


def test_signal_during_the_last_operation_still_reports_interrupted(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[E5]: the operation in flight is finished, then the run stops *as interrupted* —
    even when that operation was the last one (every status ``applied``)."""
    import signal

    import aikito_mem.execute as execute_mod
    from aikito_mem.errors import InterruptedError_
    from aikito_mem.model import Status

    ws.add_file("a.md", "a")
    ws.add_file("b.md", "b")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md", "b.md"], paths=[co])
    seen: list[str] = []

    def hook(op: object) -> None:
        seen.append(getattr(op, "target", ""))
        if len(seen) == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(execute_mod, "before_write", hook)
    with pytest.raises(InterruptedError_) as info:
        ws.project("demo").sync()
    assert info.value.exit_code == 143
    assert info.value.result.statuses == (Status.APPLIED, Status.APPLIED)
    assert os.readlink(f"{co}/.agents/memory/b.md") == f"{ws.root}/memory/b.md"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("as_json", [True, False])
def test_non_utf8_foreign_entry_is_printed_not_a_crash(ws: WS, as_json: bool) -> None:
    """A foreign entry whose name is not UTF-8 (a lone surrogate once decoded) is reported:
    JSON escapes it, text shows the raw byte — no UnicodeEncodeError on a strict stdout."""
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    os.makedirs(f"{co}/.agents/memory")
    with open(os.fsencode(f"{co}/.agents/memory/") + b"odd\xff", "wb") as fh:
        fh.write(b"user data")
    args = ["--workspace", ws.root, "sync", "project", "demo", "--dry-run"]
    res = CliRunner().invoke(cli, [*args, "--json"] if as_json else args)
    assert res.exit_code == 0, res.output
    if as_json:
        doc = json.loads(res.output)
        assert any(f["code"] == "memory.foreign_entry" and f["path"].endswith("odd\udcff")
                   for f in doc["findings"])
    else:
        assert "odd\\xff" in res.output
