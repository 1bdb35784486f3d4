"""The ``aikito`` command line (SPEC §9): thin click commands over the API.

Only ``click`` is imported at start-up; every other room is imported inside the command
that needs it, so ``aikito --version`` costs what ``import click`` costs ([§12]).
Errors become exit codes in one place: :func:`_finish` (through ``error.exit_code``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from aikito_mem import __version__

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.errors import AikitoError
    from aikito_mem.model import Plan, SyncResult


def _use_color(option: bool | None) -> bool:
    if "NO_COLOR" in os.environ or option is False:
        return False
    if option is True:
        return True
    return sys.stdout.isatty()


def _err(message: str, color: bool) -> None:
    prefix = click.style("aikito:", fg="red", bold=True) if color else "aikito:"
    from aikito_mem.render import printable

    click.echo(f"{prefix} {printable(message)}", err=True)


def _plan_of(error: AikitoError) -> tuple[Plan | None, SyncResult | None]:
    result = getattr(error, "result", None)
    if result is not None:
        return result.plan, result
    return getattr(error, "plan", None), None


def _finish(
    *,
    as_json: bool,
    dry_run: bool,
    outcome: str,
    exit_code: int,
    project: str | None,
    workspace: str | None,
    plan: Plan | None = None,
    result: SyncResult | None = None,
    error: AikitoError | None = None,
    verbose: bool = False,
    quiet: bool = False,
    color: bool = False,
) -> NoReturn:
    """Print the outcome (JSON document or text report) and exit with its code."""
    if as_json:
        from aikito_mem.render import json_document, json_text

        err_doc: dict[str, Any] | None = None
        if error is not None:
            err_doc = error.to_json()
            diffs = getattr(error, "differences", None)
            if diffs:
                err_doc["differences"] = list(diffs)
            if error.path:
                err_doc["path"] = error.path
        doc = json_document(
            project=project, workspace=workspace, dry_run=dry_run, outcome=outcome,
            exit_code=exit_code, plan=plan, result=result, error=err_doc,
        )
        click.echo(json_text(doc))
    else:
        if plan is not None:
            from aikito_mem.render import printable, text_report

            statuses = result.statuses if result is not None and not dry_run else None
            # One write for the whole report (a line per change is 10,000 flushes at W2).
            click.echo(printable("\n".join(text_report(
                plan, verbose=verbose, quiet=quiet, color=color, statuses=statuses))))
            if not quiet and error is None:
                if outcome == "applied":
                    n = len(plan.changes)
                    if result is not None and result.registered:
                        click.echo(f"registered {plan.register} in {plan.config_path}")
                    click.echo(f"done: {n} change{'s' * (n != 1)} applied")
                elif outcome == "unchanged":
                    click.echo("done: already in sync, nothing to do")
                elif outcome == "planned" and dry_run:
                    click.echo("dry run: nothing was written")
        if error is not None:
            _err(error.message, color)
    sys.exit(exit_code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="aikito",
                      message="%(prog)s %(version)s (aikito_mem)")
@click.option("--workspace", metavar="PATH", default=None,
              help="Workspace root (default: $AIKITO_DIR, the pointer file, ~/aikito).")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None) -> None:
    """Make an agent workspace's durable memory visible in project checkouts."""
    ctx.obj = {"workspace": workspace}


@cli.group()
def sync() -> None:
    """Synchronise runtime links."""


@sync.command("project")
@click.argument("name", required=False)
@click.argument("path", required=False)
@click.option("--dry-run", is_flag=True, help="Plan and print; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--check", is_flag=True, help="Dry run; exit 7 when changes are pending.")
@click.option("--no-register", is_flag=True, help="Do not add PATH to agent.toml.")
@click.option("--out", metavar="PLANFILE", default=None,
              help="With --dry-run: save the frozen plan for `aikito apply`.")
@click.option("--lock-timeout", type=click.FloatRange(min=0), default=30.0,
              show_default=True, metavar="SECONDS", help="Wait this long for the lock.")
@click.option("-v", "--verbose", is_flag=True, help="Also list unchanged links.")
@click.option("-q", "--quiet", is_flag=True, help="Print only conflicts and the summary.")
@click.option("--color/--no-color", default=None, help="Colour (default: on a terminal).")
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
    lock_timeout: float,
    verbose: bool,
    quiet: bool,
    color: bool | None,
) -> None:
    """Link the memory of project NAME into its checkouts (or only into PATH)."""
    dry = dry_run or check
    if out is not None and not dry:
        raise click.UsageError("--out PLANFILE needs --dry-run (or --check)")
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be combined")
    use_color = _use_color(color) and not as_json
    from aikito_mem.errors import AikitoError

    workspace = ctx.obj["workspace"]
    project_name, ws_root = name, None
    common: dict[str, Any] = {"as_json": as_json, "dry_run": dry, "verbose": verbose,
                              "quiet": quiet, "color": use_color}
    try:
        from aikito_mem.api import Project
        from aikito_mem.discovery import resolve_workspace

        ws = resolve_workspace(workspace)
        ws_root = ws.root  # known to the JSON document even if agent.toml is broken
        project = Project.for_directory(".", ws) if name in (None, ".") else Project.load(name, ws)
        project_name, ws_root = project.name, project.workspace
        if dry:
            # A plan only shown needs no source identities; a saved one does ([P5]).
            plan = project.plan(path, register=not no_register, identify=out is not None)
            if out is not None:
                from aikito_mem.planfile import write_plan

                write_plan(plan, out)
            if plan.blocked:
                from aikito_mem.errors import ConflictError

                n = len(plan.conflicts)
                raise ConflictError(
                    f"{n} conflict{'s' * (n != 1)} block{'s' * (n == 1)} the plan; "
                    "nothing would be written — resolve each as it says and run again",
                    conflicts=plan.conflicts,
                    plan=plan,
                )
            code = 7 if (check and plan.has_changes) else 0
            from aikito_mem.execute import planned_result

            _finish(outcome="planned", exit_code=code, project=project_name,
                    workspace=ws_root, plan=plan, result=planned_result(plan), **common)
        result = project.sync(path, register=not no_register, lock_timeout=lock_timeout)
        _finish(outcome=result.outcome, exit_code=0, project=project_name, workspace=ws_root,
                plan=result.plan, result=result, **common)
    except AikitoError as exc:
        err_plan, err_result = _plan_of(exc)
        _finish(outcome=exc.outcome, exit_code=exc.exit_code, project=project_name,
                workspace=ws_root, plan=err_plan, result=err_result, error=exc, **common)
    except KeyboardInterrupt:
        from aikito_mem.errors import InterruptedError_

        _finish(outcome="interrupted", exit_code=130, project=project_name, workspace=ws_root,
                error=InterruptedError_("interrupted before any write; nothing was written",
                                        signum=2), **common)
    except OSError as exc:
        _finish(outcome="failed", exit_code=5, project=project_name, workspace=ws_root,
                error=_os_error(exc), **common)


def _os_error(exc: OSError) -> AikitoError:
    """An environment failure outside the executor's own reporting (exit 5, no traceback)."""
    from aikito_mem.errors import ExecutionError

    where = f" on {exc.filename}" if exc.filename else ""
    return ExecutionError(
        f"{exc.strerror or exc}{where}; nothing more was attempted — fix the cause "
        "(permissions, disk, mounts) and run again", path=exc.filename,
    )


@cli.command("apply")
@click.argument("planfile")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--lock-timeout", type=click.FloatRange(min=0), default=30.0,
              show_default=True, metavar="SECONDS", help="Wait this long for the lock.")
@click.option("--color/--no-color", default=None, help="Colour (default: on a terminal).")
@click.pass_context
def apply_cmd(
    ctx: click.Context, planfile: str, as_json: bool, lock_timeout: float, color: bool | None
) -> None:
    """Execute a plan saved with `sync project --dry-run --out PLANFILE`."""
    from aikito_mem.errors import AikitoError, PlanFileError

    use_color = _use_color(color) and not as_json
    common: dict[str, Any] = {"as_json": as_json, "dry_run": False, "color": use_color}
    project_name = ws_root = None
    try:
        from aikito_mem.planfile import read_plan

        plan = read_plan(planfile)
        project_name, ws_root = plan.project, plan.workspace
        workspace = ctx.obj["workspace"]
        if workspace is not None or os.environ.get("AIKITO_DIR"):
            from aikito_mem.discovery import resolve_workspace

            ws = resolve_workspace(workspace)
            if ws.root != plan.workspace:
                raise PlanFileError(
                    f"plan file {planfile!r} is for workspace {plan.workspace}, but the "
                    f"workspace given ({ws.found_via}) is {ws.root} — apply it without "
                    "--workspace/AIKITO_DIR, or plan again for this workspace",
                    path=planfile, code="plan.foreign",
                )
        from aikito_mem.execute import execute

        result = execute(plan, lock_timeout=lock_timeout, always_verify=True)
        _finish(outcome=result.outcome, exit_code=0, project=project_name, workspace=ws_root,
                plan=plan, result=result, **common)
    except AikitoError as exc:
        plan_, result_ = _plan_of(exc)
        _finish(outcome=exc.outcome, exit_code=exc.exit_code, project=project_name,
                workspace=ws_root, plan=plan_, result=result_, error=exc, **common)
    except OSError as exc:
        _finish(outcome="failed", exit_code=5, project=project_name, workspace=ws_root,
                error=_os_error(exc), **common)


from aikito_mem.cli_more import adopt_cmd, doctor_cmd, status_cmd  # noqa: E402

cli.add_command(status_cmd)
cli.add_command(doctor_cmd)
cli.add_command(adopt_cmd)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="aikito")


if __name__ == "__main__":  # pragma: no cover
    main()
