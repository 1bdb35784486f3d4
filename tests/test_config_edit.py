"""``agent.toml`` registration of an explicit checkout ([K4]): the byte-preserving edit
and its compare-and-swap on the file."""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aikito_mem import fsutil
from aikito_mem.config import toml_layout
from aikito_mem.config import write as config_write
from aikito_mem.config.edit import (
    add_checkout_path,
    add_memory_reference,
    toml_basic_string,
)
from aikito_mem.config.write import register_checkout
from aikito_mem.errors import ConfigError, ExecutionError, StalePlanError
from tests.helpers.cli import imported_modules
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

P = "/srv/new"


def insertions(old: str, new: str) -> list[str]:
    """The texts inserted into ``old`` to make ``new``; fails if anything was removed."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    inserted = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        assert tag in ("equal", "insert"), (tag, old[i1:i2], new[j1:j2])
        if tag == "insert":
            inserted.append(new[j1:j2])
    return inserted


def expect(old: str, new: str, data_change: dict[str, Any]) -> None:
    """``new`` is ``old`` with insertions only, and parses to old data updated."""
    insertions(old, new)
    want = tomllib.loads(old)
    want.pop("path", None)
    want.update(data_change)
    assert tomllib.loads(new) == want


# -- paths list ---------------------------------------------------------------------------


def test_single_line_list() -> None:
    old = 'name = "demo"  # the name\npaths = ["~/code/demo", "/srv/demo"]  # where\nmemory = []\n'
    new = add_checkout_path(old, P)
    assert new == (
        'name = "demo"  # the name\n'
        'paths = ["~/code/demo", "/srv/demo", "/srv/new"]  # where\nmemory = []\n'
    )
    assert insertions(old, new) == [', "/srv/new"']
    expect(old, new, {"paths": ["~/code/demo", "/srv/demo", P]})


def test_single_line_list_with_trailing_comma() -> None:
    old = 'paths = ["/a",]\n'
    assert add_checkout_path(old, P) == 'paths = ["/a", "/srv/new",]\n'


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("paths = []\n", 'paths = ["/srv/new"]\n'),
        ("paths = [ ]\n", 'paths = [ "/srv/new" ]\n'),
        ("paths = [] # none yet\n", 'paths = ["/srv/new"] # none yet\n'),
        ("paths = [\n]\n", 'paths = [\n    "/srv/new",\n]\n'),
        ("paths = [ # none\n  # really\n]\n", 'paths = [ # none\n    "/srv/new",\n  # really\n]\n'),
    ],
)
def test_empty_list(old: str, new: str) -> None:
    assert add_checkout_path(old, P) == new
    expect(old, new, {"paths": [P]})


def test_multi_line_list_with_comments_and_trailing_comma() -> None:
    old = (
        "# demo project\n"
        "paths = [\n"
        '    "~/code/demo",  # laptop ] not the end\n'
        '    "/srv/demo", # server, "quoted"\n'
        "    # (the end of the list)\n"
        "]  # trailing\n"
        'memory = ["team/a.md"]\n'
        "\n"
        "[skills]\n"
        'list = ["x"]\n'
    )
    new = add_checkout_path(old, P)
    assert new == old.replace(
        '"/srv/demo", # server, "quoted"\n',
        '"/srv/demo", # server, "quoted"\n    "/srv/new",\n',
    )
    assert "".join(insertions(old, new)) in ('    "/srv/new",\n', '"/srv/new",\n    ')
    expect(old, new, {"paths": ["~/code/demo", "/srv/demo", P]})


def test_multi_line_list_without_trailing_comma() -> None:
    old = 'paths = [\n  "~/a",\n  "/srv/b"  # no comma\n]\n'
    new = add_checkout_path(old, P)
    assert new == 'paths = [\n  "~/a",\n  "/srv/b",  # no comma\n  "/srv/new"\n]\n'
    assert insertions(old, new) == [",", '  "/srv/new"\n']


def test_multi_line_list_closing_on_the_last_line() -> None:
    old = 'paths = [\n  "~/a",\n  "/b"]\n'
    new = add_checkout_path(old, P)
    assert new == 'paths = [\n  "~/a",\n  "/b", "/srv/new"]\n'


def test_multi_line_list_opened_with_elements() -> None:
    old = 'paths = ["/a", "/b",\n]\n'
    assert add_checkout_path(old, P) == 'paths = ["/a", "/b",\n    "/srv/new",\n]\n'


def test_list_with_tricky_strings_and_crlf() -> None:
    old = (
        'x = """a\r\n] # not a comment"""\r\n'
        "paths = ['''/q]''', \"/r\\\"]\"] # ]\r\n"
        "d = 1979-05-27 07:32:00Z\r\n"
        "[t]\r\n"
        'paths = ["/other"]\r\n'
    )
    new = add_checkout_path(old, P)
    assert insertions(old, new) == [', "/srv/new"']
    expect(old, new, {"paths": ["/q]", '/r"]', P]})


def test_crlf_multi_line_list_keeps_crlf() -> None:
    old = 'paths = [\r\n  "/a",\r\n]\r\n'
    assert add_checkout_path(old, P) == 'paths = [\r\n  "/a",\r\n  "/srv/new",\r\n]\r\n'


def test_quoted_key() -> None:
    old = '"paths" = ["/a"]\n'
    assert add_checkout_path(old, P) == '"paths" = ["/a", "/srv/new"]\n'


# -- paths table --------------------------------------------------------------------------


def test_inline_table() -> None:
    old = 'paths = {laptop = "~/code/demo", server = "/srv/demo"}  # c\nmemory = []\n'
    new = add_checkout_path(old, P)
    assert new == (
        'paths = {laptop = "~/code/demo", server = "/srv/demo", path_1 = "/srv/new"}  # c\n'
        "memory = []\n"
    )
    expect(old, new, {"paths": {"laptop": "~/code/demo", "server": "/srv/demo", "path_1": P}})


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("paths = {}\n", 'paths = {path_1 = "/srv/new"}\n'),
        ("paths = { }\n", 'paths = { path_1 = "/srv/new" }\n'),
        ('paths = { path_1 = "/a" }\n', 'paths = { path_1 = "/a", path_2 = "/srv/new" }\n'),
    ],
)
def test_inline_table_forms(old: str, new: str) -> None:
    assert add_checkout_path(old, P) == new


def test_paths_section_with_existing_path_1() -> None:
    old = (
        'name = "demo"\n'
        'memory = ["a.md"]\n'
        "\n"
        "[paths]\n"
        "# the laptop\n"
        'path_1 = "~/code/demo"\n'
        'path_3 = "/srv/three"  # three\n'
        "\n"
        "# skills belong to another engine\n"
        "[skills]\n"
        'x = ["y"]\n'
    )
    new = add_checkout_path(old, P)
    assert insertions(old, new) == ['path_2 = "/srv/new"\n']
    assert new == old.replace("# three\n", '# three\npath_2 = "/srv/new"\n')
    expect(
        old, new,
        {"paths": {"path_1": "~/code/demo", "path_3": "/srv/three", "path_2": P}},
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("[paths]\n", '[paths]\npath_1 = "/srv/new"\n'),
        ("[paths]", '[paths]\npath_1 = "/srv/new"\n'),
        ('[ paths ] # c\nlaptop = "/a"', '[ paths ] # c\nlaptop = "/a"\npath_1 = "/srv/new"\n'),
        (
            '[paths]\n  laptop = "/a"\n[x]\n',
            '[paths]\n  laptop = "/a"\n  path_1 = "/srv/new"\n[x]\n',
        ),
    ],
)
def test_paths_section_forms(old: str, new: str) -> None:
    assert add_checkout_path(old, P) == new


def test_dotted_paths_keys() -> None:
    old = 'paths.laptop = "/a"\npaths.path_1 = "/b"\nmemory = []\n'
    new = add_checkout_path(old, P)
    assert new == (
        'paths.laptop = "/a"\npaths.path_1 = "/b"\npaths.path_2 = "/srv/new"\nmemory = []\n'
    )


# -- only `path` --------------------------------------------------------------------------


def test_path_string() -> None:
    old = '# cfg\npath = "~/code/demo"  # old single form\nmemory = []\n'
    new = add_checkout_path(old, P)
    assert new == '# cfg\npaths = ["~/code/demo", "/srv/new"]  # old single form\nmemory = []\n'
    assert insertions(old, new) == ["s", "[", ', "/srv/new"]']
    assert tomllib.loads(new) == {"paths": ["~/code/demo", P], "memory": []}


def test_path_literal_string() -> None:
    old = "path = 'C:\\code'\n"
    new = add_checkout_path(old, P)
    assert new == "paths = ['C:\\code', \"/srv/new\"]\n"


def test_path_list() -> None:
    old = 'path = [\n  "/a",  # one\n  "/b",\n]\nmemory = []\n'
    new = add_checkout_path(old, P)
    assert new == 'paths = [\n  "/a",  # one\n  "/b",\n  "/srv/new",\n]\nmemory = []\n'
    assert tomllib.loads(new) == {"paths": ["/a", "/b", P], "memory": []}


# -- neither ------------------------------------------------------------------------------


def test_neither_with_later_tables() -> None:
    old = (
        'name = "demo"\n'
        'memory = ["a.md"]  # refs\n'
        "\n"
        "# skills\n"
        "[skills]\n"
        'paths = ["not these"]\n'
    )
    new = add_checkout_path(old, P)
    assert new == old.replace("# refs\n", '# refs\npaths = ["/srv/new"]\n')
    assert "".join(insertions(old, new)) in ('paths = ["/srv/new"]\n', '\npaths = ["/srv/new"]')
    assert tomllib.loads(new)["paths"] == [P]
    assert tomllib.loads(new)["skills"] == {"paths": ["not these"]}


def test_neither_without_tables() -> None:
    old = 'name = "demo"\nmemory = []\n'
    assert add_checkout_path(old, P) == 'name = "demo"\nmemory = []\npaths = ["/srv/new"]\n'


def test_neither_without_trailing_newline() -> None:
    assert add_checkout_path('memory = []', P) == 'memory = []\npaths = ["/srv/new"]\n'


def test_neither_in_empty_file() -> None:
    assert add_checkout_path("", P) == 'paths = ["/srv/new"]\n'
    assert add_checkout_path("# only a comment\n", P) == (
        '# only a comment\npaths = ["/srv/new"]\n'
    )


def test_neither_only_tables() -> None:
    old = "# header comment\n\n# about skills\n[skills]\nx = 1\n"
    new = add_checkout_path(old, P)
    assert new == '# header comment\n\npaths = ["/srv/new"]\n# about skills\n[skills]\nx = 1\n'
    assert tomllib.loads(new) == {"paths": [P], "skills": {"x": 1}}


def test_inline_table_named_paths_elsewhere_is_not_ours() -> None:
    old = 'x = {paths = ["z"]}\nmemory = []\n[t]\npaths = ["q"]\n'
    new = add_checkout_path(old, P)
    assert tomllib.loads(new) == {
        "x": {"paths": ["z"]}, "memory": [], "paths": [P], "t": {"paths": ["q"]}
    }


# -- awkward layouts ----------------------------------------------------------------------

AWKWARD = [
    # Comments inside and after arrays.
    ('paths = [ # c\n "a", # d\n]  # e\n',
     'paths = [ # c\n "a", # d\n "/srv/new",\n]  # e\n'),
    ('paths = [\n  "a",\n  # the end ] , "not"\n]\n',
     'paths = [\n  "a",\n  "/srv/new",\n  # the end ] , "not"\n]\n'),
    ('paths = ["a"] # after ] [ "x"\n', 'paths = ["a", "/srv/new"] # after ] [ "x"\n'),
    # Trailing commas, spaces around commas.
    ('paths = [ "a" , "b" ,]\n', 'paths = [ "a" , "b" , "/srv/new",]\n'),
    ('paths = [ "a" , "b" ]\n', 'paths = [ "a" , "b", "/srv/new" ]\n'),
    ('paths=["a"]\n', 'paths=["a", "/srv/new"]\n'),
    # CRLF line endings in every form.
    ('name = "demo"\r\nmemory = []\r\n\r\n[skills]\r\nx = 1\r\n',
     'name = "demo"\r\nmemory = []\r\npaths = ["/srv/new"]\r\n\r\n[skills]\r\nx = 1\r\n'),
    ('[paths]\r\na = "/a"\r\n', '[paths]\r\na = "/a"\r\npath_1 = "/srv/new"\r\n'),
    ('paths = {a = "/a"}\r\n', 'paths = {a = "/a", path_1 = "/srv/new"}\r\n'),
    ('paths.a = "/a"\r\n', 'paths.a = "/a"\r\npaths.path_1 = "/srv/new"\r\n'),
    ('paths = [ # c\r\n  "a",\r\n]\r\n', 'paths = [ # c\r\n  "a",\r\n  "/srv/new",\r\n]\r\n'),
    # Inline tables.
    ('paths = {a="x" , b = "y" }\n', 'paths = {a="x" , b = "y", path_1 = "/srv/new" }\n'),
    ('paths = {path_1 = "a", path_2 = "b"}\n',
     'paths = {path_1 = "a", path_2 = "b", path_3 = "/srv/new"}\n'),
    # Dotted keys: indented, quoted, with comments.
    ('  paths.laptop = "/a"  # c\n  paths.server = "/b"\nmemory = []\n',
     '  paths.laptop = "/a"  # c\n  paths.server = "/b"\n  paths.path_1 = "/srv/new"\n'
     'memory = []\n'),
    ('"paths".laptop = "/a"\n', '"paths".laptop = "/a"\npaths.path_1 = "/srv/new"\n'),
    # A `paths` table after other tables; the comment about the next table stays with it.
    ('[a]\nx = 1\n\n[b]\ny = 2\n\n[paths]\nlaptop = "~/x"\n',
     '[a]\nx = 1\n\n[b]\ny = 2\n\n[paths]\nlaptop = "~/x"\npath_1 = "/srv/new"\n'),
    ('[a]\nx = 1\n\n[paths]\nlaptop = "~/x"\n# about c\n\n[c]\nz = 1\n',
     '[a]\nx = 1\n\n[paths]\nlaptop = "~/x"\npath_1 = "/srv/new"\n# about c\n\n[c]\nz = 1\n'),
    ('[paths]\na = "/a"\n[paths.sub]\nx = 1\n',
     '[paths]\na = "/a"\npath_1 = "/srv/new"\n[paths.sub]\nx = 1\n'),
    # Arrays of tables: the new key goes above them (and above their comment).
    ('[[agents]]\nname = "a"\n[[agents]]\nname = "b"\n',
     'paths = ["/srv/new"]\n[[agents]]\nname = "a"\n[[agents]]\nname = "b"\n'),
    ('memory = []\n[[agents]]\nname = "a"\n',
     'memory = []\npaths = ["/srv/new"]\n[[agents]]\nname = "a"\n'),
    ('# top\n\n# agents\n[[agents]]\nname = "a"\n',
     '# top\n\npaths = ["/srv/new"]\n# agents\n[[agents]]\nname = "a"\n'),
    # Multi-line arrays: several elements per line, tabs.
    ('paths = [\n  "a", "b",\n  "c"\n]\n', 'paths = [\n  "a", "b",\n  "c",\n  "/srv/new"\n]\n'),
    ('paths = [\n  "a", "b",\n]\n', 'paths = [\n  "a", "b",\n  "/srv/new",\n]\n'),
    ('\tpaths = [\n\t\t"a",\n\t]\n', '\tpaths = [\n\t\t"a",\n\t\t"/srv/new",\n\t]\n'),
    # Literal and multi-line strings, kept as written.
    ("paths = [\n  '~/a',\n  \"\"\"/b\"\"\",\n]\n",
     "paths = [\n  '~/a',\n  \"\"\"/b\"\"\",\n  \"/srv/new\",\n]\n"),
    ('x = """\npaths = [\n"""\nmemory = ["m"]\n',
     'x = """\npaths = [\n"""\nmemory = ["m"]\npaths = ["/srv/new"]\n'),
]


@pytest.mark.parametrize(("old", "new"), AWKWARD)
def test_awkward_layouts(old: str, new: str) -> None:
    assert add_checkout_path(old, P) == new
    insertions(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('path = "/a"\r\n', 'paths = ["/a", "/srv/new"]\r\n'),
        ('path="/a"\n', 'paths=["/a", "/srv/new"]\n'),
        ("path = '''~/a'''  # old\n", "paths = ['''~/a''', \"/srv/new\"]  # old\n"),
        ('  "path" = "/a"\n', '  "paths" = ["/a", "/srv/new"]\n'),
        ("'path' = ['/a'] # c\n", "'paths' = ['/a', \"/srv/new\"] # c\n"),
    ],
)
def test_awkward_single_path_forms(old: str, new: str) -> None:
    assert add_checkout_path(old, P) == new
    insertions(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('memory = [\n  "a.md", # first\n]\n[x]\n',
         'memory = [\n  "a.md", # first\n  "r.md",\n]\n[x]\n'),
        ('name = "d"\r\n\r\n[x]\r\n', 'name = "d"\r\nmemory = ["r.md"]\r\n\r\n[x]\r\n'),
        ("# only\n# comments", '# only\n# comments\nmemory = ["r.md"]\n'),
        ("memory = []  # none yet\n", 'memory = ["r.md"]  # none yet\n'),
        ('[paths]\na = "/a"\n', 'memory = ["r.md"]\n[paths]\na = "/a"\n'),
    ],
)
def test_memory_reference_layouts(old: str, new: str) -> None:
    assert add_memory_reference(old, "r.md") == new
    insertions(old, new)


@pytest.mark.parametrize("old", ['memory = "a.md"\n', "[memory]\na = 1\n", "memory.a = 1\n",
                                 "[[memory]]\na = 1\n", "memory = [\n"])
def test_memory_reference_refuses_what_it_cannot_append_to(old: str) -> None:
    with pytest.raises(ConfigError) as info:
        add_memory_reference(old, "r.md", filename="/ws/projects/demo/agent.toml")
    assert info.value.code == "config.memory_edit_failed"
    assert "/ws/projects/demo/agent.toml" in info.value.message


def test_edit_that_does_not_reparse_to_the_expected_data_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last guard: whatever the layout code does, the rendering must parse to the old
    data plus exactly the new value."""
    real = toml_layout.appended

    def twice(array: Any, element: str, key_indent: str, nl: str) -> Any:
        return real(real(array, element, key_indent, nl), element, key_indent, nl)

    monkeypatch.setattr(toml_layout, "appended", twice)
    with pytest.raises(ConfigError) as info:
        add_checkout_path('paths = ["/a"]\n', P)
    assert info.value.code == "config.register_failed"
    assert "did not parse to the old data plus the new value" in info.value.message


def test_text_tomlkit_cannot_reproduce_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """tomlkit releases before 0.15 rendered ``{a="x" , b = 1}`` as ``{a="x",  b = 1}``:
    a parse that does not render back to the very same text is refused, never written."""
    import tomlkit

    real = tomlkit.parse
    monkeypatch.setattr(tomlkit, "parse", lambda text: real(text.replace(" ,", ",")))
    with pytest.raises(ConfigError) as info:
        add_checkout_path('paths = ["/a" , "/b"]\n', P)
    assert "does not reproduce its text byte for byte" in info.value.message


def test_edit_that_changes_existing_text_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only insertions: an edit that would drop a comment (same data) is refused."""
    real = toml_layout.insert_root_line

    def drop_comment(doc: Any, text: str, line: str) -> None:
        doc.body[0][1].trivia.comment = ""
        doc.body[0][1].trivia.comment_ws = ""
        real(doc, text, line)

    monkeypatch.setattr(toml_layout, "insert_root_line", drop_comment)
    with pytest.raises(ConfigError) as info:
        add_checkout_path('memory = []  # mine\n', P)
    assert "changed or removed some of its text" in info.value.message


@pytest.mark.parametrize("depth", [150, 3000])
def test_deep_nesting_is_a_config_error(depth: int) -> None:
    """Nested deeper than tomlkit's limit (100 levels), or than tomllib can recurse:
    refused with a message naming the file, never a RecursionError."""
    old = 'paths = ["/a"]\nx = ' + "[" * depth + "]" * depth + "\n"
    for edit in (add_checkout_path, add_memory_reference):
        with pytest.raises(ConfigError) as info:
            edit(old, P, filename="/ws/projects/demo/agent.toml")
        assert "/ws/projects/demo/agent.toml" in info.value.message
        assert "nested" in info.value.message


def test_recursion_while_editing_is_a_config_error() -> None:
    """A document that parses near the top of the stack but not deeper down, where the
    edit runs, is refused — not a RecursionError."""
    import sys

    depth = 60
    old = 'paths = ["/a"]\nx = ' + "[" * depth + "]" * depth + "\n"
    tomllib.loads(old)

    def nested(n: int) -> str:
        return nested(n - 1) if n else add_checkout_path(old, P)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(__import__("inspect").stack()) + 150)
    try:
        with pytest.raises(ConfigError) as info:
            nested(60)
    finally:
        sys.setrecursionlimit(limit)
    assert "nested too deeply" in info.value.message


def test_recursion_past_the_first_parse_is_a_config_error() -> None:
    """tomllib parses the text, then tomlkit (or the re-parse) runs out of stack: still a
    configuration error naming the edit, not a RecursionError."""
    import inspect
    import sys

    old = 'paths = ["/a"]\nx = ' + "[" * 90 + "]" * 90 + "\n"
    limit = sys.getrecursionlimit()
    base = len(inspect.stack())
    messages = []
    try:
        for extra in range(100, 1000, 10):
            sys.setrecursionlimit(base + extra)
            try:
                add_checkout_path(old, P)
            except ConfigError as exc:
                messages.append(exc.message)
                continue
            finally:
                sys.setrecursionlimit(limit)
            break
    finally:
        sys.setrecursionlimit(limit)
    assert any("nested too deeply to parse" in m for m in messages)
    assert any("nested too deeply to edit safely" in m for m in messages)


# -- escaping -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/home/zoë/代码/démo",
        '/tmp/with "quotes"',
        "C:\\Users\\me\\code",
        "/tmp/new\nline\ttab",
        "/tmp/\x7f\x01\x85",
        "/tmp/'single'",
        "/tmp/emoji 🚀",
        "/tmp/#not a comment ] }",
    ],
)
def test_special_paths(path: str) -> None:
    for old in ('paths = ["/a"]\n', "[paths]\na = '/a'\n", 'path = "/a"\n', "memory = []\n",
                'paths = {a = "/a"}\n', 'paths = [\n  "/a",\n]\n'):
        new = add_checkout_path(old, path)
        insertions(old, new)
        data = tomllib.loads(new)
        found = data["paths"]
        assert (found[-1] if isinstance(found, list) else found["path_1"]) == path


def test_toml_basic_string() -> None:
    assert toml_basic_string('a"b\\c\n\x00é') == '"a\\"b\\\\c\\n\\u0000é"'
    with pytest.raises(ValueError):
        toml_basic_string("\udcff")


def test_unrepresentable_path_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        add_checkout_path("paths = []\n", os.fsdecode(b"/tmp/\xff"))
    assert info.value.code == "config.register_failed"


def test_paths_table_without_a_header_of_its_own_is_refused() -> None:
    """``[paths.sub]`` alone makes ``paths`` a table with no place for a new key."""
    with pytest.raises(ConfigError) as info:
        add_checkout_path("[paths.sub]\nx = 1\n", P)
    assert "no [paths] header, inline table or dotted keys" in info.value.message


@pytest.mark.parametrize(
    "old",
    ["paths = 5\n", 'path = 5\n', "paths = [\n", "[[paths]]\na = 1\n"],
)
def test_unsupported_layouts_are_refused(old: str) -> None:
    with pytest.raises(ConfigError) as info:
        add_checkout_path(old, P, filename="/ws/projects/demo/agent.toml")
    assert info.value.code == "config.register_failed"
    assert "/ws/projects/demo/agent.toml" in info.value.message
    assert "by hand" in info.value.message


# -- property -----------------------------------------------------------------------------

FORMS = [
    "",
    'name = "demo"\n',
    'paths = ["~/a"]\n',
    "paths = [\n  '~/a', # c\n]\n",
    'paths = [\n  "~/a" # c\n]\nmemory = ["x"]\n',
    'paths = {laptop = "~/a"}\n',
    '[paths]\npath_1 = "~/a"\n\n[skills]\nx = 1\n',
    'path = "~/a"\n',
    'path = ["~/a", "/b"]  # c\n',
    'memory = ["m"]\n# c\n[skills]\npaths = 1\n',
    'paths.laptop = "~/a"\n',
]

paths_strategy = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40
)


@settings(max_examples=300, deadline=None)
@given(form=st.sampled_from(FORMS), path=paths_strategy)
def test_reparse_is_old_data_plus_new_path(form: str, path: str) -> None:
    new = add_checkout_path(form, path)
    insertions(form, new)
    old_data = tomllib.loads(form)
    data = tomllib.loads(new)
    paths = data.pop("paths")
    old_paths = old_data.pop("paths", None)
    if old_paths is None:
        old_paths = old_data.pop("path", [])
        if isinstance(old_paths, str):
            old_paths = [old_paths]
    assert data == old_data
    if isinstance(paths, list):
        assert paths == [*old_paths, path]
    else:
        added = {k: v for k, v in paths.items() if k not in old_paths}
        assert {k: paths[k] for k in old_paths} == old_paths
        assert added == {"path_1" if "path_1" not in old_paths else "path_2": path}


# -- register_checkout: the compare-and-swap ----------------------------------------------

CONFIG = '# demo\nname = "demo"\npaths = ["~/code/demo"]  # laptop\nmemory = []\n'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_config(tmp_path: Path, text: str = CONFIG, mode: int = 0o644) -> Path:
    config = tmp_path / "agent.toml"
    config.write_bytes(text.encode())
    config.chmod(mode)
    return config


def listing(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640, 0o664, 0o444])
def test_register_writes_and_keeps_mode(tmp_path: Path, mode: int) -> None:
    config = write_config(tmp_path, mode=mode)
    old = config.read_bytes()
    register_checkout(str(config), "/srv/ü", expected_sha256=sha(old))
    assert config.read_bytes().decode() == add_checkout_path(CONFIG, "/srv/ü")
    assert stat.S_IMODE(config.stat().st_mode) == mode
    assert listing(tmp_path) == ["agent.toml"]
    assert tomllib.loads(config.read_text())["paths"] == ["~/code/demo", "/srv/ü"]


def test_register_accepts_prefixed_uppercase_digest(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    register_checkout(
        str(config), P, expected_sha256="sha256:" + sha(config.read_bytes()).upper()
    )
    assert P in config.read_text()


def test_register_with_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    register_checkout("agent.toml", P, expected_sha256=sha(config.read_bytes()))
    assert P in config.read_text()


def test_cas_mismatch_is_stale_and_file_untouched(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    before = config.stat()
    data = config.read_bytes()
    with pytest.raises(StalePlanError) as info:
        register_checkout(str(config), P, expected_sha256=sha(b"other bytes"))
    assert info.value.differences == (f"agent.toml changed since planning: {config}",)
    assert str(config) in info.value.message
    assert info.value.exit_code == 3
    after = config.stat()
    assert config.read_bytes() == data
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (
        before.st_ino, before.st_mtime_ns, before.st_ctime_ns
    )
    assert listing(tmp_path) == ["agent.toml"]


def test_missing_file_is_stale(tmp_path: Path) -> None:
    with pytest.raises(StalePlanError):
        register_checkout(str(tmp_path / "agent.toml"), P, expected_sha256=sha(b""))
    assert listing(tmp_path) == []


def test_change_between_read_and_rename_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path)
    data = config.read_bytes()
    edited = data + b"# edited meanwhile\n"
    real = config_write.add_checkout_path

    def racing(text: str, path: str, **kwargs: Any) -> str:
        config.write_bytes(edited)
        return real(text, path, **kwargs)

    monkeypatch.setattr(config_write, "add_checkout_path", racing)
    with pytest.raises(StalePlanError):
        register_checkout(str(config), P, expected_sha256=sha(data))
    assert config.read_bytes() == edited
    assert listing(tmp_path) == ["agent.toml"]


def test_symlinked_config_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text(CONFIG)
    link = tmp_path / "agent.toml"
    link.symlink_to(real)
    with pytest.raises(ConfigError) as info:
        register_checkout(str(link), P, expected_sha256=sha(CONFIG.encode()))
    assert info.value.code == "config.register_failed"
    assert link.is_symlink() and real.read_text() == CONFIG
    assert listing(tmp_path) == ["agent.toml", "real.toml"]


def test_unsupported_layout_leaves_file_untouched(tmp_path: Path) -> None:
    config = write_config(tmp_path, "paths = 5\n")
    with pytest.raises(ConfigError) as info:
        register_checkout(str(config), P, expected_sha256=sha(b"paths = 5\n"))
    assert str(config) in info.value.message
    assert config.read_bytes() == b"paths = 5\n"
    assert listing(tmp_path) == ["agent.toml"]


def test_invalid_utf8_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_bytes(b"name = '\xff'\n")
    with pytest.raises(ConfigError):
        register_checkout(str(config), P, expected_sha256=sha(config.read_bytes()))
    assert listing(tmp_path) == ["agent.toml"]


@pytest.mark.parametrize("failing", ["fsync", "replace", "write", "fchmod"])
def test_write_failure_removes_temp_and_keeps_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    config = write_config(tmp_path)
    data = config.read_bytes()
    inode = config.stat().st_ino

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(config_write.os, failing, fail)
    with pytest.raises(ExecutionError) as info:
        register_checkout(str(config), P, expected_sha256=sha(data))
    monkeypatch.undo()
    assert "No space left on device" in info.value.message
    assert str(config) in info.value.message
    assert config.read_bytes() == data and config.stat().st_ino == inode
    assert listing(tmp_path) == ["agent.toml"]


def test_temp_file_name_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path)
    seen: list[tuple[str, int]] = []
    real_open = os.open

    def spy(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        seen.append((str(path), flags))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(config_write.os, "open", spy)
    register_checkout(str(config), P, expected_sha256=sha(config.read_bytes()))
    temps = [(p, f) for p, f in seen if p.endswith(".tmp")]
    assert len(temps) == 1
    name, flags = temps[0]
    assert name.startswith(f".agent.toml.aikito-{os.getpid()}-")
    for flag in (os.O_CREAT, os.O_EXCL, os.O_NOFOLLOW):
        assert flags & flag
    assert listing(tmp_path) == ["agent.toml"]


def test_temp_name_collision_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path)
    tokens = iter(["dead", "dead", "beef"])
    monkeypatch.setattr(fsutil, "temp_name",
                        lambda name: f".{name}.aikito-{os.getpid()}-{next(tokens)}.tmp")
    (tmp_path / f".agent.toml.aikito-{os.getpid()}-dead.tmp").write_text("someone else's")
    register_checkout(str(config), P, expected_sha256=sha(config.read_bytes()))
    assert (tmp_path / f".agent.toml.aikito-{os.getpid()}-dead.tmp").read_text() == (
        "someone else's"
    )
    assert P in config.read_text()


_keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
_scalars = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
_path_values = st.one_of(
    st.none(),
    st.fixed_dictionaries({"paths": st.lists(paths_strategy, max_size=3)}),
    st.fixed_dictionaries({"paths": st.dictionaries(_keys, paths_strategy, max_size=3)}),
    st.fixed_dictionaries({"path": paths_strategy | st.lists(paths_strategy, max_size=3)}),
)


@settings(max_examples=300, deadline=None)
@given(
    other=st.dictionaries(_keys.filter(lambda k: k not in ("path", "paths")), _values,
                          max_size=5),
    form=_path_values,
    path=paths_strategy,
    multiline=st.booleans(),
)
def test_any_document_written_by_tomli_w(
    other: dict[str, Any], form: dict[str, Any] | None, path: str, multiline: bool
) -> None:
    import tomli_w

    old = tomli_w.dumps({**(form or {}), **other}, multiline_strings=multiline)
    # (tomli_w's multi-line strings normalise "\r\n": compare with what the text says.)
    before = tomllib.loads(old)
    new = add_checkout_path(old, path)
    insertions(old, new)
    data = tomllib.loads(new)
    assert {k: v for k, v in data.items() if k != "paths"} == {
        k: v for k, v in before.items() if k not in ("path", "paths")
    }
    if "paths" not in before:
        single = before.get("path", [])
        assert data["paths"] == [*([single] if isinstance(single, str) else single), path]
    elif isinstance(before["paths"], list):
        assert data["paths"] == [*before["paths"], path]
    else:
        label = next(f"path_{n}" for n in range(1, 10) if f"path_{n}" not in before["paths"])
        assert data["paths"] == {**before["paths"], label: path}


def test_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "agent.toml")
    with pytest.raises(ConfigError) as info:
        register_checkout(str(tmp_path / "agent.toml"), P, expected_sha256=sha(b""))
    assert info.value.code == "config.register_failed"
    assert "a FIFO" in info.value.message
    assert listing(tmp_path) == ["agent.toml"]


def test_owner_that_cannot_be_kept_is_refused_before_any_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewriting agent.toml must keep its owner; a user who could not ``fchown`` the new
    file is refused up front — at planning (check_registration) and at the write."""
    config = write_config(tmp_path)
    data = config.read_bytes()
    os.chown(config, 4242, 4242)
    before = snapshot(tmp_path)
    monkeypatch.setattr(config_write.os, "geteuid", lambda: 1000)
    for attempt in (
        lambda: config_write.check_registration(str(config), P),
        lambda: register_checkout(str(config), P, expected_sha256=sha(data)),
    ):
        with pytest.raises(ConfigError) as info:
            attempt()
        assert info.value.code == "config.register_failed"
        assert "owner and group (4242:4242)" in info.value.message
    assert snapshot(tmp_path) == before


def test_owner_kept_when_the_user_owns_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path)
    st_before = config.stat()
    monkeypatch.setattr(config_write.os, "geteuid", lambda: st_before.st_uid or 1000)
    if st_before.st_uid == 0:
        os.chown(config, 1000, os.getegid())
    assert P in config_write.check_registration(str(config), P).decode()


# -- planning a registration ([E9], [K4]) -------------------------------------------------


@pytest.mark.parametrize(
    ("path", "home", "written"),
    [
        ("/home/u/code/demo", "/home/u", "~/code/demo"),
        ("/home/u/code/demo", "/home/u/", "~/code/demo"),
        ("/home/u", "/home/u", "~"),
        ("/home/user2/demo", "/home/u", "/home/user2/demo"),
        ("/srv/demo", "/home/u", "/srv/demo"),
        ("/srv/demo", "/", "/srv/demo"),
        ("/srv/demo", None, "/srv/demo"),
        ("/srv/demo", "", "/srv/demo"),
        ("/home/u/a b/ü", "/home/u", "~/a b/ü"),
    ],
)
def test_registered_form(path: str, home: str | None, written: str) -> None:
    assert config_write.registered_form(path, home) == written
    if written.startswith("~"):
        from aikito_mem.config.discovery import expand_home

        assert expand_home(written, home) in (path, path + "/")


def test_check_registration_returns_the_bytes_the_registration_writes(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    before = snapshot(tmp_path)
    planned = config_write.check_registration(str(config), P)
    assert snapshot(tmp_path) == before
    register_checkout(str(config), P, expected_sha256=sha(config.read_bytes()))
    assert config.read_bytes() == planned


def test_check_registration_refuses_what_the_registration_refuses(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text(CONFIG)
    (tmp_path / "agent.toml").symlink_to(real)
    with pytest.raises(ConfigError) as info:
        config_write.check_registration(str(tmp_path / "agent.toml"), P)
    assert "symlink" in info.value.message and "real.toml" in info.value.message
    with pytest.raises(ConfigError):
        config_write.check_registration(str(tmp_path / "missing" / "agent.toml"), P)
    with pytest.raises(ConfigError):
        config_write.check_registration(str(tmp_path / "gone.toml"), P)
    with pytest.raises(ConfigError) as info:
        config_write.check_registration(str(real), os.fsdecode(b"/srv/\xff"))
    assert "not valid Unicode" in info.value.message


# -- tomlkit is imported only by the code that edits (§11) --------------------------------


def test_tomlkit_is_imported_only_when_editing(tmp_path: Path) -> None:
    """``--version``, a plain sync and a dry run of an already-registered checkout never
    import tomlkit; a dry run that plans a registration does (the test can tell)."""
    ws = WS(tmp_path)
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    new = ws.checkout("new")
    sync = ["--workspace", ws.root, "sync", "project", "demo"]
    for args in (["--version"], [*sync], [*sync, "--dry-run"], [*sync, co, "--dry-run"],
                 [*sync, co, "--check"], [*sync, co]):
        proc, imported = imported_modules(*args)
        assert proc.returncode == 0, args
        assert "tomlkit" not in imported, args
    proc, imported = imported_modules(*sync, new, "--dry-run")
    assert proc.returncode == 0
    assert "tomlkit" in imported


def test_checkout_under_home_is_registered_as_tilde(tmp_path: Path) -> None:
    """[K4] with a portable value: a checkout under the home directory is written as
    ``~/…`` (one agent.toml serves every machine); the dry run announces exactly that
    value, and the next sync finds the checkout registered."""
    ws = WS(tmp_path)
    ws.add_file("a.md", "a")
    config = ws.write_config("demo", raw='memory = ["a.md"]  # refs\n')
    co = f"{ws.home}/code/demo"
    os.makedirs(co)
    plan = ws.project("demo").plan(co)
    assert plan.register == "~/code/demo"
    assert Path(config).read_text() == 'memory = ["a.md"]  # refs\n'
    result = ws.project("demo").sync(co)
    assert result.registered
    assert Path(config).read_text() == 'memory = ["a.md"]  # refs\npaths = ["~/code/demo"]\n'
    again = ws.project("demo").plan(co)
    assert again.register is None and not again.has_changes
    outside = ws.checkout("elsewhere")
    assert ws.project("demo").plan(outside).register == outside


def test_too_large_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    with open(config, "wb") as f:
        f.truncate(fsutil.MAX_READ + 1)  # sparse: costs nothing
    with pytest.raises(ConfigError) as info:
        register_checkout(str(config), P, expected_sha256=sha(b""))
    assert "larger than" in info.value.message
    assert config.stat().st_size == fsutil.MAX_READ + 1
    assert listing(tmp_path) == ["agent.toml"]


def test_no_registration_starts_after_a_signal(tmp_path: Path) -> None:
    """[E5]: a SIGTERM received before the write (recorded, not raised, outside a wait)
    stops the registration before its temporary file is created."""
    import signal

    from aikito_mem import signals
    from aikito_mem.errors import InterruptedError_

    config = write_config(tmp_path)
    before = snapshot(tmp_path)
    with signals.installed():
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(InterruptedError_):
            register_checkout(str(config), P, expected_sha256=sha(config.read_bytes()))
    assert snapshot(tmp_path) == before
