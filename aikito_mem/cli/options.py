"""Options shared by several commands, and how a command reads the group's options.

Imports only ``click`` (``aikito --version`` must cost what ``import click`` costs).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.FloatRange):
    """A finite, non-negative number of seconds: ``nan``, ``inf`` and negative values are
    usage errors (exit 2) — a lock wait must end ([E3])."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return seconds


def json_option(schema: str) -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True,
                        help=f"Print one {schema} document.")


lock_timeout_option = click.option(
    "--lock-timeout", type=Seconds(), default=30.0, show_default=True, metavar="SECONDS",
    help="Wait this long for the lock.")

color_option = click.option("--color/--no-color", default=None,
                            help="Colour (default: on a terminal).")


def use_color(option: bool | None) -> bool:
    """Colour only on a terminal, never with ``NO_COLOR`` or ``--no-color``; ``--color``
    forces it elsewhere."""
    if "NO_COLOR" in os.environ or option is False:
        return False
    if option is True:
        return True
    return sys.stdout.isatty()


def workspace_of(ctx: click.Context) -> str | None:
    """The group's ``--workspace`` option."""
    obj = ctx.find_root().obj or {}
    value = obj.get("workspace")
    return value if isinstance(value, str) else None
