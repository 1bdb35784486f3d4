"""Moved to :mod:`tests.helpers.snapshots` (kept until every importer uses the new place)."""

from tests.helpers.snapshots import *  # noqa: F403
