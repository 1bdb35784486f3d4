"""Fixtures of the black-box conformance suite: ``w``, a fresh world, and ``api_env``, the
same world with this process's home pointed at its own (for the Python API)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conformance._support import W
from tests.helpers.home import isolate_home


@pytest.fixture
def w():
    # Own temporary directory (not pytest's tmp_path): keeps this suite independent of
    # pytest's shared numbered temp dirs and their clean-up of other sessions.
    import tempfile
    d = tempfile.mkdtemp(prefix="aikito-bb-")
    try:
        yield W(Path(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def api_env(w, monkeypatch):
    isolate_home(monkeypatch, w.home)
    monkeypatch.chdir(w.home)
    return w
