"""``aikito status``, ``aikito doctor`` and ``aikito adopt`` (issue 6).

Only ``click`` is imported here at module level: ``aikito --version`` must cost what
``import click`` costs ([§12]).  Every room is imported inside the command that needs it.
The workspace comes from the group's ``--workspace`` option (``ctx.obj["workspace"]``),
exactly as for ``sync project``.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click


def _emit(doc: dict[str, Any], lines: list[str], as_json: bool) -> NoReturn:
    # Non-UTF-8 names hold lone surrogates (os.fsdecode): escaped in JSON, shown as \xff
    # in text — one rule for every command (render.json_text / render.printable).
    from aikito_mem.render import json_text, printable

    if as_json:
        click.echo(json_text(doc))
    else:
        for line in lines:
            click.echo(printable(line))
        if doc.get("error"):
            click.echo(f"aikito: {doc['error']['message']}", err=True)
    sys.exit(int(doc["exit_code"]))


def _workspace(ctx: click.Context) -> str | None:
    obj = ctx.find_root().obj or {}
    value = obj.get("workspace")
    return value if isinstance(value, str) else None


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one aikito.status/1 document.")
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every project and checkout with its sync state (a dry run; writes nothing).

    Exit 0 when everything is in sync, 1 when something is pending, conflicting or a
    project cannot be read, 4 on a workspace error.
    """
    from aikito_mem.status import collect, text_table

    doc = collect(_workspace(ctx))
    _emit(doc, [] if doc["error"] else text_table(doc), as_json)


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print one aikito.doctor/1 document.")
@click.option("--strict", is_flag=True, help="Warnings count as errors for the exit code.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the checks that passed.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool, strict: bool, verbose: bool) -> None:
    """Health checks of the memory substrate, each ok / warning / error with a remedy.

    Exit 0 with no errors (warnings allowed unless --strict), 1 with errors, 4 when the
    workspace cannot be resolved.
    """
    from aikito_mem.doctor import run, text_report

    doc = run(_workspace(ctx), strict=strict)
    lines = text_report(doc, verbose=verbose)
    _emit(doc, [] if doc["error"] else lines, as_json)


@click.command("adopt")
@click.argument("target")
@click.option("--project", metavar="NAME", default=None,
              help="The project, when the checkout is registered for several.")
@click.option("--dry-run", is_flag=True, help="Check and print what would happen; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one aikito.adopt/1 document.")
@click.option("--lock-timeout", type=click.FloatRange(min=0), default=30.0,
              show_default=True, metavar="SECONDS", help="Wait this long for the lock.")
@click.pass_context
def adopt_cmd(ctx: click.Context, target: str, project: str | None, dry_run: bool,
              as_json: bool, lock_timeout: float) -> None:
    """Move TARGET (<checkout>/.agents/memory/REL) to <workspace>/memory/REL, add REL to the
    project's memory list and link it back.

    Exit 0 adopted (or a clean dry run), 1 refused (nothing written) or link blocked by
    other conflicts, 3 something changed meanwhile, 4 configuration error, 5 a step
    failed, 6 checkout busy.  Every failure says where the content is.
    """
    from aikito_mem.adopt import adopt, text_report

    doc = adopt(target, _workspace(ctx), project=project, dry_run=dry_run,
                lock_timeout=lock_timeout)
    _emit(doc, text_report(doc), as_json)
