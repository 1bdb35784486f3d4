"""SIGINT / SIGTERM at every moment of a command ([E5]).

One process-wide record of the first signal received, installed by the command line at the
very start of every command (and by the engine for API callers) so that a signal never
kills the process silently:

- while a write is in flight the handler only records the signal; every writer calls
  :func:`check` just before each write, so no write *starts* after the signal and the one
  in flight is finished;
- inside :func:`interruptible` (waiting for a lock, planning, reading, sleeping: nothing
  half-written can be left) the handler raises :class:`~aikito_mem.errors.InterruptedError_`
  at once, so a command waiting out ``--lock-timeout`` stops immediately;
- inside :func:`deferred` (a write loop) the handler only records, even when an enclosing
  caller made the region interruptible: an operation is never cut in half.

The command line turns the error into exit 130 / 143 and its one JSON document.
Installing is a no-op outside the main thread (Python delivers signals only there).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from aikito_mem.errors import InterruptedError_

SIGINT: int = int(signal.SIGINT)
SIGTERM: int = int(signal.SIGTERM)
_SIGNALS = (SIGINT, SIGTERM)
_NAMES = {SIGINT: "SIGINT", SIGTERM: "SIGTERM"}


def signal_name(signum: int) -> str:
    """``SIGINT``, ``SIGTERM``: the name of a signal the record handles (``signal`` names
    any other)."""
    name = _NAMES.get(signum)
    if name is None:
        name = signal.Signals(signum).name
    return name


class _State:
    def __init__(self) -> None:
        self.received: int | None = None
        self.depth = 0  # nesting of installed()
        self.waiting = 0  # nesting of interruptible()
        self.old: dict[int, Any] = {}


_state = _State()


def interrupted_error(signum: int, *, noticed: bool = False) -> InterruptedError_:
    """The error of signal ``signum``: raised at once (inside :func:`interruptible`, by
    :func:`check`), or ``noticed`` by the command line after the work (or before it began).
    """
    after = "the signal was noticed" if noticed else "the signal"
    return InterruptedError_(
        f"interrupted by {signal_name(signum)}; no write was started after {after} — "
        "run the command again to finish (it converges from whatever state was left)",
        signum=signum,
    )


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.received is None:
        _state.received = signum
    if _state.waiting > 0:
        raise interrupted_error(_state.received)


def received() -> int | None:
    """The first signal received since :func:`install` (or ``None``)."""
    return _state.received


def check() -> None:
    """Raise :class:`InterruptedError_` if a signal was received.  Call before each write."""
    if _state.received is not None:
        raise interrupted_error(_state.received)


def install() -> None:
    """Install the handlers (nested calls count; the outermost :func:`uninstall` restores)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if _state.depth == 0:
        _state.received = None
        for sig in _SIGNALS:
            _state.old[sig] = signal.signal(sig, _handler)
    _state.depth += 1


def uninstall() -> None:
    if threading.current_thread() is not threading.main_thread() or _state.depth == 0:
        return
    _state.depth -= 1
    if _state.depth == 0:
        for sig, old in _state.old.items():
            signal.signal(sig, old)
        _state.old.clear()
        _state.received = None
        _state.waiting = 0


@contextmanager
def installed() -> Iterator[None]:
    """``install()`` … ``uninstall()``."""
    install()
    try:
        yield
    finally:
        uninstall()


@contextmanager
def interruptible() -> Iterator[None]:
    """A region with no write in flight: a signal raises at once (after a :func:`check`)."""
    check()
    _state.waiting += 1
    try:
        yield
    finally:
        _state.waiting -= 1


@contextmanager
def deferred() -> Iterator[None]:
    """A region with writes in flight: a signal is only recorded, even inside an enclosing
    :func:`interruptible` region; the writer calls :func:`check` before each write."""
    saved = _state.waiting
    _state.waiting = 0
    try:
        yield
    finally:
        _state.waiting = saved
