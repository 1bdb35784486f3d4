"""The render room (SPEC §9): what every command prints, exactly — the text reports of
``sync project``, ``apply``, ``status`` and ``doctor`` through ``CliRunner`` — and the text
rules they share: a name can never inject a line or an escape sequence, and no stream
encoding can make the output fail after the work was done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from aikito_mem.render.text import (
    Display,
    for_stream,
    json_text,
    message_lines,
    printable,
)
from tests.conftest import WS

# ------------------------------------------------------------------------------ text rules


@pytest.mark.parametrize(("name", "shown"), [
    ("plain.md", "plain.md"),
    ("café 日本.md", "café 日本.md"),
    ("a\nb", "a\\nb"),
    ("a\r\tb", "a\\r\\tb"),
    ("red\x1b[31m", "red\\x1b[31m"),
    ("del\x7f c1\x9b", "del\\x7f c1\\x9b"),
    ("rlo\u202eevil", "rlo\\u202eevil"),
    ("nbsp\u00a0x", "nbsp\\xa0x"),
    ("raw\udcff", "raw\\xff"),  # os.fsdecode of the byte 0xff
    ("astral\U000e0001", "astral\\U000e0001"),
])
def test_printable_escapes_what_could_move_the_terminal(name: str, shown: str) -> None:
    assert printable(name) == shown
    assert "\n" not in printable(name) and printable(name).isprintable()


@pytest.mark.parametrize(("encoding", "text", "shown"), [
    ("utf-8", "a — b", "a — b"),
    ("iso-8859-15", "a — é €", "a \\u2014 é €"),
    ("ascii", "é", "\\xe9"),
    ("no-such-codec", "é", "\\xe9"),
    (None, "é", "é"),
])
def test_for_stream_escapes_what_the_encoding_cannot_hold(
        encoding: str | None, text: str, shown: str) -> None:
    assert for_stream(text, encoding) == shown


def test_json_text_is_valid_json_in_any_encoding() -> None:
    doc = {"name": "ő — \udcff", "n": 1}
    utf8 = json_text({"name": "ő"})
    assert "ő" in utf8 and json.loads(utf8) == {"name": "ő"}
    for encoding in ("utf-8", "iso-8859-15", "ascii"):
        text = json_text(doc, encoding)
        assert text.isascii()
        assert json.loads(text) == doc
    latin = json_text({"name": "é"}, "iso-8859-15")
    assert "é" in latin
    astral = json_text({"name": "ő 😀"}, "iso-8859-15")
    assert astral.isascii() and json.loads(astral) == {"name": "ő 😀"}


def test_message_lines_keep_listed_differences_and_escape_other_newlines() -> None:
    display = Display()
    assert message_lines("head\nforged line", display) == ("aikito: head\\nforged line",)
    assert message_lines("stale:\n  - a\n  - b\nx", display, ("a", "b\nx")) == (
        "aikito: stale:", "  - a", "  - b\\nx")
    assert message_lines("one line: a", display, ("a",)) == ("aikito: one line: a",)


# ------------------------------------------------------------------------- exact outputs


def run(ws: WS, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--workspace", ws.root, *args], catch_exceptions=False)


def shown(ws: WS, text: str) -> list[str]:
    """Output lines with the temporary base directory replaced by ``<base>``."""
    return text.replace(str(ws.base), "<base>").splitlines()


@pytest.fixture
def world(ws: WS) -> WS:
    """create (team/a.md), an owned stale link (old.md), an offline checkout."""
    ws.add_file("team/a.md", "a")
    ws.add_file("glossary.md", "g")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["team/a.md", "glossary.md"],
                    paths=[co, f"{ws.base}/offline"])
    os.makedirs(ws.runtime(co))
    os.symlink(ws.memory_path("glossary.md"), ws.runtime(co, "glossary.md"))
    os.symlink(ws.memory_path("old.md"), ws.runtime(co, "old.md"))
    return ws


def test_sync_dry_run_prints_exactly_the_plan(world: WS) -> None:
    res = run(world, "sync", "project", "demo", "--dry-run")
    assert res.exit_code == 0
    assert shown(world, res.stdout) == [
        "project demo — workspace <base>/ws",
        "checkout 1: <base>/co/co",
        "  - <base>/co/co/.agents/memory/old.md",
        "  + <base>/co/co/.agents/memory/team/a.md -> <base>/ws/memory/team/a.md",
        "checkout 2: <base>/offline",
        "  ~ checkout offline: <base>/offline",
        "memory: 1 to create, 1 to unlink, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
        "dry run: nothing was written",
    ]
    assert res.stderr == ""


def test_sync_prints_the_plan_then_what_was_done(world: WS) -> None:
    res = run(world, "sync", "project", "demo")
    assert res.exit_code == 0
    assert shown(world, res.stdout)[-2:] == [
        "memory: 1 to create, 1 to unlink, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
        "done: 2 changes applied",
    ]
    again = run(world, "sync", "project", "demo", "-v")
    assert shown(world, again.stdout) == [
        "project demo — workspace <base>/ws",
        "checkout 1: <base>/co/co",
        "  = <base>/co/co/.agents/memory/glossary.md -> <base>/ws/memory/glossary.md",
        "  = <base>/co/co/.agents/memory/team/a.md -> <base>/ws/memory/team/a.md",
        "checkout 2: <base>/offline",
        "  ~ checkout offline: <base>/offline",
        "memory: 0 to create, 0 to unlink, 0 conflicts, 2 unchanged, 2 skipped "
        "(1 checkout offline)",
        "done: already in sync, nothing to do",
    ]


def test_sync_check_and_quiet(world: WS) -> None:
    res = run(world, "sync", "project", "demo", "--check", "-q")
    assert res.exit_code == 7
    assert res.stdout.splitlines() == [
        "memory: 1 to create, 1 to unlink, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
    ]


def test_sync_registration_is_announced_and_reported(ws: WS) -> None:
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    cfg = ws.write_config("demo", memory=["a.md"], paths=[])
    res = run(ws, "sync", "project", "demo", co)
    assert res.exit_code == 0, res.output
    assert shown(ws, res.stdout) == [
        "project demo — workspace <base>/ws (<base>/co/co will be registered in "
        "<base>/ws/projects/demo/agent.toml)",
        "checkout explicit: <base>/co/co",
        "  + <base>/co/co/.agents/memory/a.md -> <base>/ws/memory/a.md",
        "memory: 1 to create, 0 to unlink, 0 conflicts, 0 unchanged, 0 skipped",
        "registered <base>/co/co in <base>/ws/projects/demo/agent.toml",
        "done: 1 change applied",
    ]
    assert co in Path(cfg).read_text()


def test_apply_prints_what_was_done(world: WS, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    assert run(world, "sync", "project", "demo", "--dry-run", "--out", str(plan)
               ).exit_code == 0
    res = CliRunner().invoke(cli, ["apply", str(plan)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert shown(world, res.stdout)[-1] == "done: 2 changes applied"


def test_status_prints_exactly_the_table(world: WS) -> None:
    run(world, "sync", "project", "demo")
    open(world.runtime(f"{world.checkouts_dir}/co", ".DS_Store"), "w").close()
    world.write_config("broken", raw="memory = [\n")
    res = run(world, "status")
    assert res.exit_code == 1
    lines = shown(world, res.stdout)
    assert lines[:5] == [
        "workspace <base>/ws (option)",
        "PROJECT  CHECKOUT  STATE    SYNC                        PATH",
        "broken   -         error    cannot be read (see below)",
        "demo     1         active   in sync, 1 foreign entry    <base>/co/co",
        "demo     2         offline  offline (not checked)       <base>/offline",
    ]
    assert lines[5].startswith("error: project broken: <base>/ws/projects/broken/agent.toml")
    assert lines[6:] == ["status: 2 projects, 1 with errors"]


def test_doctor_prints_exactly_its_checks(ws: WS) -> None:
    os.makedirs(ws.notes_path("demo"))
    ws.write_config("demo", memory=[], paths=[])
    with open(f"{ws.root}/memory/MEMORY.md", "w") as fh:
        fh.write("[gone](gone.md)\n")
    res = run(ws, "doctor", "-v")
    assert res.exit_code == 1
    assert shown(ws, res.stdout) == [
        "workspace <base>/ws (option)",
        "ok       workspace.source  workspace <base>/ws resolved from the --workspace option "
        "('<base>/ws'); it does not depend on the current directory",
        "ok       memory.root       workspace memory root <base>/ws/memory is a writable "
        "directory",
        "ok       project.config    <base>/ws/projects/demo/agent.toml is valid",
        "ok       notes.dir         project demo notes directory "
        "<base>/ws/projects/demo/memory/notes is a writable directory",
        "error    index.links       <base>/ws/memory/MEMORY.md:1: entry (gone.md) points to "
        "<base>/ws/memory/gone.md, which does not exist",
        "                           remedy: fix or remove that entry of "
        "<base>/ws/memory/MEMORY.md",
        "doctor: 4 ok, 0 warnings, 1 error",
    ]


def test_a_conflict_line_names_target_reason_and_remedy(world: WS) -> None:
    co = f"{world.checkouts_dir}/co"
    os.unlink(world.runtime(co, "glossary.md"))
    with open(world.runtime(co, "glossary.md"), "w") as fh:
        fh.write("mine\n")
    res = run(world, "sync", "project", "demo", "--dry-run")
    assert res.exit_code == 1
    doc = json.loads(run(world, "sync", "project", "demo", "--dry-run", "--json").stdout)
    (op,) = [o for o in doc["operations"] if o["action"] == "CONFLICT"]
    assert op["target"] == world.runtime(co, "glossary.md") and op["target"] in op["remedy"]
    bangs = [x for x in res.stdout.splitlines() if x.lstrip().startswith("!")]
    assert bangs == [f"  ! {op['target']}: {op['reason']} ({op['remedy']})"]
    assert res.stdout.splitlines()[-1] == (
        "memory: 1 to create, 1 to unlink, 1 conflict, 0 unchanged, 2 skipped "
        "(1 checkout offline)")
    assert res.stderr == "aikito: 1 conflict blocks the memory segment; nothing would be " \
        "written — resolve each as it says and run again\n"


ANSI = "\x1b["


@pytest.mark.parametrize("how", ["NO_COLOR", "--no-color", "not a tty"])
def test_no_colour(world: WS, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    os.unlink(world.memory_path("team/a.md"))  # a conflict: a message on stderr too
    args = ["sync", "project", "demo", "--dry-run"]
    if how == "NO_COLOR":
        monkeypatch.setenv("NO_COLOR", "1")
        args.append("--color")  # NO_COLOR wins even over --color
    elif how == "--no-color":
        args.append("--no-color")
    # color=True: the runner keeps escape codes, so their absence is the program's doing.
    res = CliRunner().invoke(cli, ["--workspace", world.root, *args], color=True)
    assert res.exit_code == 1
    assert ANSI not in res.output, res.output


def test_forced_colour(world: WS) -> None:
    res = CliRunner().invoke(cli, ["--workspace", world.root, "sync", "project", "demo",
                                   "--dry-run", "--color"], color=True)
    assert ANSI in res.stdout


def test_no_colour_in_a_real_process_writing_to_a_pipe(world: WS) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "aikito_mem", "--workspace", world.root, "sync", "project",
         "demo", "--dry-run", "-v"],
        capture_output=True, text=True, timeout=60,
        env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "TERM": "xterm"},
    )
    assert proc.returncode == 0, proc.stderr
    assert ANSI not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "dry run: nothing was written"


# --------------------------------------------------------------- names that inject lines


def test_a_name_with_a_newline_cannot_forge_a_line(ws: WS) -> None:
    """A foreign entry named ``x\\n  + forged -> …`` would print a fake CREATE line;
    text escapes it (``\\n``) as JSON does, and colours cannot be injected either."""
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    os.makedirs(ws.runtime(co))
    forged = "x\n  + forged -> evil\x1b[2J"
    open(ws.runtime(co, forged), "w").close()
    res = run(ws, "sync", "project", "demo", "--dry-run", "--color")
    assert res.exit_code == 0
    assert not any(line.startswith("  + forged") for line in res.stdout.splitlines())
    assert "x\\n  + forged -> evil\\x1b[2J" in res.stdout
    assert "\x1b[2J" not in res.stdout
    doc = json.loads(run(ws, "sync", "project", "demo", "--dry-run", "--json").stdout)
    assert any(f["path"] == ws.runtime(co, forged) for f in doc["findings"])


def test_status_and_doctor_escape_names_too(ws: WS) -> None:
    co = ws.checkout("co")
    ws.write_config("demo", memory=[], paths={"lap\ntop": co})
    os.makedirs(f"{ws.root}/memory/d\nx")
    with open(f"{ws.root}/memory/d\nx/MEMORY.md", "w") as fh:
        fh.write("[gone](gone.md)\n")
    status = run(ws, "status").stdout
    assert "lap\\ntop" in status and "\ntop" not in status
    doctor = run(ws, "doctor").stdout
    assert "d\\nx/MEMORY.md" in doctor
    assert all(line.startswith(("workspace ", "warning ", "error ", " ", "doctor:"))
               for line in doctor.splitlines()), doctor


# ----------------------------------------------------------------- non-UTF-8 terminals


def cli_process(ws: WS, *args: str, encoding: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": encoding, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "aikito_mem", "--workspace", ws.root, *args],
                          capture_output=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("encoding", ["iso-8859-15", "ascii"])
def test_a_terminal_that_is_not_utf8_gets_every_line(ws: WS, encoding: str) -> None:
    """The text report used to crash on ``—`` (and on any name the terminal's encoding
    cannot hold) after the links were created: a traceback and exit 1 for a sync that
    succeeded.  Every line is printed, with escapes for what the encoding lacks."""
    name = "ő😀.md"
    ws.add_file(name, "o")
    co = ws.checkout("co")
    ws.write_config("demo", memory=[name], paths=[co])
    proc = cli_process(ws, "sync", "project", "demo", encoding=encoding)
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(ws.runtime(co, name)) == ws.memory_path(name)
    out = proc.stdout.decode(encoding)
    assert "project demo \\u2014 workspace" in out
    assert "\\u0151\\U0001f600.md" in out
    assert out.splitlines()[-1] == "done: 1 change applied"
    assert proc.stderr == b""
    doc = json.loads(cli_process(ws, "sync", "project", "demo", "--json",
                                 encoding=encoding).stdout.decode(encoding))
    assert doc["operations"][0]["target"] == ws.runtime(co, name)
    for command in ("status", "doctor"):
        proc = cli_process(ws, command, encoding=encoding)
        assert proc.returncode in (0, 1) and b"Traceback" not in proc.stderr, proc.stderr
        json.loads(cli_process(ws, command, "--json", encoding=encoding).stdout)
    (Path(ws.root) / "memory" / name).unlink()
    blocked = cli_process(ws, "sync", "project", "demo", "--dry-run", encoding=encoding)
    assert blocked.returncode == 1 and b"Traceback" not in blocked.stderr
    assert blocked.stderr.decode(encoding).startswith("aikito: ")
