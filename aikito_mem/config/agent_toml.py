"""``agent.toml``: parsing and every [C*] rule, and [G1].

Pure: :func:`parse_project_config` takes the exact bytes of an ``agent.toml`` and returns a
frozen :class:`~aikito_mem.model.ProjectConfig`, or raises a
:class:`~aikito_mem.errors.ConfigError` whose message names the file, the key, label or
index, what was expected, what was found, and a remedy.  Nothing here touches the
filesystem: reading the file and listing projects live in :mod:`aikito_mem.config.projects`.

Decisions where SPEC §3/§5/§13 is silent:

- Errors stop at the first problem (one message, one code): first the near-miss keys of
  [C6] in file order, then ``name``, ``memory``, ``skills``, ``sync_mode``, the checkout
  paths.
- Indexes in messages are 0-based, as in ``memory[2]``; checkout labels are 1-based.
- ``name`` that is not a string is reported as ``config.name_mismatch`` too.
- [C4] compares references (and their ancestors, for the prefix rule) by their
  case-folded NFC form, so ``Team`` and ``team/a.md`` is a prefix clash too: on a
  case-insensitive file system the second would be created through the first's link.
- [C6] near misses: only the closest read keys count (``paht`` resembles ``path``, not
  ``paths``); the near miss is an error when one of them is absent.  ``path`` is read
  only when ``paths`` is absent, so a near miss of ``path`` beside ``paths`` is a
  warning.  The remedy also says how to keep a key that belongs to another tool: write
  the resembled key explicitly (``memory = []``), so its absence cannot be a typo.
- The checkout paths ([C5], [K1], [K2]) are turned into candidates by
  :mod:`aikito_mem.config.candidates`; the [C3] name rules live in :mod:`aikito_mem.config.names`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from aikito_mem.config.candidates import candidates, raw_candidates
from aikito_mem.config.names import (
    MAX_COMPONENT_BYTES,
    component_problem,
    first_clash,
    found_value,
    nfc,
    reference_problem,
)
from aikito_mem.errors import ConfigError
from aikito_mem.model import Finding, ProjectConfig

__all__ = [
    "KNOWN_KEYS",
    "MAX_COMPONENT_BYTES",
    "READ_KEYS",
    "near_misses",
    "parse_project_config",
    "reference_problem",
]

#: Top-level keys the engine reads, in the tie-breaking order of near misses ([C6]).
READ_KEYS = ("memory", "paths", "path", "skills", "sync_mode", "worktrees")
#: Every top-level key this engine knows about.
KNOWN_KEYS = frozenset({"name", *READ_KEYS})
#: Largest case-insensitive Damerau–Levenshtein distance of a near miss ([C6]).
_MAX_DISTANCE = 2

#: What would happen if a near miss of each read key were obeyed, and how to say "no,
#: this key belongs to another tool" ([C6]).
_CONSEQUENCE = {
    "memory": ("every memory link of this project would be removed", "memory = []"),
    "paths": ("the checkouts you meant to list there would not be synced", "paths = []"),
    "path": ("the checkout you meant to name there would not be synced", "path = []"),
    "skills": ("every skill link of this project would be removed", "skills = []"),
    "sync_mode": ("skills would be linked, whatever mode you meant", 'sync_mode = "link"'),
    "worktrees": ("the git worktrees of its checkouts would not be synced",
                  "worktrees = false"),
}

#: Patterns of the error and message paths: compiled (and cached by ``re``) on first use,
#: not at import ([§12]).
_TOML_POSITION = r"(?s)^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$"
_TOML_AT_END = " (at end of document)"
_BARE_KEY = r"^[A-Za-z0-9_-]+$"
_BOM = b"\xef\xbb\xbf"
_REFERENCE_RULES = (
    "expected a clean relative POSIX path below the workspace memory/ directory "
    "(no empty, '.' or '..' component, no leading or trailing '/', no backslash, "
    "no control or invisible format characters, no component with leading or trailing "
    "white space or longer than 255 bytes)"
)
_SKILL_RULES = (
    "expected the name of one directory of <workspace>/skills (not empty, no '/', not "
    "'.' or '..', no backslash, no control or invisible format characters, no leading or "
    "trailing white space, at most 255 bytes)"
)


# --------------------------------------------------------------------------- [C1]


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
        match = re.match(_TOML_POSITION, message)
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


# --------------------------------------------------------------------------- [C6] keys


def toml_document(data: bytes, path: str) -> dict[str, Any]:
    """``data`` (a TOML file's bytes) as a table, or a :class:`ConfigError` naming ``path``,
    line and column ([C1]).  Shared by ``agent.toml`` and the agent registry ([G3])."""
    return _parse_toml(_decode(data, path), path)


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


_MIN_LEN = min(map(len, READ_KEYS)) - _MAX_DISTANCE
_MAX_LEN = max(map(len, READ_KEYS)) + _MAX_DISTANCE


def near_misses(key: str) -> tuple[str, ...]:
    """The read keys closest to ``key`` within the near-miss distance ([C6]): the ones at
    the smallest distance, in :data:`READ_KEYS` order (``()`` when none).

    A key the engine knows is never a near miss of another (``path`` and ``paths`` are
    one edit apart and both real).
    """
    if key in KNOWN_KEYS or not _MIN_LEN <= len(key) <= _MAX_LEN:
        return ()
    folded = key.casefold()
    distances = {known: _edit_distance(folded, known) for known in READ_KEYS}
    best = min(distances.values())
    if best > _MAX_DISTANCE:
        return ()
    return tuple(known for known in READ_KEYS if distances[known] == best)


def _check_keys(doc: Mapping[str, Any], config_path: str, findings: list[Finding]) -> None:
    """[C6]: a near miss of an absent read key is an error; of a present one, a warning.

    Only the closest read keys count (``paht`` resembles ``path``, not ``paths``).
    """
    for key in doc:
        resembled = near_misses(key)
        if not resembled:
            continue
        absent = [
            k for k in resembled if k not in doc and not (k == "path" and "paths" in doc)
        ]
        if not absent:
            findings.append(
                Finding(
                    code="config.unknown_key",
                    severity="warning",
                    message=f"unknown key {key!r} — did you mean {resembled[0]!r}?",
                    path=config_path,
                )
            )
            continue
        known = absent[0]
        consequence, explicit = _CONSEQUENCE[known]
        raise ConfigError(
            f"{config_path}: unknown key {key!r} — did you mean {known!r}? As written, "
            f"{consequence}, since {known!r} is absent; expected a key this engine reads, "
            f"or no key that resembles one — rename {key!r} to {known!r}; if {key!r} "
            f"belongs to another tool, write {explicit} explicitly so that {known!r} "
            "cannot be a typo (nothing was changed)",
            code="config.unknown_key",
            path=config_path,
        )


# --------------------------------------------------------------------------- [C2]-[C4]


def _list_of_strings(
    value: object, key: str, noun: str, described: str, example: str, config_path: str
) -> tuple[str, ...]:
    """[C2]/[G1]: a list whose every element is a string, else an error naming the index."""
    if not isinstance(value, list):
        if isinstance(value, str) and re.match(_BARE_KEY, value.replace("/", "").replace(".", "")):
            remedy = f'write {key} = ["{value}"]'
        else:
            remedy = f"write a list of {noun}s, e.g. {key} = [{example}]"
        raise ConfigError(
            f"{config_path}: key {key!r}: expected a list of strings, found "
            f"{found_value(value)} — {remedy}",
            code=f"config.{key}_type",
            path=config_path,
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(
                f"{config_path}: {key}[{index}]: expected a string ({described}), found "
                f"{found_value(item)} — quote it as one {noun} per list element, or remove it",
                code=f"config.{key}_type",
                path=config_path,
            )
    return tuple(value)


def _check_each(
    items: tuple[str, ...],
    key: str,
    noun: str,
    problem_of: Callable[[str], str | None],
    rules: str,
    code: str,
    config_path: str,
) -> None:
    """Refuse the first entry of list ``key`` for which ``problem_of`` names a problem."""
    for index, item in enumerate(items):
        problem = problem_of(item)
        if problem is not None:
            raise ConfigError(
                f"{config_path}: {key}[{index}] = {item!r} is not a valid {noun}: it "
                f"{problem}; {rules} — fix or remove this entry",
                code=code,
                path=config_path,
            )


def _parse_memory(value: object, config_path: str) -> tuple[str, ...]:
    refs = _list_of_strings(
        value, "memory", "reference", "a reference below the workspace memory/ directory",
        '"team/conventions.md"', config_path,
    )
    _check_each(refs, "memory", "reference", reference_problem, _REFERENCE_RULES,
                "config.reference_invalid", config_path)
    _check_collisions(refs, config_path)
    return refs


def _check_collisions(refs: tuple[str, ...], config_path: str) -> None:
    """[C4]: duplicates (exact, NFC, case fold) and component prefixes."""
    clash = first_clash(refs, prefixes=True)
    if clash is None:
        return
    kind, first, second = clash
    if kind == "duplicate":
        _raise_duplicate("memory", refs, first, second, config_path)
    _raise_prefix(refs, outer=first, inner=second, config_path=config_path)


def _raise_duplicate(
    key: str, items: tuple[str, ...], first: int, second: int, config_path: str
) -> NoReturn:
    what = "memory reference" if key == "memory" else "skill"
    a, b = items[first], items[second]
    if a == b:
        how = f"{what} {a!r} is listed twice ({key}[{first}] and {key}[{second}])"
    else:
        if nfc(a) == nfc(b):  # they look alike: show the code points
            rule, shown_a, shown_b = "NFC normalisation", ascii(a), ascii(b)
        else:
            rule, shown_a, shown_b = "case folding", repr(a), repr(b)
        how = (
            f"{what}s {shown_a} ({key}[{first}]) and {shown_b} ({key}[{second}]) are "
            f"equal after {rule}"
        )
    raise ConfigError(
        f"{config_path}: {how}; expected each {what} once (they would share one runtime "
        "target on a normalising or case-insensitive file system) — remove one of them",
        code="config.reference_duplicate" if key == "memory" else "config.skill_duplicate",
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


# --------------------------------------------------------------------------- [G1]


def _parse_skills(value: object, config_path: str) -> tuple[str, ...]:
    names = _list_of_strings(
        value, "skills", "skill name", "a skill name: one directory of <workspace>/skills",
        '"review"', config_path,
    )
    _check_each(names, "skills", "skill name", component_problem, _SKILL_RULES,
                "config.skill_invalid", config_path)
    clash = first_clash(names, prefixes=False)
    if clash is not None:
        _raise_duplicate("skills", names, clash[1], clash[2], config_path)
    return names


def _check_sync_mode(value: object, config_path: str) -> None:
    if isinstance(value, str) and value.lower() == "link":
        return
    if isinstance(value, str) and value.lower() == "copy":
        raise ConfigError(
            f"{config_path}: key 'sync_mode' is {value!r}: this engine only links "
            "(INV-MEM-01), it never copies skills; expected \"link\" — set "
            'sync_mode = "link" (or remove the key), or keep a project that needs '
            "copy-mode skills with the reference tool 'aikito'",
            code="config.sync_mode",
            path=config_path,
        )
    raise ConfigError(
        f"{config_path}: key 'sync_mode': expected \"link\" (in any letter case), found "
        f'{found_value(value)} — set sync_mode = "link" or remove the key',
        code="config.sync_mode",
        path=config_path,
    )


# --------------------------------------------------------------------------- the parser


def _check_name(doc: Mapping[str, Any], name: str, config_path: str) -> None:
    if "name" not in doc:
        return
    value = doc["name"]
    if not isinstance(value, str):
        raise ConfigError(
            f"{config_path}: key 'name': expected a string equal to the project directory "
            f"name {name!r}, found {found_value(value)} — set name = \"{name}\" or remove it",
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


def _parse_worktrees(value: object, config_path: str) -> bool:
    """[L6]: ``worktrees`` is a boolean; anything else is a configuration error."""
    if isinstance(value, bool):
        return value
    raise ConfigError(
        f"{config_path}: key 'worktrees': expected true or false, found "
        f"{found_value(value)} — write worktrees = true to sync the git worktrees of each "
        "checkout too, or remove the key",
        code="config.worktrees", path=config_path,
    )


def parse_project_config(
    data: bytes, *, name: str, project_dir: str, config_path: str, home: str
) -> ProjectConfig:
    """Validate the exact bytes of an ``agent.toml`` ([C1]–[C6], [G1], [K1], [K2]); no I/O.

    ``home`` expands ``~`` in checkout paths (an empty or relative ``home`` expands
    nothing).
    """
    doc = _parse_toml(_decode(data, config_path), config_path)
    findings: list[Finding] = []
    _check_keys(doc, config_path, findings)
    _check_name(doc, name, config_path)
    memory = _parse_memory(doc["memory"], config_path) if "memory" in doc else ()
    skills = _parse_skills(doc["skills"], config_path) if "skills" in doc else ()
    if "sync_mode" in doc:
        _check_sync_mode(doc["sync_mode"], config_path)
    worktrees = _parse_worktrees(doc["worktrees"], config_path) if "worktrees" in doc else False
    pairs = raw_candidates(doc, config_path, findings)
    found = candidates(pairs, home, findings, config_path)
    return ProjectConfig(
        name=name,
        project_dir=project_dir,
        config_path=config_path,
        memory=memory,
        candidates=found,
        findings=tuple(findings),
        data=data,
        skills=skills,
        worktrees=worktrees,
    )
