"""The one error handler of every command, and the one place output is written.

Every command body runs inside :func:`error_handler` (pre-commit's ``error_handler`` is
the model): it installs the process-wide signal record first ([E5]), then maps whatever
ends the command to that command's own report — and so to its one JSON document under
``--json``, errors included (SPEC §9):

- an :class:`~aikito_mem.errors.AikitoError` → its exit code (``exit_code_for``) and
  outcome;
- an ``OSError`` no room converted → an environment failure, exit 5;
- SIGINT / SIGTERM at any moment → exit 130 / 143, outcome ``interrupted``: inside
  :func:`aikito_mem.signals.interruptible` regions at once, otherwise when the command
  finishes (its report keeps what was done) — never click's ``Aborted!``;
- anything else (a bug) → exit 5 with its document; the traceback goes to stderr, for the
  bug report.

:func:`emit` writes an :class:`~aikito_mem.render.text.Output` and exits with its code.
It never fails on the way out: characters the stream's encoding cannot represent are
escaped (``\\u2014``), and when the reader of stdout has gone (``aikito … | head -1``)
the rest of the report is dropped silently and the exit code is the run's own — the work
was done; the reader chose to stop reading (docs/commands.md, "Output").  When stdout
itself fails (a full disk), the error is said on stderr alone, exit 5, even under
``--json``: the error's document cannot be written either.  A stream the command was
started without (``>&-``) is written nothing, as ``print`` writes nothing there.

Imports only ``click`` at start-up; the rooms it needs are imported when a command runs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, NoReturn, cast

import click

if TYPE_CHECKING:  # pragma: no cover - what the handler needs, for the type checker only
    from typing import Protocol, TypeVar

    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output

    R = TypeVar("R")

    class View(Protocol[R]):
        """What the handler needs from a command: how its report is rendered, how an
        error becomes its report, and how a report ends when a signal was noticed
        meanwhile."""

        #: The ``error.code`` of an environment failure (an ``OSError``) of this command.
        failed_code: str

        def render(self, report: R) -> Output: ...

        def failed(self, error: AikitoError) -> R: ...

        def interrupted(self, report: R, error: InterruptedError_) -> R: ...

    class _Ending(Protocol):
        """A frozen attrs report that carries the error it ended with."""

        @property
        def error(self) -> AikitoError | None: ...

    E = TypeVar("E", bound=_Ending)


class _Handler:
    """Given to the command body by :func:`error_handler`."""

    def __init__(self, view: View[Any]) -> None:
        self._view = view

    def finish(self, report: Any) -> NoReturn:
        """Print ``report`` and exit with its code — as interrupted when a signal arrived
        and nothing has reported it yet (a command that waited out its lock after SIGTERM
        ends with 143, not 6)."""
        from aikito_mem import signals

        signum = signals.received()
        if signum is not None:
            report = self._view.interrupted(report, interruption(signum))
        emit(self._view.render(report))


if TYPE_CHECKING:  # pragma: no cover
    from typing import Generic

    class Handler(_Handler, Generic[R]):
        """:class:`_Handler` with the report type of its view (for the type checker: at
        run time the handler is a plain class, [§12])."""

        def __init__(self, view: View[R]) -> None: ...

        def finish(self, report: R) -> NoReturn: ...
else:
    Handler = _Handler


def end_interrupted(report: E, error: InterruptedError_) -> E:
    """``report`` ended by ``error`` — unless a signal has ended it already (the first
    interruption is the one reported); a :meth:`View.interrupted` for attrs reports."""
    import attrs

    from aikito_mem.errors import InterruptedError_

    if isinstance(report.error, InterruptedError_):
        return report  # already ended by the signal
    ended: E = attrs.evolve(cast(Any, report), error=error)  # attrs classes all
    return ended


def interruption(signum: int) -> InterruptedError_:
    """The error of a signal the command noticed after its work (or before it began)."""
    from aikito_mem.signals import interrupted_error

    return interrupted_error(signum, noticed=True)


def environment_error(error: OSError, code: str) -> AikitoError:
    """An ``OSError`` no room converted: an environment failure (exit 5)."""
    from aikito_mem.errors import ExecutionError

    where = f" on {error.filename}" if error.filename else ""
    failure = ExecutionError(
        f"{error.strerror or error}{where}; nothing more was attempted — fix the cause "
        "(permissions, disk, mounts) and run again", path=error.filename,
    )
    failure.code = code
    return failure


def _internal_error(error: Exception) -> AikitoError:
    import traceback

    from aikito_mem.errors import AikitoError

    traceback.print_exception(error, file=sys.stderr)
    return AikitoError(
        f"internal error: {type(error).__name__}: {error} — this is a bug in aikito; "
        "please report it with the traceback above", code="internal",
    )


@contextlib.contextmanager
def error_handler(view: View[R]) -> Iterator[Handler[R]]:
    """Run a command body: signals recorded from the first moment, every error rendered
    as the command's own report, one exit."""
    from aikito_mem import signals
    from aikito_mem.errors import AikitoError

    with signals.installed():
        try:
            yield Handler(view)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # usage errors stay click's (exit 2, on stderr, without JSON)
        except AikitoError as exc:
            error = exc
        except OSError as exc:
            error = environment_error(exc, view.failed_code)
        except KeyboardInterrupt:  # only where the record could not be installed
            error = interruption(signals.SIGINT)
        except Exception as exc:
            error = _internal_error(exc)
        else:  # pragma: no cover - every command body ends with finish()
            return
        try:
            Handler(view).finish(view.failed(error))
        except OSError as exc:  # the report's own stream failed again (a full disk)
            _on_stderr(view, environment_error(exc, view.failed_code))


def _on_stderr(view: View[Any], error: AikitoError) -> NoReturn:
    """``error`` said on stderr alone, with its exit code: the command's report could not
    be written (``--json`` to a stdout on a full disk: the error's document fails as the
    report's did) — an environment failure, exit 5, never a traceback."""
    from aikito_mem.errors import exit_code_for
    from aikito_mem.render.text import Display, error_lines

    display = getattr(view, "display", None)
    with contextlib.suppress(OSError):
        _write(sys.stderr, error_lines(error, display if isinstance(display, Display)
                                       else Display()))
    sys.exit(exit_code_for(error))


# ------------------------------------------------------------------------------ output


def _write(stream: IO[str] | None, lines: tuple[str, ...]) -> None:
    """``lines`` to ``stream``; nothing to a closed one (``>&-``: ``None``), as ``print``
    and ``click.echo`` write nothing there."""
    from aikito_mem.render.text import for_stream

    if stream is None:
        return
    stream.write(for_stream("\n".join(lines) + "\n", getattr(stream, "encoding", None)))
    stream.flush()


def emit(output: Output) -> NoReturn:
    """Write ``output`` (the document, or the text lines and the stderr lines) and exit
    with its exit code."""
    from aikito_mem.render.text import json_text

    out, err = sys.stdout, sys.stderr
    try:
        if output.document is not None:
            _write(out, (json_text(output.document, getattr(out, "encoding", None)),))
        elif output.lines:
            _write(out, output.lines)
    except BrokenPipeError:
        pass  # the reader has gone: the rest of the report is dropped, the code is kept
    if output.errors:
        with contextlib.suppress(BrokenPipeError):
            _write(err, output.errors)
    sys.exit(output.exit_code)
