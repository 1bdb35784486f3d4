"""The generic codec of saved plans: model values <-> TOML-able data ([E9]).

It walks the fields of the model classes (``attrs`` classes and records alike,
:func:`aikito_mem.values.fields`) and their resolved type hints.  Enums
are written by value; ``None`` is written by omitting the key (TOML has no null); a
variable-length tuple is an array; a fixed-length tuple (the ``(rel, observed)`` pairs of
``CheckoutPlan.dirs``) is a table with named members.  A key that is absent on reading
takes the field's default (or ``None`` for an optional field), so a plan written before
the model gained a defaulted field still loads.  Every value is type-checked on reading
(no NUL in any string), and ``decode_attrs(Plan, encode_attrs(p)) == p`` exactly.

A string that is not valid UTF-8 (a name with ``os.fsdecode`` surrogate escapes) is
written as the table ``{bytes = "<hex>"}``, so that a plan file is always valid UTF-8.
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from typing import Any

from aikito_mem.model import CheckoutPlan
from aikito_mem.values import NOTHING, fields, is_value_class

__all__ = ["Invalid", "decode_attrs", "describe", "encode_attrs"]

#: Member names of fixed-length tuples, by (class, field).  Others use "0", "1", ...
_TUPLE_NAMES: dict[tuple[type, str], tuple[str, ...]] = {
    (CheckoutPlan, "dirs"): ("rel", "observed"),
}

#: The one key of the table that holds a name that is not valid UTF-8, as hex bytes.
_BYTES_KEY = "bytes"

def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Invalid(Exception):
    """A payload value of the wrong shape; ``where`` is its dotted location."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where} {problem}")
        self.where = where
        self.problem = problem


# ---------------------------------------------------------------------------------------
# Type introspection


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    """The members of a union type, or ``None`` when ``tp`` is not a union."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return None


def _is_optional(tp: Any) -> bool:
    args = _union_args(tp)
    return args is not None and type(None) in args


def describe(raw: object) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    return names.get(type(raw), f"a {type(raw).__name__}")


# ---------------------------------------------------------------------------------------
# Encoding


def _encode(value: Any, tp: Any, where: str, names: tuple[str, ...] | None) -> Any:
    args = _union_args(tp)
    if args is not None:
        members = [a for a in args if a is not type(None)]
        for member in members:
            try:
                return _encode(value, member, where, names)
            except TypeError:
                continue
        raise TypeError(f"{where}: {value!r} matches none of {tp}")
    if tp is bool or tp is int or tp is str:
        if type(value) is not tp:
            raise TypeError(f"{where}: expected {tp.__name__}, got {value!r}")
        if isinstance(value, str) and not _is_utf8(value):
            # A name that is not UTF-8 (os.fsdecode's surrogate escapes): its bytes, in
            # hexadecimal, so that the file itself is always valid UTF-8.
            return {_BYTES_KEY: value.encode("utf-8", "surrogateescape").hex()}
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if not isinstance(value, tp):
            raise TypeError(f"{where}: expected {tp.__name__}, got {value!r}")
        return value.value
    if is_value_class(tp):
        if not isinstance(value, tp):
            raise TypeError(f"{where}: expected {tp.__name__}, got {value!r}")
        return encode_attrs(value, where)
    if typing.get_origin(tp) is tuple:
        if not isinstance(value, tuple):
            raise TypeError(f"{where}: expected a tuple, got {value!r}")
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            out = []
            for i, item in enumerate(value):
                if item is None:
                    raise TypeError(f"{where}[{i}]: None cannot be written in an array")
                out.append(_encode(item, targs[0], f"{where}[{i}]", names))
            return out
        keys = names or tuple(str(i) for i in range(len(targs)))
        if len(value) != len(targs) or len(keys) != len(targs):
            raise TypeError(f"{where}: expected {len(targs)} members, got {value!r}")
        table = {}
        for key, item, member in zip(keys, value, targs, strict=True):
            if item is not None:
                table[key] = _encode(item, member, f"{where}.{key}", None)
        return table
    raise TypeError(f"{where}: unsupported type {tp!r} in the plan model")


def encode_attrs(obj: Any, where: str) -> dict[str, Any]:
    cls: type = type(obj)
    hints = _hints(cls)
    out: dict[str, Any] = {}
    for field in fields(cls):
        value = getattr(obj, field.name)
        if value is None:
            if field.default is not NOTHING and field.default is not None:
                raise TypeError(
                    f"{where}.{field.name}: None cannot be written (its default is not None)"
                )
            continue
        names = _TUPLE_NAMES.get((cls, field.name))
        out[field.name] = _encode(value, hints[field.name], f"{where}.{field.name}", names)
    return out


# ---------------------------------------------------------------------------------------
# Decoding


def _decode(raw: Any, tp: Any, where: str, names: tuple[str, ...] | None) -> Any:
    args = _union_args(tp)
    if args is not None:
        members = [a for a in args if a is not type(None)]
        problem = ""
        for member in members:
            try:
                return _decode(raw, member, where, names)
            except Invalid as exc:
                problem = exc.problem
                if exc.where != where:
                    raise
        raise Invalid(where, problem)
    if tp is str:
        return _decode_str(raw, where)
    if tp is bool or tp is int:
        if type(raw) is not tp:
            raise Invalid(where, f"must be {describe(tp())}, found {describe(raw)}")
        return raw
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        allowed = [m.value for m in tp]
        if raw not in allowed or not isinstance(raw, type(allowed[0])):
            choices = ", ".join(repr(v) for v in allowed)
            raise Invalid(where, f"must be one of {choices}, found {raw!r}")
        return tp(raw)
    if is_value_class(tp):
        return decode_attrs(tp, raw, where)
    if typing.get_origin(tp) is tuple:
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            if not isinstance(raw, list):
                raise Invalid(where, f"must be an array, found {describe(raw)}")
            return tuple(
                _decode(item, targs[0], f"{where}[{i}]", names) for i, item in enumerate(raw)
            )
        keys = names or tuple(str(i) for i in range(len(targs)))
        if not isinstance(raw, dict):
            raise Invalid(where, f"must be a table, found {describe(raw)}")
        extra = sorted(set(raw) - set(keys))
        if extra:
            raise Invalid(where, f"has an unexpected key {extra[0]!r}")
        members = []
        for key, member in zip(keys, targs, strict=True):
            if key in raw:
                members.append(_decode(raw[key], member, f"{where}.{key}", None))
            elif _is_optional(member):
                members.append(None)
            else:
                raise Invalid(f"{where}.{key}", "is missing")
        return tuple(members)
    raise TypeError(f"{where}: unsupported type {tp!r} in the plan model")


def _decode_str(raw: Any, where: str) -> str:
    if isinstance(raw, dict) and set(raw) == {_BYTES_KEY} and isinstance(raw[_BYTES_KEY], str):
        try:
            data = bytes.fromhex(raw[_BYTES_KEY])
        except ValueError:
            raise Invalid(where, "has bytes that are not hexadecimal digits") from None
        value = data.decode("utf-8", "surrogateescape")
        if _is_utf8(value):
            raise Invalid(where, "is written as bytes but is valid UTF-8 (expected a string)")
    elif isinstance(raw, str):
        value = raw
    else:
        raise Invalid(where, f"must be a string, found {describe(raw)}")
    if "\0" in value:
        raise Invalid(where, "contains a NUL character (no path or name can)")
    return value


def decode_attrs(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise Invalid(where, f"must be a table, found {describe(raw)}")
    hints = _hints(cls)
    declared = fields(cls)  # every field is an __init__ argument of its own name
    extra = sorted(set(raw) - {f.name for f in declared})
    if extra:
        raise Invalid(where, f"has an unexpected key {extra[0]!r}")
    kwargs: dict[str, Any] = {}
    for field in declared:
        tp = hints[field.name]
        key = f"{where}.{field.name}"
        if field.name in raw:
            names = _TUPLE_NAMES.get((cls, field.name))
            kwargs[field.name] = _decode(raw[field.name], tp, key, names)
        elif field.default is not NOTHING:
            continue  # the class supplies its default
        elif _is_optional(tp):
            kwargs[field.name] = None
        else:
            raise Invalid(key, "is missing")
    return cls(**kwargs)
