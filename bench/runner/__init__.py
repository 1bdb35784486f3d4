"""How the benchmark measures: child processes, wall and CPU time, peak RSS and syscall
counts (:mod:`.process`), the peers it compares against — the reference tool in its own
Python 3.12 virtual environment, GNU Stow, strace (:mod:`.peers`) — and the round-robin
groups of each workload (:mod:`.groups`)."""
