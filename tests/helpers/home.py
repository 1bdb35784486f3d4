"""The home guard: no test may find, read or write the real home of whoever runs the suite,
nor obey their ``AIKITO_DIR`` or colour settings.

:func:`isolate_home` is what conftest's autouse fixture applies to every test (in
process); :func:`child_env` is the same isolation for a real child process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Variables of the person running the suite that would point aikito at another workspace
#: or change what it prints.
UNSET = ("AIKITO_DIR", "NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")
#: The width every test prints at unless it says otherwise: wide enough that no line wraps.
COLUMNS = "1000"


def isolate_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """Point ``HOME`` at ``home`` (created) and ``XDG_CONFIG_HOME`` at ``home/.config``;
    unset :data:`UNSET`.  Returns ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    # [U2]: text is wrapped to COLUMNS, else the terminal's width.  A test sees each
    # logical line whole; the width tests (tests/test_cli_habits.py) set COLUMNS themselves.
    monkeypatch.setenv("COLUMNS", COLUMNS)
    return home


def child_env(home: str | os.PathLike[str] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a real ``aikito`` child process: this process's, without
    ``AIKITO_*``, ``XDG_*``, ``HYPOTHESIS_*`` and :data:`UNSET`; ``HOME`` is ``home``
    (default: this test's guarded home); ``COLUMNS`` is :data:`COLUMNS`; no ``.pyc`` is
    written; ``extra`` on top."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIKITO", "XDG_", "HYPOTHESIS")) and k not in UNSET}
    env["HOME"] = os.fspath(home) if home is not None else os.environ["HOME"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = COLUMNS
    env.update(extra)
    return env
