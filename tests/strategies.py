"""Moved to :mod:`tests.helpers.strategies` (kept until every importer uses the new place)."""

from tests.helpers.strategies import *  # noqa: F403
