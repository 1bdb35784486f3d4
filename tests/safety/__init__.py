"""Safety suites: dry-run proof, stateful machine, adversarial inputs and plan files, faults,
races, concurrency, syscall budget."""
