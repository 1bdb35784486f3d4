"""The entry point of the ``aikito`` and ``aikito-mem`` console scripts and of
``python -m aikito_mem`` ([§12]).

A run of the command line is one short process, and its only cyclic garbage is what its
imports leave behind (class objects and their attribute tables): the cyclic collector
would only walk them, over and over, while click, attrs, tomllib and the package are
imported (about 5 M instructions of a warm sync's 300 M; ``python -c "import click, attrs,
tomllib"`` itself spends 10 M of its 234 M in it). So the entry point turns it off
*before* it imports anything, and only then loads the command line. Reference counting
still frees everything else at once.

When the command has ended (its output written, its exit code raised as ``SystemExit``),
the entry point freezes what is alive (``gc.freeze``): the interpreter's finalization
collects all the same (``gc.disable`` does not stop it), and after the module teardown
that means finding and freeing, object by object, the classes, functions and modules of
click, attrs and the package — about 19 M instructions of a warm sync's 291 M. Frozen
objects are left out of that collection; what reference counting does not free goes back
to the system with the process. Nothing else of the exit changes: ``atexit`` handlers
run, the standard streams are flushed, and the engine writes through file descriptors it
closes itself.

This module imports nothing at its top but :mod:`gc` (built into the interpreter), so
that importing it is free; the API, a library in someone else's process, never imports it
and never touches the host's collector.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    try:
        from aikito_mem.cli import main as run

        run()
    finally:
        gc.freeze()


__all__ = ["main"]
