"""The value classes' shared methods and :class:`Record`, the cheap way to declare one
([§12]).

Two kinds of frozen, slotted value class share the one ``__eq__``, ``__hash__`` and
``__repr__`` of :class:`Value` (they mean what attrs' own mean):

- ``@attrs.frozen(repr=False, eq=False)`` classes: what the public API promises to be
  attrs classes ([A1]: ``Plan`` and its operations).  attrs generates their
  ``__init__`` and keeps ``attrs.fields``, ``attrs.evolve``.
- records, the classes deriving from :class:`Record`: every other value (checkout
  plans, observations, configuration, views, findings, results, render options).
  Building an attrs class compiles several methods and builds the class twice; a record
  generates no code and its class is built once, by the class statement itself:
  ``__slots__`` from its annotations and one generic ``__init__`` (docs/performance.md).

:func:`fields`, :func:`replace` and :func:`asdict` work on both kinds.  Imports nothing
of the package.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from itertools import repeat as _repeat
from operator import attrgetter
from operator import call as _call
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

import attrs
from attrs.exceptions import FrozenInstanceError

__all__ = ["NOTHING", "Field", "PlanKind", "Record", "Value", "asdict",
           "fields", "is_value_class", "record", "replace"]

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
    """One field of a record class: its name and its default (:data:`NOTHING`
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


def _compared_names(cls: type) -> list[str] | tuple[str, ...]:
    own = _record_names(cls)
    if own is not None:
        return own
    return [a.name for a in attrs.fields(cls) if a.eq]


def _shown_of(cls: type) -> list[str] | tuple[str, ...]:
    own = _record_names(cls)
    if own is not None:
        return own
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
#: The most common of them, exactly (a set look-up, before the checks of ``isinstance``).
_PLAIN = frozenset({type(None), bool, int, str})


def _immutable(value: object) -> bool:
    if type(value) in _PLAIN:
        return True
    if isinstance(value, tuple | frozenset):
        return all(_immutable(item) for item in value)
    return isinstance(value, _IMMUTABLE)


def _record_names(cls: type) -> tuple[str, ...] | None:
    """The field names of a record class (its own, never a base's), else ``None``."""
    found: tuple[str, ...] | None = cls.__dict__.get("__record_names__")
    return found


def _listed(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    if len(quoted) < 3:
        return " and ".join(quoted)
    return f"{', '.join(quoted[:-1])}, and {quoted[-1]}"


def _bind(cls: type, names: tuple[str, ...], defaults: tuple[Any, ...],
          args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The field values of one call, in order; a ``TypeError`` worded as Python words a
    bad call of a plain ``__init__``."""
    where = f"{cls.__qualname__}.__init__()"
    if len(args) > len(names):
        least = 1 + sum(1 for d in defaults if d is NOTHING)
        most = 1 + len(names)
        takes = f"from {least} to {most}" if least < most else str(most)
        s = "" if takes == "1" else "s"
        raise TypeError(f"{where} takes {takes} positional argument{s} but "
                        f"{len(args) + 1} were given")
    values = list(args) + [NOTHING] * (len(names) - len(args))
    index = {name: i for i, name in enumerate(names)}
    for key, value in kwargs.items():
        i = index.get(key)
        if i is None:
            raise TypeError(f"{where} got an unexpected keyword argument {key!r}")
        if i < len(args):
            raise TypeError(f"{where} got multiple values for argument {key!r}")
        values[i] = value
    missing = []
    for i in range(len(args), len(names)):
        if values[i] is NOTHING:
            values[i] = defaults[i]
            if values[i] is NOTHING:
                missing.append(names[i])
    if missing:
        s = "s" if len(missing) > 1 else ""
        raise TypeError(f"{where} missing {len(missing)} required positional argument{s}: "
                        f"{_listed(missing)}")
    return values


def _make_init(names: tuple[str, ...], defaults: tuple[Any, ...], required: int,
               setters: list[Callable[[Any, Any], None]]) -> Callable[..., None]:
    """The one ``__init__`` of a record class (a closure over its fields, no code made):
    positional and keyword arguments, defaults filled in, each value written by its slot's
    own setter (past the refusing ``__setattr__``).  The ``required`` fields come first;
    ``setters`` is filled once the class is built."""
    count = len(names)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        if given > count or (given < required and not kwargs):
            values: Any = _bind(self.__class__, names, defaults, args, kwargs)  # it raises
        elif kwargs:
            values = [*args, *defaults[given:]]
            for key, value in kwargs.items():
                try:
                    i = names.index(key)
                except ValueError:
                    i = -1
                if i < given:  # unknown, or given positionally too
                    _bind(self.__class__, names, defaults, args, kwargs)  # it raises
                values[i] = value
            for i in range(given, required):
                if values[i] is NOTHING:
                    _bind(self.__class__, names, defaults, args, kwargs)  # it raises
        else:
            values = args + defaults[given:]
        # Each setter writes one slot; ``any`` drives the calls in C (each returns None,
        # so it consumes them all) — the interpreter runs no loop per field.
        any(map(_call, setters, _repeat(self), values))

    return __init__


def _class_cell_user(namespace: dict[str, Any]) -> str | None:
    """The name of a method (or property) of ``namespace`` that uses ``super()`` or
    ``__class__``, if one does."""
    for key, value in namespace.items():
        code = getattr(getattr(value, "fget", value), "__code__", None)
        if code is not None and "__class__" in code.co_freevars:
            return key
    return None


def _refuse_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError


def _refuse_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError


#: :class:`Record`, once it is built.
_RECORD: type | None = None


def _refuse_bases(qualname: str, bases: tuple[type, ...]) -> None:
    """A record derives from :class:`Record` alone: a ``TypeError`` for any other bases
    (a record among them: subclassing one)."""
    if bases != (_RECORD,):
        if any(isinstance(base, _RecordMeta) and base is not _RECORD for base in bases):
            raise TypeError(f"{qualname}: a record cannot be subclassed; declare "
                            "another record deriving from Record")
        raise TypeError(f"record {qualname}: a record derives from Record only")


class _RecordMeta(type):
    """The metaclass of :class:`Record`: the class statement of a record builds its class
    once, already slotted — the annotations become ``__slots__`` and the class-level
    defaults leave the namespace before ``type.__new__`` — with one generic
    ``__init__``.  It refuses what a frozen value cannot have: a mutable default, a
    required field after one with a default, another base than :class:`Record` (a
    record is final: a subclass would have no fields of its own to compare, hash or
    show), and ``super()`` or ``__class__`` in a method (a record has no base worth
    calling, and :func:`record` rebuilds a class, whose cell would name the old one)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                /, **kwargs: Any) -> _RecordMeta:
        if _RECORD is None:  # Record itself
            return super().__new__(mcls, name, bases, namespace, **kwargs)
        qualname = namespace.get("__qualname__", name)
        _refuse_bases(qualname, bases)
        namespace = dict(namespace)
        if "__classcell__" in namespace:  # the compiler's sign of super() or __class__
            user = _class_cell_user(namespace) or "a method"
            raise TypeError(f"record {qualname}: {user} uses super() or __class__")
        names = tuple(namespace.get("__annotations__", ()))
        defaults: list[Any] = []
        required = 0
        for field in names:
            default = namespace.pop(field, NOTHING)
            if default is NOTHING:
                if required < len(defaults):
                    raise TypeError(f"record {qualname}: the required field {field!r} "
                                    "follows a field with a default")
                required += 1
            elif not _immutable(default):
                raise TypeError(f"record {qualname}: the default of {field!r}, "
                                f"{default!r}, is not immutable; use None, a number, a "
                                "string, an enum member, a value, or a tuple or frozenset "
                                "of them")
            defaults.append(default)
        namespace["__slots__"] = namespace["__match_args__"] = names
        namespace["__record_names__"] = names
        namespace["__record_defaults__"] = frozen = tuple(defaults)
        setters: list[Callable[[Any, Any], None]] = []
        namespace["__init__"] = _make_init(names, frozen, required, setters)
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        slots = cls.__dict__
        setters.extend([slots[field].__set__ for field in names])
        return cls


@dataclass_transform(frozen_default=True)
class Record(Value, metaclass=_RecordMeta):
    """The base of a record: a frozen, slotted value class declared by its annotated
    fields, with immutable class-level defaults, and built once, without generating code
    (:class:`_RecordMeta`): ``__slots__`` from the annotations, one generic ``__init__``
    (positional and keyword arguments, a ``TypeError`` for a missing, unknown or
    repeated one), and ``attrs``' ``FrozenInstanceError`` on any assignment or deletion.
    Methods and properties are kept; ``copy`` and ``pickle`` keep a record.  A record
    derives from ``Record`` alone and is final: subclassing one is a ``TypeError``.
    Like an ``attrs`` slotted class, a record can be referred to weakly."""

    __slots__ = ("__weakref__",)

    if not TYPE_CHECKING:  # to mypy, assigning an attribute no field names stays an error
        __setattr__ = _refuse_setattr
        __delattr__ = _refuse_delattr

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The same refusals for a class built past the metaclass's ``__new__`` (by
        ``type.__new__``, which still calls this): a subclass of a record, or a class
        on ``Record`` whose fields and defaults were never checked."""
        _refuse_bases(cls.__qualname__, cls.__bases__)
        if "__record_names__" not in cls.__dict__:
            raise TypeError(f"record {cls.__qualname__}: built past Record's metaclass "
                            "(type.__new__); declare it with a class statement")
        object.__init_subclass__(**kwargs)

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        """Copied and pickled by its class and field values (``copy``, ``pickle``)."""
        names: tuple[str, ...] = self.__class__.__dict__["__record_names__"]
        return self.__class__, tuple(getattr(self, name) for name in names)


_RECORD = Record


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """The record of a class declared on :class:`Value` (``@record class X(Value)``): the
    same class as ``class X(Record)`` declares, with the same checks, but built twice —
    the class statement, then the record — so deriving from :class:`Record` is the
    cheaper spelling (what the package uses)."""
    if cls.__bases__ != (Value,):
        raise TypeError(f"record {cls.__qualname__}: a record derives from Value only")
    namespace = {key: value for key, value in cls.__dict__.items()
                 if key not in ("__dict__", "__weakref__")}
    user = _class_cell_user(namespace)
    if user is not None:
        raise TypeError(f"record {cls.__qualname__}: {user} uses super() or __class__")
    namespace["__qualname__"] = cls.__qualname__
    return cast("type[T]", _RecordMeta(cls.__name__, (Record,), namespace))


#: The :class:`Field` values of each record class, made on first use.
_FIELDS: dict[type, tuple[Field, ...]] = {}


def is_value_class(cls: object) -> bool:
    """Whether ``cls`` is an ``attrs`` class or a record class."""
    return isinstance(cls, type) and (_record_names(cls) is not None or attrs.has(cls))


def fields(cls: type) -> tuple[Any, ...]:
    """The fields of a value class, in order, each with ``name`` and ``default``
    (:data:`NOTHING` when required): ``attrs.fields`` of an attrs class, the
    :class:`Field` values of a record."""
    names = _record_names(cls)
    if names is None:
        return tuple(attrs.fields(cls))
    own = _FIELDS.get(cls)
    if own is None:
        defaults: tuple[Any, ...] = cls.__dict__["__record_defaults__"]
        own = _FIELDS[cls] = tuple(map(Field, names, defaults))
    return own


def replace(value: T, **changes: Any) -> T:
    """A copy of ``value`` with ``changes`` (``attrs.evolve`` for either kind of class;
    an unknown field name is a ``TypeError``)."""
    cls = value.__class__
    names = _record_names(cls)
    if names is None:
        evolved: T = attrs.evolve(cast(Any, value), **changes)
        return evolved
    kwargs = {name: getattr(value, name) for name in names}
    unknown = sorted(set(changes) - set(kwargs))
    if unknown:
        raise TypeError(f"{cls.__qualname__} has no field {unknown[0]!r}")
    kwargs.update(changes)
    made: T = cls(**kwargs)
    return made


def asdict(value: object) -> dict[str, Any]:
    """The fields of ``value`` (either kind of class), by name, in order — its own values,
    not converted (``attrs.asdict`` would recurse into values and collections)."""
    return {field.name: getattr(value, field.name) for field in fields(value.__class__)}
