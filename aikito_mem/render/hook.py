"""``aikito hook install|uninstall`` as text ([L6]).  Pure: a report and a display in,
lines out.

The hook file is named as a person pastes it where the command ran ([U2]): relative to
the current directory when below it, else ``~/…``, else absolute.  The one line an
existing hook needs is printed whole on a line of its own, never wrapped: a shell line
broken in two would not do the hook's job.
"""

from __future__ import annotations

from shlex import quote

from aikito_mem.commands.hook import HOOK_LINE, HOOK_NAME, HookAction, HookOutcome, HookReport
from aikito_mem.render.paths import Paths
from aikito_mem.render.text import Display, Output, message_lines, printable

__all__ = ["render", "text_lines"]


def _install(o: HookOutcome | None, hook: str) -> list[str]:
    if o is HookOutcome.CREATED:
        return [f"installed the {HOOK_NAME} hook {hook}: a new git worktree is synced as "
                "it is created (aikito sync project --quiet)"]
    if o is HookOutcome.PLANNED:
        return [f"would install the {HOOK_NAME} hook {hook} (--dry-run: nothing written)"]
    if o is HookOutcome.UNCHANGED:
        return [f"the {HOOK_NAME} hook {hook} is aikito's already; nothing to do"]
    if o is HookOutcome.REFUSED:
        return [f"{hook} exists and is not aikito's: it is left as it is. To sync new "
                "worktrees, add this line to it:"]
    return []


def _uninstall(o: HookOutcome | None, hook: str) -> list[str]:
    if o is HookOutcome.REMOVED:
        return [f"removed aikito's {HOOK_NAME} hook {hook}"]
    if o is HookOutcome.PLANNED:
        return [f"would remove aikito's {HOOK_NAME} hook {hook} (--dry-run: nothing "
                "written)"]
    if o is HookOutcome.UNCHANGED:
        return [f"no {HOOK_NAME} hook at {hook}; nothing to do"]
    if o is HookOutcome.REFUSED:
        return [f"{hook} is not the hook aikito hook install writes (another hook, or "
                "edited): it is left as it is — remove aikito's line from it yourself"]
    return []


def text_lines(report: HookReport, display: Display) -> list[str]:
    """The text report, each line wrapped to the width ([U2]) — but the hook line."""
    paths = Paths(None, cwd=display.cwd, home=display.home, program=display.program)
    hook = paths.pasteable(quote(report.hook)) if report.hook is not None else "None"
    words = (_install if report.action is HookAction.INSTALL else _uninstall)
    lines = [display.line(line) for line in words(report.outcome, hook)]
    if report.action is HookAction.INSTALL and report.outcome is HookOutcome.REFUSED:
        lines.append(printable(f"  {HOOK_LINE}"))
    return lines


def render(report: HookReport, display: Display) -> Output:
    """What ``aikito hook install|uninstall`` prints for ``report``."""
    errors = (message_lines(report.error.message, display)
              if report.error is not None else ())
    return Output(report.exit_code, lines=tuple(text_lines(report, display)), errors=errors)
