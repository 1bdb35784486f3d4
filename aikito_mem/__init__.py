"""aikito_mem: link an agent workspace's durable memory into project checkouts.

The public names are imported lazily (PEP 562) so that ``aikito --version`` imports
nothing but the CLI library ([§12] start-up target).
"""

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing ``typing``: the console scripts import this
#: package before their entry point turns the cyclic collector off (aikito_mem.console).
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "Project": "aikito_mem.api",
    "PreparedProject": "aikito_mem.api",
    "AikitoError": "aikito_mem.errors",
    "ConfigError": "aikito_mem.errors",
    "ProjectNotFoundError": "aikito_mem.errors",
    "PlanFileError": "aikito_mem.errors",
    "ConflictError": "aikito_mem.errors",
    "ProjectPrepareConflictError": "aikito_mem.errors",
    "StalePlanError": "aikito_mem.errors",
    "ExecutionError": "aikito_mem.errors",
    "LockBusyError": "aikito_mem.errors",
    "Action": "aikito_mem.model",
    "Plan": "aikito_mem.model",
    "Operation": "aikito_mem.model",
    "SyncResult": "aikito_mem.model",
    "Status": "aikito_mem.model",
}

__all__ = [
    "Action",
    "AikitoError",
    "ConfigError",
    "ConflictError",
    "ExecutionError",
    "LockBusyError",
    "Operation",
    "Plan",
    "PlanFileError",
    "PreparedProject",
    "Project",
    "ProjectNotFoundError",
    "ProjectPrepareConflictError",
    "StalePlanError",
    "Status",
    "SyncResult",
    "__version__",
]

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from aikito_mem.api import PreparedProject, Project
    from aikito_mem.errors import (
        AikitoError,
        ConfigError,
        ConflictError,
        ExecutionError,
        LockBusyError,
        PlanFileError,
        ProjectNotFoundError,
        ProjectPrepareConflictError,
        StalePlanError,
    )
    from aikito_mem.model import Action, Operation, Plan, Status, SyncResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'aikito_mem' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
