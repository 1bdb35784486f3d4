"""The black-box conformance suite: one file per SPEC section (``test_sNN_<title>.py``),
each test named after the requirement it checks ([W1], [C3], [P2] …).

Written from the specification alone, by someone who did not read the code, and kept that way: the
product is driven only through its command line (the ``aikito`` script of the project's
environment, in real processes with a throw-away HOME and no AIKITO_DIR /
XDG_CONFIG_HOME) and through its public Python API (SPEC §10) in process with the same
environment hygiene.  Helpers: :mod:`tests.conformance._support`; fixtures ``w`` and
``api_env``: its conftest.
"""
