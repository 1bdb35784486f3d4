"""The commands beside sync, each returning a frozen report: status, sync_all, apply,
doctor, adopt, init."""
