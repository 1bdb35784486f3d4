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
from tests.helpers.workspace import WS


def test_flock_failure_is_exit_5_without_traceback(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])

    def broken_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr("aikito_mem.executor.lock.fcntl.flock", broken_flock)
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

    import aikito_mem.executor.execute as execute_mod
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


# ------------------------------------------------------------------ the one error handler


def _demo(ws: WS) -> str:
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    return co


def _invoke(ws: WS, *args: str) -> tuple[int, dict[str, object], str]:
    res = CliRunner().invoke(cli, ["--workspace", ws.root, *args], catch_exceptions=False)
    doc, end = json.JSONDecoder().raw_decode(res.stdout)
    assert res.stdout[end:].strip() == "", "exactly one JSON document"
    assert doc["exit_code"] == res.exit_code
    assert "Aborted!" not in res.output
    return res.exit_code, doc, res.stderr


def _kill_before(monkeypatch: pytest.MonkeyPatch, owner: object, attr: str,
                 signum: int) -> None:
    """Make ``owner.attr`` deliver ``signum`` to this process before it runs."""
    real = getattr(owner, attr)

    def wrapper(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, attr, wrapper)


def test_a_signal_while_planning_a_dry_run_ends_it_at_once(
        ws: WS, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]) -> None:
    """[E5]: SIGTERM while planning stops the planning at once — 143, the sync document
    (outcome ``interrupted``), and nothing written: not even the plan file of ``--out``."""
    import signal

    from aikito_mem.api import Project

    co = _demo(ws)
    real = Project.plan
    planned: list[object] = []

    def plan(self: Project, *args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signal.SIGTERM)
        planned.append(real(self, *args, **kwargs))  # type: ignore[arg-type]
        return planned[-1]

    monkeypatch.setattr(Project, "plan", plan)
    for extra in ([], ["--out", f"{tmp_path}/plan.toml"]):
        code, doc, _ = _invoke(ws, "sync", "project", "demo", "--dry-run", "--json", *extra)
        assert (code, doc["outcome"], doc["project"]) == (143, "interrupted", "demo")
        assert doc["workspace"] == ws.root
        assert planned == []  # the planner did not go on after the signal
    assert not os.path.lexists(f"{tmp_path}/plan.toml")
    assert not os.path.lexists(f"{co}/.agents")


def test_every_command_installs_the_signal_record_itself(ws: WS) -> None:
    """Run without the group (a command object called on its own), a command still turns
    SIGTERM into 143 and its document — never a silent death."""
    import subprocess
    import sys

    _demo(ws)
    code = (
        "import os, signal, sys\n"
        "from aikito_mem.api import Project\n"
        "real = Project.plan\n"
        "def plan(self, *a, **k):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real(self, *a, **k)\n"
        "Project.plan = plan\n"
        "from aikito_mem.cli.status import status_cmd\n"
        "status_cmd(['--json'], obj={'workspace': sys.argv[1]})\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, ws.root], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 143, proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "sync.interrupted"


def test_a_signal_after_the_work_ends_the_run_as_interrupted(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal noticed after the last write (while the report is being made) still ends
    the run with 130, its document keeping what was done."""
    import signal

    import aikito_mem.outcome

    co = _demo(ws)
    _kill_before(monkeypatch, aikito_mem.outcome, "run_report", signal.SIGINT)
    code, doc, _ = _invoke(ws, "sync", "project", "demo", "--json")
    assert (code, doc["outcome"]) == (130, "interrupted")
    assert [op["status"] for op in doc["operations"]] == ["applied"]
    assert doc["error"]["code"] == "sync.interrupted"  # type: ignore[index]
    assert os.readlink(f"{co}/.agents/memory/a.md") == ws.memory_path("a.md")
    text = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo"])
    assert text.exit_code == 130 and "interrupted by SIGINT" in text.stderr
    assert "Aborted!" not in text.output


def test_a_signal_during_status_stops_the_listing(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal while one project is planned is not that project's error: the listing
    stops, exit 130, the status document names the interruption."""
    import signal

    from aikito_mem.api import Project

    _demo(ws)
    ws.write_config("other", memory=[], paths=[])
    _kill_before(monkeypatch, Project, "plan", signal.SIGINT)
    code, doc, _ = _invoke(ws, "status", "--json")
    assert code == 130
    assert doc["projects"] == []
    assert doc["error"]["code"] == "sync.interrupted"  # type: ignore[index]


def test_a_signal_during_doctor_is_not_a_project_error(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    import aikito_mem.config.projects

    _demo(ws)
    _kill_before(monkeypatch, aikito_mem.config.projects, "load_project_config", signal.SIGTERM)
    code, doc, _ = _invoke(ws, "doctor", "--json")
    assert code == 143
    assert doc["error"]["code"] == "sync.interrupted"  # type: ignore[index]
    assert doc["checks"] == []


def test_a_signal_while_the_options_are_parsed_is_reported_by_the_command(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """The signal record is installed before a subcommand's options are parsed: a SIGINT
    then still ends with the command's own JSON document, nothing written."""
    import signal

    from aikito_mem.cli.options import Seconds

    co = _demo(ws)
    _kill_before(monkeypatch, Seconds, "convert", signal.SIGINT)
    code, doc, _ = _invoke(ws, "sync", "project", "demo", "--json", "--lock-timeout", "1")
    assert (code, doc["outcome"]) == (130, "interrupted")
    assert not os.path.lexists(f"{co}/.agents")


def test_a_signal_after_planning_stops_the_plan_file_from_being_written(
        ws: WS, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]) -> None:
    """A signal that lands just after planning (outside the interruptible region) is
    checked before the one write of a dry run: no plan file, exit 143."""
    import contextlib
    import signal
    from collections.abc import Iterator

    from aikito_mem import signals

    _demo(ws)
    real = signals.interruptible

    @contextlib.contextmanager
    def then_a_signal() -> Iterator[None]:
        with real():
            yield
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(signals, "interruptible", then_a_signal)
    out = f"{tmp_path}/plan.toml"
    code, doc, _ = _invoke(ws, "sync", "project", "demo", "--dry-run", "--out", out, "--json")
    assert (code, doc["outcome"]) == (143, "interrupted")
    assert not os.path.lexists(out)


def test_a_signal_then_an_error_ends_with_the_signal(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM while waiting out a busy lock: the wait ends (busy), but the run reports
    the signal — 143, not 6."""
    import signal

    from aikito_mem.errors import LockBusyError

    co = _demo(ws)

    def busy(self: object, paths: list[str], timeout: float) -> list[str]:
        os.kill(os.getpid(), signal.SIGTERM)
        raise LockBusyError("busy", path=co, timeout=timeout)

    monkeypatch.setattr("aikito_mem.executor.execute.Locks.acquire", busy)
    code, doc, _ = _invoke(ws, "sync", "project", "demo", "--json")
    assert (code, doc["outcome"]) == (143, "interrupted")
    assert not os.path.lexists(f"{co}/.agents")


def test_an_interrupt_before_the_command_starts_is_not_clicks_aborted(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("aikito_mem.signals.installed", interrupted)
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "status"])
    assert res.exit_code == 130
    assert "Aborted!" not in res.output
    assert "aikito: interrupted by SIGINT" in res.stderr


def test_a_bug_is_exit_5_with_its_document_and_the_traceback_on_stderr(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    from aikito_mem.api import Project

    _demo(ws)

    def broken(self: Project, *args: object, **kwargs: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(Project, "plan", broken)
    code, doc, stderr = _invoke(ws, "sync", "project", "demo", "--dry-run", "--json")
    assert (code, doc["outcome"]) == (5, "failed")
    assert doc["error"]["code"] == "internal"  # type: ignore[index]
    assert "RuntimeError: boom" in doc["error"]["message"]  # type: ignore[index]
    assert "Traceback" in stderr  # for the bug report; stdout stays one document


@pytest.mark.parametrize(("command", "code"), [("status", "status.os_error"),
                                               ("doctor", "doctor.os_error")])
def test_an_environment_failure_is_exit_5_with_the_commands_document(
        ws: WS, monkeypatch: pytest.MonkeyPatch, command: str, code: str) -> None:
    def unreadable(root: str) -> list[str]:
        raise OSError(errno.EIO, os.strerror(errno.EIO), f"{root}/projects")

    monkeypatch.setattr("aikito_mem.config.projects.list_projects", unreadable)
    exit_code, doc, _ = _invoke(ws, command, "--json")
    assert exit_code == 5
    assert doc["schema"] == f"aikito.{command}/1"
    assert doc["error"]["code"] == code  # type: ignore[index]
    assert "Input/output error" in doc["error"]["message"]  # type: ignore[index]


def test_a_deleted_current_directory_is_a_configuration_error(
        ws: WS, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]) -> None:
    gone = f"{tmp_path}/gone"
    os.mkdir(gone)
    monkeypatch.chdir(gone)
    os.rmdir(gone)
    code, doc, _ = _invoke(ws, "sync", "project", "--dry-run", "--json")
    assert (code, doc["outcome"]) == (4, "config_error")
    assert doc["error"]["code"] == "config.cwd_missing"  # type: ignore[index]


@pytest.mark.parametrize("command", [["sync", "project", "demo"], ["apply", "plan.toml"],
                                     ["adopt", "x"]])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "1e999", "soon"])
def test_lock_timeout_must_be_finite_seconds(ws: WS, command: list[str], value: str) -> None:
    """``--lock-timeout nan`` waited forever on a busy checkout: a usage error now."""
    co = _demo(ws)
    res = CliRunner().invoke(cli, ["--workspace", ws.root, *command, "--json",
                                   "--lock-timeout", value])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and "--lock-timeout" in res.stderr
    assert not os.path.lexists(f"{co}/.agents")


# ------------------------------------------------------------- real processes: pipes, signals


def _aikito(ws: WS, *args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "aikito_mem", "--workspace", ws.root, *args]


def _into_a_closed_pipe(argv: list[str], stream: str = "stdout") -> tuple[int, bytes]:
    """Run ``argv`` with ``stream`` a pipe whose reader has already gone; return the exit
    code and what the other stream received."""
    import subprocess

    read, write = os.pipe()
    os.close(read)
    other = "stderr" if stream == "stdout" else "stdout"
    try:
        proc = subprocess.run(argv, timeout=120, check=False,
                              **{stream: write, other: subprocess.PIPE})  # type: ignore[call-overload]
    finally:
        os.close(write)
    return proc.returncode, getattr(proc, other)


@pytest.mark.parametrize("extra", [[], ["--json"], ["-v"]])
def test_a_reader_that_went_away_does_not_fail_a_successful_sync(
        ws: WS, extra: list[str]) -> None:
    """``aikito sync project demo | head -1``: the links are made; the report nobody
    reads is dropped — the run's own exit code (0), no message (it used to be exit 5,
    "Broken pipe; … fix the cause (permissions, disk, mounts)")."""
    co = _demo(ws)
    code, stderr = _into_a_closed_pipe(_aikito(ws, "sync", "project", "demo", *extra))
    assert (code, stderr) == (0, b"")
    assert os.readlink(f"{co}/.agents/memory/a.md") == ws.memory_path("a.md")


def test_a_reader_that_went_away_keeps_the_exit_code_and_stderr_of_a_blocked_sync(
        ws: WS) -> None:
    co = _demo(ws)
    os.makedirs(f"{co}/.agents/memory")
    with open(f"{co}/.agents/memory/a.md", "w") as fh:
        fh.write("mine")
    code, stderr = _into_a_closed_pipe(_aikito(ws, "sync", "project", "demo"))
    assert code == 1
    assert stderr.startswith(b"aikito: ") and b"Traceback" not in stderr


def test_a_closed_stderr_keeps_the_exit_code_of_an_error(ws: WS) -> None:
    """The error message cannot be written either: the exit code is still the error's
    own (4 here), not a crash while reporting it."""
    code, stdout = _into_a_closed_pipe(_aikito(ws, "sync", "project", "nope"), "stderr")
    assert (code, stdout) == (4, b"")


def _holds_open(pid: int, path: str) -> bool:
    """Whether process ``pid`` has a descriptor open on ``path`` (the lock wait opens the
    checkout root, then tries ``flock`` until the timeout)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # pragma: no cover - the process has ended
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return True
        except OSError:
            continue
    return False


@pytest.mark.parametrize(("args", "code"), [(["sync", "project", "demo"], 0),
                                           (["sync", "project", "demo", "--json"], 0),
                                           (["sync", "project", "nope"], 4)])
def test_a_closed_stdout_is_written_nothing(ws: WS, args: list[str], code: int) -> None:
    """Started with stdout closed (``aikito … >&-``): the report is written nowhere, as
    ``print`` writes nothing there — the run's own exit code, its error message still
    on stderr, never a traceback (the colour check used to fail on the missing
    stream)."""
    import subprocess

    co = _demo(ws)
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *_aikito(ws, *args)],
                          stderr=subprocess.PIPE, text=True, timeout=120, check=False,
                          env={**os.environ, "NO_COLOR": ""})
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    if code:
        assert proc.stderr.startswith("aikito: project 'nope' not found"), proc.stderr
    else:
        assert proc.stderr == ""
        assert os.readlink(f"{co}/.agents/memory/a.md") == ws.memory_path("a.md")


def _full_disk() -> bool:
    import stat

    try:
        return stat.S_ISCHR(os.stat("/dev/full").st_mode)
    except OSError:
        return False


@pytest.mark.skipif(not _full_disk(), reason="needs /dev/full")
@pytest.mark.parametrize("extra", [[], ["--json"], ["--json", "--dry-run"]])
def test_a_report_to_a_full_disk_is_exit_5_without_traceback(
        ws: WS, extra: list[str]) -> None:
    """stdout on a full disk (``> /dev/full``): the report cannot be written, and under
    ``--json`` neither can the error's document — the error is said on stderr alone,
    exit 5, never a traceback (``--json`` used to end in one, exit 1)."""
    import subprocess

    co = _demo(ws)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(_aikito(ws, "sync", "project", "demo", *extra), stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.startswith("aikito: No space left on device; nothing more was "
                                  "attempted"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert os.path.lexists(f"{co}/.agents/memory/a.md") is ("--dry-run" not in extra)


@pytest.mark.skipif(not _full_disk(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["sync", "project", "--help"]])
def test_a_help_to_a_full_disk_is_exit_5_without_traceback(args: list[str]) -> None:
    """What the argument parser itself prints (a help, ``--version``) to a stdout on a
    full disk: the error on stderr, exit 5, as a report's — never a traceback."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "aikito_mem", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.startswith("aikito: No space left on device; nothing more was "
                                  "attempted"), proc.stderr
    assert "Traceback" not in proc.stderr


def _parser(args: list[str], *, stdout: int | None = None, stderr: int) -> int:
    """The exit code of ``aikito ARGS`` (no workspace needed) run with these streams."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "aikito_mem", *args], stdout=stdout,
                          stderr=stderr, timeout=120, check=False).returncode


USAGE_ERRORS = [["nosuch"], ["sync", "--force", "project", "demo"],
                ["sync", "-v", "-q", "project", "demo"]]


@pytest.mark.skipif(not _full_disk(), reason="needs /dev/full")
@pytest.mark.parametrize("args", USAGE_ERRORS)
def test_a_usage_error_to_a_full_stderr_is_exit_5(args: list[str]) -> None:
    """A usage error whose stderr is on a full disk cannot be said: exit 5 as for any
    other error said to a full stderr — where the failed write ended in a traceback (to
    that same stream), exit 1.  Where stderr is fine it is exit 2, as always."""
    import subprocess

    assert _parser(args, stderr=subprocess.DEVNULL) == 2
    with open("/dev/full", "w") as full:
        assert _parser(args, stderr=full.fileno()) == 5


@pytest.mark.parametrize("args", USAGE_ERRORS)
def test_a_usage_error_to_a_gone_reader_keeps_exit_2(args: list[str]) -> None:
    """A usage error to a stderr whose reader has gone (``2>&1 | head -c1``): the rest is
    dropped, the exit code is the usage error's, 2 — where it ended in a traceback, 1."""
    read, write = os.pipe()
    os.close(read)
    try:
        assert _parser(args, stderr=write) == 2
    finally:
        os.close(write)


@pytest.mark.skipif(not _full_disk(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_a_help_with_stdout_and_stderr_on_a_full_disk_is_exit_5(args: list[str]) -> None:
    """A help or ``--version`` to a full disk, its error to a full disk too: exit 5 —
    where the second failed write ended in a traceback, exit 1."""
    with open("/dev/full", "w") as full:
        assert _parser(args, stdout=full.fileno(), stderr=full.fileno()) == 5


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_while_waiting_for_the_lock(ws: WS, signame: str) -> None:
    """[E5]: a sync waiting for a checkout lock held by someone else, then SIGINT/SIGTERM:
    130/143 with its JSON document — never click's "Aborted!", never a silent death —
    and nothing written."""
    import fcntl
    import signal
    import subprocess
    import time

    co = _demo(ws)
    signum = signal.Signals[signame]
    holder = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        proc = subprocess.Popen(_aikito(ws, "sync", "project", "demo", "--json",
                                        "--lock-timeout", "2"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(6000):  # until the command waits for the lock
            if proc.poll() is not None or _holds_open(proc.pid, co):
                break
            time.sleep(0.01)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(holder)
    assert proc.returncode == 128 + signum, err
    doc = json.loads(out)
    assert (doc["outcome"], doc["exit_code"]) == ("interrupted", 128 + signum)
    assert b"Aborted!" not in err and b"Traceback" not in err
    assert not os.path.lexists(f"{co}/.agents")
