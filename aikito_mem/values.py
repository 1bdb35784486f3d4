"""The value classes' shared methods, and :func:`record`, the cheap way to declare one
([§12]).

Two kinds of frozen, slotted value class share the one ``__eq__``, ``__hash__`` and
``__repr__`` of :class:`Value` (they mean what attrs' own mean):

- ``@attrs.frozen(repr=False, eq=False)`` classes: what the public API promises to be
  attrs classes ([A1]: ``Plan``, its operations and checkout plans, the results).  attrs
  generates their ``__init__`` and keeps ``attrs.fields``, ``attrs.evolve``.
- ``@record`` classes: every internal value (observations, configuration, views, render
  options).  Building an attrs class compiles several methods and costs about 0.2–0.9 ms
  of a sync's start-up; :func:`record` generates no code: it rebuilds the class with
  ``__slots__`` from its annotations and gives it one generic ``__init__``, so that a class
  costs a few tens of microseconds (docs/performance.md).

:func:`fields` and :func:`replace` work on both kinds.  Imports nothing of the package.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, cast, dataclass_transform

import attrs
from attrs.exceptions import FrozenInstanceError

__all__ = ["NOTHING", "Field", "PlanKind", "Value", "fields", "is_value_class", "record",
           "replace"]

T = TypeVar("T")

#: The default of a field that has none (attrs' own marker, so that code reading either
#: kind of field compares with one constant).
NOTHING: Any = attrs.NOTHING


class PlanKind(enum.Enum):
    """What a plan is for: a sync ([P1]–[P5]) or a clean ([L3]); the writer's guard
    judges each write by the rules of its kind ([E9]).  (Here, beside :class:`Value`:
    the model is at its size.)"""

    SYNC = "sync"
    CLEAN = "clean"


class Field:
    """One field of a :func:`record` class: its name and its default (:data:`NOTHING`
    when it is required) — the two attributes of an ``attrs`` field the package reads."""

    __slots__ = ("default", "name")

    def __init__(self, name: str, default: Any) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "default", default)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"

    name: str
    default: Any


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
        cls = self.__class__
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _shown_of(cls))
        return f"{cls.__qualname__}({shown})"


#: The field getter of each value class, made on first use.
_GETTERS: dict[type, Callable[[Any], Any]] = {}


def _record_fields(cls: type) -> tuple[Field, ...] | None:
    """The fields of a :func:`record` class (its own, never a base's), else ``None``."""
    found: tuple[Field, ...] | None = cls.__dict__.get("__record_fields__")
    return found


def _compared_names(cls: type) -> list[str]:
    own = _record_fields(cls)
    if own is not None:
        return [f.name for f in own]
    return [a.name for a in attrs.fields(cls) if a.eq]


def _shown_of(cls: type) -> list[str]:
    own = _record_fields(cls)
    if own is not None:
        return [f.name for f in own]
    return [a.name for a in attrs.fields(cls) if a.repr]


def _fields_of(cls: type) -> Callable[[Any], Any]:
    """The values of ``cls``'s compared fields, as one tuple."""
    get = _GETTERS.get(cls)
    if get is None:
        names = _compared_names(cls)
        get = _GETTERS[cls] = attrgetter(*names) if len(names) > 1 else (
            lambda value: tuple(getattr(value, name) for name in names))
    return get


# -- records ------------------------------------------------------------------------------

#: Types whose instances are immutable, for a record's class-level defaults.
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, enum.Enum, Value)


def _immutable(value: object) -> bool:
    if isinstance(value, tuple | frozenset):
        return all(_immutable(item) for item in value)
    return isinstance(value, _IMMUTABLE)


def _declared(cls: type) -> tuple[Field, ...]:
    """The fields ``cls`` annotates, in order, with their class-level defaults — refusing
    what a frozen value cannot have."""
    out: list[Field] = []
    for name in vars(cls).get("__annotations__", {}):
        default = cls.__dict__.get(name, NOTHING)
        if default is NOTHING and out and out[-1].default is not NOTHING:
            raise TypeError(f"record {cls.__qualname__}: the required field {name!r} "
                            f"follows a field with a default")
        if default is not NOTHING and not _immutable(default):
            raise TypeError(f"record {cls.__qualname__}: the default of {name!r}, "
                            f"{default!r}, is not immutable; use None, a number, a string, "
                            "an enum member, a value, or a tuple or frozenset of them")
        out.append(Field(name, default))
    return tuple(out)


def _refuse_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError


def _refuse_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError


def _final(cls: type, /, **kwargs: Any) -> None:
    """A record is final: a subclass would have no fields of its own to compare, hash or
    show (``==`` raised ``NotAnAttrsClassError``) — declare another record instead."""
    raise TypeError(f"{cls.__qualname__}: a record cannot be subclassed; declare another "
                    "@record deriving from Value")


def _reduce(self: Value) -> tuple[type, tuple[Any, ...]]:
    """Copied and pickled by its class and field values (``copy``, ``pickle``)."""
    names = _compared_names(self.__class__)
    return self.__class__, tuple(getattr(self, name) for name in names)


def _listed(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    if len(quoted) < 3:
        return " and ".join(quoted)
    return f"{', '.join(quoted[:-1])}, and {quoted[-1]}"


def _bind(cls: type, declared: tuple[Field, ...], args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> list[Any]:
    """The field values of one call, in order; a ``TypeError`` worded as Python words a
    bad call of a plain ``__init__``."""
    where = f"{cls.__qualname__}.__init__()"
    if len(args) > len(declared):
        least = 1 + sum(1 for f in declared if f.default is NOTHING)
        most = 1 + len(declared)
        takes = f"from {least} to {most}" if least < most else str(most)
        s = "" if takes == "1" else "s"
        raise TypeError(f"{where} takes {takes} positional argument{s} but "
                        f"{len(args) + 1} were given")
    values = list(args) + [NOTHING] * (len(declared) - len(args))
    index = {f.name: i for i, f in enumerate(declared)}
    for key, value in kwargs.items():
        i = index.get(key)
        if i is None:
            raise TypeError(f"{where} got an unexpected keyword argument {key!r}")
        if i < len(args):
            raise TypeError(f"{where} got multiple values for argument {key!r}")
        values[i] = value
    missing = []
    for i in range(len(args), len(declared)):
        if values[i] is NOTHING:
            values[i] = declared[i].default
            if values[i] is NOTHING:
                missing.append(declared[i].name)
    if missing:
        s = "s" if len(missing) > 1 else ""
        raise TypeError(f"{where} missing {len(missing)} required positional argument{s}: "
                        f"{_listed(missing)}")
    return values


def _make_init(declared: tuple[Field, ...],
               setters: list[Callable[[Any, Any], None]]) -> Callable[..., None]:
    """The one ``__init__`` of a record class (a closure over its fields, no code made):
    positional and keyword arguments, defaults filled in, each value written by its slot's
    own setter (past the refusing ``__setattr__``).  ``setters`` is filled once the class
    is built."""
    defaults = tuple(f.default for f in declared)
    index = {f.name: i for i, f in enumerate(declared)}
    required = sum(1 for d in defaults if d is NOTHING)  # they come first (_declared)
    count = len(declared)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        if given > count or (given < required and not kwargs):
            values: Any = _bind(self.__class__, declared, args, kwargs)  # it raises
        elif kwargs:
            values = [*args, *defaults[given:]]
            for key, value in kwargs.items():
                i = index.get(key, -1)
                if i < given:  # unknown, or given positionally too
                    _bind(self.__class__, declared, args, kwargs)  # it raises
                values[i] = value
            for i in range(given, required):
                if values[i] is NOTHING:
                    _bind(self.__class__, declared, args, kwargs)  # it raises
        else:
            values = args + defaults[given:]
        for write, value in zip(setters, values, strict=False):
            write(self, value)

    return __init__


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """Make ``cls`` (a subclass of :class:`Value` declaring annotated fields, with
    immutable class-level defaults) a frozen, slotted value class, without generating
    code: ``__slots__`` from the annotations, one generic ``__init__`` (positional and
    keyword arguments, a ``TypeError`` for a missing, unknown or repeated one), and
    ``attrs``' ``FrozenInstanceError`` on any assignment or deletion.  Methods and
    properties are kept; a method may not use ``super()`` or ``__class__`` (the class is
    rebuilt, its cell would name the old one).  A record is final: subclassing one is a
    ``TypeError``."""
    if cls.__bases__ != (Value,):
        raise TypeError(f"record {cls.__qualname__}: a record derives from Value only")
    declared = _declared(cls)
    setters: list[Callable[[Any, Any], None]] = []
    namespace = {key: value for key, value in cls.__dict__.items()
                 if key not in ("__dict__", "__weakref__")}
    for field in declared:
        namespace.pop(field.name, None)
    for key, value in namespace.items():
        code = getattr(getattr(value, "fget", value), "__code__", None)
        if code is not None and "__class__" in code.co_freevars:
            raise TypeError(f"record {cls.__qualname__}: {key} uses super() or __class__")
    namespace.update(
        __qualname__=cls.__qualname__,
        __slots__=tuple(f.name for f in declared),
        __record_fields__=declared,
        __init__=_make_init(declared, setters),
        __setattr__=_refuse_setattr,
        __delattr__=_refuse_delattr,
        __reduce__=_reduce,
        __init_subclass__=classmethod(_final),
        __match_args__=tuple(f.name for f in declared),
    )
    meta: Any = type(cls)
    built: type[T] = meta(cls.__name__, cls.__bases__, namespace)
    setters.extend(built.__dict__[f.name].__set__ for f in declared)
    return built


def is_value_class(cls: object) -> bool:
    """Whether ``cls`` is an ``attrs`` class or a :func:`record` class."""
    return isinstance(cls, type) and (_record_fields(cls) is not None or attrs.has(cls))


def fields(cls: type) -> tuple[Any, ...]:
    """The fields of a value class, in order, each with ``name`` and ``default``
    (:data:`NOTHING` when required): ``attrs.fields`` of an attrs class, the
    :class:`Field` values of a record."""
    own = _record_fields(cls)
    if own is not None:
        return own
    return tuple(attrs.fields(cls))


def replace(value: T, **changes: Any) -> T:
    """A copy of ``value`` with ``changes`` (``attrs.evolve`` for either kind of class;
    an unknown field name is a ``TypeError``)."""
    cls = value.__class__
    own = _record_fields(cls)
    if own is None:
        evolved: T = attrs.evolve(cast(Any, value), **changes)
        return evolved
    kwargs = {f.name: getattr(value, f.name) for f in own}
    unknown = sorted(set(changes) - set(kwargs))
    if unknown:
        raise TypeError(f"{cls.__qualname__} has no field {unknown[0]!r}")
    kwargs.update(changes)
    made: T = cls(**kwargs)
    return made
