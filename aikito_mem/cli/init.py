"""``aikito init [PATH]`` and ``aikito init project NAME [CHECKOUT]`` (docs/commands.md).

A thin layer over the engine of :mod:`aikito_mem.commands.init.run`, like every command
(``cli/X`` → engine → ``render/X``): it parses the arguments, runs
:func:`~aikito_mem.commands.init.run.init_workspace` or
:func:`~aikito_mem.commands.init.run.init_project` inside the one error handler, and
hands the :class:`~aikito_mem.commands.init.report.InitReport` to
:mod:`aikito_mem.render.init` — the ``aikito.init/1`` document under ``--json``, else
text lines.

``init`` is a group whose first argument is either the subcommand ``project`` or the
workspace PATH (so a workspace in a directory named ``project`` is written
``./project``).  ``--dry-run`` and ``--json`` are accepted before or after PATH.

Imports only ``click`` at start-up: the engine is imported inside the command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import Command, Group, json_option, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.init.report import InitReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output

SCHEMA = "aikito.init/1"


class InitResult(NamedTuple):
    """What one ``init`` came to: the engine's report (also the partial one an error
    carries), and the error that ended it."""

    report: InitReport | None
    error: AikitoError | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.error is None else self.error.exit_code


class InitView:
    """How ``init`` and ``init project`` render, for the error handler."""

    failed_code = "init.os_error"

    def __init__(self, command: str, *, as_json: bool, dry_run: bool,
                 project: str | None = None) -> None:
        self.command = command
        self.as_json = as_json
        self.dry_run = dry_run
        self.project = project

    def failed(self, error: AikitoError) -> InitResult:
        from aikito_mem.commands.init.report import InitReport

        partial = getattr(error, "result", None)
        return InitResult(partial if isinstance(partial, InitReport) else None, error)

    def interrupted(self, result: InitResult, error: InterruptedError_) -> InitResult:
        from aikito_mem.errors import InterruptedError_

        if isinstance(result.error, InterruptedError_):
            return result  # already ended by the signal
        return InitResult(result.report, error)

    def render(self, result: InitResult) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.config.discovery import home_directory
        from aikito_mem.render.init import json_document, stopped_lines, text_lines
        from aikito_mem.render.text import Output, error_lines

        report, error = result
        if self.as_json:
            return Output(result.exit_code, document=json_document(
                report, error, command=self.command, dry_run=self.dry_run,
                project=self.project))
        home = home_directory()
        shown = display()
        if error is None:
            assert report is not None
            lines = [shown.line(line) for line in text_lines(report, home=home, cwd=shown.cwd)]
            return Output(0, lines=tuple(lines))
        # What a failed or interrupted run did write: the rest was not created.
        lines = [shown.line(line) for line in stopped_lines(report, home=home, cwd=shown.cwd)]
        return Output(result.exit_code, lines=tuple(lines), errors=error_lines(error, shown))


def _dry_run_and_json(ctx: click.Context, dry_run: bool, as_json: bool) -> tuple[bool, bool]:
    """The flags given to ``init`` itself (before PATH or ``project``) or to the command."""
    given = (ctx.parent.params if ctx.parent is not None else {}) or {}
    return dry_run or bool(given.get("dry_run")), as_json or bool(given.get("as_json"))


def _run_workspace(ctx: click.Context, path: str | None, dry_run: bool,
                   as_json: bool) -> None:
    workspace = workspace_of(ctx)
    if workspace is not None and path is not None and workspace != path:
        raise click.UsageError(
            f"the workspace is given twice (--workspace {workspace!r} and PATH {path!r}); "
            "give it once", ctx)
    view = InitView("workspace", as_json=as_json, dry_run=dry_run)
    with error_handler(view) as handler:
        from aikito_mem.commands.init.run import init_workspace

        report = init_workspace(path if path is not None else workspace, dry_run=dry_run)
        handler.finish(InitResult(report))


_EXAMPLES = """
\b
Examples:
  aikito init                            # ~/aikito (or $AIKITO_DIR), and the pointer file
  aikito init ~/notes/aikito --dry-run   # say what would be created; write nothing
  aikito init project demo ~/code/demo   # a project, with its checkout registered
"""


class InitGroup(Group):
    """``init [PATH]`` beside the subcommand ``project``: a first argument that names no
    subcommand is the workspace PATH (click would otherwise report "No such command")."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands:
            # A PATH that starts with '-' arrived after '--': keep it an argument.
            if args[0].startswith("-"):
                return "PATH", workspace_cmd, [*args[1:], "--", args[0]]
            # Named by the PATH itself, so click's hint reads "aikito init PATH --help".
            return args[0], workspace_cmd, args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] [PATH]")
        formatter.write_usage(ctx.command_path, "workspace [OPTIONS] [PATH]",
                              prefix="       ")
        formatter.write_usage(ctx.command_path, "project [OPTIONS] NAME [CHECKOUT]",
                              prefix="       ")


class _PathCommand(Command):
    """``init PATH`` as click runs it: its usage and help are the group's."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        assert ctx.parent is not None
        ctx.parent.command.format_usage(ctx.parent, formatter)

    def get_help(self, ctx: click.Context) -> str:
        assert ctx.parent is not None
        return ctx.parent.get_help()


@click.command("PATH", cls=_PathCommand, hidden=True)
@click.argument("path")
@click.option("--dry-run", is_flag=True)
@json_option(SCHEMA)
@click.pass_context
def workspace_cmd(ctx: click.Context, path: str, dry_run: bool, as_json: bool) -> None:
    """``aikito init PATH``: the workspace at PATH (reached through :class:`InitGroup`)."""
    _run_workspace(ctx, path, *_dry_run_and_json(ctx, dry_run, as_json))


@click.group("init", cls=InitGroup, invoke_without_command=True,
             epilog=_EXAMPLES, short_help="Create a workspace, or a project in it.")
@click.option("--dry-run", is_flag=True, help="Say what would be created; write nothing.")
@json_option(SCHEMA)
@click.pass_context
def init_cmd(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Create a workspace at PATH — projects/, memory/, skills/, agents/ (a registry file
    for each coding agent detected on this machine; none detected: no agents/, and
    `aikito agents add NAME` registers one later), subagents/ and layout.toml, which the
    reference tool needs too — and the pointer file ~/.config/aikito/workspace when there
    is none.

    PATH defaults to where aikito looks for the workspace: $AIKITO_DIR, else ~/aikito
    (or the group option --workspace). Nothing is ever overwritten: on an existing
    workspace init adds only what is missing and says what already existed. A directory
    named "project" or "workspace" is written ./project or ./workspace;
    `aikito init workspace [PATH]` is the same command.

    Exit 0 created (or nothing missing, or a dry run), 3 something appeared meanwhile
    (run again), 4 configuration error (nothing written), 5 a write failed, 130/143
    interrupted.
    """
    if ctx.invoked_subcommand is None:
        _run_workspace(ctx, None, dry_run, as_json)


@init_cmd.command("workspace",
                  short_help="Create a workspace at PATH: the same as aikito init [PATH].")
@click.argument("path", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would be created; write nothing.")
@json_option(SCHEMA)
@click.pass_context
def workspace_alias_cmd(ctx: click.Context, path: str | None, dry_run: bool,
                        as_json: bool) -> None:
    """Create a workspace at PATH: the same as `aikito init [PATH]`, spelt as the
    reference tool spells it ([U1]). A workspace in a directory named "workspace" is
    written ./workspace."""
    _run_workspace(ctx, path, *_dry_run_and_json(ctx, dry_run, as_json))


@init_cmd.command("project", short_help="Create projects/NAME/agent.toml, registering CHECKOUT.",
                  epilog="""
\b
Examples:
  aikito init project demo ~/code/demo     # registered as ~/code/demo
  aikito init project demo                 # in a git work tree: its root; else paths = []
  aikito --workspace ~/ws init project api /srv/api --dry-run
""")
@click.argument("name")
@click.argument("checkout", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would be created; write nothing.")
@json_option(SCHEMA)
@click.pass_context
def project_cmd(ctx: click.Context, name: str, checkout: str | None, dry_run: bool,
                as_json: bool) -> None:
    """Create projects/NAME/agent.toml in the workspace, with a commented template.

    CHECKOUT, an existing directory, is registered in `paths` the way
    `aikito sync project NAME CHECKOUT` would register it (~/… under your home
    directory). Without it, run inside a git work tree, that work tree's root is
    registered (never your home directory, the workspace or a directory above them);
    elsewhere none is, and `aikito sync project NAME PATH` adds one later. The
    workspace is found as for every command: --workspace, $AIKITO_DIR, the pointer file,
    ~/aikito.

    Exit 0 created (or a dry run), 3 something appeared meanwhile, 4 configuration error
    — the project already exists, a bad name, no workspace, CHECKOUT missing — with
    nothing written, 5 a write failed, 130/143 interrupted.
    """
    dry_run, as_json = _dry_run_and_json(ctx, dry_run, as_json)
    view = InitView("project", as_json=as_json, dry_run=dry_run, project=name)
    with error_handler(view) as handler:
        from aikito_mem.commands.init.run import init_project
        from aikito_mem.config.discovery import Workspace, home_directory, resolve_workspace

        workspace: str | Workspace | None = workspace_of(ctx)
        if checkout is None:  # [U1]: in a git work tree, its root (never one [H1] refuses)
            from aikito_mem.commands.init.paths import work_tree_root

            found = resolve_workspace(workspace_of(ctx))
            checkout, workspace = work_tree_root(found.root, home_directory()), found
        report = init_project(workspace, name, checkout, dry_run=dry_run)
        handler.finish(InitResult(report))


__all__ = ["InitGroup", "InitResult", "InitView", "init_cmd"]
