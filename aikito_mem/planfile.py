"""Saved plans: ``aikito sync project --dry-run --out PLANFILE`` and ``aikito apply PLANFILE``.

A plan file is TOML (written with ``tomli-w``, read with ``tomllib``)::

    schema = "aikito.plan/1"
    checksum = "sha256:<hex>"

    [plan]
    project = "demo"
    ...

``checksum`` is the sha256 of a canonical JSON serialisation of the ``plan`` table (keys
sorted, no white space, UTF-8), so any edit or truncation of the payload is refused.

The codec is generic: it walks ``attrs.fields()`` of the model classes and their resolved
type hints.  Enums are written by value; ``None`` is written by omitting the key (TOML has
no null); a variable-length tuple is an array; a fixed-length tuple (the ``(rel, observed)``
pairs of ``CheckoutPlan.dirs``) is a table with named members.  A key that is absent on
reading takes the field's default (or ``None`` for an optional field), so a plan written
before the model gained a defaulted field still loads.  Every value is type-checked on
reading, and ``load_plan(dump_plan(p)) == p`` exactly.

Paths that are not valid UTF-8 (``os.fsdecode`` surrogate escapes) are written as their
original bytes and read back the same way.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import json
import os
import secrets
import tomllib
import types
import typing
from typing import Any

import attrs

from aikito_mem.errors import ConfigError, PlanFileError
from aikito_mem.model import Action, CheckoutPlan, CheckoutState, Kind, Plan

__all__ = ["PLAN_SCHEMA", "dump_plan", "load_plan", "read_plan", "write_plan"]

#: Version of the plan-file format.  Bump it whenever the meaning of a key changes.
PLAN_SCHEMA = "aikito.plan/1"

#: Member names of fixed-length tuples, by (class, field).  Others use "0", "1", ...
_TUPLE_NAMES: dict[tuple[type, str], tuple[str, ...]] = {
    (CheckoutPlan, "dirs"): ("rel", "observed"),
}

_TOP_KEYS = frozenset({"schema", "checksum", "plan"})

#: The one key of the table that holds a name that is not valid UTF-8, as hex bytes.
_BYTES_KEY = "bytes"

#: Largest plan file :func:`read_plan` reads (a plan of 10,000 references is ~10 MB).
MAX_PLAN_BYTES = 64 * 1024 * 1024


def _is_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Invalid(Exception):
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


def _describe(raw: object) -> str:
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
    if isinstance(tp, type) and attrs.has(tp):
        if not isinstance(value, tp):
            raise TypeError(f"{where}: expected {tp.__name__}, got {value!r}")
        return _encode_attrs(value, where)
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


def _encode_attrs(obj: Any, where: str) -> dict[str, Any]:
    cls: type = type(obj)
    hints = _hints(cls)
    out: dict[str, Any] = {}
    for field in attrs.fields(cls):
        value = getattr(obj, field.name)
        if value is None:
            if field.default is not attrs.NOTHING and field.default is not None:
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
            except _Invalid as exc:
                problem = exc.problem
                if exc.where != where:
                    raise
        raise _Invalid(where, problem)
    if tp is str:
        return _decode_str(raw, where)
    if tp is bool or tp is int:
        if type(raw) is not tp:
            raise _Invalid(where, f"must be {_describe(tp())}, found {_describe(raw)}")
        return raw
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        allowed = [m.value for m in tp]
        if raw not in allowed or not isinstance(raw, type(allowed[0])):
            choices = ", ".join(repr(v) for v in allowed)
            raise _Invalid(where, f"must be one of {choices}, found {raw!r}")
        return tp(raw)
    if isinstance(tp, type) and attrs.has(tp):
        return _decode_attrs(tp, raw, where)
    if typing.get_origin(tp) is tuple:
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            if not isinstance(raw, list):
                raise _Invalid(where, f"must be an array, found {_describe(raw)}")
            return tuple(
                _decode(item, targs[0], f"{where}[{i}]", names) for i, item in enumerate(raw)
            )
        keys = names or tuple(str(i) for i in range(len(targs)))
        if not isinstance(raw, dict):
            raise _Invalid(where, f"must be a table, found {_describe(raw)}")
        extra = sorted(set(raw) - set(keys))
        if extra:
            raise _Invalid(where, f"has an unexpected key {extra[0]!r}")
        members = []
        for key, member in zip(keys, targs, strict=True):
            if key in raw:
                members.append(_decode(raw[key], member, f"{where}.{key}", None))
            elif _is_optional(member):
                members.append(None)
            else:
                raise _Invalid(f"{where}.{key}", "is missing")
        return tuple(members)
    raise TypeError(f"{where}: unsupported type {tp!r} in the plan model")


def _decode_str(raw: Any, where: str) -> str:
    if isinstance(raw, dict) and set(raw) == {_BYTES_KEY} and isinstance(raw[_BYTES_KEY], str):
        try:
            data = bytes.fromhex(raw[_BYTES_KEY])
        except ValueError:
            raise _Invalid(where, "has bytes that are not hexadecimal digits") from None
        value = data.decode("utf-8", "surrogateescape")
        if _is_utf8(value):
            raise _Invalid(where, "is written as bytes but is valid UTF-8 (expected a string)")
    elif isinstance(raw, str):
        value = raw
    else:
        raise _Invalid(where, f"must be a string, found {_describe(raw)}")
    if "\0" in value:
        raise _Invalid(where, "contains a NUL character (no path or name can)")
    return value


def _decode_attrs(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise _Invalid(where, f"must be a table, found {_describe(raw)}")
    hints = _hints(cls)
    fields = [f for f in attrs.fields(cls) if f.init]
    extra = sorted(set(raw) - {f.name for f in fields})
    if extra:
        raise _Invalid(where, f"has an unexpected key {extra[0]!r}")
    kwargs: dict[str, Any] = {}
    for field in fields:
        tp = hints[field.name]
        key = f"{where}.{field.name}"
        if field.name in raw:
            names = _TUPLE_NAMES.get((cls, field.name))
            kwargs[field.alias] = _decode(raw[field.name], tp, key, names)
        elif field.default is not attrs.NOTHING:
            continue  # the class supplies its default
        elif _is_optional(tp):
            kwargs[field.alias] = None
        else:
            raise _Invalid(key, "is missing")
    return cls(**kwargs)


# ---------------------------------------------------------------------------------------
# Document level


def _checksum(payload: Any) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _payload(plan: Plan) -> dict[str, Any]:
    if not isinstance(plan, Plan):
        raise TypeError(f"expected a Plan, got {type(plan).__name__}")
    return _encode_attrs(plan, "plan")


def dump_plan(plan: Plan) -> bytes:
    """The plan file's bytes for ``plan`` (deterministic: same plan, same bytes)."""
    import tomli_w  # lazily: only ``--out`` needs it

    payload = _payload(plan)
    document = {"schema": PLAN_SCHEMA, "checksum": _checksum(payload), "plan": payload}
    return tomli_w.dumps(document).encode("utf-8")


def _remedy(path: str, project: object = None) -> str:
    import shlex

    name = f" {shlex.quote(project)}" if isinstance(project, str) and project else ""
    return f"aikito sync project{name} --dry-run --out {shlex.quote(path)}"


def load_plan(data: bytes, *, path: str) -> Plan:
    """Parse and verify plan-file bytes; ``path`` is only used in messages.

    Raises :class:`PlanFileError` with code ``plan.invalid`` (empty, truncated, not UTF-8,
    not TOML, nested too deep, a value of the wrong type or shape, or values that no plan
    can hold together — see :func:`_check_plan`), ``plan.schema`` (missing or other
    schema) or ``plan.checksum`` (missing or failing checksum).  Never anything else
    ([E9]: a malformed plan file is a configuration error, never a traceback).
    """
    try:
        return _load_plan(data, path=path)
    except RecursionError:
        raise PlanFileError(
            f"plan file {path!r} is nested deeper than the TOML reader allows (it was not "
            f"written by aikito) — re-create it with {_remedy(path)}",
            path=path,
            code="plan.invalid",
        ) from None


def _load_plan(data: bytes, *, path: str) -> Plan:
    label = f"plan file {path!r}"
    if not data.strip():
        raise PlanFileError(
            f"{label} is empty (it was truncated?) — re-create it with {_remedy(path)}",
            path=path,
            code="plan.invalid",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanFileError(
            f"{label} is not valid UTF-8 (byte {exc.start}: {data[exc.start:exc.end]!r}); "
            f"it was corrupted or not written by aikito — re-create it with "
            f"{_remedy(path)}",
            path=path,
            code="plan.invalid",
        ) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanFileError(
            f"{label} is not valid TOML ({exc}); it was truncated or corrupted — "
            f"re-create it with {_remedy(path)}",
            path=path,
            code="plan.invalid",
        ) from exc
    raw_plan = document.get("plan")
    project = raw_plan.get("project") if isinstance(raw_plan, dict) else None

    schema = document.get("schema")
    if schema != PLAN_SCHEMA:
        found = "no schema" if schema is None else f"schema {schema!r}"
        raise PlanFileError(
            f"{label} has {found}; expected {PLAN_SCHEMA!r} — re-create it with this "
            f"version: {_remedy(path, project)}",
            path=path,
            code="plan.schema",
        )
    checksum = document.get("checksum")
    if not isinstance(checksum, str):
        raise PlanFileError(
            f"{label} has no checksum (it was edited or not written by aikito) — "
            f"re-create it with {_remedy(path, project)}",
            path=path,
            code="plan.checksum",
        )
    extra = sorted(set(document) - _TOP_KEYS)
    if extra:
        raise PlanFileError(
            f"{label} has an unexpected key {extra[0]!r} (it was edited) — "
            f"re-create it with {_remedy(path, project)}",
            path=path,
            code="plan.invalid",
        )
    if not isinstance(raw_plan, dict):
        found = "no [plan] table" if raw_plan is None else f"'plan' as {_describe(raw_plan)}"
        raise PlanFileError(
            f"{label} has {found} (it was truncated or edited) — "
            f"re-create it with {_remedy(path, project)}",
            path=path,
            code="plan.invalid",
        )
    try:
        actual = _checksum(raw_plan)
    except (TypeError, ValueError):
        actual = ""
    if actual != checksum:
        raise PlanFileError(
            f"{label} failed its checksum (it was edited or truncated) — "
            f"re-create it with {_remedy(path, project)}",
            path=path,
            code="plan.checksum",
        )
    try:
        plan = _decode_attrs(Plan, raw_plan, "plan")
        assert isinstance(plan, Plan)
        _check_plan(plan)
    except _Invalid as exc:
        raise PlanFileError(
            f"{label} is invalid: {exc} — re-create it with {_remedy(path, project)}",
            path=path,
            code="plan.invalid",
        ) from exc
    return plan


_HEX = frozenset("0123456789abcdef")


def _absolute(value: str | None, where: str, *, optional: bool = False) -> None:
    if value is None:
        if not optional:
            raise _Invalid(where, "is missing")
        return
    if not value.startswith("/"):
        raise _Invalid(where, f"must be an absolute path, found {value!r}")


def _digest(value: str | None, where: str) -> None:
    if value is not None and (len(value) != 64 or not set(value) <= _HEX):
        raise _Invalid(where, f"must be a sha256 hex digest, found {value!r}")


def _check_plan(plan: Plan) -> None:
    """Values a plan can only hold together: what later code relies on without asking
    again (a CREATE has a source, a registration its digest, paths are absolute).  Whether
    the plan is one the engine makes *now* is decided later, under the lock ([E9])."""
    name = plan.project
    if not name or "/" in name or name in (".", ".."):
        raise _Invalid("plan.project", f"must be one project directory name, found {name!r}")
    _absolute(plan.workspace, "plan.workspace")
    _absolute(plan.config_path, "plan.config_path")
    _absolute(plan.explicit_path, "plan.explicit_path", optional=True)
    _digest(plan.config_sha256, "plan.config_sha256")
    _digest(plan.config_digest, "plan.config_digest")
    if plan.register is not None:
        if plan.config_sha256 is None:
            raise _Invalid("plan.register", "is set without plan.config_sha256 (the sha256 "
                           "of agent.toml its compare-and-swap needs)")
        if plan.register != plan.explicit_path:
            raise _Invalid("plan.register", f"must equal plan.explicit_path, found "
                           f"{plan.register!r}")
    for i, check in enumerate(plan.sources):
        _absolute(check.path, f"plan.sources[{i}].path")
    for i, co in enumerate(plan.checkouts):
        if co.state is CheckoutState.ACTIVE:
            _absolute(co.path, f"plan.checkouts[{i}].path")
    for i, op in enumerate(plan.operations):
        where = f"plan.operations[{i}]"
        _absolute(op.target, f"{where}.target")
        _absolute(op.source, f"{where}.source", optional=op.action is not Action.CREATE)
        if op.entry not in ("link", "directory"):
            raise _Invalid(f"{where}.entry", f"must be 'link' or 'directory', found "
                           f"{op.entry!r}")
        if op.entry == "directory" and op.action is not Action.UNLINK:
            raise _Invalid(f"{where}.entry", f"is 'directory' for a {op.action.value} "
                           "(only an UNLINK prunes a directory)")
        if op.action is Action.UNLINK:
            if op.entry == "directory":
                ok, want = op.observed.kind is Kind.DIR, "a directory"
            else:
                ok = op.observed.kind is Kind.LINK and op.observed.literal is not None
                want = "a symlink and its literal"
            if not ok:
                raise _Invalid(f"{where}.observed", f"must record {want} for this UNLINK, "
                               f"found {op.observed.describe()}")


def read_plan(path: str) -> Plan:
    """Read and verify the plan file at ``path`` (see :func:`load_plan`).

    Read through :func:`~aikito_mem.fsutil.read_regular`: never blocks (a FIFO is
    refused), reads a regular file only and at most :data:`MAX_PLAN_BYTES`.  A final
    symlink is followed: the user named the file, and reading it writes nothing.
    """
    from aikito_mem.fsutil import (
        FileTooLargeError,
        NotRegularFileError,
        describe_mode,
        read_regular,
    )

    try:
        data, _ = read_regular(path, follow=True, limit=MAX_PLAN_BYTES)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise PlanFileError(
            f"plan file {path!r} does not exist — create it with "
            "aikito sync project --dry-run --out PLANFILE",
            path=path,
            code="plan.missing",
        ) from exc
    except NotRegularFileError as exc:
        raise PlanFileError(
            f"plan file {path!r} is not a regular file (it is {describe_mode(exc.st.st_mode)}); "
            "expected a file written by aikito sync project --dry-run --out PLANFILE",
            path=path,
            code="plan.invalid",
        ) from None
    except FileTooLargeError as exc:
        raise PlanFileError(
            f"plan file {path!r} is larger than {exc.limit} bytes ({exc.size} bytes); "
            "a plan file written by aikito is far smaller — re-create it with "
            "aikito sync project --dry-run --out PLANFILE",
            path=path,
            code="plan.invalid",
        ) from None
    except OSError as exc:
        raise PlanFileError(
            f"cannot read plan file {path!r}: {exc.strerror or exc}",
            path=path,
            code="plan.invalid",
        ) from exc
    except ValueError as exc:  # a NUL in the path given
        raise PlanFileError(
            f"cannot read plan file {path!r}: {exc}", path=path, code="plan.invalid",
        ) from None
    return load_plan(data, path=path)


def write_plan(plan: Plan, path: str) -> None:
    """Write ``plan`` to ``path`` atomically: a temporary file in the same directory,
    fsynced, then renamed over ``path`` (an existing file is replaced, never written
    through; an existing directory is refused with :class:`ConfigError` ``plan.write``).
    """
    data = dump_plan(plan)
    if os.path.isdir(path):
        raise ConfigError(
            f"cannot write the plan to {path!r}: it is a directory — give a file name, "
            f"e.g. --out {os.path.join(path, 'plan.toml')}",
            code="plan.write",
            path=path,
        )
    directory, name = os.path.split(path)
    directory = directory or "."
    temp: str | None = None
    fd = -1
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(16):
            candidate = os.path.join(
                directory, f".{name}.aikito-{os.getpid()}-{secrets.token_hex(4)}.tmp"
            )
            try:
                fd = os.open(candidate, flags, 0o666)
            except FileExistsError:
                continue
            temp = candidate
            break
        else:
            raise FileExistsError(f"no free temporary name next to {path}")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(temp, path)
        temp = None
    except OSError as exc:
        raise ConfigError(
            f"cannot write the plan to {path!r}: {exc.strerror or exc}",
            code="plan.write",
            path=path,
        ) from exc
    finally:
        if fd >= 0:
            os.close(fd)
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
