"""Help and usage (clig.dev): every command's help has an example, ``sync project --help``
explains NAME, PATH, ``--no-register`` and the exit codes, the command list never cuts a
summary short, and the two commonest slips — ``aikito sync NAME`` and a misspelt project
name — are answered with the command meant."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from tests.helpers.workspace import WS

COMMANDS = [[], ["sync"], ["sync", "project"], ["apply"], ["status"], ["doctor"], ["adopt"],
            ["init"], ["init", "project"]]


def invoke(*args: str, width: int | None = None) -> Result:
    extra = {} if width is None else {"terminal_width": width}
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **extra)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "aikito")
def test_every_command_has_an_example(command: list[str]) -> None:
    res = invoke(*command, "--help")
    assert res.exit_code == 0, res.output
    assert "Example" in res.stdout
    examples = res.stdout.split("Example", 1)[1]
    assert "  aikito " in examples


def test_sync_project_help_explains_name_path_registration_and_exit_codes() -> None:
    text = " ".join(invoke("sync", "project", "--help").stdout.split())
    for needle in [
        "Omitted or '.': the project one of whose active checkouts contains the current "
        "directory",
        "A PATH agent.toml does not list yet is registered there first",
        "--no-register syncs it without registering",
        "The dry run says what will be registered",
        "Exit codes: 0 applied, already in sync, or a dry run without conflicts",
        "1 blocked by conflicts", "3 stale plan", "4 configuration error",
        "5 environment failure", "6 another sync holds the checkout lock",
        "7 --check: changes pending", "130/143 interrupted",
        "aikito sync project demo ~/code/demo", "aikito sync project demo . --no-register",
    ]:
        assert needle in text, needle


@pytest.mark.parametrize("width", [40, 80, 200])
def test_the_command_list_never_cuts_a_summary_short(width: int) -> None:
    """click shortens each summary to the terminal's width with ``...``; every summary
    is shown whole (wrapped), whatever the width."""
    for group in ([], ["sync"]):
        text = invoke(*group, "--help", width=width).stdout
        commands = text.split("Commands:", 1)[1].split("\n\n", 1)[0]
        assert "..." not in commands, commands
    top = "".join(invoke("--help", width=width).stdout.split())  # wrapping aside
    adopt = "adopt Move TARGET into the workspace, list it in agent.toml and link it back."
    assert adopt.replace(" ", "") in top
    assert "syncSynchroniseruntimelinks:oneproject,oreveryproject." in top


def test_sync_name_suggests_sync_project_name() -> None:
    res = invoke("sync", "demo")
    assert res.exit_code == 2
    assert res.stdout == ""
    assert res.stderr.splitlines()[-1] == (
        "Error: no such command 'demo'. To sync the project 'demo': aikito sync project "
        "demo (alone, aikito sync syncs every project)")
    odd = invoke("sync", "my demo")
    assert "aikito sync project 'my demo'" in odd.stderr
    # A near miss of the subcommand itself keeps click's own suggestion.
    near = invoke("sync", "projet")
    assert near.exit_code == 2 and "Did you mean 'project'?" in near.stderr


@pytest.mark.parametrize("args", [["--lock-timeout", "abc"], ["--lock-timeout", "-1"],
                                  ["--lock-timeout", "nan"]])
def test_a_usage_error_fits_a_narrow_terminal(args: list[str]) -> None:
    """[U2]: the whole ``Error:`` line wraps — a bad value's message too, which click
    composes after the message is set."""
    res = CliRunner().invoke(cli, ["sync", "project", "demo", *args], env={"COLUMNS": "30"})
    assert res.exit_code == 2
    error = res.stderr.split("Error: ", 1)[1]
    assert all(len(line) <= 30 for line in f"Error: {error}".splitlines()), res.stderr
    assert args[0] in " ".join(error.split())


def test_sync_with_its_subcommand_first_parses_none_of_its_own_options(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """[§12]: ``aikito sync project …`` gives ``sync`` itself no option (a group's
    options end at its first argument), so click processes none of them, its help option
    neither; given before ``project``, every one is processed ([U1])."""
    from aikito_mem.cli.sync import sync

    processed: list[tuple[str | None, str | None]] = []
    real = click.Parameter.handle_parse_result

    def spy(self: click.Parameter, ctx: click.Context, opts: Any, args: list[str]) -> Any:
        processed.append((ctx.info_name, self.name))
        return real(self, ctx, opts, args)

    monkeypatch.setattr(click.Parameter, "handle_parse_result", spy)

    def own(*args: str) -> set[str | None]:
        processed.clear()
        res = CliRunner().invoke(cli, [*args, "--help"], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return {name for command, name in processed if command == "sync"}

    assert own("sync", "project") == set()
    everything = {param.name for param in sync.params} | {"_untranslated_help"}
    assert own("sync", "--dry-run", "project") == everything
    assert own("sync", "--", "project") == everything


def test_a_sync_project_run_makes_none_of_the_sync_groups_own_options(ws: WS) -> None:
    """[§12]: the options of ``aikito sync`` itself are made when something reads them
    (a help, a usage error, completion, a parse with one of them before ``project``): a
    ``sync project`` run makes each option once, for ``project``; ``sync --help`` makes
    them for the group too."""
    ws.write_config("demo", memory=[], paths=[])
    code = ("import collections, sys\n"
            "import click\n"
            "made = collections.Counter()\n"
            "real = click.Option.__init__\n"
            "def spy(self, *args, **kwargs):\n"
            "    real(self, *args, **kwargs)\n"
            "    made[self.name] += 1\n"
            "click.Option.__init__ = spy\n"
            "from aikito_mem.cli import cli\n"
            "try:\n"
            "    cli(sys.argv[1:], prog_name='aikito')\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(sorted(made.items()))\n")

    def made(*args: str) -> dict[str, int]:
        proc = subprocess.run([sys.executable, "-c", code, "--workspace", ws.root, *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return dict(ast.literal_eval(proc.stdout.splitlines()[-1]))

    from aikito_mem.cli.sync import sync

    shared = {param.name for param in sync.params if param.name is not None}
    once = made("sync", "project", "demo", "--check")
    assert shared <= set(once), sorted(shared - set(once))
    assert all(once[name] == 1 for name in shared), once
    helped = made("sync", "--help")
    assert all(helped[name] == 2 for name in shared), helped


def test_options_of_sync_before_project_mean_the_same_after_it(ws: WS) -> None:
    """[U1]: the reference tool's help writes them before ``project``."""
    ws.write_config("demo", memory=[], paths=[])
    before = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "--json", "--check",
                                      "project", "demo"])
    after = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                     "--json", "--check"])
    assert (before.exit_code, before.stdout) == (after.exit_code, after.stdout)
    assert before.exit_code == 0 and before.stderr == ""


def test_a_misspelt_project_name_gets_did_you_mean_and_the_projects(ws: WS) -> None:
    for name in ("demo", "web"):
        ws.write_config(name, memory=[], paths=[])
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "dmeo"])
    assert res.exit_code == 4
    assert res.stdout == ""
    assert res.stderr == (
        f"aikito: project 'dmeo' not found: expected {ws.root}/projects/dmeo/agent.toml, "
        "found nothing — create agent.toml there or check the project name; did you mean "
        "'demo'? the projects of this workspace: demo, web\n")
    doc = json.loads(CliRunner().invoke(
        cli, ["--workspace", ws.root, "sync", "project", "DEMO", "--json"]).stdout)
    assert doc["error"]["code"] == "config.project_not_found"
    assert doc["error"]["message"].endswith(
        "; did you mean 'demo'? the projects of this workspace: demo, web")
    far = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "zzz"])
    assert far.stderr.endswith(
        "check the project name; the projects of this workspace: demo, web\n")


def test_the_project_list_of_a_large_workspace_is_cut(ws: WS) -> None:
    for n in range(25):
        ws.write_config(f"p{n:02d}", memory=[], paths=[])
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "x"])
    assert res.stderr.rstrip("\n").endswith("p19, … (5 more)")


HELPS = [*COMMANDS, ["sync", "project"], ["clean"], ["agents"], ["agents", "add"], ["hook"],
         ["hook", "install"], ["hook", "uninstall"], ["init", "workspace"]]


@pytest.mark.parametrize("columns", [60, 80])
def test_every_help_fits_the_width(columns: int) -> None:
    """[U2]: help too — the examples and exit codes (click keeps those paragraphs as
    written) wrap at the width: a description beside its term hangs at its column, or
    goes below its term when that column leaves it too little room."""
    for command in HELPS:
        res = CliRunner().invoke(cli, [*command, "--help"], catch_exceptions=False,
                                 env={"COLUMNS": str(columns)}, terminal_width=columns)
        assert res.exit_code == 0, res.output
        long = [line for line in res.stdout.splitlines()
                if len(line) > columns and len(line.split()) > 1]
        assert not long, (command, long)
    text = CliRunner().invoke(cli, ["sync", "project", "--help"], catch_exceptions=False,
                              terminal_width=60).stdout.splitlines()
    start = text.index("  Examples:")
    assert text[start + 1:start + 5] == [
        "    aikito sync project demo", "        sync every checkout of demo",
        "    aikito sync project", "        the project of the current directory"]
    top = CliRunner().invoke(cli, ["--help"], catch_exceptions=False,
                             terminal_width=60).stdout.splitlines()
    at = top.index("    aikito sync project demo         sync project demo's")
    assert top[at + 1] == f"{'':<37}checkouts"


def test_help_that_fits_100_columns_is_unchanged() -> None:
    """The fitted formatter changes nothing that fits: at 100 columns every preserved
    line is click's own."""
    from aikito_mem.cli.help import fitted

    res = CliRunner().invoke(cli, ["sync", "project", "--help"], catch_exceptions=False,
                             env={"COLUMNS": "100"})
    assert ("    aikito sync project demo --dry-run --out plan.toml && aikito apply plan.toml"
            in res.stdout.splitlines())
    assert fitted("  short", 10) == ["  short"]
    assert fitted("  aikito x   a description that is rather long", 40) == [
        "  aikito x   a description that is", "             rather long"]
    assert fitted("  aikito x   a description that is rather long", 30) == [
        "  aikito x", "      a description that is", "      rather long"]


def test_the_short_examples_of_sync_project_line_up() -> None:
    """At 100 columns each short example's description starts in one column, a space
    at least after its command (one ran into its description before)."""
    text = invoke("sync", "project", "--help", width=100).stdout.splitlines()
    start = text.index("  Examples:")
    rows = text[start + 1:start + 6]
    columns = {len(row) - len(row.split("  ")[-1].lstrip()) for row in rows}
    assert len(columns) == 1, rows
    assert all("  " in row.strip() for row in rows), rows


def _every_command() -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = []

    def walk(path: list[str], command: click.Command, parent: click.Context | None) -> None:
        found.append((path, command))
        ctx = click.Context(command, info_name=path[-1] if path else "aikito", parent=parent)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                walk([*path, name], sub, ctx)

    walk([], cli, None)
    return found


def test_every_command_makes_its_help_option_without_gettext() -> None:
    """[§12]: click words its help option through gettext (``locale`` imported, message
    catalogues searched); every command of this tool makes its own, with the same text,
    once per command (click orders the eager options by the option object)."""
    from aikito_mem.cli.options import HELP_TEXT, Command, Group

    commands = _every_command()
    assert len(commands) > 10
    for path, command in commands:
        assert isinstance(command, Command | Group), (path, type(command).__mro__)
        ctx = click.Context(command, help_option_names=["-h", "--help"])
        option = command.get_help_option(ctx)
        assert option is not None and option.help == HELP_TEXT, path
        assert option.opts == ["-h", "--help"] and not option.expose_value, path
        assert command.get_help_option(ctx) is option, path
        assert option.name not in {p.name for p in command.params}, path
        res = invoke(*path, "-h")
        assert res.exit_code == 0 and res.stdout.startswith("Usage: "), (path, res.output)
        assert "  -h, --help" in res.stdout and HELP_TEXT in res.stdout, path


def test_version_and_help_the_first_given_wins() -> None:
    """The --version option is this tool's own (no gettext); as click's, it and --help
    are eager: the first of them given is the one that answers."""
    assert invoke("--version").stdout == "aikito 0.1.0 (aikito_mem)\n"
    assert invoke("--version", "--help").stdout == "aikito 0.1.0 (aikito_mem)\n"
    helped = invoke("--help", "--version")
    assert helped.exit_code == 0 and helped.stdout.startswith("Usage: ")
    assert "  --version         Show the version and exit.\n" in helped.stdout
    assert invoke("--version", "sync", "project", "--bogus").exit_code == 0
