"""``agent.toml``: reading, parsing and every [C*] rule, plus the lexical part of [K1]/[K2].

:func:`load_project_config` is the only function here that touches the filesystem: it opens
``<ws>/projects/<name>/agent.toml`` once and reads its bytes once (the only file contents
this engine reads).  :func:`parse_project_config` is pure: bytes in, a frozen
:class:`~aikito_mem.model.ProjectConfig` out, or a :class:`~aikito_mem.errors.ConfigError`
whose message names the file, the key or reference, what was expected, what was found, and
a remedy.

Decisions where SPEC §3/§5 is silent:

- Errors stop at the first problem, in file order (one message, one code).
- Indexes in messages are 0-based, as in ``memory[2]``; checkout labels are 1-based.
- ``name`` that is not a string is reported as ``config.name_mismatch`` too.
- [C4] compares references (and their ancestors, for the prefix rule) by their
  case-folded NFC form, so ``Team`` and ``team/a.md`` is a prefix clash too: on a
  case-insensitive file system the second would be created through the first's link.
- A ``path`` list gets labels ``1``, ``2``, … like a ``paths`` list; a ``path`` string gets
  ``default``.  When both ``paths`` and ``path`` are present, ``path`` is ignored with a
  warning finding ``config.path_ignored``.
- ``~user/…`` is not expanded: it stays relative, so it is an offline candidate with the
  [K2] warning.  ``~`` is expanded with the ``home`` given (``HOME`` of the environment).
- Absolute candidates are normalised with ``os.path.normpath`` and a leading ``//`` is
  collapsed to ``/``.  Relative ones keep their expanded text, and are de-duplicated by
  their normalised text.  A dropped duplicate produces a warning finding
  ``checkout.duplicate`` naming the label that won.
- ``agent.toml`` that is not a regular file (a directory, a FIFO…), a dangling symlink, or
  unreadable, is ``config.unreadable``; it is opened non-blocking so a FIFO cannot hang us.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from typing import Any, NoReturn

from aikito_mem.discovery import expand_home, home_directory
from aikito_mem.errors import ConfigError, ProjectNotFoundError
from aikito_mem.model import Candidate, Finding, ProjectConfig

__all__ = [
    "KNOWN_KEYS",
    "MAX_COMPONENT_BYTES",
    "list_projects",
    "load_project_config",
    "parse_project_config",
    "reference_problem",
]

#: Top-level keys this engine knows about (``skills`` belongs to other engines).
KNOWN_KEYS = frozenset({"name", "memory", "paths", "path", "skills"})
#: Keys a misspelling is compared against, in tie-breaking order ([C6]).
_SUGGESTABLE = ("memory", "paths", "path")
#: Largest edit distance that still earns a did-you-mean warning.
_MAX_DISTANCE = 2
#: Longest reference component, in bytes of UTF-8 ([C3]).
MAX_COMPONENT_BYTES = 255

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_TOML_POSITION = re.compile(r"^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$", re.S)
_TOML_AT_END = " (at end of document)"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_BOM = b"\xef\xbb\xbf"
_REFERENCE_RULES = (
    "expected a clean relative POSIX path below the workspace memory/ directory "
    "(no empty, '.' or '..' component, no leading or trailing '/', no backslash, "
    "no control or invisible format characters, no component with leading or trailing "
    "white space or longer than 255 bytes)"
)


# --------------------------------------------------------------------------- reading


def _check_project_name(name: str) -> None:
    if not name:
        why = "it is empty"
    elif "/" in name:
        why = "it contains '/'"
    elif name in (".", ".."):
        why = f"{name!r} names no project"
    elif "\x00" in name:
        why = "it contains a NUL character"
    else:
        return
    raise ConfigError(
        f"project name {name!r} is not valid: {why}; expected the name of one directory "
        "under <workspace>/projects/ — pass just the project name, e.g. 'demo'",
        code="config.project_name",
    )


def _read_config_bytes(name: str, project_dir: str, config_path: str) -> bytes:
    """Open ``agent.toml`` once, without blocking, and read its bytes once ([C7])."""
    try:
        fd = os.open(config_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        _raise_not_found(name, project_dir, config_path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"{config_path}: cannot open agent.toml ({reason}); expected a readable regular "
            "file holding the project's TOML configuration — fix its permissions or "
            "replace it with a regular file",
            code="config.unreadable",
            path=config_path,
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            found = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ConfigError(
                f"{config_path}: cannot read agent.toml: it is {found}; expected a regular "
                "file holding the project's TOML configuration — replace it with a file",
                code="config.unreadable",
                path=config_path,
            )
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, max(st.st_size + 1, 65536))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"{config_path}: cannot read agent.toml ({reason}); expected a readable regular "
            "file — check the file and its permissions",
            code="config.unreadable",
            path=config_path,
        ) from None
    finally:
        os.close(fd)


def _raise_not_found(name: str, project_dir: str, config_path: str) -> NoReturn:
    try:
        os.lstat(config_path)
    except OSError:
        pass
    else:  # lstat sees it, open does not: a dangling symlink
        raise ConfigError(
            f"{config_path}: agent.toml is a symlink to nothing (dangling); expected a "
            "regular file holding the project's TOML configuration — fix or replace the "
            "link",
            code="config.unreadable",
            path=config_path,
        )
    try:
        dst: os.stat_result | None = os.stat(project_dir)
    except OSError:
        dst = None
    if dst is not None and stat.S_ISDIR(dst.st_mode):
        found = f"the directory {project_dir}/ exists but has no agent.toml"
        remedy = f"create {config_path} to register the project, or check the project name"
    elif dst is not None:
        found = f"{project_dir} is not a directory"
        remedy = "check the project name"
    else:
        found = "found nothing"
        remedy = "create agent.toml there or check the project name"
    raise ProjectNotFoundError(
        f"project {name!r} not found: expected {config_path}, {found} — {remedy}",
        project=name,
        path=config_path,
    )


def load_project_config(
    workspace_root: str, name: str, *, environ: Mapping[str, str] | None = None
) -> ProjectConfig:
    """Read and validate ``<workspace_root>/projects/<name>/agent.toml``.

    ``environ`` (default ``os.environ``) supplies ``HOME`` for ``~`` in checkout paths.
    Raises :class:`ProjectNotFoundError` when the directory or file is missing ([C7]) and
    :class:`ConfigError` for anything invalid.
    """
    _check_project_name(name)
    project_dir = os.path.join(workspace_root, "projects", name)
    config_path = os.path.join(project_dir, "agent.toml")
    data = _read_config_bytes(name, project_dir, config_path)
    home = home_directory(environ) or ""
    return parse_project_config(
        data, name=name, project_dir=project_dir, config_path=config_path, home=home
    )


def sha256_hex(data: bytes) -> str:
    """The sha256 hex digest of ``agent.toml`` bytes ([K4], [P5]).

    Uses CPython's built-in ``_sha256`` (3.11) / ``_sha2`` (3.12+) module when present:
    importing ``hashlib`` loads OpenSSL, about 3 ms of every start-up; the digest is the
    same.
    """
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    return str(sha256(data).hexdigest())


def read_config_bytes(workspace_root: str, name: str) -> tuple[bytes, str, str]:
    """The exact bytes of a project's ``agent.toml``, its project dir and its path."""
    _check_project_name(name)
    project_dir = os.path.join(workspace_root, "projects", name)
    config_path = os.path.join(project_dir, "agent.toml")
    return _read_config_bytes(name, project_dir, config_path), project_dir, config_path


def list_projects(workspace_root: str) -> tuple[str, ...]:
    """Sorted names of the directories under ``<ws>/projects`` that hold an ``agent.toml``.

    An ``agent.toml`` counts when anything is there (``lstat``), so that a broken one is
    listed and then reported by :func:`load_project_config`, never silently skipped.
    """
    projects = os.path.join(workspace_root, "projects")
    names: list[str] = []
    try:
        with os.scandir(projects) as it:
            entries = list(it)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"workspace {workspace_root!r}: cannot list {projects}/ ({reason}); expected a "
            "directory holding one directory per project — create it or fix its permissions",
            code="config.workspace_no_projects",
            path=projects,
        ) from None
    for entry in entries:
        try:
            if not entry.is_dir():
                continue
            os.lstat(os.path.join(entry.path, "agent.toml"))
        except OSError:
            continue
        names.append(entry.name)
    return tuple(sorted(names))


# --------------------------------------------------------------------------- parsing


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return {"datetime": "a date-time", "date": "a date", "time": "a time"}.get(
        type(value).__name__, f"a {type(value).__name__}"
    )


def _found(value: object) -> str:
    """``a string ('x.md')``: the type, and the value when it is short and scalar."""
    kind = _type_name(value)
    if isinstance(value, list | dict):
        return kind
    shown = repr(value)
    return f"{kind} ({shown})" if len(shown) <= 60 else kind


def _key_name(key: str) -> str:
    """A table key as TOML would write it: bare when possible, else quoted."""
    if _BARE_KEY.match(key):
        return key
    if key.isprintable() and '"' not in key and "\\" not in key:
        return f'"{key}"'
    return repr(key)


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of character ``offset`` of ``text``."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def _decode(data: bytes, config_path: str) -> str:
    if data.startswith(_BOM):
        raise ConfigError(
            f"{config_path}:1:1: invalid TOML encoding: the file starts with a byte-order "
            "mark (BOM); expected UTF-8 without a BOM — remove it (save as 'UTF-8', not "
            "'UTF-8 with BOM')",
            code="config.toml_encoding",
            path=config_path,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start].decode("utf-8")
        line, col = _line_col(prefix, len(prefix))
        bad = data[exc.start : exc.end].hex(" ")
        raise ConfigError(
            f"{config_path}:{line}:{col}: invalid UTF-8: byte(s) {bad} ({exc.reason}); "
            "expected a UTF-8 text file — re-save the file as UTF-8",
            code="config.toml_encoding",
            path=config_path,
        ) from None


def _parse_toml(text: str, config_path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.match(message)
        if match is not None:
            msg, line, col = match["msg"], int(match["line"]), int(match["col"])
        else:
            msg = message.removesuffix(_TOML_AT_END)
            line, col = _line_col(text, len(text))
        raise ConfigError(
            f"{config_path}:{line}:{col}: invalid TOML: {msg} — fix the syntax at that "
            "position (see https://toml.io)",
            code="config.toml_syntax",
            path=config_path,
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{config_path}:1:1: invalid TOML: values are nested too deeply to parse — "
            "flatten the nested arrays or tables",
            code="config.toml_syntax",
            path=config_path,
        ) from None


def _edit_distance(a: str, b: str) -> int:
    """Optimal-string-alignment (Damerau–Levenshtein) distance."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, prev2[j - 2] + 1)
            cur[j] = best
        prev2, prev = prev, cur
    return prev[len(b)]


def _suggest(key: str) -> str | None:
    """The known key ``key`` is probably a misspelling of, or ``None`` ([C6])."""
    if key in KNOWN_KEYS or not 4 - _MAX_DISTANCE <= len(key) <= 6 + _MAX_DISTANCE:
        return None
    best: tuple[int, str] | None = None
    for known in _SUGGESTABLE:  # ties keep the earlier: memory, then paths, then path
        distance = _edit_distance(key, known)
        if distance <= _MAX_DISTANCE and (best is None or distance < best[0]):
            best = (distance, known)
    return None if best is None else best[1]


#: References that obviously satisfy [C3]: components of ASCII letters, digits and
#: ``._-+@=,~`` that start with a letter, digit or ``_`` (so never ``.``, ``..``, empty,
#: or with white space).  Anything else takes the full check below.
_PLAIN_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@=,~-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+@=,~-]*)*")


def reference_problem(ref: str) -> str | None:
    """Check one ``memory`` reference against [C3]: ``None`` if clean, else why not.

    The reason reads after the reference: ``'a//b'`` + ``has an empty component``.
    """
    if len(ref) <= MAX_COMPONENT_BYTES and _PLAIN_REF.fullmatch(ref) is not None:
        return None  # fast path: printable ASCII names, no '.'/'..' or empty component
    if not ref:
        return "is empty"
    control = _CONTROL.search(ref)
    if control is not None:
        return f"contains the control character U+{ord(control.group()):04X}"
    if not ref.isascii():
        import unicodedata

        for ch in ref:
            category = unicodedata.category(ch)
            if category == "Cf":
                return (
                    f"contains the invisible format character U+{ord(ch):04X} "
                    f"({unicodedata.name(ch, 'unnamed')}, Unicode category Cf)"
                )
            if category == "Cs":
                return f"contains the lone surrogate U+{ord(ch):04X}"
    if "\\" in ref:
        return "contains a backslash; use '/' to separate components"
    if ref.startswith("/"):
        return "is absolute (starts with '/'); it must be relative to the workspace memory/"
    if ref.endswith("/"):
        return "ends with '/'; remove the trailing slash"
    for index, component in enumerate(ref.split("/")):
        if not component:
            return "has an empty component ('//')"
        if component in (".", ".."):
            return f"has a {component!r} component"
        if component[0].isspace() or component[-1].isspace():
            return f"has a component with leading or trailing white space ({component!r})"
        size = len(component.encode("utf-8"))
        if size > MAX_COMPONENT_BYTES:
            return (
                f"has a component (number {index + 1}) of {size} bytes in UTF-8, longer "
                f"than {MAX_COMPONENT_BYTES}"
            )
    return None


def _nfc(ref: str) -> str:
    if ref.isascii():
        return ref
    import unicodedata

    return unicodedata.normalize("NFC", ref)


def _fold(ref: str) -> str:
    """The key two references collide under: NFC of the case fold of the NFC form."""
    if ref.isascii():
        return ref.lower()
    import unicodedata

    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", ref).casefold())


def _parse_memory(value: object, config_path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        if isinstance(value, str) and _BARE_KEY.match(value.replace("/", "").replace(".", "")):
            remedy = f'write memory = ["{value}"]'
        else:
            remedy = 'write a list of references, e.g. memory = ["team/conventions.md"]'
        raise ConfigError(
            f"{config_path}: key 'memory': expected a list of strings, found "
            f"{_found(value)} — {remedy}",
            code="config.memory_type",
            path=config_path,
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(
                f"{config_path}: memory[{index}]: expected a string (a reference below the "
                f"workspace memory/ directory), found {_found(item)} — quote it as one "
                "reference per list element, or remove it",
                code="config.memory_type",
                path=config_path,
            )
    refs: tuple[str, ...] = tuple(value)
    for index, ref in enumerate(refs):
        problem = reference_problem(ref)
        if problem is not None:
            raise ConfigError(
                f"{config_path}: memory[{index}] = {ref!r} is not a valid reference: it "
                f"{problem}; {_REFERENCE_RULES} — fix or remove this entry",
                code="config.reference_invalid",
                path=config_path,
            )
    _check_collisions(refs, config_path)
    return refs


def _check_collisions(refs: tuple[str, ...], config_path: str) -> None:
    """[C4] in one pass: duplicates (exact, NFC, case fold) and component prefixes.

    Every reference's fold key goes in ``by_key``; every proper ancestor of it in
    ``under`` (ancestor key → first reference below it).  Linear in the total length.
    """
    by_key: dict[str, int] = {}
    under: dict[str, int] = {}
    for index, ref in enumerate(refs):
        key = _fold(ref)
        first = by_key.get(key)
        if first is not None:
            _raise_duplicate(refs, first, index, config_path)
        below = under.get(key)
        if below is not None:
            _raise_prefix(refs, outer=index, inner=below, config_path=config_path)
        parts = key.split("/")
        ancestor = parts[0]
        for part in parts[1:]:
            outer = by_key.get(ancestor)
            if outer is not None:
                _raise_prefix(refs, outer=outer, inner=index, config_path=config_path)
            under.setdefault(ancestor, index)
            ancestor = f"{ancestor}/{part}"
        by_key[key] = index


def _raise_duplicate(refs: tuple[str, ...], first: int, second: int, config_path: str) -> NoReturn:
    a, b = refs[first], refs[second]
    if a == b:
        how = f"memory reference {a!r} is listed twice (memory[{first}] and memory[{second}])"
    else:
        if _nfc(a) == _nfc(b):  # they look alike: show the code points
            rule, shown_a, shown_b = "NFC normalisation", ascii(a), ascii(b)
        else:
            rule, shown_a, shown_b = "case folding", repr(a), repr(b)
        how = (
            f"memory references {shown_a} (memory[{first}]) and {shown_b} "
            f"(memory[{second}]) are equal after {rule}"
        )
    raise ConfigError(
        f"{config_path}: {how}; expected each reference once (they would share one runtime "
        "target on a normalising or case-insensitive file system) — remove one of them",
        code="config.reference_duplicate",
        path=config_path,
    )


def _raise_prefix(refs: tuple[str, ...], *, outer: int, inner: int, config_path: str) -> NoReturn:
    a, b = refs[outer], refs[inner]
    raise ConfigError(
        f"{config_path}: memory reference {b!r} (memory[{inner}]) is inside memory reference "
        f"{a!r} (memory[{outer}]); expected no reference below another, since {b!r} would "
        f"be created through the link of {a!r} — remove {b!r} (linking {a!r} already "
        f"exposes it) or replace {a!r} by the references you need inside it",
        code="config.reference_prefix",
        path=config_path,
    )


def _paths_error(where: str, expected: str, value: object, config_path: str) -> ConfigError:
    return ConfigError(
        f"{config_path}: {where}: expected {expected}, found {_found(value)} — write "
        'checkout paths as paths = ["~/code/demo"] or as a [paths] table of '
        'label = "path"',
        code="config.paths_type",
        path=config_path,
    )


def _raw_candidates(
    doc: Mapping[str, Any], config_path: str, findings: list[Finding]
) -> list[tuple[str, str]]:
    """``(label, raw)`` pairs from ``paths`` or, when absent, ``path`` ([C5])."""
    pairs: list[tuple[str, str]] = []
    if "paths" in doc:
        value = doc["paths"]
        if isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, str):
                    raise _paths_error(f"paths[{index}]", "a string", item, config_path)
                pairs.append((str(index + 1), item))
        elif isinstance(value, dict):
            for label, item in value.items():
                if not isinstance(item, str):
                    where = f"paths.{_key_name(label)}"
                    raise _paths_error(where, "a string", item, config_path)
                pairs.append((label, item))
        else:
            expected = "a list of strings or a table of label = string"
            raise _paths_error("key 'paths'", expected, value, config_path)
        if "path" in doc:
            findings.append(
                Finding(
                    code="config.path_ignored",
                    severity="warning",
                    message="key 'path' is ignored because 'paths' is present — "
                    "move its value into 'paths' and remove 'path'",
                    path=config_path,
                )
            )
    elif "path" in doc:
        value = doc["path"]
        if isinstance(value, str):
            pairs.append(("default", value))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, str):
                    raise _paths_error(f"path[{index}]", "a string", item, config_path)
                pairs.append((str(index + 1), item))
        else:
            raise _paths_error("key 'path'", "a string or a list of strings", value, config_path)
    return pairs


def _normalise(path: str) -> str:
    norm = os.path.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def _candidates(
    pairs: list[tuple[str, str]], home: str, findings: list[Finding], config_path: str
) -> tuple[Candidate, ...]:
    """[K1] lexical part and [K2]: expand ``~``, normalise, de-duplicate, flag relatives."""
    home_dir = home if os.path.isabs(home) else None
    seen: dict[str, str] = {}
    out: list[Candidate] = []
    for label, raw in pairs:
        expanded = expand_home(raw, home_dir)
        absolute = os.path.isabs(expanded)
        norm = _normalise(expanded)
        first = seen.get(norm)
        if first is not None:
            findings.append(
                Finding(
                    code="checkout.duplicate",
                    severity="warning",
                    message=f"checkout {label} path {raw!r} is the same path as checkout "
                    f"{first}; ignored",
                    path=config_path,
                )
            )
            continue
        seen[norm] = label
        out.append(
            Candidate(
                label=label, raw=raw, path=norm if absolute else expanded, absolute=absolute
            )
        )
        if not absolute:
            findings.append(
                Finding(
                    code="checkout.not_absolute",
                    severity="warning",
                    message=f"checkout {label} path {raw!r} is not an absolute path on this "
                    "system; treated as offline",
                    path=None,
                )
            )
    return tuple(out)


def parse_project_config(
    data: bytes, *, name: str, project_dir: str, config_path: str, home: str
) -> ProjectConfig:
    """Validate the exact bytes of an ``agent.toml`` ([C1]–[C6], [K1], [K2]); no I/O.

    ``home`` expands ``~`` in checkout paths (an empty or relative ``home`` expands
    nothing).
    """
    digest = sha256_hex(data)
    doc = _parse_toml(_decode(data, config_path), config_path)
    findings: list[Finding] = []

    for key in doc:
        suggestion = _suggest(key)
        if suggestion is not None:
            findings.append(
                Finding(
                    code="config.unknown_key",
                    severity="warning",
                    message=f"unknown key {key!r} — did you mean {suggestion!r}?",
                    path=config_path,
                )
            )

    if "name" in doc:
        value = doc["name"]
        if not isinstance(value, str):
            raise ConfigError(
                f"{config_path}: key 'name': expected a string equal to the project directory "
                f"name {name!r}, found {_found(value)} — set name = \"{name}\" or remove it",
                code="config.name_mismatch",
                path=config_path,
            )
        if value != name:
            raise ConfigError(
                f"{config_path}: key 'name' is {value!r} but the project directory is "
                f"{name!r}; expected them to be equal — set name = \"{name}\", remove the "
                "key, or rename the directory",
                code="config.name_mismatch",
                path=config_path,
            )

    memory = _parse_memory(doc["memory"], config_path) if "memory" in doc else ()
    pairs = _raw_candidates(doc, config_path, findings)
    candidates = _candidates(pairs, home, findings, config_path)
    return ProjectConfig(
        name=name,
        project_dir=project_dir,
        config_path=config_path,
        memory=memory,
        candidates=candidates,
        findings=tuple(findings),
        sha256=digest,
    )
