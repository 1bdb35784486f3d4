"""The one ``__eq__``, ``__hash__`` and ``__repr__`` of every value class ([§12]).

Every value of the package is an ``attrs`` frozen, slotted class declared
``@frozen(repr=False, eq=False)`` with :class:`Value` as its base.  attrs generates its
``__init__`` (and keeps ``attrs.fields``, ``attrs.evolve`` and immutability, [A1]); the
three methods here are shared instead of being compiled once per class at import — which
was most of what importing the model cost a sync.  They mean what attrs' own mean.

Imports nothing of the package.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import attrs

__all__ = ["PlanKind", "Value"]


class PlanKind(enum.Enum):
    """What a plan is for: a sync ([P1]–[P5]) or a clean ([L3]); the writer's guard
    judges each write by the rules of its kind ([E9]).  (Here, beside :class:`Value`:
    the model is at its size.)"""

    SYNC = "sync"
    CLEAN = "clean"


class Value:
    """The base of every value class: equal when of the same class with equal compared
    fields, in order (``NotImplemented`` for another class, as attrs does); hashed on its
    class and those fields; shown as ``Name(field=value, ...)``."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        fields = _fields_of(self.__class__)
        return bool(fields(self) == fields(other))

    def __hash__(self) -> int:
        return hash((self.__class__, _fields_of(self.__class__)(self)))

    def __repr__(self) -> str:
        cls: Any = self.__class__  # an attrs class: every subclass is one
        shown = ", ".join(f"{a.name}={getattr(self, a.name)!r}"
                          for a in attrs.fields(cls) if a.repr)
        return f"{cls.__qualname__}({shown})"


#: The field getter of each value class, made on first use.
_GETTERS: dict[type, Callable[[Any], Any]] = {}


def _fields_of(cls: type) -> Callable[[Any], Any]:
    """The values of ``cls``'s compared fields, as one tuple."""
    get = _GETTERS.get(cls)
    if get is None:
        names = [a.name for a in attrs.fields(cls) if a.eq]
        get = _GETTERS[cls] = attrgetter(*names) if len(names) > 1 else (
            lambda value: tuple(getattr(value, name) for name in names))
    return get
