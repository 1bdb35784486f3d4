"""Moved to :mod:`tests.helpers.mounts` (kept until every importer uses the new place)."""

from tests.helpers.mounts import *  # noqa: F403
