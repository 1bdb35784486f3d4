"""Fixtures, hypothesis profiles and ``--run-slow``; the helpers themselves live in
:mod:`tests.helpers`.

Fixtures: the autouse home guard (:func:`tests.helpers.home.isolate_home` for every
test) and ``home``, its path; ``ws`` (a fresh :class:`~tests.helpers.workspace.WS`),
``env`` (the command-line tests' :class:`~tests.helpers.cli.Env`), ``checkout``,
``tmpfs``, ``foldfs`` (a mounted folding directory, :mod:`tests.helpers.foldfs`) and
``fold_ws`` (a :class:`~tests.helpers.workspace.WS` inside one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import foldfs as folding
from tests.helpers import mounts
from tests.helpers.cli import Env
from tests.helpers.home import isolate_home
from tests.helpers.workspace import WS

# --------------------------------------------------------------------- hypothesis profiles

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    # CI is reproducible: the same examples every run (dev and long explore afresh).
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "long",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "dev")

# --------------------------------------------------------------------- --run-slow


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow", action="store_true", default=False,
        help="also run tests marked 'slow' (make test-long)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with make test-long")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


# --------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test runs with a fresh temporary home ([W1] discovery can never find, or
    write into, the real home of whoever runs the suite)."""
    return isolate_home(monkeypatch, tmp_path_factory.mktemp("home"))


@pytest.fixture
def home(_isolated_home: Path) -> str:
    """This test's guarded home as a physical path."""
    return os.path.realpath(_isolated_home)


@pytest.fixture
def ws(tmp_path: Path) -> WS:
    """A fresh temporary workspace builder."""
    return WS(tmp_path)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """The command-line tests' world (:class:`~tests.helpers.cli.Env`) in ``tmp_path``."""
    return Env(tmp_path)


@pytest.fixture
def checkout(ws: WS) -> Callable[[str], str]:
    """A factory: ``checkout("name")`` creates a checkout directory and returns its path."""
    return ws.checkout


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs mounted at ``<tmp_path>/tmpfs`` for this test (root only; else skipped)."""
    with mounts.tmpfs(tmp_path / "tmpfs") as mnt:
        yield mnt


@pytest.fixture
def foldfs(tmp_path: Path) -> Iterator[folding.FoldDir]:
    """A directory that folds names as APFS does, mounted for this test [F4]:
    ``foldfs.path`` is the folding view, ``foldfs.backing`` the case-sensitive directory
    under it.  Skipped, with the reason, where FUSE, ``fusermount3`` or ``mfusepy`` is
    missing or the mount fails; always unmounted."""
    reason = folding.unavailable()
    if reason is not None:
        pytest.skip(reason)
    try:
        with folding.mounted(tmp_path / "fold-backing", tmp_path / "fold") as mnt:
            yield mnt
    except folding.MountFailedError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def fold_ws(foldfs: folding.FoldDir) -> WS:
    """A fresh workspace builder whose workspace and checkouts are all in ``foldfs``."""
    return WS(foldfs.path)
