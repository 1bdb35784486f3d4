"""Clean names: the [C3] rules for a relative path and for a single component, control
characters, the NFC / case-fold keys two names collide under ([C4], [G1]), and the words
a message uses for a value or key found in a user's TOML file.

Pure functions, shared by every room that accepts a name from a user file: the ``memory``
references and ``skills`` of ``agent.toml`` (:mod:`aikito_mem.config.agent_toml`), checkout paths
(:mod:`aikito_mem.config.candidates`), and the relative paths of the agent registry ([G3]).
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_COMPONENT_BYTES",
    "component_problem",
    "control_character",
    "entry_problem",
    "first_clash",
    "fold",
    "found_value",
    "nfc",
    "plain_reference",
    "reference_problem",
    "toml_key",
]

#: Longest path component, in bytes of UTF-8 ([C3]).
MAX_COMPONENT_BYTES = 255

#: For messages only: compiled (and cached by ``re``) on first use ([§12]).
_BARE_KEY = r"^[A-Za-z0-9_-]+$"

#: References that obviously satisfy [C3]: components of ASCII letters, digits and
#: ``._-+@=,~`` that start with a letter, digit or ``_`` (so never ``.``, ``..``, empty,
#: or with white space).  Anything else takes the full check below.  Checked with set
#: operations rather than a pattern: nothing is compiled when a run starts ([§12]).
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_PLAIN_CHARS = _PLAIN_FIRST | frozenset(".+@=,~-/")


def plain_reference(ref: str) -> bool:
    """Whether ``ref`` is a plain reference: one or more ``/``-separated components, each
    of ASCII letters, digits and ``._-+@=,~`` starting with a letter, digit or ``_``."""
    if not _PLAIN_CHARS.issuperset(ref):
        return False
    return all(part[:1] in _PLAIN_FIRST for part in ref.split("/"))


def control_character(text: str) -> str | None:
    """``U+0000`` for the first control character (C0, DEL, C1) of ``text``, else None."""
    if text.isprintable():  # no control character is printable: the common case
        return None
    for ch in text:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            return f"U+{code:04X}"
    return None


def reference_problem(ref: str) -> str | None:
    """Check one relative path (a ``memory`` reference) against [C3]: ``None`` if clean,
    else why not.

    The reason reads after the reference: ``'a//b'`` + ``has an empty component``.
    """
    if len(ref) <= MAX_COMPONENT_BYTES and plain_reference(ref):
        return None  # fast path: printable ASCII names, no '.'/'..' or empty component
    if not ref:
        return "is empty"
    control = control_character(ref)
    if control is not None:
        return f"contains the control character {control}"
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


def component_problem(name: str) -> str | None:
    """[C3] for a single path component (a skill name, [G1]): ``None`` if clean."""
    if "/" in name:
        return "contains '/'; it must be a single directory name"
    if name in (".", ".."):
        return f"is {name!r}, which names no directory of its own"
    return reference_problem(name)


def entry_problem(rel: str, *, single: bool = False) -> str | None:
    """[H3] What a runtime entry's name may be, relative to its segment root: ``None``
    when the engine may plan and write it, else why not.  The one rule the planners
    (which entries they unlink) and the writer's guard ([E9], which targets it accepts)
    both call, so that whatever is planned is accepted and the other way round.

    A name found on disk may hold any bytes but ``/`` and NUL — a trailing space, a
    newline, bytes that are not UTF-8 (``os.fsdecode`` carries each as a lone surrogate
    ``U+DC80``–``U+DCFF``): the engine owns a link by its literal ([O1]), never by its
    name.  What no directory entry can be is refused: an empty path or component, a
    ``.`` or ``..`` component, an absolute path, a NUL, a component longer than
    :data:`MAX_COMPONENT_BYTES` bytes, a character that is not a file-name byte (a lone
    surrogate outside that range) and, with ``single``, more than one component.  The
    names a user writes in ``agent.toml`` pass the stricter [C3]
    (:func:`reference_problem`) before they reach a plan.
    """
    if not rel:
        return "is empty"
    if rel.startswith("/"):
        return "is absolute (starts with '/')"
    if single and "/" in rel:
        return "has more than one component"
    if "\0" in rel:
        return "contains a NUL byte"
    try:
        data = rel.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        return f"contains U+{ord(rel[exc.start]):04X}, which is no byte of a file name"
    for component in data.split(b"/"):
        if not component:
            return "has an empty component ('//')"
        if component in (b".", b".."):
            return f"has a {component.decode()!r} component"
        if len(component) > MAX_COMPONENT_BYTES:
            return (f"has a component of {len(component)} bytes, longer than "
                    f"{MAX_COMPONENT_BYTES}")
    return None


def nfc(name: str) -> str:
    """The NFC form of ``name`` (ASCII is its own)."""
    if name.isascii():
        return name
    import unicodedata

    return unicodedata.normalize("NFC", name)


def fold(name: str) -> str:
    """The key two names collide under: NFC of the case fold of the NFC form."""
    if name.isascii():
        return name.lower()
    import unicodedata

    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def first_clash(
    names: tuple[str, ...], *, prefixes: bool
) -> tuple[str, int, int] | None:
    """The first collision in ``names``, in list order, or ``None``.

    ``("duplicate", first, second)``: equal after NFC normalisation or case folding.
    ``("prefix", outer, inner)`` (only with ``prefixes``): ``names[inner]`` lies below
    ``names[outer]``, component-wise, compared by their fold keys.  Every name's key goes
    in ``by_key``; every proper ancestor of it in ``under`` (ancestor key → first name
    below it).  Linear in the total length.
    """
    by_key: dict[str, int] = {}
    under: dict[str, int] = {}
    for index, name in enumerate(names):
        key = fold(name)
        first = by_key.get(key)
        if first is not None:
            return "duplicate", first, index
        if prefixes:
            below = under.get(key)
            if below is not None:
                return "prefix", index, below
            parts = key.split("/")
            ancestor = parts[0]
            for part in parts[1:]:
                outer = by_key.get(ancestor)
                if outer is not None:
                    return "prefix", outer, index
                under.setdefault(ancestor, index)
                ancestor = f"{ancestor}/{part}"
        by_key[key] = index
    return None


# --------------------------------------------------------------------------- messages


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


def found_value(value: object) -> str:
    """``a string ('x.md')``: the type, and the value when it is short and scalar."""
    kind = _type_name(value)
    if isinstance(value, list | dict):
        return kind
    shown = repr(value)
    return f"{kind} ({shown})" if len(shown) <= 60 else kind


def toml_key(key: str) -> str:
    """A table key as TOML would write it: bare when possible, else quoted."""
    if re.match(_BARE_KEY, key):
        return key
    if key.isprintable() and '"' not in key and "\\" not in key:
        return f'"{key}"'
    return repr(key)
