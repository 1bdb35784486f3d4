"""Observation of the live world: the filesystem (read-only), and the checkouts,
resources and segment sources it holds."""
