"""Observation of the live world, read-only: the filesystem (`observe`), the checkouts and
which one contains a path, the desired resources and segment sources, the memory
descriptor, and the one observation pass of a project (`project`)."""
