"""``agent.toml`` rules [C1]–[C7] and the lexical part of [K1]/[K2], with exact codes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aikito_mem.config.agent_toml import near_misses, parse_project_config, reference_problem
from aikito_mem.errors import EXIT_CONFIG, ConfigError
from aikito_mem.model import Candidate, Finding, ProjectConfig
from tests.helpers.cli import Env, one_json
from tests.helpers.snapshots import changed, snapshot

CFG = "/ws/projects/demo/agent.toml"
HOME = "/home/u"


def parse(text: str | bytes, *, home: str = HOME) -> ProjectConfig:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return parse_project_config(
        data, name="demo", project_dir="/ws/projects/demo", config_path=CFG, home=home
    )


def parse_error(text: str | bytes, code: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse(text)
    err = info.value
    assert err.code == code, err.message
    assert err.exit_code == EXIT_CONFIG
    assert err.path == CFG
    assert err.message.startswith(CFG), err.message
    assert " — " in err.message  # every message ends with a remedy
    return err


def toml_str(s: str) -> str:
    """A TOML basic string for ``s``, escaping everything but printable ASCII."""
    out = []
    for ch in s:
        if ch in '"\\' or not (0x20 <= ord(ch) < 0x7F):
            out.append(f"\\U{ord(ch):08X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def memory_toml(refs: list[str]) -> str:
    return "memory = [" + ", ".join(toml_str(r) for r in refs) + "]\n"


# --------------------------------------------------------------------------- basics


def test_minimal_config() -> None:
    cfg = parse(b"")
    assert cfg == ProjectConfig(
        name="demo",
        project_dir="/ws/projects/demo",
        config_path=CFG,
        memory=(),
        candidates=(),
        findings=(),
        data=b"",
    )


def test_full_config() -> None:
    text = (
        'name = "demo"\n'
        'paths = ["~/code/demo", "/srv/demo"]\n'
        'memory = ["team/conventions.md", "glossary", "decisions/adr"]\n'
        'skills = ["x"]\n'
        "[other]\nkey = 1\n"
    )
    cfg = parse(text)
    assert cfg.memory == ("team/conventions.md", "glossary", "decisions/adr")
    assert cfg.candidates == (
        Candidate(label="1", raw="~/code/demo", path="/home/u/code/demo", absolute=True),
        Candidate(label="2", raw="/srv/demo", path="/srv/demo", absolute=True),
    )
    assert cfg.findings == ()
    assert cfg.sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_memory_order_is_kept_as_written() -> None:
    assert parse(memory_toml(["b", "a", "c/d"])).memory == ("b", "a", "c/d")


# --------------------------------------------------------------------------- [C1]


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("a = 1\nb = \n", ":2:5:", "Invalid value"),
        ('memory = ["a"\n', ":2:1:", ""),
        ("x = [1,", ":1:8:", "Invalid value"),
        ('a = "', ":1:6:", "Unterminated string"),
        ("a = 1\na = 2\n", ":2:6:", ""),
    ],
)
def test_toml_syntax_error_names_line_and_column(text: str, where: str, what: str) -> None:
    err = parse_error(text, "config.toml_syntax")
    assert err.message.startswith(f"{CFG}{where} invalid TOML: {what}"), err.message
    assert "(at line" not in err.message


def test_invalid_utf8_names_line_and_character_column() -> None:
    err = parse_error(b'x = 1\ny = "\xc3\xa9\xff"\n', "config.toml_encoding")
    assert err.message.startswith(f"{CFG}:2:7: invalid UTF-8: byte(s) ff (invalid start byte)")


def test_truncated_utf8_at_end() -> None:
    err = parse_error(b'x = "\xc3', "config.toml_encoding")
    assert err.message.startswith(f"{CFG}:1:6: invalid UTF-8")


def test_bom_is_rejected() -> None:
    err = parse_error(b'\xef\xbb\xbfmemory = ["a"]\n', "config.toml_encoding")
    assert err.message.startswith(f"{CFG}:1:1: invalid TOML encoding: the file starts with a")
    assert "byte-order mark (BOM)" in err.message
    assert "remove it" in err.message


def test_deep_nesting_is_not_a_traceback() -> None:
    text = "a = " + "[" * 100_000 + "]" * 100_000
    parse_error(text, "config.toml_syntax")


# --------------------------------------------------------------------------- name


def test_name_mismatch() -> None:
    err = parse_error('name = "other"\n', "config.name_mismatch")
    assert "'other'" in err.message and "'demo'" in err.message
    assert 'set name = "demo"' in err.message


def test_name_not_a_string() -> None:
    err = parse_error("name = 3\n", "config.name_mismatch")
    assert "found an integer (3)" in err.message


# --------------------------------------------------------------------------- [C2]


@pytest.mark.parametrize(
    ("value", "where", "found"),
    [
        ('"x.md"', "key 'memory'", "found a string ('x.md')"),
        ('""', "key 'memory'", "found a string ('')"),
        ("3", "key 'memory'", "found an integer (3)"),
        ("1.5", "key 'memory'", "found a float (1.5)"),
        ("true", "key 'memory'", "found a boolean (True)"),
        ('{ a = "b" }', "key 'memory'", "found a table"),
        ("1979-05-27", "key 'memory'", "found a date"),
        ("1979-05-27T07:32:00Z", "key 'memory'", "found a date-time"),
        ('[["a"]]', "memory[0]", "found a list"),
        ('["a", "b", 3]', "memory[2]", "found an integer (3)"),
        ('["a", { x = 1 }]', "memory[1]", "found a table"),
        ('["a", true]', "memory[1]", "found a boolean (True)"),
        ('["a", 2.5]', "memory[1]", "found a float (2.5)"),
    ],
)
def test_memory_type_errors(value: str, where: str, found: str) -> None:
    err = parse_error(f"memory = {value}\n", "config.memory_type")
    assert f"{CFG}: {where}: expected " in err.message
    assert found in err.message


def test_memory_string_gets_list_remedy() -> None:
    err = parse_error('memory = "x.md"\n', "config.memory_type")
    assert err.message == (
        f"{CFG}: key 'memory': expected a list of strings, found a string ('x.md') — "
        'write memory = ["x.md"]'
    )


def test_memory_table_form_rejected() -> None:
    parse_error('[memory]\na = "x"\n', "config.memory_type")


def test_memory_empty_list_is_fine() -> None:
    assert parse("memory = []\n").memory == ()


# --------------------------------------------------------------------------- [C3]

INVALID_REFERENCES = [
    ("", "is empty"),
    ("/abs", "is absolute"),
    ("/", "is absolute"),
    ("a//b", "has an empty component"),
    (".", "has a '.' component"),
    ("./a", "has a '.' component"),
    ("a/./b", "has a '.' component"),
    ("..", "has a '..' component"),
    ("a/..", "has a '..' component"),
    ("../x", "has a '..' component"),
    ("a/", "ends with '/'"),
    ("a/b/", "ends with '/'"),
    ("a\\b", "contains a backslash"),
    ("C:\\x", "contains a backslash"),
    ("a\x00b", "control character U+0000"),
    ("a\nb", "control character U+000A"),
    ("a\tb", "control character U+0009"),
    ("a\x1fb", "control character U+001F"),
    ("a\x7fb", "control character U+007F"),
    ("a\x80b", "control character U+0080"),
    ("a\x85b", "control character U+0085"),
    ("a\x9fb", "control character U+009F"),
    ("a\u200bb", "format character U+200B (ZERO WIDTH SPACE, Unicode category Cf)"),
    ("a\u200db", "format character U+200D"),
    ("\ufeffa", "format character U+FEFF"),
    ("a\u202eb.md", "format character U+202E"),
    ("a\u2066b", "format character U+2066"),
    ("\u00ada", "format character U+00AD"),
    (" a", "leading or trailing white space (' a')"),
    ("a ", "leading or trailing white space ('a ')"),
    ("x/ b/c", "leading or trailing white space (' b')"),
    ("x/b\u00a0", "leading or trailing white space"),
    ("\u3000x", "leading or trailing white space"),
    ("\u2003x", "leading or trailing white space"),
    ("x" * 256, "256 bytes in UTF-8, longer than 255"),
    ("d/" + "é" * 128, "component (number 2) of 256 bytes"),
    ("€" * 86, "258 bytes"),
]


@pytest.mark.parametrize(("ref", "reason"), INVALID_REFERENCES)
def test_reference_problem(ref: str, reason: str) -> None:
    problem = reference_problem(ref)
    assert problem is not None
    assert reason in problem


@pytest.mark.parametrize(("ref", "reason"), INVALID_REFERENCES)
def test_invalid_reference_in_config(ref: str, reason: str) -> None:
    err = parse_error(memory_toml(["ok.md", ref]), "config.reference_invalid")
    assert f"{CFG}: memory[1] = {ref!r} is not a valid reference: it " in err.message
    assert reason in err.message
    assert err.message.endswith("— fix or remove this entry")


def test_control_characters_are_visible_in_message() -> None:
    err = parse_error(memory_toml(["a\x00b\u202e"]), "config.reference_invalid")
    assert "'a\\x00b\\u202e'" in err.message


@pytest.mark.parametrize(
    "ref",
    [
        "a",
        "a/b.md",
        "team/conventions.md",
        ".hidden",
        "a..b",
        "...",
        "a b/c d",
        "café/résumé.md",
        "日本語/メモ.md",
        "x" * 255,
        "é" * 127,
        "C:/x",
        "~",
        "a-b_c.d",
    ],
)
def test_valid_references(ref: str) -> None:
    assert reference_problem(ref) is None
    assert parse(memory_toml([ref])).memory == (ref,)


# --------------------------------------------------------------------------- [C4]


@pytest.mark.parametrize(
    ("refs", "i", "j", "how"),
    [
        (["a", "a"], 0, 1, "is listed twice"),
        (["x", "team/a.md", "y", "team/a.md"], 1, 3, "is listed twice"),
        (["caf\u00e9", "cafe\u0301"], 0, 1, "equal after NFC normalisation"),
        (["\u00c5/x", "A\u030a/x"], 0, 1, "equal after NFC normalisation"),
        (["Team", "team"], 0, 1, "equal after case folding"),
        (["a/B.md", "A/b.MD"], 0, 1, "equal after case folding"),
        (["straße", "STRASSE"], 0, 1, "equal after case folding"),
        (["\ufb01le", "FILE"], 0, 1, "equal after case folding"),
        (["\u01f0", "J\u030c"], 0, 1, "equal after case folding"),
        (["Caf\u00e9", "cafe\u0301"], 0, 1, "equal after case folding"),
    ],
)
def test_duplicate_references(refs: list[str], i: int, j: int, how: str) -> None:
    err = parse_error(memory_toml(refs), "config.reference_duplicate")
    assert how in err.message
    assert f"memory[{i}]" in err.message and f"memory[{j}]" in err.message
    show = ascii if "NFC" in how else repr
    assert show(refs[i]) in err.message and show(refs[j]) in err.message
    assert "remove one of them" in err.message


@pytest.mark.parametrize(
    ("refs", "outer", "inner"),
    [
        (["a", "a/b"], 0, 1),
        (["a/b", "a"], 1, 0),
        (["a", "a/b/c"], 0, 1),
        (["a/b/c", "x", "a"], 2, 0),
        (["x/y", "x/y/z/w"], 0, 1),
        (["A", "a/b"], 0, 1),
        (["team/a", "TEAM"], 1, 0),
        (["cafe\u0301", "caf\u00e9/x"], 0, 1),
        (["notes", "notes/x.md"], 0, 1),
    ],
)
def test_prefix_references(refs: list[str], outer: int, inner: int) -> None:
    err = parse_error(memory_toml(refs), "config.reference_prefix")
    assert err.message.startswith(
        f"{CFG}: memory reference {refs[inner]!r} (memory[{inner}]) is inside memory "
        f"reference {refs[outer]!r} (memory[{outer}]);"
    )
    assert "would be created through the link of" in err.message


@pytest.mark.parametrize(
    "refs",
    [
        ["a", "ab"],
        ["ab", "a"],
        ["a/b", "a/c"],
        ["a.md", "a"],
        ["a/b", "ab"],
        ["a/b/c", "a/b/d", "a/e"],
        ["x/a", "y/a"],
    ],
)
def test_non_colliding_references(refs: list[str]) -> None:
    assert parse(memory_toml(refs)).memory == tuple(refs)


def _oracle_key(ref: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", ref).casefold())


_component = st.lists(
    st.sampled_from(["a", "A", "b", "\u00e9", "e\u0301", "\u00df", "ss", "SS"]),
    min_size=1,
    max_size=2,
).map("".join)
_reference = st.lists(_component, min_size=1, max_size=3).map("/".join)


@given(st.lists(_reference, max_size=8))
def test_collisions_match_pairwise_oracle(refs: list[str]) -> None:
    keys = [_oracle_key(r) for r in refs]
    clash = any(
        a == b or a.startswith(b + "/") or b.startswith(a + "/")
        for i, a in enumerate(keys)
        for b in keys[:i]
    )
    text = memory_toml(refs)
    if clash:
        with pytest.raises(ConfigError) as info:
            parse(text)
        assert info.value.code in ("config.reference_duplicate", "config.reference_prefix")
    else:
        assert parse(text).memory == tuple(refs)


def test_ten_thousand_references_validate() -> None:
    """A large list is validated whole (the prefix rule across 10,200 references); how long
    it takes is the benchmark's to measure, not a test's."""
    refs = [f"r{i:05d}/f{i}.md" for i in range(5000)] + [f"top{i}.md" for i in range(5000)]
    refs += ["dé" + str(i) for i in range(200)]
    text = memory_toml(refs).encode()
    cfg = parse(text)
    assert len(cfg.memory) == 10_200
    # a collision at the very end is still found
    with pytest.raises(ConfigError) as info:
        parse(memory_toml([*refs, "r00000"]))
    assert info.value.code == "config.reference_prefix"


# --------------------------------------------------------------------------- [C5]


@pytest.mark.parametrize(
    ("text", "where", "found"),
    [
        ('paths = "~/x"\n', "key 'paths'", "found a string ('~/x')"),
        ("paths = 1\n", "key 'paths'", "found an integer (1)"),
        ("paths = true\n", "key 'paths'", "found a boolean (True)"),
        ("paths = [1]\n", "paths[0]", "found an integer (1)"),
        ('paths = ["/a", ["/b"]]\n', "paths[1]", "found a list"),
        ('paths = ["/a", { x = "/b" }]\n', "paths[1]", "found a table"),
        ("[paths]\nlaptop = 1\n", "paths.laptop", "found an integer (1)"),
        ('[paths]\n"my box" = ["/a"]\n', 'paths."my box"', "found a list"),
        ('[paths.laptop]\nx = "/a"\n', "paths.laptop", "found a table"),
        ("path = 1\n", "key 'path'", "found an integer (1)"),
        ('path = { a = "/b" }\n', "key 'path'", "found a table"),
        ('path = ["/a", 2]\n', "path[1]", "found an integer (2)"),
        ("path = 1979-05-27\n", "key 'path'", "found a date"),
    ],
)
def test_paths_type_errors(text: str, where: str, found: str) -> None:
    err = parse_error(text, "config.paths_type")
    assert f"{CFG}: {where}: expected " in err.message
    assert found in err.message


def test_paths_table_labels_in_file_order() -> None:
    cfg = parse('[paths]\nlaptop = "~/code/demo"\nserver = "/srv/demo"\n')
    assert cfg.candidates == (
        Candidate(label="laptop", raw="~/code/demo", path="/home/u/code/demo", absolute=True),
        Candidate(label="server", raw="/srv/demo", path="/srv/demo", absolute=True),
    )


def test_path_string_label_default() -> None:
    cfg = parse('path = "~/code/demo"\n')
    assert cfg.candidates == (
        Candidate(label="default", raw="~/code/demo", path="/home/u/code/demo", absolute=True),
    )


def test_path_list_labels_numbered() -> None:
    cfg = parse('path = ["/a", "/b"]\n')
    assert [(c.label, c.path) for c in cfg.candidates] == [("1", "/a"), ("2", "/b")]


def test_path_ignored_when_paths_present() -> None:
    cfg = parse('paths = ["/a"]\npath = 3\n')
    assert [c.path for c in cfg.candidates] == ["/a"]
    assert [f.code for f in cfg.findings] == ["config.path_ignored"]


def test_empty_paths() -> None:
    assert parse("paths = []\n").candidates == ()
    assert parse("[paths]\n").candidates == ()


# --------------------------------------------------------------------------- [K1]/[K2]


@pytest.mark.parametrize(
    ("raw", "path", "absolute"),
    [
        ("~", "/home/u", True),
        ("~/", "/home/u", True),
        ("~/code/../code/./demo/", "/home/u/code/../code/demo", True),
        ("//srv//demo", "/srv/demo", True),
        ("///srv/demo", "/srv/demo", True),
        ("/srv/demo/.", "/srv/demo", True),
        ("/a/b/../c", "/a/b/../c", True),
        ("/a/link/..", "/a/link/..", True),
        ("~bob/code", "~bob/code", False),
        ("D:/code/x", "D:/code/x", False),
        ("code/x", "code/x", False),
        ("./code", "./code", False),
        ("", "", False),
    ],
)
def test_candidate_expansion(raw: str, path: str, absolute: bool) -> None:
    cfg = parse(f"paths = [{toml_str(raw)}]\n")
    assert cfg.candidates == (Candidate(label="1", raw=raw, path=path, absolute=absolute),)
    if absolute:
        assert cfg.findings == ()
    else:
        assert cfg.findings == (
            Finding(
                code="checkout.not_absolute",
                severity="warning",
                message=f"checkout 1 path {raw!r} is not an absolute path on this system; "
                "treated as offline",
                path=None,
            ),
        )


def test_home_with_trailing_slash_and_root_home() -> None:
    assert parse('path = "~/x"', home="/home/u/").candidates[0].path == "/home/u/x"
    assert parse('path = "~/x"', home="/").candidates[0].path == "/x"


def test_no_home_means_no_expansion() -> None:
    cand = parse('path = "~/x"', home="").candidates[0]
    assert (cand.path, cand.absolute) == ("~/x", False)


def test_relative_candidate_never_resolved_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "code").mkdir()
    monkeypatch.chdir(tmp_path)
    cand = parse('paths = ["code"]').candidates[0]
    assert cand.path == "code" and not cand.absolute


def test_duplicates_first_label_wins() -> None:
    cfg = parse(
        '[paths]\nlaptop = "~/code/demo"\ndesk = "/home/u/code//demo/"\n'
        'rel = "x/y"\nrel2 = "x/./y"\n'
    )
    assert [(c.label, c.path) for c in cfg.candidates] == [
        ("laptop", "/home/u/code/demo"),
        ("rel", "x/y"),
    ]
    codes = [(f.code, f.message) for f in cfg.findings]
    assert codes == [
        (
            "checkout.duplicate",
            "checkout desk path '/home/u/code//demo/' is the same path as checkout laptop; "
            "ignored",
        ),
        (
            "checkout.not_absolute",
            "checkout rel path 'x/y' is not an absolute path on this system; treated as offline",
        ),
        (
            "checkout.duplicate",
            "checkout rel2 path 'x/./y' is the same path as checkout rel; ignored",
        ),
    ]


# --------------------------------------------------------------------------- [C6] near misses


@pytest.mark.parametrize(
    ("key", "resembled"),
    [
        ("memroy", "memory"),
        ("memory_", "memory"),
        ("Memory", "memory"),
        ("MEMORY", "memory"),
        ("memori", "memory"),
        ("memoryy", "memory"),
        ("mmory", "memory"),
        ("pahts", "paths"),
        ("pathss", "paths"),
        ("Paths", "paths"),
        ("paht", "path"),
        ("pat", "path"),
        ("pth", "path"),
        ("PATH", "path"),
        ("skils", "skills"),
        ("skill", "skills"),
        ("Skills", "skills"),
        ("sync-mode", "sync_mode"),
        ("syncmode", "sync_mode"),
        ("sync_mdoe", "sync_mode"),
        ("Sync_Mode", "sync_mode"),
    ],
)
def test_near_miss_of_an_absent_key_is_an_error(key: str, resembled: str) -> None:
    """[C6]: a typo is refused loudly, never obeyed (which would unlink everything)."""
    err = parse_error(f"{key} = []\n", "config.unknown_key")
    assert f"unknown key {key!r} — did you mean {resembled!r}? As written, " in err.message
    assert f"rename {key!r} to {resembled!r}" in err.message
    assert near_misses(key)[0] == resembled


def test_near_miss_message_says_what_would_happen() -> None:
    err = parse_error('memroy = ["a.md"]\n', "config.unknown_key")
    assert err.message.startswith(
        f"{CFG}: unknown key 'memroy' — did you mean 'memory'? As written, every memory "
        "link of this project would be removed"
    )
    assert "write memory = [] explicitly" in err.message  # the way out for other tools
    skills = parse_error('skils = ["a"]\n', "config.unknown_key")
    assert "every skill link of this project would be removed" in skills.message
    paths = parse_error('pahts = ["/a"]\n', "config.unknown_key")
    assert "would not be synced" in paths.message
    mode = parse_error('sync_mod = "copy"\n', "config.unknown_key")
    assert "skills would be linked" in mode.message


@pytest.mark.parametrize(
    ("text", "key", "resembled"),
    [
        ('memory = ["a"]\nmemroy = ["b"]\n', "memroy", "memory"),
        ('paths = ["/a"]\npahts = ["/b"]\n', "pahts", "paths"),
        ('path = "/a"\npaht = "/b"\n', "paht", "path"),
        ('skills = ["a"]\nskils = ["b"]\n', "skils", "skills"),
        ('sync_mode = "link"\nsyncmode = "copy"\n', "syncmode", "sync_mode"),
        # 'path' is never read beside 'paths': a near miss of it is harmless
        ('paths = ["/a"]\npaht = "/b"\n', "paht", "path"),
        ('paths = ["/a"]\npathz = "/b"\n', "pathz", "paths"),
    ],
)
def test_near_miss_of_a_present_key_is_a_warning(text: str, key: str, resembled: str) -> None:
    cfg = parse(text)
    warnings = [f for f in cfg.findings if f.code == "config.unknown_key"]
    assert warnings == [
        Finding(
            code="config.unknown_key",
            severity="warning",
            message=f"unknown key {key!r} — did you mean {resembled!r}?",
            path=CFG,
        )
    ]


def test_path_and_paths_are_never_typos_of_each_other() -> None:
    assert near_misses("path") == () and near_misses("paths") == ()
    cfg = parse('paths = ["/a"]\npath = "/b"\n')
    assert [f.code for f in cfg.findings] == ["config.path_ignored"]
    assert [c.path for c in parse('path = "/b"\n').candidates] == ["/b"]


def test_near_miss_of_paths_beside_path_only_is_an_error() -> None:
    """``path`` is present but ``paths``, which ``pahts`` resembles, is not: as written the
    list meant for ``paths`` would be ignored."""
    err = parse_error('path = "/a"\npahts = ["/b"]\n', "config.unknown_key")
    assert "did you mean 'paths'?" in err.message


def test_key_resembling_two_absent_keys_names_the_first_read_key() -> None:
    assert near_misses("pathz") == ("paths", "path")
    assert near_misses("paht") == ("path",)  # the closest only: 'paths' is two edits away
    err = parse_error('pathz = "/b"\n', "config.unknown_key")
    assert "did you mean 'paths'?" in err.message


@pytest.mark.parametrize(
    "key",
    ["name", "tags", "mem", "description", "hooks", "x", "agents", "env", "sync_trigger",
     "mode", "sync", "memory_bank", "skill_dirs", "a" * 40],
)
def test_unrelated_keys_are_silent(key: str) -> None:
    assert parse(f'{key} = "demo"\n').findings == ()


def test_unknown_keys_are_tolerated_in_tables() -> None:
    cfg = parse('memory = ["a"]\n[tool.other]\nmemroy = 1\n')
    assert cfg.memory == ("a",) and cfg.findings == ()


# --------------------------------------------------------------------------- [C6] path values


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('paths = ["/a", "/b\\u0000c"]\n', "paths[1] (checkout 2)"),
        ('[paths]\nlaptop = "/b\\u0000"\n', "paths.laptop (checkout laptop)"),
        ('path = "/b\\u0000"\n', "path (checkout default)"),
        ('path = ["/a", "/b\\u0000"]\n', "path[1] (checkout 2)"),
        ('paths = ["/b\\nc"]\n', "paths[0] (checkout 1)"),
        ('paths = ["/b\\u007fc"]\n', "paths[0] (checkout 1)"),
        ('paths = ["/b\\u0085c"]\n', "paths[0] (checkout 1)"),
        ('paths = ["~/b\\tc"]\n', "paths[0] (checkout 1)"),
    ],
)
def test_control_character_in_a_path_value_is_an_error(text: str, where: str) -> None:
    err = parse_error(text, "config.path_invalid")
    assert err.message.startswith(f"{CFG}: {where} = ")
    assert "contains the control character U+00" in err.message


def test_ignored_path_is_not_validated() -> None:
    """Beside ``paths``, ``path`` is never read: its value cannot matter ([C5])."""
    cfg = parse('paths = ["/a"]\npath = "/b\\u0000"\n')
    assert [c.path for c in cfg.candidates] == ["/a"]


# --------------------------------------------------------------------------- [G1] skills


def test_skills_parsed_in_order() -> None:
    assert parse('skills = ["review", "deploy-1", "é"]\n').skills == ("review", "deploy-1", "é")
    assert parse("skills = []\n").skills == ()
    assert parse("").skills == ()


@pytest.mark.parametrize(
    ("value", "where", "found"),
    [
        ('"alpha"', "key 'skills'", "found a string ('alpha')"),
        ("3", "key 'skills'", "found an integer (3)"),
        ('{ a = "b" }', "key 'skills'", "found a table"),
        ('[{ name = "a" }]', "skills[0]", "found a table"),
        ('["a", 2]', "skills[1]", "found an integer (2)"),
        ('[["a"]]', "skills[0]", "found a list"),
    ],
)
def test_skills_type_errors(value: str, where: str, found: str) -> None:
    err = parse_error(f"skills = {value}\n", "config.skills_type")
    assert f"{CFG}: {where}: expected " in err.message
    assert found in err.message


def test_skills_string_is_never_read_per_character() -> None:
    err = parse_error('skills = "alpha"\n', "config.skills_type")
    assert 'write skills = ["alpha"]' in err.message


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "is empty"),
        (".", "is '.'"),
        ("..", "is '..'"),
        ("../projects", "contains '/'"),
        ("a/b", "contains '/'"),
        ("/abs", "contains '/'"),
        ("a\\b", "backslash"),
        ("a\x00b", "control character U+0000"),
        ("a\nb", "control character U+000A"),
        ("a\u200bb", "format character U+200B"),
        (" a", "leading or trailing white space"),
        ("a\t", "control character U+0009"),
        ("a\u00a0", "leading or trailing white space"),
        ("x" * 256, "256 bytes"),
    ],
)
def test_invalid_skill_names(name: str, reason: str) -> None:
    err = parse_error(f"skills = [\"ok\", {toml_str(name)}]\n", "config.skill_invalid")
    assert err.message.startswith(f"{CFG}: skills[1] = {name!r} is not a valid skill name")
    assert reason in err.message


@pytest.mark.parametrize(
    ("names", "how"),
    [
        (["a", "b", "a"], "skill 'a' is listed twice (skills[0] and skills[2])"),
        (["Review", "review"], "are equal after case folding"),
        (["\u00e9", "e\u0301"], "are equal after NFC normalisation"),
        (["Stra\u00dfe", "STRASSE"], "are equal after case folding"),
    ],
)
def test_duplicate_skills(names: list[str], how: str) -> None:
    err = parse_error(f"skills = [{', '.join(toml_str(n) for n in names)}]\n",
                      "config.skill_duplicate")
    assert how in err.message


def test_skills_are_not_prefixes_of_each_other() -> None:
    assert parse('skills = ["a", "ab"]\n').skills == ("a", "ab")


@pytest.mark.parametrize("mode", ["link", "LINK", "Link", "lInK"])
def test_sync_mode_link_in_any_case(mode: str) -> None:
    assert parse(f'sync_mode = "{mode}"\nskills = ["a"]\n').skills == ("a",)


@pytest.mark.parametrize("mode", ["copy", "COPY", "Copy"])
def test_sync_mode_copy_is_refused(mode: str) -> None:
    err = parse_error(f'sync_mode = "{mode}"\n', "config.sync_mode")
    assert "this engine only links (INV-MEM-01)" in err.message
    assert "reference tool 'aikito'" in err.message
    assert repr(mode) in err.message


@pytest.mark.parametrize(
    ("value", "found"),
    [('"lnk"', "found a string ('lnk')"), ('""', "found a string ('')"),
     ("1", "found an integer (1)"), ('["link"]', "found a list"),
     ("true", "found a boolean (True)"), ('" link"', "found a string (' link')")],
)
def test_sync_mode_other_values_are_refused(value: str, found: str) -> None:
    err = parse_error(f"sync_mode = {value}\n", "config.sync_mode")
    assert 'expected "link" (in any letter case)' in err.message
    assert found in err.message


# --------------------------------------------------------------------------- through the CLI


@pytest.mark.parametrize(
    ("extra", "code", "culprit"),
    [
        ('memroy = ["team/a.md"]\n', "config.unknown_key", "'memroy'"),
        ('Memory = ["team/a.md"]\n', "config.unknown_key", "'Memory'"),
        ('skils = ["a"]\n', "config.unknown_key", "'skils'"),
        ('sync_mod = "link"\n', "config.unknown_key", "'sync_mod'"),
        ('skills = "alpha"\n', "config.skills_type", "key 'skills'"),
        ('skills = [{ name = "a" }]\n', "config.skills_type", "skills[0]"),
        ('skills = ["a", "A"]\n', "config.skill_duplicate", "skills[1]"),
        ('skills = ["../projects"]\n', "config.skill_invalid", "skills[0]"),
        ('sync_mode = "copy"\n', "config.sync_mode", "INV-MEM-01"),
        ('sync_mode = "mirror"\n', "config.sync_mode", "'mirror'"),
        ('paths = ["/x\\u0000y"]\n', "config.path_invalid", "paths[0] (checkout 1)"),
        ('path = "/x\\u0000y"\n', "config.path_invalid", "path (checkout default)"),
    ],
)
def test_configuration_errors_exit_4_and_write_nothing(
    tmp_path: Path, extra: str, code: str, culprit: str
) -> None:
    """A typo must never unlink anything ([C6]): the links of the last good sync stay, in
    a real run, a dry run and --check alike; status and doctor report, never crash."""
    env = Env(tmp_path)
    assert env.json("demo")[0] == 0  # links in place
    memory = None if extra.startswith(("memroy", "Memory")) else ["team/a.md", "glossary.md"]
    paths = None if extra.startswith(("paths", "path ")) else [env.co]
    env.config(memory, paths, extra=extra)
    before = snapshot(env.base)
    for args in ((), ("--dry-run",), ("--check",)):
        exit_code, doc = env.json("demo", *args)
        assert exit_code == 4, doc
        assert doc["outcome"] == "config_error"
        assert doc["error"]["code"] == code
        assert culprit in doc["error"]["message"]
        assert str(env.cfg) in doc["error"]["message"]
    text = env.sync("demo")
    assert text.exit_code == 4 and culprit in text.stderr
    status = env.run("status", "--json")
    assert status.exit_code == 4  # [U3]: sync --check's code for this project
    project, = one_json(status.stdout)["projects"]
    assert project["error"]["code"] == code
    doctor = env.run("doctor", "--json")
    assert doctor.exit_code == 1 and isinstance(doctor.exception, SystemExit)
    assert any(c["status"] == "error" and culprit in c["message"]
               for c in one_json(doctor.stdout)["checks"])
    assert changed(before, snapshot(env.base)) == set()


def test_near_miss_beside_the_real_key_is_a_warning_in_the_document(tmp_path: Path) -> None:
    env = Env(tmp_path)
    env.config(["glossary.md"], [env.co], extra='memroy = ["team/a.md"]\n')
    exit_code, doc = env.json("demo")
    assert exit_code == 0
    assert {"code": "config.unknown_key", "severity": "warning",
            "message": "unknown key 'memroy' — did you mean 'memory'?",
            "path": str(env.cfg)} in doc["findings"]
