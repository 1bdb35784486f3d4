"""Side-by-side benchmark of ``aikito sync project`` (SPEC §12, §13 [G7]).

    python -m bench                  # from the repository root; ``make bench`` runs this
    python -m bench --help

It reports; it never fails on a slow result (exit 0 unless the harness itself breaks).
The package has three rooms, and data flows one way through them:

- :mod:`bench.suite` — what is measured: workload definitions and the builders of their
  workspaces, checkouts, floor manifests and Stow scripts (pure file creation, no process);
- :mod:`bench.runner` — how it is measured: child processes, wall and CPU time, peak RSS,
  ``strace -f -c`` counts (:mod:`~bench.runner.process`), the peers — the reference tool in
  its own Python 3.12 virtual environment, GNU Stow, strace (:mod:`~bench.runner.peers`) —
  and the round-robin groups of each workload (:mod:`~bench.runner.groups`);
- :mod:`bench.report` — what is printed: the table, the targets, the W4 summary and the
  JSON document, computed from result rows alone.

:mod:`bench.results` holds the values passed between them (``Sample``, ``Row``) and the
names of the rows; :mod:`bench.cli` parses the arguments and sequences the rooms;
``bench/floor.py`` is the syscall-floor script, run as a plain file by the timed
interpreter (it imports nothing of this package). See ``bench/README.md``.
"""
