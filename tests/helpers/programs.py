"""Programs the tests put on ``PATH``: a fake agent command detection finds, a fake or
logging ``git``, a fake ``aikito`` a hook calls — each a ``/bin/sh`` script."""

from __future__ import annotations

from pathlib import Path


def executable(directory: Path, name: str, body: str = "exit 0\n") -> Path:
    """The executable ``directory/name`` (the directory made if need be) running ``body``
    under ``/bin/sh``; ``body`` may start with its own ``#!`` line."""
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text(body if body.startswith("#!") else f"#!/bin/sh\n{body}")
    exe.chmod(0o755)
    return exe
