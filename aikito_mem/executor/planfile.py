"""Saved plans: ``aikito sync project --dry-run --out PLANFILE`` and ``aikito apply PLANFILE``.

A plan file is TOML (written with ``tomli-w``, read with ``tomllib``)::

    schema = "aikito.plan/1"
    checksum = "sha256:<hex>"

    [plan]
    project = "demo"
    ...

``checksum`` is the sha256 of a canonical JSON serialisation of the ``plan`` table (keys
sorted, no white space, UTF-8), so any edit or truncation of the payload is refused.

The values are written and read by the generic codec of :mod:`aikito_mem.executor.plancodec`
(every value type-checked; a name that is not UTF-8 as ``{bytes = "<hex>"}``), and
``load_plan(dump_plan(p)) == p`` exactly.  A file that is malformed in any way is a
:class:`~aikito_mem.errors.PlanFileError` (exit 4), never a traceback ([E9]); whether a
well-formed plan is one the engine makes *now* is decided by :mod:`aikito_mem.commands.apply`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import tomllib
from typing import Any

from aikito_mem.errors import ConfigError, PlanFileError
from aikito_mem.executor.plancodec import Invalid, decode_attrs, describe, encode_attrs
from aikito_mem.model import Action, CheckoutState, Kind, Plan

__all__ = ["PLAN_SCHEMA", "checksum", "dump_plan", "load_plan", "read_plan", "write_plan"]

#: Version of the plan-file format.  Bump it whenever the meaning of a key changes.
PLAN_SCHEMA = "aikito.plan/1"

_TOP_KEYS = frozenset({"schema", "checksum", "plan"})

#: Largest plan file :func:`read_plan` reads (a plan of 10,000 references is ~10 MB).
MAX_PLAN_BYTES = 64 * 1024 * 1024


# ---------------------------------------------------------------------------------------
# Document level


def checksum(payload: Any) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _payload(plan: Plan) -> dict[str, Any]:
    if not isinstance(plan, Plan):
        raise TypeError(f"expected a Plan, got {type(plan).__name__}")
    return encode_attrs(plan, "plan")


def dump_plan(plan: Plan) -> bytes:
    """The plan file's bytes for ``plan`` (deterministic: same plan, same bytes)."""
    import tomli_w  # lazily: only ``--out`` needs it

    payload = _payload(plan)
    document = {"schema": PLAN_SCHEMA, "checksum": checksum(payload), "plan": payload}
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
        raise _unusable(path, "is nested deeper than the TOML reader allows (it was not "
                        "written by aikito)") from None


def _unusable(path: str, finding: str, *, code: str = "plan.invalid",
              project: object = None) -> PlanFileError:
    """The error of a plan file that cannot be used as it is: ``finding`` names what is
    wrong with it; the remedy is to write it again."""
    return PlanFileError(
        f"plan file {path!r} {finding} — re-create it with {_remedy(path, project)}",
        path=path,
        code=code,
    )


def _load_plan(data: bytes, *, path: str) -> Plan:
    if not data.strip():
        raise _unusable(path, "is empty (it was truncated?)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _unusable(
            path,
            f"is not valid UTF-8 (byte {exc.start}: {data[exc.start:exc.end]!r}); "
            "it was corrupted or not written by aikito",
        ) from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _unusable(path, f"is not valid TOML ({exc}); it was truncated or corrupted") \
            from exc
    raw_plan = document.get("plan")
    project = raw_plan.get("project") if isinstance(raw_plan, dict) else None

    schema = document.get("schema")
    if schema != PLAN_SCHEMA:
        found = "no schema" if schema is None else f"schema {schema!r}"
        raise PlanFileError(
            f"plan file {path!r} has {found}; expected {PLAN_SCHEMA!r} — re-create it with "
            f"this version: {_remedy(path, project)}",
            path=path,
            code="plan.schema",
        )
    recorded = document.get("checksum")
    if not isinstance(recorded, str):
        raise _unusable(path, "has no checksum (it was edited or not written by aikito)",
                        code="plan.checksum", project=project)
    extra = sorted(set(document) - _TOP_KEYS)
    if extra:
        raise _unusable(path, f"has an unexpected key {extra[0]!r} (it was edited)",
                        project=project)
    if not isinstance(raw_plan, dict):
        found = "no [plan] table" if raw_plan is None else f"'plan' as {describe(raw_plan)}"
        raise _unusable(path, f"has {found} (it was truncated or edited)", project=project)
    try:
        actual = checksum(raw_plan)
    except (TypeError, ValueError):
        actual = ""
    if actual != recorded:
        raise _unusable(path, "failed its checksum (it was edited or truncated)",
                        code="plan.checksum", project=project)
    try:
        plan = decode_attrs(Plan, raw_plan, "plan")
        assert isinstance(plan, Plan)
        _check_plan(plan)
    except Invalid as exc:
        raise _unusable(path, f"is invalid: {exc}", project=project) from exc
    return plan


_HEX = frozenset("0123456789abcdef")


def _absolute(value: str | None, where: str, *, optional: bool = False) -> None:
    if value is None:
        if not optional:
            raise Invalid(where, "is missing")
        return
    if not value.startswith("/"):
        raise Invalid(where, f"must be an absolute path, found {value!r}")


def _digest(value: str | None, where: str) -> None:
    if value is not None and (len(value) != 64 or not set(value) <= _HEX):
        raise Invalid(where, f"must be a sha256 hex digest, found {value!r}")


def _check_plan(plan: Plan) -> None:
    """Values a plan can only hold together: what later code relies on without asking
    again (a CREATE has a source, a registration its digest, paths are absolute).  Whether
    the plan is one the engine makes *now* is decided later, under the lock ([E9])."""
    name = plan.project
    if not name or "/" in name or name in (".", ".."):
        raise Invalid("plan.project", f"must be one project directory name, found {name!r}")
    _absolute(plan.workspace, "plan.workspace")
    _absolute(plan.config_path, "plan.config_path")
    _absolute(plan.explicit_path, "plan.explicit_path", optional=True)
    _digest(plan.config_sha256, "plan.config_sha256")
    _digest(plan.config_digest, "plan.config_digest")
    if plan.register is not None:
        if plan.config_sha256 is None:
            raise Invalid("plan.register", "is set without plan.config_sha256 (the sha256 "
                           "of agent.toml its compare-and-swap needs)")
        if plan.explicit_path is None:
            raise Invalid("plan.register", "is set without plan.explicit_path (only the "
                          "checkout named explicitly is registered)")
        if not plan.register.startswith(("/", "~/")) and plan.register != "~":
            raise Invalid("plan.register", f"must be an absolute path or ~/…, found "
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
            raise Invalid(f"{where}.entry", f"must be 'link' or 'directory', found "
                           f"{op.entry!r}")
        if op.entry == "directory" and op.action is not Action.UNLINK:
            raise Invalid(f"{where}.entry", f"is 'directory' for a {op.action.value} "
                           "(only an UNLINK prunes a directory)")
        if op.action is Action.UNLINK:
            if op.entry == "directory":
                ok, want = op.observed.kind is Kind.DIR, "a directory"
            else:
                ok = op.observed.kind is Kind.LINK and op.observed.literal is not None
                want = "a symlink and its literal"
            if not ok:
                raise Invalid(f"{where}.observed", f"must record {want} for this UNLINK, "
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


def _refuse_what_is_not_a_file(path: str) -> None:
    """:class:`ConfigError` ``plan.write`` when ``path`` (a final symlink followed) is a
    directory, or anything else that is not a regular file: renaming the plan over it
    would put a file in its place.  Nothing there (or a dangling link) is no error here:
    the write's own errors decide."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(mode):
        raise ConfigError(
            f"cannot write the plan to {path!r}: it is a directory — give a file name, "
            f"e.g. --out {os.path.join(path, 'plan.toml')}",
            code="plan.write",
            path=path,
        )
    if not stat.S_ISREG(mode):
        from aikito_mem.fsutil import describe_mode

        raise ConfigError(
            f"cannot write the plan to {path!r}: it is {describe_mode(mode)}, not a regular "
            "file — give the name of a file to write, e.g. --out plan.toml",
            code="plan.write",
            path=path,
        )


def write_plan(plan: Plan, path: str) -> None:
    """Write ``plan`` to ``path`` atomically: a temporary file in the same directory,
    fsynced, then renamed over ``path`` (an existing file is replaced, never written
    through; an existing directory is refused with :class:`ConfigError` ``plan.write``,
    and so is anything else that is not a regular file — a FIFO, a socket, a device such
    as ``/dev/null`` — or a symlink to one: the rename would put a file in its place).
    """
    data = dump_plan(plan)
    _refuse_what_is_not_a_file(path)
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
