"""``aikito sync project [NAME] [PATH]`` (SPEC §9): plan, or lock + plan + execute.

The command only sequences the engine and renders its :class:`~aikito_mem.outcome.SyncReport`;
the outcome and exit code of every case are decided in :mod:`aikito_mem.outcome`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import (
    FullSummaries,
    color_option,
    completion,
    display,
    json_option,
    lock_timeout_option,
    use_color,
    workspace_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.api import Project
    from aikito_mem.errors import AikitoError, InterruptedError_, NoProjectHereError
    from aikito_mem.outcome import SyncReport
    from aikito_mem.render.text import Display, Output


class SyncView:
    """How ``sync project`` and ``apply`` render: the ``aikito.sync/2`` document or the
    text report.  Remembers the project and workspace as soon as they are known, so that
    the document of an error names them, and where ``--out`` saved the plan."""

    failed_code = "sync.failed"

    def __init__(self, display: Display, *, dry_run: bool) -> None:
        self.display = display
        self.dry_run = dry_run
        self.project: str | None = None
        self.workspace: str | None = None
        self.plan_file: str | None = None

    def render(self, report: SyncReport) -> Output:
        from aikito_mem.render.sync import render

        return render(report, self.display, plan_file=self.plan_file)

    def failed(self, error: AikitoError) -> SyncReport:
        from aikito_mem.outcome import error_report

        return error_report(error, project=self.project, workspace=self.workspace,
                            dry_run=self.dry_run)

    def interrupted(self, report: SyncReport, error: InterruptedError_) -> SyncReport:
        from aikito_mem.outcome import interrupted

        return interrupted(report, error)


def display_for(as_json: bool, color: bool | None, *, verbose: bool = False,
                quiet: bool = False) -> Display:
    return display(as_json=as_json, verbose=verbose, quiet=quiet,
                   color=not as_json and use_color(color))


class SyncGroup(FullSummaries):
    """``aikito sync``: alone, every project; ``aikito sync NAME`` (a NAME that is no
    subcommand) is a usage error that names the command meant.

    ``aikito sync SUBCOMMAND …`` parses none of the group's own options and makes none
    ([§12]): a group's options end at its first argument, so with the subcommand first
    each of them — the help option too — would only take its default, read by the group
    alone, which then has nothing to do; the subcommand takes from the group only what
    was given there ([U1], :func:`inherited`).  They (:data:`OWN_OPTIONS`) are made the
    first time :attr:`params` is read: by any other parse, a help, a usage error, the
    shell's completion."""

    #: The context being parsed with its subcommand first (see :meth:`parse_args`).
    _subcommand_first: click.Context | None = None
    #: Whether :data:`OWN_OPTIONS` are still to be made.
    _unmade = True

    @property
    def params(self) -> list[click.Parameter]:
        if self._unmade:
            self._unmade = False
            for option in OWN_OPTIONS:
                option(self)  # click appends the option it makes to the group's params
        return self._params

    @params.setter
    def params(self, params: list[click.Parameter]) -> None:
        self._params = params

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if (args and args[0] in self.commands and not ctx.resilient_parsing
                and ctx.default_map is None and ctx.auto_envvar_prefix is None):
            self._subcommand_first = ctx
        try:
            return super().parse_args(ctx, args)
        finally:
            self._subcommand_first = None

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if ctx is self._subcommand_first:
            return []
        return super().get_params(ctx)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if (ctx.resilient_parsing or not name or name.startswith("-")
                or self.get_command(ctx, name) is not None):
            return super().resolve_command(ctx, args)
        import difflib

        if difflib.get_close_matches(name, list(self.commands), n=1, cutoff=0.6):
            return super().resolve_command(ctx, args)  # click's "Did you mean 'project'?"
        from shlex import quote

        raise click.UsageError(
            f"no such command {name!r}. To sync the project {name!r}: "
            f"aikito sync project {quote(name)} (alone, aikito sync syncs every project)",
            ctx,
        )


SYNC_ALL_HELP = """Synchronise runtime links: alone, every project of the workspace.

\b
aikito sync                        every project (each one's active checkouts)
aikito sync project [NAME] [PATH]  one project (see: aikito sync project --help)

Alone, it syncs each project as `aikito sync project NAME` would (nothing is registered),
one block per project; a project that cannot be synced is reported and the others still
run. Exit code: the first of 5, 3, 6, 4, 1, 7 that any project returned, else 0.
"""

SYNC_ALL_EPILOG = """\b
Examples:
  aikito sync                   sync every project
  aikito sync --check           exit 7 when some project has changes pending
  aikito sync --dry-run --json  plan every project; one aikito.sync-all/1 document
  aikito sync --moved-from ~/old-aikito
                                after `mv` of the workspace: relink every link in place
"""

#: The options ``aikito sync`` shares with ``sync project``: before ``project`` they mean
#: what they mean after it ([U1], the reference tool's help writes them there).
_ALL_OPTIONS = ("dry_run", "check", "as_json", "moved_from", "lock_timeout", "verbose",
                "quiet", "color")

FORCE_REFUSAL = (
    "--force: this engine never overwrites what it did not make. A file or directory in "
    "the way is yours: move it into the workspace with `aikito adopt TARGET` (it is linked "
    "back), or move it away yourself; to remove the links this workspace made, run "
    "`aikito clean project NAME`")


def _refuse_force(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """[U1]: ``--force`` anywhere in ``aikito sync …`` is a usage error, said at once."""
    if value and not ctx.resilient_parsing:
        raise click.UsageError(FORCE_REFUSAL, ctx)


force_option = click.option("--force", is_flag=True, hidden=True, expose_value=False,
                            is_eager=True, callback=_refuse_force)
#: The options ``sync`` and ``sync project`` share ([L4], [U3]).
moved_from_option = click.option(
    "--moved-from", "moved_from", metavar="OLD", default=None,
    help="The workspace moved from OLD: relink every link into OLD in place.")
verbose_option = click.option(
    "-v", "--verbose", is_flag=True,
    help="The full report: every operation, unchanged links included.")


def inherited(ctx: click.Context, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (a subcommand's options) with those given only before the subcommand,
    to ``aikito sync`` itself, taken from there ([U1])."""
    from click.core import ParameterSource

    parent = ctx.parent
    if parent is None:
        return values
    out = dict(values)
    for name in _ALL_OPTIONS:
        if (parent.get_parameter_source(name) is ParameterSource.COMMANDLINE
                and ctx.get_parameter_source(name) is not ParameterSource.COMMANDLINE):
            out[name] = parent.params[name]
    return out


#: The options of ``aikito sync`` itself, in the order its help lists them: made by
#: :attr:`SyncGroup.params` when first read.
OWN_OPTIONS = (
    click.option("--dry-run", is_flag=True, help="Plan every project and print; write nothing."),
    click.option("--check", is_flag=True,
                 help="Dry run; exit 7 when some project has changes pending."),
    json_option("aikito.sync-all/1"),
    moved_from_option,
    lock_timeout_option,
    verbose_option,
    click.option("-q", "--quiet", is_flag=True,
                 help="Print only conflicts, summaries and what was done."),
    color_option,
    force_option,
)


@click.group(cls=SyncGroup, invoke_without_command=True, help=SYNC_ALL_HELP,
             short_help="Synchronise runtime links: one project, or every project.",
             epilog=SYNC_ALL_EPILOG)
@click.pass_context
def sync(ctx: click.Context, /, **options: Any) -> None:
    if ctx.invoked_subcommand is not None:
        # The subcommand reads the options given here ([U1]); with the subcommand
        # first, none was parsed (SyncGroup).
        return
    _sync_all(ctx, **options)


def _sync_all(ctx: click.Context, dry_run: bool, check: bool, as_json: bool,
              moved_from: str | None, lock_timeout: float, verbose: bool, quiet: bool,
              color: bool | None) -> None:
    """``aikito sync`` alone: every project."""
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be combined", ctx)
    from aikito_mem.cli.sync_all import run_all

    run_all(ctx, display_for(as_json, color, verbose=verbose, quiet=quiet),
            dry_run=dry_run or check, check=check, lock_timeout=lock_timeout,
            moved_from=moved_from)


PROJECT_HELP = """Link project NAME's memory into its checkouts (or only into PATH).

\b
NAME    the project: a directory <workspace>/projects/NAME/ holding agent.toml.
        Omitted or '.': the project one of whose active checkouts contains the
        current directory (none or several: an error listing what was found).
PATH    sync exactly this checkout (an existing directory), not the others. A
        PATH agent.toml does not list yet is registered there first (appended
        to `paths`; under your home directory written as ~/...); --no-register
        syncs it without registering. The dry run says what will be registered.

Without PATH, every checkout agent.toml registers is synced; one that does not
exist on this machine is offline and skipped. Text output: a header per checkout,
then `+ TARGET -> SOURCE`, `- TARGET`, `! TARGET: reason (remedy)`, targets shown
relative to their checkout and sources to the workspace (--json: absolute paths).

\b
Exit codes:
  0  applied, already in sync, or a dry run without conflicts
  1  blocked by conflicts; nothing of a blocked segment written
  2  usage error
  3  stale plan: something changed since planning; nothing written
  4  configuration error (workspace, project, agent.toml, PATH, plan file)
  5  environment failure while writing (permissions, disk, I/O)
  6  another sync holds the checkout lock (busy)
  7  --check: changes pending
  130/143  interrupted by SIGINT/SIGTERM
"""

PROJECT_EPILOG = """\b
Examples:
  aikito sync project demo                  sync every checkout of demo
  aikito sync project                       the project of the current directory
  aikito sync project demo ~/code/demo      sync (and register) that checkout
  aikito sync project demo . --no-register  this directory, not registered
  aikito sync project demo --check          exit 7 when changes are pending
  aikito sync project demo --dry-run --out plan.toml && aikito apply plan.toml
  aikito sync project demo --moved-from ~/old-aikito   relink after `mv` of the workspace
"""


@sync.command("project", help=PROJECT_HELP, epilog=PROJECT_EPILOG,
              short_help="Link one project's memory into its checkouts (or only PATH).")
@click.argument("name", required=False, shell_complete=completion("project_names"))
@click.argument("path", required=False, shell_complete=completion("checkout_paths"))
@click.option("--dry-run", is_flag=True, help="Plan and print; write nothing.")
@json_option("aikito.sync/2")
@click.option("--check", is_flag=True, help="Dry run; exit 7 when changes are pending.")
@click.option("--no-register", is_flag=True,
              help="Sync PATH without adding it to agent.toml.")
@click.option("--out", metavar="PLANFILE", default=None,
              shell_complete=completion("files"),
              help="With --dry-run: save the frozen plan for `aikito apply PLANFILE`.")
@click.option("--skip-without-workspace", is_flag=True,
              help="No workspace on this machine (none configured, or the configured one "
                   "missing), or, with NAME omitted or '.', no project of it has this "
                   "checkout: say so in one line and exit 0 (the pre-commit hook).")
@moved_from_option
@lock_timeout_option
@verbose_option
@click.option("-q", "--quiet", is_flag=True,
              help="Print only conflicts, the summary and what was done.")
@color_option
@force_option
@click.pass_context
def sync_project(
    ctx: click.Context,
    name: str | None,
    path: str | None,
    dry_run: bool,
    as_json: bool,
    check: bool,
    no_register: bool,
    out: str | None,
    skip_without_workspace: bool,
    moved_from: str | None,
    lock_timeout: float,
    verbose: bool,
    quiet: bool,
    color: bool | None,
) -> None:
    given = inherited(ctx, {"dry_run": dry_run, "check": check, "as_json": as_json,
                            "lock_timeout": lock_timeout, "verbose": verbose,
                            "quiet": quiet, "color": color, "moved_from": moved_from})
    dry_run, check, as_json = given["dry_run"], given["check"], given["as_json"]
    moved_from = given["moved_from"]
    lock_timeout, verbose, quiet = given["lock_timeout"], given["verbose"], given["quiet"]
    color = given["color"]
    dry = dry_run or check
    if out is not None and not dry:
        raise click.UsageError("--out PLANFILE needs --dry-run (or --check)")
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be combined")
    view = SyncView(display_for(as_json, color, verbose=verbose, quiet=quiet), dry_run=dry)
    from aikito_mem.errors import NoProjectHereError

    with error_handler(view) as handler:
        if skip_without_workspace:
            skipped = _no_workspace(view, workspace_of(ctx), dry_run=dry)
            if skipped is not None:
                handler.finish(skipped)
        try:
            if dry:
                handler.finish(_dry_run(view, workspace_of(ctx), name, path, check=check,
                                        register=not no_register, out=out,
                                        moved_from=moved_from))
            handler.finish(_sync(view, workspace_of(ctx), name, path,
                                 register=not no_register, lock_timeout=lock_timeout,
                                 moved_from=moved_from))
        except NoProjectHereError as exc:
            # [U4]: a workspace that does not list this checkout has nothing to check
            # here — unless a broken agent.toml might be the one that lists it.
            if not skip_without_workspace or exc.broken:
                raise
            handler.finish(_no_project(view, exc, dry_run=dry))


def _no_workspace(view: SyncView, workspace: str | None, *, dry_run: bool
                  ) -> SyncReport | None:
    """[U4]: the report of a machine without a workspace, else ``None`` (other errors of
    discovery are raised as ever)."""
    from aikito_mem.config.discovery import resolve_workspace
    from aikito_mem.errors import ConfigError
    from aikito_mem.outcome import NO_WORKSPACE_CODES, no_workspace_report

    try:
        resolve_workspace(workspace)
    except ConfigError as exc:
        if exc.code not in NO_WORKSPACE_CODES:
            raise
        return no_workspace_report(exc, dry_run=dry_run)
    return None


def _no_project(view: SyncView, exc: NoProjectHereError, *, dry_run: bool) -> SyncReport:
    from aikito_mem.outcome import no_project_report

    view.project, view.workspace = None, exc.workspace
    return no_project_report(exc, dry_run=dry_run)


def _project(view: SyncView, workspace: str | None, name: str | None) -> Project:
    """The project NAME, or the one whose active checkout holds the current directory."""
    from aikito_mem.api import Project
    from aikito_mem.config.discovery import resolve_workspace

    view.project = name
    ws = resolve_workspace(workspace)
    view.workspace = ws.root  # named by the document even if agent.toml is broken
    # NAME omitted or ".": the current directory's project (a deleted one: ConfigError).
    project = Project.for_directory(".", ws) if name in (None, ".") else Project.load(name, ws)
    view.project, view.workspace = project.name, project.workspace
    return project


def _dry_run(view: SyncView, workspace: str | None, name: str | None, path: str | None, *,
             check: bool, register: bool, out: str | None,
             moved_from: str | None = None) -> SyncReport:
    """Plan and show; the only write is the plan file of ``--out``."""
    from aikito_mem import signals
    from aikito_mem.outcome import dry_run_report

    with signals.interruptible():  # nothing is written while planning: stop at once
        project = _project(view, workspace, name)
        # A plan only shown needs no source identities; a saved one does ([P5]).
        plan = project.plan(path, register=register, identify=out is not None,
                            moved_from=moved_from)
    if out is not None:
        from aikito_mem.executor.planfile import write_plan

        signals.check()
        write_plan(plan, out)
        view.plan_file = out
    return dry_run_report(plan, check=check)


def _sync(view: SyncView, workspace: str | None, name: str | None, path: str | None, *,
          register: bool, lock_timeout: float, moved_from: str | None = None) -> SyncReport:
    """Lock, plan and execute ([E3]); the engine handles signals while it writes."""
    from aikito_mem import signals
    from aikito_mem.outcome import run_report

    with signals.interruptible():
        project = _project(view, workspace, name)
    return run_report(project.sync(path, register=register, lock_timeout=lock_timeout,
                                   moved_from=moved_from))
