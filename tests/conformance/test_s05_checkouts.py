"""§5 Checkouts: [K1]–[K4].

Black-box conformance, from the specification alone: see :mod:`tests.conformance`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from tests.conformance._support import apply_plan, assert_config_error, run, save_plan, tq


def test_K1_tilde_expansion_and_dedupe(w):
    hco = w.home / "code"
    hco.mkdir()
    w.agent(paths=["~/code", str(hco), str(w.tmp / "off/a"), str(w.tmp / "off/./a")],
            memory=[])
    _, doc = w.jsync("--dry-run")
    cs = doc["checkouts"]
    assert [c["path"] for c in cs] == [str(hco), str(w.tmp / "off/a")], cs
    assert cs[0]["label"] == "1" and cs[0]["state"] == "active"
    assert cs[1]["state"] == "offline"


def test_K1_dedupe_by_physical_path(w):
    os.symlink(w.co, w.tmp / "colink")
    w.agent(paths=[str(w.tmp / "colink"), str(w.co)], memory=[])
    _, doc = w.jsync("--dry-run")
    assert len(doc["checkouts"]) == 1 and doc["checkouts"][0]["label"] == "1"


@pytest.mark.parametrize("raw", ["code/x", "D:/code/x"])
def test_K2_non_absolute_path_is_offline_with_warning_never_cwd(w, raw):
    w.mem("a.md")
    (w.home / "code" / "x").mkdir(parents=True)  # exists relative to cwd=home
    (w.home / "D:" / "code" / "x").mkdir(parents=True)
    w.agent(paths=[raw], memory=["a.md"])
    r, doc = w.jsync(cwd=w.home)
    assert r.rc == 0, r
    (c,) = doc["checkouts"]
    assert c["state"] == "offline"
    assert any("not an absolute path on this system" in f["message"] and f["severity"] == "warning"
               for f in doc["findings"]), doc["findings"]
    assert all(o["action"] == "SKIP" for o in doc["operations"])
    assert not (w.home / "code" / "x" / ".agents").exists()
    assert not (w.home / "D:" / "code" / "x" / ".agents").exists()


def test_K3_offline_checkout_skips_and_never_blocks_active(w):
    w.mem("a.md")
    off = w.tmp / "offline"
    w.agent(paths=[str(off), str(w.co)], memory=["a.md"])
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert doc["outcome"] == "applied"
    st = {c["path"]: c["state"] for c in doc["checkouts"]}
    assert st == {str(off): "offline", str(w.co): "active"}
    skips = [o for o in doc["operations"] if o["checkout"] == str(off)]
    assert skips and all(o["action"] == "SKIP" and o["status"] == "skipped" for o in skips)
    assert all("offline" in o["reason"] for o in skips)
    assert all(o["rule"] == "INV-MEM-08" for o in skips)
    assert w.rt("a.md").is_symlink()
    assert not off.exists()


def test_K3_existing_non_directory_checkout_is_conflict(w):
    w.mem("a.md")
    f = w.tmp / "afile"
    f.write_text("x")
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(paths=[str(f), str(co2)], memory=["a.md"])
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert doc["outcome"] == "blocked"
    c = next(c for c in doc["checkouts"] if c["path"] == str(f))
    assert c["state"] != "offline"
    assert not (co2 / ".agents").exists()


def test_K4_explicit_path_only_that_checkout(w):
    w.mem("a.md")
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(paths=[str(w.co), str(co2)], memory=["a.md"])
    r, doc = w.jsync(co2)
    assert r.rc == 0, r
    assert [c["path"] for c in doc["checkouts"]] == [str(co2)]
    assert all(o["checkout"] == str(co2) for o in doc["operations"])
    assert not (w.co / ".agents").exists()
    assert (co2 / ".agents" / "memory" / "a.md").is_symlink()


def test_K4_explicit_path_must_exist_and_is_never_created(w):
    w.agent(memory=[])
    before = w.toml.read_bytes()
    missing = w.tmp / "newco"
    assert_config_error(w.sync(missing, "--json"))
    assert not missing.exists()
    f = w.tmp / "file"
    f.write_text("x")
    assert_config_error(w.sync(f, "--json"))
    assert w.toml.read_bytes() == before


def _register(w, raw: str) -> tuple[bytes, bytes, Path]:
    new = w.tmp / "newco"
    new.mkdir()
    w.agent(raw=raw)
    before = w.toml.read_bytes()
    r = w.sync(new, "--json")
    assert r.rc == 0, r
    return before, w.toml.read_bytes(), new


def _other_lines_preserved(before: bytes, after: bytes, changed_key: str):
    b = [ln for ln in before.decode().splitlines() if not ln.lstrip().startswith(changed_key)]
    a = after.decode().splitlines()
    # every unrelated line is kept, in order
    it = iter(a)
    for ln in b:
        assert any(ln == x for x in it), f"line {ln!r} not preserved in order:\n{after.decode()}"


def test_K4_register_appends_to_paths_list_preserving_comments(w):
    raw = (f"# top comment\nname = \"demo\"\npaths = [{tq(str(w.co))}]  # trailing\n"
           "memory = []  # mem\n\n[tool]\nx = 1 # keep\n")
    before, after, new = _register(w, raw)
    d_old, d_new = tomllib.loads(before.decode()), tomllib.loads(after.decode())
    assert d_new["paths"] == [str(w.co), str(new)]
    d_new["paths"] = d_old["paths"]
    assert d_new == d_old
    assert list(tomllib.loads(after.decode())) == list(d_old), "key order preserved"
    frags = ["# top comment\n", "# trailing", "memory = []  # mem\n", "\n[tool]\nx = 1 # keep\n"]
    for frag in frags:
        assert frag in after.decode(), frag


def test_K4_register_paths_table_gets_first_free_path_N(w):
    raw = f"# c\n[paths]\nlaptop = {tq(str(w.co))}\npath_1 = \"/nonexistent/x\"\n"
    before, after, new = _register(w, raw)
    d = tomllib.loads(after.decode())
    assert d["paths"] == {"laptop": str(w.co), "path_1": "/nonexistent/x", "path_2": str(new)}
    assert after.startswith(before.rstrip(b"\n")), "existing bytes preserved"


def test_K4_register_path_key_replaced_by_paths_list(w):
    raw = f"# head\npath = {tq(str(w.co))} # old form\nmemory = []\n"
    _before, after, new = _register(w, raw)
    d = tomllib.loads(after.decode())
    assert "path" not in d
    assert d["paths"] == [str(w.co), str(new)]
    assert d["memory"] == []
    assert after.decode().startswith("# head\n")
    assert "memory = []\n" in after.decode()


def test_K4_register_path_list_form_replaced(w):
    raw = f"path = [{tq(str(w.co))}, \"/nonexistent/z\"]\n"
    _, after, new = _register(w, raw)
    d = tomllib.loads(after.decode())
    assert d == {"paths": [str(w.co), "/nonexistent/z", str(new)]}


def test_K4_register_neither_adds_paths_before_first_table(w):
    raw = "# c\nmemory = []\n\n[tool]\npaths = 1\n"
    _before, after, new = _register(w, raw)
    d = tomllib.loads(after.decode())
    assert d["paths"] == [str(new)]
    assert d["tool"] == {"paths": 1}
    text = after.decode()
    assert text.index("paths = [") < text.index("[tool]")
    assert text.startswith("# c\nmemory = []\n")
    assert text.endswith("[tool]\npaths = 1\n")


def test_K4_register_neither_without_tables(w):
    raw = "memory = []\n"
    _, after, new = _register(w, raw)
    assert tomllib.loads(after.decode()) == {"memory": [], "paths": [str(new)]}


def test_K4_no_register_and_dry_run_leave_agent_toml_bytes(w):
    w.agent(memory=[])
    before = w.toml.read_bytes()
    st = os.stat(w.toml)
    new = w.tmp / "newco"
    new.mkdir()
    r = w.sync(new, "--dry-run")
    assert r.rc == 0, r
    assert w.toml.read_bytes() == before
    r = w.sync(new, "--no-register")
    assert r.rc == 0, r
    assert w.toml.read_bytes() == before
    assert os.stat(w.toml).st_ino == st.st_ino and os.stat(w.toml).st_mtime_ns == st.st_mtime_ns


def test_K4_already_registered_via_tilde_not_reregistered(w):
    hco = w.home / "proj"
    hco.mkdir()
    w.agent(paths=["~/proj"], memory=[])
    before = w.toml.read_bytes()
    r = w.sync(hco)
    assert r.rc == 0, r
    assert w.toml.read_bytes() == before


def test_K4_registration_cas_stale_when_agent_toml_edited(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    new = w.tmp / "newco"
    new.mkdir()
    plan = w.tmp / "plan.toml"
    r = w.sync(new, "--dry-run", "--out", plan)
    assert r.rc == 0, r
    with open(w.toml, "a") as fh:
        fh.write("# edited by hand\n")
    edited = w.toml.read_bytes()
    r = w.cli("apply", plan, "--json")
    assert r.rc == 3, r
    assert r.json["outcome"] == "stale"
    assert w.toml.read_bytes() == edited
    assert not (new / ".agents").exists()


@pytest.mark.parametrize(
    "raw, expect_paths",
    [
        ('paths = [\n  "/x", # one\n  "/y",\n  # end\n]\nmemory = []\n', ["/x", "/y", None]),
        ("paths = []\n", [None]),
        ('paths = {laptop = "/x"}\n', {"laptop": "/x", "path_1": None}),
        ('paths.laptop = "/x"\nmemory = []\n', {"laptop": "/x", "path_1": None}),
        ('[paths]\nlaptop = "/x"\n\n[tool]\nk = 1\n', {"laptop": "/x", "path_1": None}),
        ('description = """\n[not a table]\n"""\n[tool]\nx = 1\n', [None]),
        ("memory = []\r\n[tool]\r\nx = 1\r\n", [None]),
        ("memory = []", [None]),
        ('path = [\n "/x",\n]\n[tool]\npath = "keep"\n', ["/x", None]),
    ],
    ids=["multiline-list", "empty-list", "inline-table", "dotted-keys", "table-not-last",
         "multiline-string-with-bracket", "crlf", "no-final-newline", "path-list+nested-path"],
)
def test_K4_registration_reparses_to_old_data_plus_path(w, raw, expect_paths):
    new = w.tmp / 'new "co" \\ é'
    new.mkdir()
    w.agent(raw=raw)
    old = tomllib.loads(raw)
    r = w.sync(new, "--json")
    assert r.rc == 0, r
    after = w.toml.read_bytes()
    d = tomllib.loads(after.decode())
    if isinstance(expect_paths, list):
        exp = [str(new) if x is None else x for x in expect_paths]
    else:
        exp = {k: (str(new) if v is None else v) for k, v in expect_paths.items()}
    assert d["paths"] == exp
    old.pop("path", None)
    old["paths"] = exp
    assert d == old
    if b"\r\n" in raw.encode():
        assert b"\n" not in after.replace(b"\r\n", b""), "line endings preserved"
    if "# one" in raw:
        assert b"# one" in after and b"# end" in after


def test_K4_plan_file_registration_applied_by_apply(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    new = w.tmp / "newco"
    new.mkdir()
    plan = save_plan(w, new)
    r, _doc = apply_plan(w, plan)
    assert r.rc == 0, r
    assert tomllib.loads(w.toml.read_text())["paths"] == [str(w.co), str(new)]
    assert (new / ".agents/memory/a.md").is_symlink()
    assert not (w.co / ".agents").exists()


def test_K4_symlink_to_registered_checkout_is_not_reregistered(w):
    w.agent(memory=[])
    os.symlink(w.co, w.tmp / "colink")
    before = w.toml.read_bytes()
    r = w.sync(w.tmp / "colink")
    assert r.rc == 0, r
    assert w.toml.read_bytes() == before, "[K1] physical de-dup: already registered"


def test_K4_relative_explicit_path_resolved_against_cwd(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    rel = w.tmp / "rel"
    rel.mkdir()
    r = run(["--workspace", w.ws, "sync", "project", "demo", "rel", "--json"], w.home, cwd=w.tmp)
    assert r.rc == 0, r
    assert (rel / ".agents/memory/a.md").is_symlink()
    assert str(rel) in tomllib.loads(w.toml.read_text())["paths"]


def test_K1_offline_duplicates_collapse_lexically(w):
    w.agent(paths=["~/off", str(w.home / "off"), str(w.home / "x/../off")], memory=[])
    _, doc = w.jsync("--dry-run")
    assert len(doc["checkouts"]) == 1 and doc["checkouts"][0]["state"] == "offline"
