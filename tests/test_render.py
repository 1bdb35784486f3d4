"""The render room (SPEC §9): what every command prints, exactly — the text reports of
``sync project``, ``apply``, ``status`` and ``doctor`` through ``CliRunner`` — and the text
rules they share: a name can never inject a line or an escape sequence, and no stream
encoding can make the output fail after the work was done."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
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
from tests.helpers.width import too_wide
from tests.helpers.workspace import WS

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


#: The exact lines below are each one logical line: printed wide enough not to wrap
#: (wrapping itself is tested in tests/test_cli_habits.py, [U2]).
WIDE = {"COLUMNS": "1000"}


def run(ws: WS, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--workspace", ws.root, *args], catch_exceptions=False,
                              env=WIDE)


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
        "  - .agents/memory/old.md",
        "  + .agents/memory/team/a.md -> memory/team/a.md",
        "checkout 2: <base>/offline",
        "  ~ checkout offline: <base>/offline",
        "memory: 1 to create, 1 to unlink, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
        "dry run: nothing was written — to apply: aikito --workspace <base>/ws sync project demo",
    ]
    assert res.stderr == ""


def test_sync_prints_the_plan_then_what_was_done(world: WS) -> None:
    res = run(world, "sync", "project", "demo")
    assert res.exit_code == 0
    # A finished run counts what it did.
    assert shown(world, res.stdout)[-2:] == [
        "memory: 1 created, 1 unlinked, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
        "done: 2 changes applied",
    ]
    again = run(world, "sync", "project", "demo", "-v")
    assert shown(world, again.stdout) == [
        "project demo — workspace <base>/ws",
        "checkout 1: <base>/co/co",
        "  = .agents/memory/glossary.md -> memory/glossary.md",
        "  = .agents/memory/team/a.md -> memory/team/a.md",
        "checkout 2: <base>/offline",
        "  ~ checkout offline: <base>/offline",
        "memory: 0 created, 0 unlinked, 0 conflicts, 2 unchanged, 2 skipped "
        "(1 checkout offline)",
        "done: already in sync, nothing to do",
    ]
    # [U3]: without -v, a run with nothing to do is one line.
    quiet = run(world, "sync", "project", "demo")
    assert shown(world, quiet.stdout) == ["demo: in sync (2 checkouts, 1 offline)"]


def test_sync_check_and_quiet(world: WS) -> None:
    res = run(world, "sync", "project", "demo", "--check", "-q")
    assert res.exit_code == 7
    # [U3]: --check with changes pending ends with the command that applies them.
    assert shown(world, res.stdout) == [
        "memory: 1 to create, 1 to unlink, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
        "dry run: changes pending, nothing was written — to apply: aikito --workspace "
        "<base>/ws sync project demo",
    ]


def test_sync_registration_is_announced_and_reported(ws: WS) -> None:
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    cfg = ws.write_config("demo", memory=["a.md"], paths=[])
    res = run(ws, "sync", "project", "demo", co)
    assert res.exit_code == 0, res.output
    # The header of a real run does not announce; its end says what was done.
    assert shown(ws, res.stdout) == [
        "project demo — workspace <base>/ws",
        "checkout explicit: <base>/co/co",
        "  + .agents/memory/a.md -> memory/a.md",
        "memory: 1 created, 0 unlinked, 0 conflicts, 0 unchanged, 0 skipped",
        "registered <base>/co/co in projects/demo/agent.toml",
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
    assert res.exit_code == 4  # [U3]: sync --check's codes; a project unreadable is 4
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
        "    remedy: fix or remove that entry of "
        "<base>/ws/memory/MEMORY.md",
        "doctor: 4 ok, 0 warnings, 1 error",
    ]


def test_a_conflict_line_names_target_reason_and_remedy(
        world: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    co = f"{world.checkouts_dir}/co"
    os.unlink(world.runtime(co, "glossary.md"))
    with open(world.runtime(co, "glossary.md"), "w") as fh:
        fh.write("mine\n")
    monkeypatch.chdir(co)  # where a user runs it: the remedy's paths work from here
    res = run(world, "sync", "project", "demo", "--dry-run")
    assert res.exit_code == 1
    doc = json.loads(run(world, "sync", "project", "demo", "--dry-run", "--json").stdout)
    (op,) = [o for o in doc["operations"] if o["action"] == "CONFLICT"]
    assert op["target"] == world.runtime(co, "glossary.md") and op["target"] in op["remedy"]
    bangs = [x for x in res.stdout.splitlines() if x.lstrip().startswith("!")]
    # [U2]: the target as every segment's; the reason names the literal exactly; the
    # remedy's paths work where the command ran; the document keeps them absolute.
    ws = world.root
    assert bangs == [
        "  ! .agents/memory/glossary.md: found a regular file; expected a symlink to "
        f"'{ws}/memory/glossary.md' (aikito --workspace {ws} adopt .agents/memory/glossary.md "
        "(replaces it "
        f"with the link when it is an identical copy of {ws}/memory/glossary.md; shows the "
        "differences otherwise), or move it out of the way, or remove 'glossary.md' from "
        f"memory in {ws}/projects/demo/agent.toml)"]
    assert op["reason"] == f"found a regular file; expected a symlink to " \
        f"{world.memory_path('glossary.md')!r}"
    assert res.stdout.splitlines()[-1] == (
        "memory: 1 to create, 1 to unlink, 1 conflict, 0 unchanged, 2 skipped "
        "(1 checkout offline)")
    assert res.stderr == "aikito: 1 conflict blocks the memory segment; nothing would be " \
        "written — resolve each as it says and run again\n"


# --------------------------------------------------------------------- relative paths


def _op(target: str, segment: Any = None) -> Any:
    from aikito_mem.model import Action, Operation, SegmentName

    return Operation(Action.CREATE, "INV-MEM-01", "/co", target, "target missing",
                     segment=segment or SegmentName.MEMORY)


def test_paths_relative_to_checkout_and_workspace() -> None:
    from aikito_mem.model import SegmentName
    from aikito_mem.render.paths import Paths

    paths = Paths("/ws", "/co", cwd="/co", home="/home/me")
    assert paths.target(_op("/co/.agents/memory/team/a.md")) == ".agents/memory/team/a.md"
    assert paths.target(_op("/co/.agents")) == ".agents"
    assert paths.target(_op("/co")) == "/co"  # the checkout itself: its header's path
    assert paths.target(_op("/elsewhere/x")) == "/elsewhere/x"
    assert paths.target(_op("/co/.agents/skills/review", SegmentName.SKILLS)) == \
        ".agents/skills/review"
    assert paths.target(_op("/co/AGENTS.md", SegmentName.INSTRUCTIONS)) == "AGENTS.md"
    assert paths.source("/ws/memory/a.md") == "memory/a.md"
    assert paths.source("/wsx/memory/a.md") == "/wsx/memory/a.md"
    # [U2]: pasteable where the command ran (/co): relative below it, else absolute …
    assert paths.text("move /co/.agents/memory/a out of the way, or edit "
                      "'/ws/projects/p/agent.toml' (/co/x) /co") == \
        "move .agents/memory/a out of the way, or edit '/ws/projects/p/agent.toml' (x) /co"
    # … or ~/ under the home directory, except inside quotes (a shell expands no ~ there).
    home = Paths("/home/me/ws", "/home/me/co", cwd="/home/me/co", home="/home/me")
    assert home.text("edit /home/me/ws/x or '/home/me/ws/a b' in /home/me/co/y") == \
        "edit ~/ws/x or '/home/me/ws/a b' in y"
    assert home.pasteable("/home/me/co") == "."
    # A reason's quoted path is a literal: shown exactly.
    assert home.reason("expected a symlink to '/home/me/ws/x', found /home/me/co/z") == \
        "expected a symlink to '/home/me/ws/x', found z"
    assert home.reason("found a symlink to '/home/me/co/y'") == \
        "found a symlink to '/home/me/co/y'"  # below the current directory, yet literal
    assert home.text("aikito adopt '/home/me/co/a b'") == "aikito adopt 'a b'"


def test_paths_never_cut_into_another_path() -> None:
    from aikito_mem.render.paths import Paths

    paths = Paths("/ws", "/co", cwd="/co", home="/ws")
    # /co/ inside /srv/co/… or /ws/ inside /x/ws/… is another path: kept whole.
    assert paths.text("found /srv/co/a and /x/ws/b") == "found /srv/co/a and /x/ws/b"
    # The filesystem root is never a base.
    assert Paths("/", "/", cwd="/", home="/").text("see /etc/x") == "see /etc/x"
    # The nearer (longer) base wins: the current directory inside the home directory.
    assert Paths("/h/ws", "/h/co", cwd="/h/co", home="/h").text(
        "at /h/ws/memory/a and /h/co/b") == "at ~/ws/memory/a and b"


def test_a_pruned_directory_is_listed_after_the_links_it_contained(ws: WS) -> None:
    """[P2]: ``team/`` is removed after ``team/a.md`` and ``team/b.md`` (it only becomes
    empty then); the text lists it in that order, the document keeps the plan's order."""
    ws.add_file("keep.md", "k")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["keep.md"], paths=[co])
    os.makedirs(ws.runtime(co, "team"))
    for name in ("team/a.md", "team/b.md", "zz.md"):
        os.symlink(ws.memory_path(name), ws.runtime(co, name))
    res = run(ws, "sync", "project", "demo", "--dry-run")
    assert res.exit_code == 0, res.output
    assert shown(ws, res.stdout)[2:6] == [
        "  + .agents/memory/keep.md -> memory/keep.md",
        "  - .agents/memory/team/a.md",
        "  - .agents/memory/team/b.md",
        "  - .agents/memory/team/",
    ]
    assert shown(ws, res.stdout)[6] == "  - .agents/memory/zz.md"
    done = run(ws, "sync", "project", "demo")
    assert shown(ws, done.stdout)[2:7] == shown(ws, res.stdout)[2:7]
    assert not os.path.lexists(ws.runtime(co, "team"))


def test_findings_of_a_checkout_are_listed_in_its_block_relative(
        world: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    co = f"{world.checkouts_dir}/co"
    open(world.runtime(co, ".DS_Store"), "w").close()
    monkeypatch.chdir(co)
    res = run(world, "sync", "project", "demo", "--dry-run")
    lines = shown(world, res.stdout)
    # A preserved foreign file names the command that shares it ([U2]: pasteable here).
    assert lines[4] == ("  warning: preserved .agents/memory/.DS_Store: a regular file that "
                        "aikito did not create; it is left untouched — to share it with "
                        "every checkout: aikito --workspace <base>/ws adopt "
                        ".agents/memory/.DS_Store (moves it "
                        "into the workspace and links it back); else remove it yourself if "
                        "it is not needed")
    assert lines[5] == "checkout 2: <base>/offline"
    doc = json.loads(run(world, "sync", "project", "demo", "--dry-run", "--json").stdout)
    assert doc["findings"][0]["path"] == world.runtime(co, ".DS_Store")
    assert world.runtime(co, ".DS_Store") in doc["findings"][0]["message"]


def test_json_keeps_absolute_paths(world: WS) -> None:
    doc = json.loads(run(world, "sync", "project", "demo", "--dry-run", "--json").stdout)
    co = f"{world.checkouts_dir}/co"
    create = next(op for op in doc["operations"] if op["action"] == "CREATE")
    assert create["target"] == world.runtime(co, "team/a.md")
    assert create["source"] == world.memory_path("team/a.md")


# ------------------------------------------------------------------- closing lines


def test_every_checkout_offline_says_nothing_was_synced(ws: WS) -> None:
    ws.add_file("a.md", "a")
    ws.write_config("demo", memory=["a.md"], paths=[f"{ws.base}/gone"])
    res = run(ws, "sync", "project", "demo")
    assert res.exit_code == 0
    # [U3]: one line, then the warning — also a finding of the document.
    assert shown(ws, res.stdout) == [
        "demo: not synced (1 checkout, all offline)",
        "warning: nothing was synced: every checkout is offline (project demo, its one "
        "checkout) — plug in or clone a checkout, then sync again"]
    doc = json.loads(run(ws, "sync", "project", "demo", "--json").stdout)
    assert doc["outcome"] == "unchanged"
    assert [(f["code"], f["severity"], f["message"]) for f in doc["findings"]] == [
        ("sync.all_offline", "warning", shown(ws, res.stdout)[-1].removeprefix("warning: "))]
    quiet = run(ws, "sync", "project", "demo", "-q")
    assert quiet.stdout.splitlines()[-1].startswith("warning: nothing was synced:")
    dry = run(ws, "sync", "project", "demo", "--dry-run")
    assert dry.stdout.splitlines()[-1].startswith(
        "warning: nothing would be synced: every checkout is offline (project demo, its one ")
    ws.write_config("demo", memory=["a.md"], paths=[f"{ws.base}/gone", f"{ws.base}/gone2"])
    two = run(ws, "sync", "project", "demo")
    assert two.stdout.splitlines()[-1].startswith(
        "warning: nothing was synced: every checkout is offline (project demo, all 2 of "
        "its checkouts)")
    ws.write_config("demo", memory=["a.md"], paths=[])
    none = run(ws, "sync", "project", "demo")
    assert shown(ws, none.stdout) == [
        "demo: not synced (no checkout registered)",
        "warning: nothing was synced: project demo has no checkout registered — add one "
        "with: aikito --workspace <base>/ws sync project demo PATH"]
    doc = json.loads(run(ws, "sync", "project", "demo", "--json").stdout)
    assert [f["code"] for f in doc["findings"]] == ["sync.no_checkout"]


def test_one_active_checkout_in_sync_is_already_in_sync(world: WS) -> None:
    assert run(world, "sync", "project", "demo").exit_code == 0
    res = run(world, "sync", "project", "demo")  # the offline checkout does not matter
    assert res.stdout.splitlines() == ["demo: in sync (2 checkouts, 1 offline)"]
    verbose = run(world, "sync", "project", "demo", "-v")
    assert verbose.stdout.splitlines()[-1] == "done: already in sync, nothing to do"


def test_out_says_where_the_plan_was_saved(world: WS, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = run(world, "sync", "project", "demo", "--dry-run", "--out", "my plan.toml")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-1] == (
        "dry run: nothing was synced; plan saved to my plan.toml — apply it with: "
        "aikito apply 'my plan.toml'")
    assert (tmp_path / "my plan.toml").is_file()
    quiet = run(world, "sync", "project", "demo", "--check", "-q", "--out", "p2.toml")
    assert quiet.exit_code == 7
    assert quiet.stdout.splitlines()[-1] == (
        "dry run: nothing was synced; plan saved to p2.toml — apply it with: "
        "aikito apply p2.toml")


def test_quiet_still_says_whether_changes_were_applied(world: WS) -> None:
    res = run(world, "sync", "project", "demo", "-q")
    assert res.exit_code == 0
    assert res.stdout.splitlines() == [
        "memory: 1 created, 1 unlinked, 0 conflicts, 1 unchanged, 2 skipped "
        "(1 checkout offline)",
        "done: 2 changes applied",
    ]
    again = run(world, "sync", "project", "demo", "-q")
    assert again.stdout.splitlines() == ["demo: in sync (2 checkouts, 1 offline)"]


def test_check_json_is_unchanged_when_nothing_is_pending(world: WS) -> None:
    """SPEC §9 outcome words: ``--check`` with changes is ``planned`` (exit 7); with
    nothing pending ``unchanged`` (exit 0)."""
    pending = run(world, "sync", "project", "demo", "--check", "--json")
    assert (pending.exit_code, json.loads(pending.stdout)["outcome"]) == (7, "planned")
    assert run(world, "sync", "project", "demo").exit_code == 0
    clean = run(world, "sync", "project", "demo", "--check", "--json")
    doc = json.loads(clean.stdout)
    assert (clean.exit_code, doc["outcome"], doc["dry_run"]) == (0, "unchanged", True)
    assert {op["status"] for op in doc["operations"]} == {"planned"}
    text = run(world, "sync", "project", "demo", "--check")
    assert text.stdout.splitlines() == ["demo: in sync (2 checkouts, 1 offline)"]
    verbose = run(world, "sync", "project", "demo", "--check", "-v")
    assert verbose.stdout.splitlines()[-1] == "dry run: already in sync, nothing to do"
    # --dry-run keeps `planned`: a dry run is a plan, --check a verdict.
    dry = json.loads(run(world, "sync", "project", "demo", "--dry-run", "--json").stdout)
    assert dry["outcome"] == "planned"


# -------------------------------------------------------------------- line widths

WIDTH = 100
DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo.py"


def test_every_line_of_the_demo_fits_100_columns(tmp_path: Path) -> None:
    """``make demo`` run as a user runs it (its temporary directory under /tmp): every
    line it prints, the JSON document included, fits 100 columns."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "AIKITO_DIR")}
    proc = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True,
                          timeout=300, env={**env, "TMPDIR": "/tmp", "COLUMNS": "100"})
    kept = [line.split("rm -r ", 1)[1] for line in proc.stdout.splitlines()
            if "rm -r " in line]
    try:
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        lines = proc.stdout.splitlines()
        assert "  + .agents/memory/team/conventions.md -> memory/team/conventions.md" in lines
        long = [line for line in lines if len(line) > WIDTH]
        assert not long, long
    finally:
        for tmp in kept:
            shutil.rmtree(tmp.rstrip(")"), ignore_errors=True)


@pytest.fixture
def short_ws() -> Any:
    """A workspace under a short temporary directory of /tmp (as a home directory is
    short: ``/home/me``), removed afterwards."""
    import tempfile

    base = tempfile.mkdtemp(prefix="aikito-", dir="/tmp")
    try:
        yield WS(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_text_of_a_realistic_sync_fits_100_columns(short_ws: WS) -> None:
    """The fixture workspace with checkouts at home-like paths: every text line of a dry
    run, a sync, a verbose sync and a pruned directory within 100 columns."""
    ws = short_ws
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "workspace" / "memory"
    shutil.copytree(fixture, ws.root + "/memory", dirs_exist_ok=True)
    os.makedirs(ws.notes_path("my-project"))
    laptop = ws.checkout("home/me/code/my-project")
    worktree = ws.checkout("home/me/code/my-project-feature-branch")
    refs = ["team/conventions.md", "glossary", "decisions/adr", "style.md"]
    ws.write_config("my-project", memory=refs,
                    paths={"laptop": laptop, "feature": worktree,
                           "server": f"{ws.base}/srv/my-project"})
    def run(ws: WS, *args: str) -> Result:  # at 100 columns
        return CliRunner().invoke(cli, ["--workspace", ws.root, *args],
                                  catch_exceptions=False, env={"COLUMNS": "100"})

    outputs = [run(ws, "sync", "project", "my-project", "--dry-run").stdout,
               run(ws, "sync", "project", "my-project").stdout,
               run(ws, "sync", "project", "my-project", "-v").stdout]
    os.unlink(ws.runtime(laptop, "style.md"))
    Path(ws.runtime(laptop, "style.md")).write_text("mine\n")
    ws.write_config("my-project", memory=refs[1:],
                    paths={"laptop": laptop, "feature": worktree})
    outputs.append(run(ws, "sync", "project", "my-project", "--dry-run").stdout)
    for text in outputs:
        # [U2]: a conflict's reason and remedy wrap with a hanging indent; only a word
        # wider than the line itself (a path), or a command of this tool that names one,
        # may stand longer, alone on its line.
        assert not too_wide(text, WIDTH), text
    assert any("  ! .agents/memory/style.md: found a regular file" in t for t in outputs)
    assert any("  - .agents/memory/team/" in t.splitlines() for t in outputs)


ANSI = "\x1b["

#: Each command that colours, with arguments that give it something to colour and the
#: exit code it then has.
COLOURED = {
    "sync": (["sync", "project", "demo", "--dry-run"], 1),
    "status": (["status"], 1),
    "doctor": (["doctor", "-v"], 0),
}


def _coloured_world(world: WS) -> None:
    os.unlink(world.memory_path("team/a.md"))  # a conflict: a message on stderr too


@pytest.mark.parametrize("command", sorted(COLOURED))
@pytest.mark.parametrize(("how", "env", "flag"), [
    ("NO_COLOR", {"NO_COLOR": "1"}, None),
    ("TERM=dumb", {"TERM": "dumb"}, None),
    ("--no-color", {}, "--no-color"),
    ("not a terminal", {}, None),
])
def test_no_colour(world: WS, monkeypatch: pytest.MonkeyPatch, command: str, how: str,
                   env: dict[str, str], flag: str | None) -> None:
    """SPEC §9: colour only on a terminal, never with NO_COLOR (or TERM=dumb) or
    --no-color — for sync, status and doctor alike."""
    _coloured_world(world)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args, code = COLOURED[command]
    # color=True: the runner keeps escape codes, so their absence is the program's doing.
    res = CliRunner().invoke(cli, ["--workspace", world.root, *args,
                                   *([flag] if flag else [])], color=True)
    assert res.exit_code == code, res.output
    assert ANSI not in res.output, res.output


@pytest.mark.parametrize("command", sorted(COLOURED))
@pytest.mark.parametrize("env", [{}, {"NO_COLOR": "1"}, {"TERM": "dumb"}],
                         ids=["plain", "NO_COLOR", "TERM=dumb"])
def test_forced_colour_wins_over_the_environment(
        world: WS, monkeypatch: pytest.MonkeyPatch, command: str,
        env: dict[str, str]) -> None:
    """SPEC §9: always with --color (an explicit flag wins over the environment)."""
    _coloured_world(world)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args, code = COLOURED[command]
    res = CliRunner().invoke(cli, ["--workspace", world.root, *args, "--color"],
                             color=True)
    assert res.exit_code == code, res.output
    assert ANSI in res.stdout
    # The escape codes only colour: without them the text is the plain text.
    plain = CliRunner().invoke(cli, ["--workspace", world.root, *args], color=True)
    assert click.unstyle(res.stdout) == plain.stdout


def test_colour_words_of_status_and_doctor(world: WS) -> None:
    """What is coloured: a status row by its state, a doctor line's status word."""
    _coloured_world(world)
    status = CliRunner().invoke(cli, ["--workspace", world.root, "status", "--color"],
                                color=True).stdout.splitlines()
    assert status[1] == click.style(status[1][4:-4], bold=True)  # the header, bold
    conflict = next(x for x in status if "1 conflict" in x)
    assert conflict.startswith(click.style("", fg="red", bold=True)[:-4])
    offline = next(x for x in status if "offline" in x)
    assert offline == click.style(click.unstyle(offline), fg="cyan")
    doctor = CliRunner().invoke(cli, ["--workspace", world.root, "doctor", "-v",
                                      "--color"], color=True).stdout.splitlines()
    ok = next(x for x in doctor if "memory.root" in x)
    assert ok.startswith(click.style("ok      ", fg="green") + " ")


def _process(world: WS, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    return subprocess.run(
        [sys.executable, "-m", "aikito_mem", "--workspace", world.root, *args],
        capture_output=True, text=True, timeout=60,
        env={**base, "TERM": "xterm", **(env or {})})


def _on_a_terminal(world: WS, args: list[str], env: dict[str, str]) -> str:
    """What ``aikito ARGS`` prints on a terminal (a pseudo-terminal)."""
    import pty

    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aikito_mem", "--workspace", world.root, *args],
        stdout=slave, stderr=slave, env={**base, "TERM": "xterm", **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("command", sorted(COLOURED))
def test_a_terminal_gets_colour_unless_told_otherwise(world: WS, command: str) -> None:
    _coloured_world(world)
    args = COLOURED[command][0]
    assert ANSI in _on_a_terminal(world, args, {})
    assert ANSI not in _on_a_terminal(world, args, {"NO_COLOR": "1"})
    assert ANSI not in _on_a_terminal(world, args, {"TERM": "dumb"})
    assert ANSI not in _on_a_terminal(world, [*args, "--no-color"], {})
    assert ANSI in _on_a_terminal(world, [*args, "--color"], {"NO_COLOR": "1"})


def test_no_colour_in_a_real_process_writing_to_a_pipe(world: WS) -> None:
    proc = _process(world, "sync", "project", "demo", "--dry-run", "-v")
    assert proc.returncode == 0, proc.stderr
    assert ANSI not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("dry run: nothing was written — to apply:")


@pytest.mark.parametrize("command", sorted(COLOURED))
def test_color_forces_colour_through_a_pipe(world: WS, command: str) -> None:
    """``aikito … --color | less -R``: a real process writing to a pipe, with NO_COLOR
    set too — the explicit flag wins."""
    _coloured_world(world)
    args, code = COLOURED[command]
    proc = _process(world, *args, "--color", env={"NO_COLOR": "1"})
    assert proc.returncode == code, proc.stderr
    assert ANSI in proc.stdout
    assert ANSI not in _process(world, *args).stdout


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


@pytest.mark.parametrize("color", [False, True])
def test_a_doctor_row_fits_the_width_on_its_first_line_too(color: bool) -> None:
    """[U2]: a check's status word, id and message wrap as one line — the first line
    within the width as well as the rest — and only the status word is coloured."""
    import click

    from aikito_mem.commands.doctor.report import Check, DoctorReport
    from aikito_mem.model import Severity
    from aikito_mem.render.doctor import text_report
    from aikito_mem.render.text import Display

    message = ("checkout 1 (/tmp/some/where/deep/code/api): git does not ignore "
               ".agents/memory/ and .agents/skills/ — aikito's links there show up in git "
               "status and can be committed")
    report = DoctorReport(workspace="/ws", workspace_source="option", strict=False,
                          checks=(Check("git.ignore", Severity.WARNING, message,
                                        remedy="aikito doctor --fix"),))
    lines = "\n".join(text_report(report, Display(color=color, width=100))).splitlines()
    plain = [click.unstyle(line) for line in lines]
    assert all(len(line) <= 100 for line in plain), plain
    row = next(i for i, line in enumerate(plain) if line.startswith("warning"))
    assert plain[row].startswith("warning  git.ignore        checkout 1 (")
    assert plain[row + 1].startswith("    ")  # the hanging indent
    remedy = next(i for i, line in enumerate(plain) if "remedy:" in line)
    assert " ".join(plain[row:remedy]).split() == ["warning", "git.ignore", *message.split()]
    if color:
        assert lines[row].startswith(click.style("warning ", fg="yellow"))
        assert "\x1b" not in lines[row][len(click.style("warning ", fg="yellow")):]
