"""The test suite's shared helpers — one of each, imported by every test module that needs
them (no test module imports another):

- :mod:`tests.helpers.workspace` — :class:`~tests.helpers.workspace.WS`, the one builder of
  temporary workspaces and checkouts;
- :mod:`tests.helpers.snapshots` — before/after snapshots of real trees ("nothing else
  changed");
- :mod:`tests.helpers.home` — the home guard: ``HOME``/``XDG_CONFIG_HOME`` pointed at a
  throw-away directory, ``AIKITO_DIR`` unset, in process and for child processes;
- :mod:`tests.helpers.cli` — running the command line: in process (``CliRunner``) and as
  real processes, the :class:`~tests.helpers.cli.Env` world of the CLI tests,
  :func:`~tests.helpers.cli.one_json`;
- :mod:`tests.helpers.mounts` — a tmpfs or a bind mount for one test (root only);
- :mod:`tests.helpers.foldfs` — a directory that folds names as APFS does (FUSE), for
  one test;
- :mod:`tests.helpers.strategies` — the hypothesis strategies and example budgets.

``tests/conftest.py`` holds only fixtures, hypothesis profiles and options, built from
these.
"""
