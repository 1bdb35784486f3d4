"""§3 ``agent.toml``: [C1]–[C7].

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from tests.conformance._support import assert_config_error, ops, tq


def test_C1_syntax_error_names_file_line_column(w):
    w.agent(raw='paths = []\nmemory = ["a.md"\nname = \n')
    r = w.sync("--json")
    doc = assert_config_error(r, str(w.toml))
    msg = doc["error"]["message"].lower()
    # AMBIGUOUS: "names the file, line and column" — accept "line N, column M" or the
    # conventional FILE:LINE:COL form.
    assert ("line" in msg and "col" in msg) or re.search(r"agent\.toml:\d+:\d+", msg), msg


def _line_col(msg: str, line: int) -> bool:
    # AMBIGUOUS: accept FILE:LINE:COL or "line N ... column M".
    return bool(re.search(rf"agent\.toml:{line}:\d+", msg)
                or re.search(rf"line {line}\b.*col", msg, re.I))


def test_C1_bom_is_config_error(w):
    w.toml.write_bytes(b"\xef\xbb\xbfpaths = []\n")
    doc = assert_config_error(w.sync("--json"), str(w.toml))
    assert _line_col(doc["error"]["message"], 1), doc["error"]["message"]


def test_C1_invalid_utf8_is_config_error(w):
    w.toml.write_bytes(b'paths = []\nmemory = ["\xff\xfe.md"]\n')
    doc = assert_config_error(w.sync("--json"), str(w.toml))
    assert _line_col(doc["error"]["message"], 2), doc["error"]["message"]


def test_C1_text_mode_error_goes_to_stderr_without_traceback(w):
    w.agent(raw="memory = [\n")
    r = w.sync()
    assert r.rc == 4
    assert str(w.toml) in r.err
    assert "Traceback" not in r.err


def test_C2_memory_string_is_config_error_never_read_per_character(w):
    w.mem("x.md")
    w.mem("x")
    w.agent(raw=f'paths = [{tq(str(w.co))}]\nmemory = "x.md"\n')
    doc = assert_config_error(w.sync("--json"), "memory")
    assert not (w.co / ".agents").exists()
    assert doc["operations"] == []


@pytest.mark.parametrize(
    "value, index",
    [("3", None), ('{a = "b"}', None), ('[["a"]]', "0"), ('["a.md", 2]', "1"),
     ("true", None)],
)
def test_C2_memory_must_be_list_of_strings(api_env, value, index):
    w = api_env
    import aikito_mem as m
    w.agent(raw=f'paths = [{tq(str(w.co))}]\nmemory = {value}\n')
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).plan()
    msg = str(ei.value)
    assert "memory" in msg
    if index is not None:
        assert index in msg, "offending index must be named [C2]"
    assert getattr(ei.value, "exit_code", 4) == 4


def test_C2_memory_absent_means_no_references_but_notes_apply(w):
    w.notes_current()
    w.agent(memory=None)
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    assert [o["resource"] for o in doc["operations"]] == ["notes"]


BAD_REFS = [
    "", "/abs.md", "a//b", "./a", "a/./b", "a/..", "../a", "a/", "a\\b", "a\x01b",
    "a\x7fb", "a\x85b", "a\u200db", "\ufeffa", "a\u202eb", " a", "a ", "a/ b", "b /a",
    "x" * 256, "d/" + "é" * 128,
]


def _names(ref: str, msg: str) -> bool:
    # AMBIGUOUS: "naming the reference" — accept the raw string, its NFC form, or a
    # repr/ascii/JSON-escaped spelling (invisible characters are best shown escaped).
    return (ref in msg or unicodedata.normalize("NFC", ref) in unicodedata.normalize("NFC", msg)
            or repr(ref)[1:-1] in msg or ascii(ref)[1:-1] in msg
            or json.dumps(ref)[1:-1] in msg)


@pytest.mark.parametrize("ref", BAD_REFS, ids=[ascii(x)[:30] for x in BAD_REFS])
def test_C3_unclean_reference_is_config_error_naming_it_api(api_env, ref):
    """[C3] through the API (fast): ConfigError (exit 4) naming the reference."""
    w = api_env
    import aikito_mem as m
    w.agent(memory=[ref])
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).plan()
    if ref:
        assert _names(ref, str(ei.value)), str(ei.value)
    assert getattr(ei.value, "exit_code", 4) == 4
    assert not (w.co / ".agents").exists()


@pytest.mark.parametrize("ref", ["a/../b"])
def test_C3_unclean_reference_cli_exit_4(w, ref):
    w.agent(memory=[ref])
    doc = assert_config_error(w.sync("--json"))
    assert _names(ref, doc["error"]["message"]), doc["error"]["message"]
    assert not (w.co / ".agents").exists()


@pytest.mark.parametrize("ref", ["a\u00a0", "\u3000a/b", "a\u00adb", "a/\u2066x"],
                         ids=["nbsp-trailing", "ideographic-space-leading", "soft-hyphen-Cf",
                              "bidi-isolate-Cf"])
def test_C3_unicode_whitespace_and_format_chars(api_env, ref):
    # AMBIGUOUS: "white space" read as Unicode white space (str.isspace), not only ASCII.
    w = api_env
    import aikito_mem as m
    w.agent(memory=[ref])
    with pytest.raises(m.ConfigError):
        m.Project.load("demo", workspace=str(w.ws)).plan()


def test_C3_255_byte_component_is_accepted(w):
    ref = "y" * 255
    w.mem(ref)
    w.agent(memory=[ref])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    assert ops(doc, "CREATE", ref)


@pytest.mark.parametrize(
    "refs",
    [["a.md", "a.md"], ["\u00e9.md", "e\u0301.md"], ["A.md", "a.md"], ["a", "a/b"],
     ["dir/x", "dir"], ["\u00df.md", "SS.md"], ["x/\u00c9", "x/e\u0301"]],
    ids=["dup", "nfc", "casefold", "prefix", "prefix-rev", "casefold-sharp-s", "nfc+case"],
)
def test_C4_duplicates_and_prefixes_name_both(api_env, refs):
    w = api_env
    import aikito_mem as m
    w.agent(memory=refs)
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).plan()
    for ref in refs:
        assert _names(ref, str(ei.value)), (ref, str(ei.value))


def test_C4_cli_exit_4_names_both(w):
    w.agent(memory=["team", "team/a.md"])
    doc = assert_config_error(w.sync("--json"))
    assert "'team'" in doc["error"]["message"] or "team " in doc["error"]["message"]
    assert "team/a.md" in doc["error"]["message"]


@pytest.mark.parametrize(
    "raw",
    ["paths = 3\n", "paths = [1]\n", 'paths = "/x"\n', "path = 3\n", "path = [1]\n",
     "[paths]\nlaptop = 3\n", 'paths = [["/x"]]\n'],
)
def test_C5_bad_paths_types_are_config_errors(api_env, raw):
    w = api_env
    import aikito_mem as m
    w.agent(raw=raw)
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).plan()
    assert "path" in str(ei.value)


def test_C5_bad_paths_type_cli_exit_4(w):
    w.agent(raw='paths = "/x"\n')
    doc = assert_config_error(w.sync("--json"))
    assert "paths" in doc["error"]["message"]


def test_C5_labels_list_table_and_path(w):
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(raw=f"paths = [{tq(str(w.co))}, {tq(str(co2))}]\n")
    _, doc = w.jsync("--dry-run")
    assert [c["label"] for c in doc["checkouts"]] == ["1", "2"]
    w.agent(raw=f"[paths]\nlaptop = {tq(str(w.co))}\nserver = {tq(str(co2))}\n")
    _, doc = w.jsync("--dry-run")
    assert [c["label"] for c in doc["checkouts"]] == ["laptop", "server"]
    w.agent(raw=f"path = {tq(str(w.co))}\n")
    _, doc = w.jsync("--dry-run")
    assert [c["label"] for c in doc["checkouts"]] == ["default"]


def test_C5_path_used_only_when_paths_absent(w):
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(raw=f"paths = [{tq(str(w.co))}]\npath = {tq(str(co2))}\n")
    _, doc = w.jsync("--dry-run")
    assert [c["path"] for c in doc["checkouts"]] == [str(w.co)]


def test_C6_did_you_mean_warning_exact_text(w):
    w.mem("a.md")
    w.agent(memory=["a.md"], extra="memroy = []\n")
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    msgs = [f["message"] for f in doc["findings"]]
    assert "unknown key 'memroy' — did you mean 'memory'?" in msgs, msgs
    f = next(f for f in doc["findings"] if "memroy" in f["message"])
    assert f["severity"] == "warning"
    # text mode shows it too
    t = w.sync("--dry-run")
    assert "unknown key 'memroy' — did you mean 'memory'?" in (t.out + t.err)


def test_C6_near_paths_key_and_far_keys(w):
    w.agent(memory=[], extra='pahts = []\nsync_trigger = "auto"\ncompletely_unrelated = 1\n')
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    msgs = [f["message"] for f in doc["findings"]]
    assert any("'pahts'" in m and "'paths'" in m for m in msgs), msgs
    assert not any("sync_trigger" in m or "completely_unrelated" in m for m in msgs), msgs


def test_C7_project_without_agent_toml_is_not_found_and_unlinks_nothing(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    link = w.rt("a.md")
    assert link.is_symlink()
    w.toml.unlink()
    r = w.sync("--json")
    doc = assert_config_error(r)
    assert "not found" in doc["error"]["message"].lower()
    assert link.is_symlink()


def test_C7_unknown_project_name(w):
    r = w.cli("sync", "project", "nosuch", "--json")
    assert_config_error(r, "nosuch")


def test_C_name_must_equal_directory(w):
    w.agent(raw=f'name = "other"\npaths = [{tq(str(w.co))}]\n')
    assert_config_error(w.sync("--json"))
