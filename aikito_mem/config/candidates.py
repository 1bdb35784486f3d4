"""The checkout paths of ``agent.toml`` → :class:`~aikito_mem.model.Candidate` values:
[C5], the lexical part of [K1], [K2], and the control-character rule of [C6].  Pure.

Decisions where SPEC §3/§5 is silent:

- A ``path`` list gets labels ``1``, ``2``, … like a ``paths`` list; a ``path`` string gets
  ``default``.  When both ``paths`` and ``path`` are present, ``path`` is ignored (not
  validated) with a warning finding ``config.path_ignored``.
- ``~user/…`` is not expanded: it stays relative, so it is an offline candidate with the
  [K2] warning.  ``~`` is expanded with the ``home`` given (``HOME`` of the environment).
- [K1] A candidate's path is the expanded text with only the spellings the kernel treats
  alike for a directory folded away (repeated ``/``, ``.`` components, a trailing ``/``);
  ``..`` is never shortened here: ``X/link/../co`` is whatever the kernel reaches
  (:mod:`aikito_mem.world.checkouts` decides that, and de-duplicates active checkouts by
  identity).  Two candidates with the same folded text are one (a ``checkout.duplicate``
  warning naming the label that won); relative ones, always offline, are compared by
  their lexically normalised text (:func:`lexical_key`).
- A control character (C0, DEL, C1) in a checkout path value is ``config.path_invalid``,
  naming the key and the label ([C6]): no directory a user means has one, and a NUL
  cannot even be passed to the kernel.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aikito_mem.config.discovery import expand_home
from aikito_mem.config.names import control_character, found_value, toml_key
from aikito_mem.errors import ConfigError
from aikito_mem.model import Candidate, Finding

__all__ = ["candidates", "lexical_key", "raw_candidates"]


def _paths_error(where: str, expected: str, value: object, config_path: str) -> ConfigError:
    return ConfigError(
        f"{config_path}: {where}: expected {expected}, found {found_value(value)} — write "
        'checkout paths as paths = ["~/code/demo"] or as a [paths] table of '
        'label = "path"',
        code="config.paths_type",
        path=config_path,
    )


def _path_value(where: str, label: str, item: object, config_path: str) -> tuple[str, str]:
    """One ``(label, raw)`` checkout path: a string without control characters ([C6])."""
    if not isinstance(item, str):
        raise _paths_error(where, "a string", item, config_path)
    control = control_character(item)
    if control is not None:
        raise ConfigError(
            f"{config_path}: {where} (checkout {label}) = {item!r} contains the control "
            f"character {control}; expected a checkout path without control characters — "
            "fix or remove this entry",
            code="config.path_invalid",
            path=config_path,
        )
    return label, item


def raw_candidates(
    doc: Mapping[str, Any], config_path: str, findings: list[Finding]
) -> list[tuple[str, str]]:
    """``(label, raw)`` pairs from ``paths`` or, when absent, ``path`` ([C5])."""
    if "paths" in doc:
        value = doc["paths"]
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
        if isinstance(value, list):
            return [_path_value(f"paths[{i}]", str(i + 1), item, config_path)
                    for i, item in enumerate(value)]
        if isinstance(value, dict):
            return [_path_value(f"paths.{toml_key(label)}", label, item, config_path)
                    for label, item in value.items()]
        expected = "a list of strings or a table of label = string"
        raise _paths_error("key 'paths'", expected, value, config_path)
    if "path" in doc:
        value = doc["path"]
        if isinstance(value, str):
            return [_path_value("path", "default", value, config_path)]
        if isinstance(value, list):
            return [_path_value(f"path[{i}]", str(i + 1), item, config_path)
                    for i, item in enumerate(value)]
        raise _paths_error("key 'path'", "a string or a list of strings", value, config_path)
    return []


def lexical_key(path: str) -> str:
    """The lexically normalised text of a path (``..`` folded as text): how offline and
    relative candidates are told apart ([K1]).  Never used to reach a directory."""
    norm = os.path.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def _fold_spelling(path: str) -> str:
    """An absolute path with repeated ``/``, ``.`` components and a trailing ``/``
    removed — spellings the kernel resolves alike for a directory; ``..`` is kept."""
    parts = [p for p in path.split("/") if p and p != "."]
    return "/" + "/".join(parts)


def candidates(
    pairs: list[tuple[str, str]], home: str, findings: list[Finding], config_path: str
) -> tuple[Candidate, ...]:
    """[K1] lexical part and [K2]: expand ``~``, fold spellings, flag relatives."""
    home_dir = home if os.path.isabs(home) else None
    seen: dict[str, str] = {}
    out: list[Candidate] = []
    for label, raw in pairs:
        expanded = expand_home(raw, home_dir)
        absolute = os.path.isabs(expanded)
        path = _fold_spelling(expanded) if absolute else expanded
        key = path if absolute else lexical_key(expanded)
        first = seen.get(key)
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
        seen[key] = label
        out.append(Candidate(label=label, raw=raw, path=path, absolute=absolute))
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
