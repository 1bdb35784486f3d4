"""Independent black-box conformance suite for aikito_mem, written from SPEC.md only.

Every test names the requirement it checks ([W1], [C3], [P2] ...).  The product is
driven through its CLI (``aikito`` in the project venv) in subprocesses with a
throw-away HOME and no AIKITO_DIR / XDG_CONFIG_HOME, and through the public Python API
(SPEC §10) in-process with the same environment hygiene.

Self-contained: no conftest helpers.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import tomllib
import unicodedata
from pathlib import Path

import pytest

# The interpreter running the suite is the project's environment: its `aikito` script sits
# beside it (no machine path is named here).
VENV_BIN = Path(sys.executable).parent
AIKITO = str(VENV_BIN / "aikito")
PY = sys.executable

TOP_KEYS = {
    "schema", "project", "workspace", "dry_run", "outcome", "exit_code", "summary",
    "checkouts", "operations", "findings", "segments", "error",
}
OUTCOMES = {"applied", "unchanged", "planned", "blocked", "stale", "failed", "busy",
            "config_error", "interrupted"}
ACTIONS = {"CREATE", "NOOP", "CONFLICT", "UNLINK", "SKIP"}
SUMMARY_RE = re.compile(
    r"^memory: (\d+) to create, (\d+) to unlink, (\d+) conflicts?, (\d+) unchanged, "
    r"(\d+) skipped( \((\d+) checkouts? offline\))?$"
)


# --------------------------------------------------------------------------- helpers


def tq(s: str) -> str:
    """A TOML basic string for ``s`` (every non-printable-ASCII char escaped)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif o <= 0xFFFF:
            out.append(f"\\u{o:04X}")
        else:
            out.append(f"\\U{o:08X}")
    return '"' + "".join(out) + '"'


def tlist(items) -> str:
    return "[" + ", ".join(tq(i) for i in items) + "]"


class Res:
    def __init__(self, cp: subprocess.CompletedProcess):
        self.rc = cp.returncode
        self.out = cp.stdout
        self.err = cp.stderr

    @property
    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"<rc={self.rc}\nstdout={self.out[:3000]}\nstderr={self.err[:2000]}>"


def clean_env(home: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    for k in ("AIKITO_DIR", "XDG_CONFIG_HOME", "NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE"):
        env.pop(k, None)
    env["HOME"] = str(home)
    env["LC_ALL"] = "C.UTF-8"
    if extra:
        env.update(extra)
    return env


def run(args, home: Path, cwd: Path | None = None, extra_env: dict | None = None,
        timeout: float = 20) -> Res:
    cp = subprocess.run(
        [AIKITO, *map(str, args)], capture_output=True, text=True,
        env=clean_env(home, extra_env), cwd=str(cwd or home), timeout=timeout,
    )
    return Res(cp)


def snapshot(*roots: Path) -> dict:
    """Every entry under roots with its lstat identity (type, ino, mtime, ctime, link)."""
    snap = {}
    for root in roots:
        if not os.path.lexists(root):
            snap[str(root)] = None
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for name in ["", *dirnames, *filenames]:
                p = os.path.join(dirpath, name) if name else dirpath
                st = os.lstat(p)
                lit = os.readlink(p) if stat.S_ISLNK(st.st_mode) else None
                snap[p] = (stat.S_IFMT(st.st_mode), st.st_ino, st.st_mtime_ns,
                           st.st_ctime_ns, lit, st.st_size)
    return snap


class W:
    """A temporary world: home, workspace, checkouts."""

    def __init__(self, tmp: Path):
        self.tmp = Path(os.path.realpath(tmp))
        self.home = self.tmp / "home"
        self.home.mkdir()
        self.ws = self.tmp / "ws"
        (self.ws / "memory").mkdir(parents=True)
        (self.ws / "projects" / "demo").mkdir(parents=True)
        self.co = self.tmp / "co"
        self.co.mkdir()

    # layout helpers
    @property
    def toml(self) -> Path:
        return self.ws / "projects" / "demo" / "agent.toml"

    def agent(self, memory=None, paths=None, extra: str = "", raw: str | None = None):
        if raw is not None:
            self.toml.write_text(raw, encoding="utf-8")
            return
        lines = []
        if paths is None:
            paths = [str(self.co)]
        lines.append(f"paths = {tlist(paths)}")
        if memory is not None:
            lines.append(f"memory = {tlist(memory)}")
        text = "\n".join(lines) + "\n" + extra
        self.toml.write_text(text, encoding="utf-8")

    def mem(self, rel: str, content: str = "x\n") -> Path:
        p = self.ws / "memory" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
        return p

    def memdir(self, rel: str) -> Path:
        p = self.ws / "memory" / rel
        p.mkdir(parents=True, exist_ok=True)
        (p / "inside.md").write_text("i\n")
        return p

    def notes_current(self) -> Path:
        p = self.ws / "projects" / "demo" / "memory" / "notes"
        p.mkdir(parents=True, exist_ok=True)
        (p / "n.md").write_text("n\n")
        return p

    def notes_legacy(self) -> Path:
        p = self.ws / "memory" / "demo" / "notes"
        p.mkdir(parents=True, exist_ok=True)
        (p / "n.md").write_text("n\n")
        return p

    def rt(self, rel: str = "", co: Path | None = None) -> Path:
        base = (co or self.co) / ".agents" / "memory"
        return base / rel if rel else base

    def src(self, rel: str) -> str:
        return str(self.ws / "memory" / rel)

    def cli(self, *args, **kw) -> Res:
        return run(["--workspace", self.ws, *args], self.home, **kw)

    def sync(self, *args, **kw) -> Res:
        return self.cli("sync", "project", "demo", *args, **kw)

    def jsync(self, *args, **kw) -> tuple[Res, dict]:
        r = self.sync("--json", *args, **kw)
        try:
            doc = r.json
        except Exception as e:  # pragma: no cover - diagnostic
            raise AssertionError(f"stdout is not one JSON document: {e}\n{r!r}") from e
        return r, doc


@pytest.fixture(autouse=True)
def _isolated_home():
    """Shadows any autouse fixture of that name from a conftest: this suite is
    self-contained and isolates HOME itself (subprocess env / api_env)."""
    yield


@pytest.fixture
def w():
    # Own temporary directory (not pytest's tmp_path): keeps this suite independent of
    # pytest's shared numbered temp dirs and their clean-up of other sessions.
    import tempfile
    d = tempfile.mkdtemp(prefix="aikito-bb-")
    try:
        yield W(Path(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def api_env(w, monkeypatch):
    monkeypatch.setenv("HOME", str(w.home))
    for k in ("AIKITO_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.chdir(w.home)
    return w


def ops(doc, action=None, resource=None):
    return [o for o in doc["operations"]
            if (action is None or o["action"] == action)
            and (resource is None or o["resource"] == resource)]


def op_for(doc, target: Path | str):
    found = [o for o in doc["operations"] if o["target"] == str(target)]
    assert found, f"no operation for {target}: {json.dumps(doc['operations'], indent=1)}"
    return found


def assert_schema(doc, rc):
    missing = TOP_KEYS - set(doc)
    assert not missing, f"missing top-level keys {missing}"
    assert doc["schema"] == "aikito.sync/2"
    assert doc["outcome"] in OUTCOMES
    assert doc["exit_code"] == rc
    assert isinstance(doc["dry_run"], bool)
    assert set(doc["summary"]) >= {"create", "noop", "unlink", "conflict", "skip"}
    for o in doc["operations"]:
        assert o["action"] in ACTIONS
        for k in ("action", "rule", "checkout", "resource", "target", "source", "reason",
                  "status"):
            assert k in o, f"operation lacks {k}: {o}"
    for c in doc["checkouts"]:
        assert {"label", "path", "state"} <= set(c)
        assert c["state"] in {"active", "offline", "invalid"}
    for f in doc["findings"]:
        assert {"code", "severity", "message"} <= set(f)
    assert "memory" in doc["segments"] and isinstance(doc["segments"]["memory"]["success"], bool)
    if doc["error"] is not None:
        assert isinstance(doc["error"]["code"], str) and doc["error"]["code"]
        assert isinstance(doc["error"]["message"], str) and doc["error"]["message"]


def assert_config_error(r: Res, *must_name: str):
    assert r.rc == 4, r
    doc = r.json
    assert_schema(doc, 4)
    assert doc["outcome"] == "config_error"
    assert doc["error"] and doc["error"]["code"]
    msg = doc["error"]["message"]
    for n in must_name:
        assert n in msg, f"error message should name {n!r}: {msg!r}"
    assert "Traceback" not in r.err and "Traceback" not in r.out
    return doc


def hold_lock(path: Path) -> int:
    fd = os.open(str(path), os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


# ============================================================ §2 discovery [W1] [W2]


def _mk_ws(root: Path, with_project=True) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "projects").mkdir()
    if with_project:
        (root / "projects" / "demo").mkdir()
        (root / "projects" / "demo" / "agent.toml").write_text("paths = []\n")
    return root


def _ws_of(home, args=(), **kw):
    r = run([*args, "sync", "project", "demo", "--dry-run", "--json"], home, **kw)
    assert r.rc == 0, r
    return r.json["workspace"]


def test_W1_flag_beats_env_and_pointer(w):
    a = _mk_ws(w.tmp / "A")
    b = _mk_ws(w.tmp / "B")
    cfg = w.home / ".config" / "aikito"
    cfg.mkdir(parents=True)
    (cfg / "workspace").write_text(f"{w.tmp / 'A'}\n")
    got = _ws_of(w.home, ["--workspace", b], extra_env={"AIKITO_DIR": str(a)})
    assert got == str(b)


def test_W1_env_beats_pointer_file(w):
    a = _mk_ws(w.tmp / "A")
    b = _mk_ws(w.tmp / "B")
    cfg = w.home / ".config" / "aikito"
    cfg.mkdir(parents=True)
    (cfg / "workspace").write_text(f"{b}\n")
    assert _ws_of(w.home, extra_env={"AIKITO_DIR": str(a)}) == str(a)


def test_W1_pointer_file_default_location_first_line_beats_home_default(w):
    b = _mk_ws(w.tmp / "B")
    _mk_ws(w.home / "aikito")
    cfg = w.home / ".config" / "aikito"
    cfg.mkdir(parents=True)
    (cfg / "workspace").write_text(f"{b}\nsecond line is ignored\n")
    assert _ws_of(w.home) == str(b)


def test_W1_pointer_file_under_XDG_CONFIG_HOME(w):
    b = _mk_ws(w.tmp / "B")
    _mk_ws(w.home / "aikito")
    xdg = w.tmp / "xdg"
    (xdg / "aikito").mkdir(parents=True)
    (xdg / "aikito" / "workspace").write_text(f"{b}\n")
    assert _ws_of(w.home, extra_env={"XDG_CONFIG_HOME": str(xdg)}) == str(b)


def test_W1_home_aikito_default(w):
    d = _mk_ws(w.home / "aikito")
    assert _ws_of(w.home) == str(d)


def test_W1_relative_workspace_flag_resolved_against_cwd_and_made_physical(w):
    real = _mk_ws(w.tmp / "realws")
    os.symlink(real, w.tmp / "linkws")
    sub = w.tmp / "cwd"
    sub.mkdir()
    got = _ws_of(w.home, ["--workspace", "../linkws"], cwd=sub)
    assert got == str(real), "workspace must be absolute and physical (realpath) [W1]"


def test_W1_discovery_does_not_depend_on_cwd(w):
    # A cwd that itself looks like a workspace must not be picked up.
    d = _mk_ws(w.home / "aikito")
    other = _mk_ws(w.tmp / "cwdws")
    assert _ws_of(w.home, cwd=other) == str(d)


@pytest.mark.parametrize("how", ["flag", "env", "pointer", "default"])
def test_W2_missing_workspace_is_config_error_naming_path_and_origin(w, how):
    missing = w.tmp / "does-not-exist"
    args, env = [], {}
    if how == "flag":
        args = ["--workspace", missing]
    elif how == "env":
        env = {"AIKITO_DIR": str(missing)}
    elif how == "pointer":
        (w.home / ".config" / "aikito").mkdir(parents=True)
        (w.home / ".config" / "aikito" / "workspace").write_text(f"{missing}\n")
    else:
        missing = w.home / "aikito"
    r = run([*args, "sync", "project", "demo", "--json"], w.home, extra_env=env)
    doc = assert_config_error(r, str(missing))
    msg = doc["error"]["message"].lower()
    # AMBIGUOUS: the spec says the message names "how it was found (flag, env, pointer
    # file, default)" without fixing the words; accept any reasonable spelling.
    words = {
        "flag": ["--workspace", "flag", "option"],
        "env": ["aikito_dir", "env"],
        "pointer": ["pointer", "config/aikito/workspace"],
        "default": ["default", "~/aikito"],
    }[how]
    assert any(x in msg for x in words), f"origin {how} not named in {msg!r}"


def test_W2_workspace_without_projects_dir_is_config_error(w):
    bare = w.tmp / "bare"
    (bare / "memory").mkdir(parents=True)
    r = run(["--workspace", bare, "sync", "project", "demo", "--json"], w.home)
    assert_config_error(r, str(bare))


# ============================================================ §3 agent.toml [C1]-[C7]


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


# ============================================================ §4 resources [S1]-[S4]


def test_S1_link_literal_is_lexical_join_of_physical_root(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    # workspace given through a symlink: the literal must use the physical root
    os.symlink(w.ws, w.tmp / "wslink")
    r = run(["--workspace", w.tmp / "wslink", "sync", "project", "demo"], w.home)
    assert r.rc == 0, r
    assert os.readlink(w.rt("team/a.md")) == w.src("team/a.md")


def test_S2_current_notes_win_over_legacy(w):
    cur = w.notes_current()
    w.notes_legacy()
    w.agent(memory=[])
    _, doc = w.jsync("--dry-run")
    (o,) = ops(doc, resource="notes")
    assert o["action"] == "CREATE" and o["source"] == str(cur)


def test_S2_legacy_notes_used_when_project_memory_absent(w):
    leg = w.notes_legacy()
    w.agent(memory=[])
    _, doc = w.jsync("--dry-run")
    (o,) = ops(doc, resource="notes")
    assert o["action"] == "CREATE" and o["source"] == str(leg)
    assert o["target"] == str(w.rt("notes"))


def test_S2_project_memory_dir_without_notes_disables_legacy(w):
    w.notes_legacy()
    (w.ws / "projects" / "demo" / "memory").mkdir()
    (w.ws / "projects" / "demo" / "memory" / "other.md").write_text("o")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    assert doc["operations"] == [], "no notes resource, legacy never consulted [S2]"


def test_S2_project_memory_broken_symlink_disables_legacy(w):
    w.notes_legacy()
    os.symlink(w.tmp / "nowhere", w.ws / "projects" / "demo" / "memory")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    # the root is "not a directory" -> unsafe notes resource -> CONFLICT at notes
    assert all(o["source"] != str(w.ws / "memory" / "demo" / "notes") for o in doc["operations"])
    assert r.rc == 1, r
    (o,) = op_for(doc, w.rt("notes"))
    assert o["action"] == "CONFLICT"


def test_S2_project_memory_regular_file_is_notes_conflict(w):
    w.notes_legacy()
    (w.ws / "projects" / "demo" / "memory").write_text("not a dir")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1, r
    (o,) = op_for(doc, w.rt("notes"))
    assert o["action"] == "CONFLICT"


def test_S2_notes_regular_file_is_conflict(w):
    (w.ws / "projects" / "demo" / "memory").mkdir()
    (w.ws / "projects" / "demo" / "memory" / "notes").write_text("file")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    assert op_for(doc, w.rt("notes"))[0]["action"] == "CONFLICT"


def test_S2_notes_symlink_leaving_project_memory_root_is_conflict(w):
    outside = w.tmp / "outside"
    outside.mkdir()
    (w.ws / "projects" / "demo" / "memory").mkdir()
    os.symlink(outside, w.ws / "projects" / "demo" / "memory" / "notes")
    w.agent(memory=[])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    assert op_for(doc, w.rt("notes"))[0]["action"] == "CONFLICT"


def test_S2_only_notes_exposed(w):
    w.notes_current()
    (w.ws / "projects" / "demo" / "memory" / "scratch.md").write_text("s")
    (w.ws / "projects" / "demo" / "memory" / "other").mkdir()
    w.agent(memory=[])
    _, doc = w.jsync("--dry-run")
    assert [o["target"] for o in doc["operations"]] == [str(w.rt("notes"))]


def test_S4_reference_notes_shadowed_by_project_notes(w):
    w.notes_current()
    w.memdir("notes")
    w.mem("notes/x.md")
    w.agent(memory=["notes"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    skips = [o for o in ops(doc, "SKIP") if o["resource"] == "notes"]
    assert len(skips) == 1, doc["operations"]
    assert skips[0]["reason"] == "shadowed by project notes"
    assert any(f["severity"] == "warning" and "notes" in f["message"] for f in doc["findings"])
    creates = ops(doc, "CREATE")
    assert len(creates) == 1 and creates[0]["source"].endswith("projects/demo/memory/notes")


def test_S4_reference_under_notes_shadowed(w):
    w.notes_current()
    w.mem("notes/x.md")
    w.agent(memory=["notes/x.md"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    (o,) = ops(doc, resource="notes/x.md")
    assert o["action"] == "SKIP" and o["reason"] == "shadowed by project notes"
    assert any(f["severity"] == "warning" for f in doc["findings"])


def test_S4_shadowing_applies_even_when_notes_unsafe(w):
    (w.ws / "projects" / "demo" / "memory").mkdir()
    (w.ws / "projects" / "demo" / "memory" / "notes").write_text("file")
    w.memdir("notes")
    w.agent(memory=["notes"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    skips = [o for o in doc["operations"] if o["action"] == "SKIP"]
    assert skips and skips[0]["reason"] == "shadowed by project notes"


def test_S4_reference_notes_is_ordinary_without_notes_resource(w):
    w.memdir("notes")
    w.agent(memory=["notes"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0
    (o,) = doc["operations"]
    assert o["action"] == "CREATE" and o["source"] == w.src("notes")


@pytest.mark.parametrize("kind", ["link-outside", "broken-link", "fifo", "parent-link-outside",
                                  "missing"])
def test_S3_unsafe_or_missing_source_is_conflict(w, kind):
    outside = w.tmp / "outside"
    outside.mkdir()
    (outside / "s.md").write_text("s")
    ref = "r.md"
    if kind == "link-outside":
        os.symlink(outside / "s.md", w.ws / "memory" / "r.md")
    elif kind == "broken-link":
        os.symlink(w.ws / "memory" / "nothing", w.ws / "memory" / "r.md")
    elif kind == "fifo":
        os.mkfifo(w.ws / "memory" / "r.md")
    elif kind == "parent-link-outside":
        os.symlink(outside, w.ws / "memory" / "sub")
        ref = "sub/s.md"
    w.agent(memory=[ref])
    r, doc = w.jsync("--dry-run", timeout=10)
    assert r.rc == 1, r
    (o,) = op_for(doc, w.rt(ref))
    assert o["action"] == "CONFLICT"
    # AMBIGUOUS: table gives "INV-MEM-02 / 07" for this row; accept either id.
    assert "INV-MEM-02" in o["rule"] or "INV-MEM-07" in o["rule"], o
    if kind == "missing":
        assert "does not exist" in o["reason"]


def test_S3_symlink_staying_inside_root_is_allowed(w):
    w.mem("real/x.md")
    os.symlink(w.ws / "memory" / "real", w.ws / "memory" / "alias")
    w.agent(memory=["alias/x.md"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    (o,) = doc["operations"]
    assert o["action"] == "CREATE" and o["source"] == w.src("alias/x.md")


# ============================================================ §5 checkouts [K1]-[K4]


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


# ============================================================ §6 ownership [O1]-[O4]


def test_O1_relative_literal_owned_is_noop_and_untouched(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    w.rt("team").mkdir(parents=True)
    rel = os.path.relpath(w.src("team/a.md"), w.rt("team"))
    os.symlink(rel, w.rt("team/a.md"))
    r, doc = w.jsync()
    assert r.rc == 0, r
    (o,) = doc["operations"]
    assert o["action"] == "NOOP" and o["rule"] == "INV-MEM-10"
    assert os.readlink(w.rt("team/a.md")) == rel


def test_O1_relative_literal_with_dotdot_normalised_lexically(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    rel = os.path.relpath(w.src("a.md"), w.rt())
    rel = "../memory/" + rel  # .agents/memory/../memory/... normalises to the same path
    os.symlink(rel, w.rt("a.md"))
    _, doc = w.jsync("--dry-run")
    assert doc["operations"][0]["action"] == "NOOP"


def test_O1_absolute_literal_through_symlinked_workspace_is_not_owned(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    os.symlink(w.ws, w.tmp / "wslink")
    w.rt().mkdir(parents=True)
    os.symlink(str(w.tmp / "wslink" / "memory" / "a.md"), w.rt("a.md"))
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1, "ownership is byte-for-byte on the literal, never by following [O1]"
    assert doc["operations"][0]["action"] == "CONFLICT"


def test_O1_trailing_slash_literal_is_not_owned(w):
    w.memdir("d")
    w.agent(memory=["d"])
    w.rt().mkdir(parents=True)
    os.symlink(w.src("d") + "/", w.rt("d"))
    _, doc = w.jsync("--dry-run")
    # AMBIGUOUS: "equals, byte for byte" for absolute literals; a trailing slash is not
    # byte-equal, so a careful checker expects CONFLICT.
    assert doc["operations"][0]["action"] == "CONFLICT"


def test_O1_hard_link_is_conflict_preserved(w):
    src = w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    os.link(src, w.rt("a.md"))
    r, doc = w.jsync()
    assert r.rc == 1, r
    (o,) = doc["operations"]
    assert o["action"] == "CONFLICT" and o["rule"] == "INV-MEM-07"
    assert w.rt("a.md").is_file() and not w.rt("a.md").is_symlink()
    assert os.stat(w.rt("a.md")).st_ino == os.stat(src).st_ino


def test_O3_creates_real_dirs_and_writes_nothing_in_workspace(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    ws_before = snapshot(w.ws, w.home)
    r = w.sync()
    assert r.rc == 0, r
    for p in (w.co / ".agents", w.rt(), w.rt("team")):
        st = os.lstat(p)
        assert stat.S_ISDIR(st.st_mode), p
    assert snapshot(w.ws, w.home) == ws_before


@pytest.mark.parametrize("where", [".agents", ".agents/memory"])
@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_O4_agents_dirs_not_directories_conflict(w, where, kind):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    p = w.co / where
    p.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = w.tmp / "elsewhere"
    elsewhere.mkdir()
    if kind == "symlink":
        os.symlink(elsewhere, p)
    else:
        p.write_text("x")
    before = snapshot(w.co, elsewhere)
    r, doc = w.jsync()
    assert r.rc == 1, r
    assert doc["outcome"] == "blocked"
    assert snapshot(w.co, elsewhere) == before


def test_O4_intermediate_non_directory_conflicts_that_resource(w):
    w.mem("team/a.md")
    w.mem("b.md")
    w.agent(memory=["team/a.md", "b.md"])
    w.rt().mkdir(parents=True)
    w.rt("team").write_text("file in the way")
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1
    (o,) = op_for(doc, w.rt("team/a.md"))
    assert o["action"] == "CONFLICT"
    (b,) = op_for(doc, w.rt("b.md"))
    assert b["action"] == "CREATE"


# ============================================================ §7 planning [P1]-[P4]


def _p1_world(w, state):
    w.mem("a.md")
    w.mem("other.md")
    w.agent(memory=["a.md", "other.md"])
    w.rt().mkdir(parents=True)
    t = w.rt("a.md")
    if state == "missing":
        pass
    elif state == "owned":
        os.symlink(w.src("a.md"), t)
    elif state == "other-resource":
        os.symlink(w.src("other.md"), t)
    elif state == "outside":
        os.symlink("/etc/hostname", t)
    elif state == "dangling":
        os.symlink(str(w.tmp / "gone"), t)
    elif state == "file":
        t.write_text("mine")
    elif state == "empty-dir":
        t.mkdir()
    elif state == "dir":
        t.mkdir()
        (t / "f").write_text("f")
    elif state == "fifo":
        os.mkfifo(t)
    return t


@pytest.mark.parametrize(
    "state, action, rule",
    [("missing", "CREATE", "INV-MEM-01"), ("owned", "NOOP", "INV-MEM-10"),
     ("other-resource", "CONFLICT", "INV-MEM-07"), ("outside", "CONFLICT", "INV-MEM-07"),
     ("dangling", "CONFLICT", "INV-MEM-07"), ("file", "CONFLICT", "INV-MEM-07"),
     ("empty-dir", "CONFLICT", "INV-MEM-07"), ("dir", "CONFLICT", "INV-MEM-07"),
     ("fifo", "CONFLICT", "INV-MEM-07")],
)
def test_P1_planning_table(w, state, action, rule):
    t = _p1_world(w, state)
    before = snapshot(w.co)
    r, doc = w.jsync()
    (o,) = op_for(doc, t)
    assert (o["action"], o["rule"]) == (action, rule), o
    if action == "CONFLICT":
        assert r.rc == 1 and doc["outcome"] == "blocked"
        assert snapshot(w.co) == before, "conflict preserved, nothing written [P3]"
        assert all(x["status"] == "not_applied" for x in doc["operations"])
    else:
        assert r.rc == 0, r


def test_P1_legacy_notes_link_replaced_when_notes_become_current(w):
    leg = w.notes_legacy()
    w.agent(memory=[])
    assert w.sync().rc == 0
    assert os.readlink(w.rt("notes")) == str(leg)
    cur = w.notes_current()
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    acts = [(o["action"], o["target"]) for o in doc["operations"]]
    assert ("UNLINK", str(w.rt("notes"))) in acts and ("CREATE", str(w.rt("notes"))) in acts
    # AMBIGUOUS: the table gives "INV-MEM-03/06" for the pair; accept either id per op.
    for o in doc["operations"]:
        assert "INV-MEM-03" in o["rule"] or "INV-MEM-06" in o["rule"], o
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.rt("notes")) == str(cur)
    assert leg.is_dir() and (leg / "n.md").exists()


def test_P1_offline_and_shadowed_rows(w):
    w.notes_current()
    w.mem("notes/x.md")
    w.agent(paths=[str(w.tmp / "off")], memory=["notes/x.md"])
    _, doc = w.jsync("--dry-run")
    assert {o["action"] for o in doc["operations"]} == {"SKIP"}
    assert any(o["rule"] == "INV-MEM-08" for o in doc["operations"])


def test_P2_stale_owned_link_unlinked_and_empty_dirs_pruned(w):
    w.mem("team/sub/a.md")
    w.mem("b.md")
    w.agent(memory=["team/sub/a.md", "b.md"])
    assert w.sync().rc == 0
    w.agent(memory=["b.md"])
    r, doc = w.jsync("--dry-run")
    assert r.rc == 0, r
    (u,) = [o for o in doc["operations"] if o["action"] == "UNLINK"
            and o["target"] == str(w.rt("team/sub/a.md"))]
    assert u["status"] == "planned"
    # the directory removals are listed in the plan
    listed = json.dumps(doc["operations"])
    assert str(w.rt("team/sub")) in listed and str(w.rt("team")) in listed, listed
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "applied", r
    assert not os.path.lexists(w.rt("team"))
    assert w.rt().is_dir() and w.rt("b.md").is_symlink()
    assert Path(w.src("team/sub/a.md")).read_text() == "x\n"
    assert all(o["status"] in {"applied", "unchanged"} for o in doc["operations"])


def test_P2_stale_owned_link_removed_by_text_line(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=[])
    r = w.sync("--dry-run")
    assert re.search(rf"^\s*- {re.escape(str(w.rt('a.md')))}\s*$", r.out, re.M) or \
        re.search(r"^\s*- (\.agents/memory/)?a\.md\s*$", r.out, re.M), r.out


def test_P2_foreign_entries_preserved_with_warning_naming_them(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt("deep").mkdir(parents=True)
    (w.rt() / ".DS_Store").write_text("junk")
    os.symlink("/etc/hostname", w.rt("foreign"))
    (w.rt("deep") / "notes.txt").write_text("mine")
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert doc["outcome"] == "applied"
    paths = {f.get("path") for f in doc["findings"] if f["severity"] == "warning"}
    msgs = " ".join(f["message"] for f in doc["findings"])
    for p in (w.rt(".DS_Store"), w.rt("foreign"), w.rt("deep/notes.txt")):
        assert str(p) in paths or str(p) in msgs, (p, doc["findings"])
        assert os.path.lexists(p)


def test_P2_stale_link_to_other_resource_preserved(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    os.symlink(w.src("a.md"), w.rt("b.md"))  # named b.md, points to a.md: not owned
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert os.readlink(w.rt("b.md")) == w.src("a.md")
    assert not [o for o in doc["operations"] if o["action"] == "UNLINK"]
    assert any(f.get("path") == str(w.rt("b.md")) for f in doc["findings"]), doc["findings"]


def test_P2_already_empty_dir_preserved_with_warning(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt("empty").mkdir(parents=True)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert w.rt("empty").is_dir()
    assert any(f["severity"] == "warning" and (f.get("path") == str(w.rt("empty"))
                                               or str(w.rt("empty")) in f["message"])
               for f in doc["findings"]), doc["findings"]


def test_P2_dir_not_pruned_when_foreign_entry_remains(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    assert w.sync().rc == 0
    (w.rt("team") / "mine.txt").write_text("m")
    w.agent(memory=[])
    r, _doc = w.jsync()
    assert r.rc == 0, r
    assert not os.path.lexists(w.rt("team/a.md"))
    assert (w.rt("team") / "mine.txt").exists()


def test_P2_stale_legacy_notes_link_unlinked_when_notes_disappear(w):
    leg = w.notes_legacy()
    w.agent(memory=[])
    assert w.sync().rc == 0
    shutil.rmtree(leg)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert [o["action"] for o in doc["operations"]] == ["UNLINK"]
    assert not os.path.lexists(w.rt("notes"))


def test_P2_stale_owned_link_under_symlinked_dir_not_descended(w):
    w.mem("a.md")
    w.agent(memory=[])
    other = w.tmp / "other"
    other.mkdir()
    os.symlink(w.src("a.md"), other / "a.md")
    w.rt().mkdir(parents=True)
    os.symlink(other, w.rt("sub"))
    r, _doc = w.jsync()
    assert r.rc == 0, r
    assert os.path.lexists(other / "a.md"), "never descends through symlinks [P2]"


def test_P3_conflict_in_one_checkout_blocks_all(w):
    w.mem("a.md")
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(paths=[str(w.co), str(co2)], memory=["a.md"])
    w.rt().mkdir(parents=True)
    w.rt("a.md").write_text("user file")
    r = w.sync()
    assert r.rc == 1
    assert not (co2 / ".agents").exists()
    assert w.rt("a.md").read_text() == "user file"
    # text conflict line: ! TARGET: reason (remedy)
    m = re.search(r"^\s*! (.+?): (.+) \((.+)\)\s*$", r.out + r.err, re.M)
    assert m, r
    assert m.group(1).endswith(".agents/memory/a.md") or m.group(1) == "a.md"


def test_P3_warnings_never_block(w):
    w.mem("a.md")
    w.agent(memory=["a.md"], extra="memroy = 1\n")
    w.rt().mkdir(parents=True)
    (w.rt() / ".DS_Store").write_text("x")
    r = w.sync()
    assert r.rc == 0, r


def test_P4_deterministic_regardless_of_reference_order(w):
    for n in ["z.md", "a.md", "m/x.md", "b"]:
        w.mem(n)
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(paths=[str(w.co), str(co2), str(w.tmp / "off")], memory=["z.md", "a.md", "m/x.md", "b"])
    r1 = w.sync("--dry-run", "--json")
    t1 = w.sync("--dry-run")
    w.agent(paths=[str(w.co), str(co2), str(w.tmp / "off")], memory=["b", "m/x.md", "a.md", "z.md"])
    r2 = w.sync("--dry-run", "--json")
    t2 = w.sync("--dry-run")
    assert r1.out == r2.out
    assert t1.out == t2.out
    doc = r1.json
    order = {str(w.co): 0, str(co2): 1, str(w.tmp / "off"): 2}
    keys = [(order[o["checkout"]], o["target"]) for o in doc["operations"]]
    assert keys == sorted(keys)


# ============================================================ §8 execution [E1]-[E7]


def test_E1_blocked_exit_1_nothing_written(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "missing.md"])
    r, doc = w.jsync()
    assert r.rc == 1 and doc["outcome"] == "blocked"
    assert doc["segments"]["memory"]["success"] is False
    assert not (w.co / ".agents").exists()


def _plan(w, *args) -> Path:
    plan = w.tmp / "plan.toml"
    r = w.sync("--dry-run", "--out", plan, *args)
    assert r.rc == 0, r
    assert plan.exists()
    return plan


def _apply(w, plan, *args, **kw):
    r = w.cli("apply", plan, "--json", *args, **kw)
    return r, r.json


def test_E2_apply_after_memory_list_edit_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    plan = _plan(w)
    w.agent(memory=["a.md", "b.md"])
    r, doc = _apply(w, plan)
    assert r.rc == 3, r
    assert_schema(doc, 3)
    assert doc["outcome"] == "stale"
    assert not (w.co / ".agents").exists()
    assert "memory" in json.dumps(doc["error"]), doc["error"]


def test_E2_source_deleted_and_recreated_is_stale(w):
    w.mem("a.md")
    w.memdir("d")
    w.agent(memory=["a.md", "d"])
    plan = _plan(w)
    shutil.rmtree(w.ws / "memory" / "d")
    w.memdir("d")
    r, doc = _apply(w, plan)
    assert r.rc == 3, r
    assert doc["outcome"] == "stale"
    assert not (w.co / ".agents").exists()


def test_E2_target_appeared_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md", "b.md"])
    plan = _plan(w)
    w.rt().mkdir(parents=True)
    w.rt("b.md").write_text("appeared")
    before = snapshot(w.co)
    r, _ = _apply(w, plan)
    assert r.rc == 3, r
    assert snapshot(w.co) == before


def test_E2_noop_target_tampered_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=["a.md", "b.md"])
    plan = _plan(w)
    os.unlink(w.rt("a.md"))
    w.rt("a.md").write_text("now a regular file")
    r, _ = _apply(w, plan)
    assert r.rc == 3, r
    assert not os.path.lexists(w.rt("b.md"))


def test_E2_project_memory_appearing_is_stale(w):
    w.notes_legacy()
    w.agent(memory=[])
    plan = _plan(w)
    (w.ws / "projects" / "demo" / "memory").mkdir()
    r, _ = _apply(w, plan)
    assert r.rc == 3, r
    assert not (w.co / ".agents").exists()


def test_E2_editing_source_content_does_not_invalidate(w):
    a = w.mem("a.md")
    d = w.memdir("d")
    w.agent(memory=["a.md", "d"])
    plan = _plan(w)
    a.write_text("edited content, longer than before\n")
    (d / "new-note.md").write_text("added")
    r, doc = _apply(w, plan)
    assert r.rc == 0, r
    assert doc["outcome"] == "applied"
    assert os.readlink(w.rt("a.md")) == str(a)


def test_E2_apply_applies_exactly_and_statuses(w):
    w.mem("a.md")
    w.agent(memory=["a.md"], paths=[str(w.co), str(w.tmp / "off")])
    plan = _plan(w)
    r, doc = _apply(w, plan)
    assert r.rc == 0, r
    assert_schema(doc, 0)
    st = {o["action"]: o["status"] for o in doc["operations"]}
    assert st == {"CREATE": "applied", "SKIP": "skipped"}
    r, doc = _apply(w, plan)
    assert r.rc == 3, "re-applying an executed plan: the target appeared -> stale"


def test_E3_busy_exit_6_with_held_flock(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    try:
        t0 = time.monotonic()
        r, doc = w.jsync("--lock-timeout", "0.2")
        assert r.rc == 6, r
        assert time.monotonic() - t0 < 10
        assert_schema(doc, 6)
        assert doc["outcome"] == "busy"
        assert "busy" in (json.dumps(doc["error"]) + r.err).lower()
        assert not (w.co / ".agents").exists()
        # dry runs take no lock
        r = w.sync("--dry-run", "--lock-timeout", "0.2")
        assert r.rc == 0, r
        # apply takes the lock before verification
        plan = _plan(w)
        r, doc = _apply(w, plan, "--lock-timeout", "0.2")
        assert r.rc == 6, r
        assert not (w.co / ".agents").exists()
    finally:
        os.close(fd)
    assert w.sync("--lock-timeout", "0.2").rc == 0


def test_E3_no_lock_file_created(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    before = set(os.listdir(w.co)), set(os.listdir(w.home))
    assert w.sync().rc == 0
    assert set(os.listdir(w.co)) - before[0] == {".agents"}
    assert set(os.listdir(w.home)) == before[1]


def test_E6_second_sync_changes_nothing(w):
    w.mem("team/a.md")
    w.memdir("d")
    w.notes_current()
    w.agent(memory=["team/a.md", "d"])
    assert w.sync().rc == 0
    before = snapshot(w.co, w.ws, w.home)
    time.sleep(0.02)
    r, doc = w.jsync()
    assert r.rc == 0, r
    assert doc["outcome"] == "unchanged"
    assert {o["action"] for o in doc["operations"]} == {"NOOP"}
    assert {o["status"] for o in doc["operations"]} == {"unchanged"}
    assert snapshot(w.co, w.ws, w.home) == before


def test_E7_dry_run_zero_writes_and_out_is_only_write(w):
    w.mem("team/a.md")
    w.notes_legacy()
    w.agent(memory=["team/a.md"])
    new = w.tmp / "newco"
    new.mkdir()
    before = snapshot(w.co, w.ws, w.home, new)
    r = w.sync("--dry-run")
    assert r.rc == 0
    r = w.sync(new, "--dry-run", "--json")
    assert r.rc == 0
    r = w.sync("--check")
    assert r.rc == 7
    out = w.tmp / "p.toml"
    assert w.sync("--dry-run", "--out", out).rc == 0
    assert snapshot(w.co, w.ws, w.home, new) == before
    assert out.exists()


def test_E7_api_plan_writes_nothing(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    before = snapshot(w.co, w.ws, w.home)
    Project.load("demo", workspace=str(w.ws)).plan()
    assert snapshot(w.co, w.ws, w.home) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits; cannot provoke EACCES")
def test_E5_permission_failure_exit_5(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    w.rt().mkdir(parents=True)
    os.chmod(w.rt(), 0o555)
    try:
        r, doc = w.jsync()
        assert r.rc == 5, r
        assert doc["outcome"] == "failed"
        assert "Traceback" not in r.err
        assert {o["status"] for o in doc["operations"]} <= {"applied", "not_applied", "unknown"}
    finally:
        os.chmod(w.rt(), 0o755)


# ============================================================ §9 command line


def test_cli_text_lines_and_summary(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(paths=[str(w.co), str(w.tmp / "off")], memory=["a.md", "b.md"])
    w.rt().mkdir(parents=True)
    os.symlink(w.src("b.md"), w.rt("b.md"))
    r = w.sync("--dry-run")
    assert r.rc == 0, r
    lines = r.out.splitlines()
    plus = [ln for ln in lines if re.match(r"^\s*\+ ", ln)]
    assert len(plus) == 1
    m = re.match(r"^\s*\+ (\S+) -> (\S+)$", plus[0])
    # SPEC §9: sources relative to the workspace, targets relative to their checkout.
    assert m and m.group(2) == "memory/a.md"
    assert m.group(1) in {str(w.rt("a.md")), ".agents/memory/a.md", "a.md"}
    assert any(re.match(rf"^\s*~ checkout offline: {re.escape(str(w.tmp / 'off'))}$", ln)
               for ln in lines), r.out
    # header per checkout with label and path
    marks = ("+", "-", "!", "~", "=")
    assert any("1" in ln and str(w.co) in ln and not ln.lstrip().startswith(marks)
               for ln in lines), r.out
    assert any("2" in ln and str(w.tmp / "off") in ln and not ln.lstrip().startswith("~")
               for ln in lines), r.out
    # NOOP (b.md) not shown without -v
    assert not any("b.md" in ln for ln in lines), r.out
    summ = [ln for ln in lines if SUMMARY_RE.match(ln)]
    assert len(summ) == 1, r.out
    g = SUMMARY_RE.match(summ[0]).groups()
    assert g[:5] == ("1", "0", "0", "1", "2"), summ
    assert g[6] == "1"
    rv = w.sync("--dry-run", "-v")
    assert any("b.md" in ln for ln in rv.out.splitlines()), rv.out


def test_cli_summary_in_sync_no_offline_suffix(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    r = w.sync()
    s = [ln for ln in r.out.splitlines() if ln.startswith("memory:")]
    assert s and SUMMARY_RE.match(s[-1]) and "offline" not in s[-1]
    assert SUMMARY_RE.match(s[-1]).groups()[:5] == ("0", "0", "0", "1", "0")


def test_cli_no_colour_when_not_terminal_or_no_color(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    r = w.sync("--dry-run")
    assert "\x1b[" not in r.out + r.err


def _schema_common(doc, rc, outcome, dry):
    assert_schema(doc, rc)
    assert doc["outcome"] == outcome
    assert doc["dry_run"] is dry
    assert doc["project"] == "demo"
    s = doc["summary"]
    for act, key in [("CREATE", "create"), ("NOOP", "noop"), ("UNLINK", "unlink"),
                     ("CONFLICT", "conflict"), ("SKIP", "skip")]:
        if key == "unlink":
            n = len([o for o in doc["operations"] if o["action"] == act
                     and o.get("entry", "link") == "link"])
            assert s[key] in (n, len(ops(doc, act))), (key, s)
        else:
            assert s[key] == len(ops(doc, act)), (key, s)


def test_json_outcomes_applied_unchanged_planned(w):
    w.mem("a.md")
    w.mem("team/b.md")
    w.agent(memory=["a.md", "team/b.md"], paths=[str(w.co), str(w.tmp / "off")])
    _r, doc = w.jsync("--dry-run")
    _schema_common(doc, 0, "planned", True)
    assert doc["workspace"] == str(w.ws)
    assert {o["status"] for o in doc["operations"]} == {"planned"}
    assert doc["error"] is None and doc["segments"]["memory"]["success"] is True
    co = next(c for c in doc["checkouts"] if c["path"] == str(w.co))
    assert co == {**co, "label": "1", "state": "active"}
    o = op_for(doc, w.rt("a.md"))[0]
    assert o["checkout"] == str(w.co) and o["resource"] == "a.md" and o["source"] == w.src("a.md")
    _r, doc = w.jsync()
    _schema_common(doc, 0, "applied", False)
    assert {(o["action"], o["status"]) for o in doc["operations"]} == {
        ("CREATE", "applied"), ("SKIP", "skipped")}
    _r, doc = w.jsync()
    _schema_common(doc, 0, "unchanged", False)
    assert {(o["action"], o["status"]) for o in doc["operations"]} == {
        ("NOOP", "unchanged"), ("SKIP", "skipped")}


def test_json_outcome_blocked_statuses(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"], paths=[str(w.co), str(w.tmp / "off")])
    r, doc = w.jsync()
    _schema_common(doc, 1, "blocked", False)
    assert {o["status"] for o in doc["operations"]} == {"not_applied"}
    assert doc["segments"]["memory"]["success"] is False
    # a blocked dry run: AMBIGUOUS whether statuses are "planned" (dry run rule) or
    # "not_applied" (blocked rule); we only require outcome/exit code.
    r, doc = w.jsync("--dry-run")
    assert r.rc == 1 and doc["outcome"] == "blocked" and doc["dry_run"] is True


def test_json_outcome_config_error_and_usage_error(w):
    w.agent(raw="memory = [1]\n")
    r, doc = w.jsync()
    assert_schema(doc, 4)
    assert doc["outcome"] == "config_error" and doc["error"]["code"]
    r = w.sync("--json", "--no-such-flag")
    assert r.rc == 2
    assert not r.out.strip(), "usage errors print no JSON on stdout"
    assert r.err.strip()
    r = w.sync("--json", "--lock-timeout", "abc")
    assert r.rc == 2 and not r.out.strip()
    r = run(["--json-nope"], w.home)
    assert r.rc == 2


def test_check_exit_codes(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    r, doc = w.jsync("--check")
    assert r.rc == 7, r
    assert doc["outcome"] == "planned" and doc["exit_code"] == 7 and doc["dry_run"] is True
    assert not (w.co / ".agents").exists()
    assert w.sync().rc == 0
    r, doc = w.jsync("--check")
    assert r.rc == 0, r
    w.agent(memory=["a.md", "gone.md"])
    assert w.sync("--check").rc == 1
    w.agent(raw="memory = 3\n")
    assert w.sync("--check").rc == 4


def test_check_stale_unlink_is_a_pending_change(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=[])
    assert w.sync("--check").rc == 7


@pytest.mark.parametrize("damage", ["truncate", "edit", "version", "garbage", "empty"])
def test_apply_refuses_damaged_plan_files(w, damage):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = _plan(w)
    data = plan.read_bytes()
    if damage == "truncate":
        plan.write_bytes(data[: len(data) // 2])
    elif damage == "edit":
        text = data.decode()
        assert "a.md" in text
        plan.write_text(text.replace("a.md", "b.md"))
    elif damage == "version":
        text = data.decode()
        new = re.sub(r"(aikito\.plan/)(\d+)", lambda m: m.group(1) + "999", text)
        if new == text:
            new = re.sub(r"(version\s*=\s*)(\d+)", lambda m: m.group(1) + "999", text, count=1)
        assert new != text, "could not find a schema version to alter"
        plan.write_text(new)
    elif damage == "garbage":
        plan.write_bytes(b"\x00\xffnot a plan")
    else:
        plan.write_bytes(b"")
    r, doc = _apply(w, plan)
    assert r.rc == 4, r
    assert doc["outcome"] == "config_error" and doc["error"]["code"]
    assert not (w.co / ".agents").exists()


def test_apply_refuses_plan_for_another_workspace(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = _plan(w)
    other = _mk_ws(w.tmp / "other")
    r = run(["--workspace", other, "apply", plan, "--json"], w.home)
    assert r.rc == 4, r
    assert r.json["outcome"] == "config_error"
    r = run(["apply", plan, "--json"], w.home, extra_env={"AIKITO_DIR": str(other)})
    assert r.rc == 4, r
    assert not (w.co / ".agents").exists()
    # the same workspace named explicitly is fine
    r = run(["apply", plan, "--json"], w.home, extra_env={"AIKITO_DIR": str(w.ws)})
    assert r.rc == 0, r


def test_apply_missing_plan_file(w):
    r = w.cli("apply", w.tmp / "nope.toml", "--json")
    assert r.rc in (2, 4), r


def test_name_omitted_uses_project_containing_cwd(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    sub = w.co / "src" / "pkg"
    sub.mkdir(parents=True)
    r = run(["--workspace", w.ws, "sync", "project", "--json", "--dry-run"], w.home, cwd=sub)
    assert r.rc == 0, r
    assert r.json["project"] == "demo"
    r = run(["--workspace", w.ws, "sync", "project", ".", "--json", "--dry-run"], w.home, cwd=sub)
    assert r.rc == 0 and r.json["project"] == "demo"
    r = run(["--workspace", w.ws, "sync", "project", "--json"], w.home, cwd=w.tmp)
    assert r.rc == 4 and r.json["outcome"] == "config_error"


def test_name_omitted_several_projects_is_config_error_listing_them(w):
    w.agent(memory=[])
    (w.ws / "projects" / "demo2").mkdir()
    (w.ws / "projects" / "demo2" / "agent.toml").write_text(f"paths = [{tq(str(w.co))}]\n")
    r = run(["--workspace", w.ws, "sync", "project", "--json"], w.home, cwd=w.co)
    assert r.rc == 4, r
    msg = r.json["error"]["message"]
    assert "demo" in msg and "demo2" in msg


def test_version(w):
    r = run(["--version"], w.home)
    assert r.rc == 0 and r.out.strip()


# ============================================================ §10 Python API [A1]-[A3]


def test_A1_plan_and_operations_frozen(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = Project.load("demo", workspace=str(w.ws)).plan(path=None)
    with pytest.raises(AttributeError):
        plan.operations = ()
    assert isinstance(plan.operations, tuple)
    op = plan.operations[0]
    with pytest.raises(AttributeError):
        op.target = "/tmp/elsewhere"
    for attr in ("action", "target", "source", "checkout", "resource", "rule", "reason"):
        assert hasattr(op, attr), attr
    assert isinstance(op.action, enum.Enum)
    assert op.action.value == "CREATE"
    assert {a.value for a in type(op.action)} == ACTIONS
    assert str(op.target) == str(w.rt("a.md"))
    assert str(op.source) == w.src("a.md")


def test_A2_error_hierarchy_importable():
    import aikito_mem as m
    # AMBIGUOUS: the spec names the classes but only shows three imported from the
    # package; we expect every named error to be importable from `aikito_mem`.
    base = m.AikitoError
    for name in ("ConfigError", "ProjectNotFoundError", "ConflictError", "StalePlanError",
                 "ExecutionError", "LockBusyError", "ProjectPrepareConflictError"):
        assert issubclass(getattr(m, name), base), name
    assert issubclass(m.ProjectNotFoundError, m.ConfigError)
    assert issubclass(m.ProjectPrepareConflictError, m.ConflictError)


def test_A2_errors_carry_exit_codes_and_data(api_env):
    w = api_env
    import aikito_mem as m
    with pytest.raises(m.ProjectNotFoundError) as ei:
        m.Project.load("nosuch", workspace=str(w.ws))
    assert getattr(ei.value, "exit_code", 4) == 4
    assert "nosuch" in str(ei.value)
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    p = m.Project.load("demo", workspace=str(w.ws))
    plan = p.plan()
    with pytest.raises(m.ConflictError) as ei:
        p.execute(plan)
    assert getattr(ei.value, "exit_code", 1) == 1
    assert not (w.co / ".agents").exists()
    w.agent(memory=["a.md"])
    p = m.Project.load("demo", workspace=str(w.ws))
    plan = p.plan()
    w.agent(memory=[])
    with pytest.raises(m.StalePlanError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).execute(plan)
    assert ei.value.differences
    assert getattr(ei.value, "exit_code", 3) == 3
    assert not (w.co / ".agents").exists()


def test_A2_config_error_exit_code_attribute(api_env):
    w = api_env
    import aikito_mem as m
    w.agent(raw='memory = "x.md"\n')
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).plan()
    # README documents `.exit_code`
    assert ei.value.exit_code == 4


def test_A3_prepare_single_checkout(api_env, capfd):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.notes_current()
    w.agent(memory=["a.md"], paths=[str(w.co), str(w.tmp / "off")])
    before_toml = w.toml.read_bytes()
    prepared = Project.load("demo", workspace=str(w.ws)).prepare("claude")
    out, err = capfd.readouterr()
    assert out == "" and err == "", "prepare prints nothing [A3]"
    assert prepared.agent == "claude"
    assert str(getattr(prepared.checkout, "path", prepared.checkout)) == str(w.co)
    assert prepared.result is not None and prepared.project is not None
    assert os.readlink(w.rt("a.md")) == w.src("a.md")
    assert w.rt("notes").is_symlink()
    assert w.toml.read_bytes() == before_toml


def test_A3_prepare_has_no_force_kwarg(api_env):
    w = api_env
    from aikito_mem import Project
    w.agent(memory=[])
    p = Project.load("demo", workspace=str(w.ws))
    with pytest.raises(TypeError):
        p.prepare("claude", force=True)
    assert not (w.co / ".agents").exists()


def test_A3_prepare_none_or_several_active_is_config_error(api_env):
    w = api_env
    import aikito_mem as m
    co2 = w.tmp / "co2"
    co2.mkdir()
    w.agent(memory=[], paths=[str(w.co), str(co2)])
    with pytest.raises(m.ConfigError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).prepare("claude")
    assert str(w.co) in str(ei.value) and str(co2) in str(ei.value)
    w.agent(memory=[], paths=[str(w.tmp / "off")])
    with pytest.raises(m.ConfigError):
        m.Project.load("demo", workspace=str(w.ws)).prepare("claude")


def test_A3_prepare_explicit_path_touches_only_that_checkout_and_never_registers(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    co2 = w.tmp / "co2"
    co2.mkdir()
    new = w.tmp / "unregistered"
    new.mkdir()
    w.agent(memory=["a.md"], paths=[str(w.co), str(co2)])
    before = w.toml.read_bytes()
    Project.load("demo", workspace=str(w.ws)).prepare("claude", path=str(co2))
    assert (co2 / ".agents/memory/a.md").is_symlink()
    assert not (w.co / ".agents").exists()
    with contextlib.suppress(Exception):
        Project.load("demo", workspace=str(w.ws)).prepare("claude", path=str(new))
    assert w.toml.read_bytes() == before, "Project.prepare never registers [K4][A3]"


def test_A3_prepare_conflict_raises_with_conflicts(api_env):
    w = api_env
    import aikito_mem as m
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    w.rt().mkdir(parents=True)
    w.rt("a.md").write_text("user")
    with pytest.raises(m.ProjectPrepareConflictError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).prepare("claude")
    e = ei.value
    assert isinstance(e, m.ConflictError)
    assert e.project is not None
    assert len(e.conflicts) == 2

    def get(c, k):
        return c[k] if isinstance(c, dict) else getattr(c, k)

    paths = {str(get(c, "path")) for c in e.conflicts}
    assert str(w.rt("a.md")) in paths and str(w.rt("gone.md")) in paths
    assert all(get(c, "reason") for c in e.conflicts)
    assert w.rt("a.md").read_text() == "user"


def test_A3_agents_registry_checked(api_env):
    w = api_env
    import aikito_mem as m
    w.mem("a.md")
    w.agent(memory=["a.md"])
    (w.ws / "agents").mkdir()
    (w.ws / "agents" / "claude.toml").write_text("")
    with pytest.raises(m.ConfigError):
        m.Project.load("demo", workspace=str(w.ws)).prepare("codex")
    assert not (w.co / ".agents").exists()
    prepared = m.Project.load("demo", workspace=str(w.ws)).prepare("claude")
    assert prepared.agent == "claude"
    assert w.rt("a.md").is_symlink()


def test_A3_prepare_without_agents_dir_accepts_any_agent(api_env):
    w = api_env
    from aikito_mem import Project
    w.agent(memory=[])
    Project.load("demo", workspace=str(w.ws)).prepare("anything")


def test_A_load_with_discovery(api_env, monkeypatch):
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    monkeypatch.setenv("AIKITO_DIR", str(w.ws))
    plan = Project.load("demo").plan()
    assert [o.action.value for o in plan.operations] == ["CREATE"]


def test_E8_segments_memory(w):
    w.agent(memory=[])
    _, doc = w.jsync()
    assert doc["segments"]["memory"]["success"] is True


# ============================================================ further probes


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
    plan = _plan(w, new)
    r, _doc = _apply(w, plan)
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


def test_E5_write_failure_exit_5_statuses(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md", "b.md"])
    w.rt().mkdir(parents=True)
    cp = subprocess.run(["chattr", "+i", str(w.rt())], capture_output=True)
    if cp.returncode != 0:
        pytest.skip("cannot make a directory immutable here")
    try:
        r, doc = w.jsync()
    finally:
        subprocess.run(["chattr", "-i", str(w.rt())])
    assert r.rc == 5, r
    assert_schema(doc, 5)
    assert doc["outcome"] == "failed"
    assert doc["segments"]["memory"]["success"] is False
    assert "Traceback" not in r.err
    assert {o["status"] for o in doc["operations"]} <= {"applied", "not_applied", "unknown"}
    # running again converges
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "applied"


def test_E3_lock_taken_before_planning(w):
    """[E3] a sync waiting for the lock plans only after it gets it: it then finds the
    work done by the holder (unchanged), not a stale plan."""
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    try:
        p = subprocess.Popen([AIKITO, "--workspace", str(w.ws), "sync", "project", "demo",
                              "--json", "--lock-timeout", "10"], env=clean_env(w.home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        assert p.poll() is None, "sync must wait for the held lock"
        w.rt().mkdir(parents=True)
        os.symlink(w.src("a.md"), w.rt("a.md"))
    finally:
        os.close(fd)
    out, err = p.communicate(timeout=15)
    assert p.returncode == 0, (out, err)
    assert json.loads(out)["outcome"] == "unchanged"


def test_E3_concurrent_syncs_serialise(w):
    w.mem("a.md")
    w.mem("d/b.md")
    w.agent(memory=["a.md", "d/b.md"])
    ps = [subprocess.Popen([AIKITO, "--workspace", str(w.ws), "sync", "project", "demo",
                            "--json"], env=clean_env(w.home), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outcomes = []
    for p in ps:
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0, (out, err)
        outcomes.append(json.loads(out)["outcome"])
    assert sorted(outcomes) == ["applied", "unchanged", "unchanged", "unchanged"]


def test_E3_check_takes_no_lock(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    try:
        assert w.sync("--check", "--lock-timeout", "0").rc == 7
    finally:
        os.close(fd)


def test_E2_every_difference_named(api_env):
    w = api_env
    import aikito_mem as m
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md", "b.md"])
    w.rt().mkdir(parents=True)
    plan = m.Project.load("demo", workspace=str(w.ws)).plan()
    w.agent(memory=["a.md"])
    w.rt("b.md").write_text("appeared")
    with pytest.raises(m.StalePlanError) as ei:
        m.Project.load("demo", workspace=str(w.ws)).execute(plan)
    diffs = list(ei.value.differences)
    assert len(diffs) >= 2, diffs
    text = " ".join(map(str, diffs))
    assert "memory" in text and "b.md" in text
    assert w.rt("b.md").read_text() == "appeared"


def test_E2_checkout_vanished_is_stale_and_never_created(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = _plan(w)
    shutil.rmtree(w.co)
    r, doc = _apply(w, plan)
    assert r.rc == 3 and doc["outcome"] == "stale", r
    assert not w.co.exists()


def test_E2_noop_source_deleted_is_stale(w):
    w.mem("a.md")
    w.mem("b.md")
    w.agent(memory=["a.md"])
    assert w.sync().rc == 0
    w.agent(memory=["a.md", "b.md"])
    plan = _plan(w)
    os.unlink(w.src("a.md"))
    r, _ = _apply(w, plan)
    assert r.rc == 3, r
    assert not os.path.lexists(w.rt("b.md"))


def test_E2_file_source_recreated_is_stale(w):
    w.mem("a.md")
    w.agent(memory=["a.md"])
    plan = _plan(w)
    os.unlink(w.src("a.md"))
    w.mem("a.md")
    r, _ = _apply(w, plan)
    assert r.rc == 3, r
    assert not (w.co / ".agents").exists()


def test_E2_offline_checkout_appearing_after_plan_is_not_touched(w):
    w.mem("a.md")
    off = w.tmp / "off"
    w.agent(memory=["a.md"], paths=[str(w.co), str(off)])
    plan = _plan(w)
    off.mkdir()
    r, _doc = _apply(w, plan)
    # [K3] the active/offline split is frozen in the plan
    assert r.rc in (0, 3), r
    assert os.listdir(off) == []


def test_E1_apply_of_blocked_plan(w):
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])
    plan = w.tmp / "p.toml"
    r = w.sync("--dry-run", "--out", plan)
    assert r.rc == 1
    if not plan.exists():
        return
    r, doc = _apply(w, plan)
    assert r.rc == 1 and doc["outcome"] == "blocked"
    assert not (w.co / ".agents").exists()


def test_O3_permissions_of_existing_entries_unchanged_and_umask_respected(w):
    w.mem("team/a.md")
    w.agent(memory=["team/a.md"])
    w.rt().mkdir(parents=True)
    os.chmod(w.co / ".agents", 0o750)
    os.chmod(w.rt(), 0o700)
    os.chmod(w.co, 0o711)
    assert w.sync().rc == 0
    assert stat.S_IMODE(os.stat(w.co / ".agents").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(w.rt()).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(w.co).st_mode) == 0o711
    shutil.rmtree(w.co / ".agents")
    cp = subprocess.run(["sh", "-c", f'umask 077; exec "{AIKITO}" --workspace "{w.ws}" '
                         "sync project demo"], env=clean_env(w.home), capture_output=True)
    assert cp.returncode == 0
    for p in (w.co / ".agents", w.rt(), w.rt("team")):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0, (p, oct(os.stat(p).st_mode))


def test_A3_prepare_holds_the_checkout_lock(api_env):
    import threading
    w = api_env
    from aikito_mem import Project
    w.mem("a.md")
    w.agent(memory=["a.md"])
    fd = hold_lock(w.co)
    box = {}

    def go():
        try:
            box["r"] = Project.load("demo", workspace=str(w.ws)).prepare("claude")
        except BaseException as e:  # pragma: no cover
            box["e"] = e

    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.4)
    try:
        assert not (w.co / ".agents").exists(), "prepare must wait for the checkout lock [A3][E3]"
    finally:
        os.close(fd)
    t.join(20)
    assert "e" not in box, box
    assert w.rt("a.md").is_symlink()


def test_A3_prepare_umask_no_widening(api_env):
    w = api_env
    from aikito_mem import Project
    w.mem("d/a.md")
    w.agent(memory=["d/a.md"])
    old = os.umask(0o077)
    try:
        Project.load("demo", workspace=str(w.ws)).prepare("claude")
    finally:
        os.umask(old)
    for p in (w.co / ".agents", w.rt(), w.rt("d")):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0


def test_P1_desired_notes_target_linked_to_reference_form_is_conflict(w):
    # AMBIGUOUS: [O2] lists <ws>/memory/notes as an allowed historical path for
    # R == notes, but says these are "used only to recognise stale owned links". The
    # [P1] table replaces (UNLINK + CREATE) only an "owned link to the legacy notes";
    # a link at the *desired* notes target to <ws>/memory/notes is a "symlink to
    # anything else (other resource)" -> CONFLICT, preserved.
    w.notes_current()
    (w.ws / "memory" / "notes").mkdir()
    w.agent(memory=[])
    w.rt().mkdir(parents=True)
    os.symlink(w.src("notes"), w.rt("notes"))
    _r, doc = w.jsync("--dry-run")
    acts = [o["action"] for o in op_for(doc, w.rt("notes"))]
    assert acts == ["CONFLICT"], doc["operations"]


def test_P1_notes_replacement_text_lines(w):
    w.notes_legacy()
    w.agent(memory=[])
    assert w.sync().rc == 0
    cur = w.notes_current()
    r = w.sync("--dry-run")
    assert re.search(r"^\s*- \S*notes\s*$", r.out, re.M), r.out
    rel = os.path.relpath(cur, w.ws)  # SPEC §9: sources relative to the workspace
    assert re.search(rf"^\s*\+ \S*notes -> {re.escape(rel)}\s*$", r.out, re.M), r.out


def test_json_config_error_reports_known_workspace(w):
    # AMBIGUOUS: §9 shows "workspace": "/abs/ws" in every document; when the workspace
    # was resolved and only agent.toml is broken, a careful reader expects it filled in.
    w.agent(raw="memory = 3\n")
    r, doc = w.jsync()
    assert r.rc == 4
    assert doc["workspace"] == str(w.ws), doc["workspace"]


def test_cli_no_colour_on_a_pty_with_NO_COLOR_or_no_color(w):
    import pty
    w.mem("a.md")
    w.agent(memory=["a.md", "gone.md"])

    def on_pty(args, extra):
        master, slave = pty.openpty()
        p = subprocess.Popen([AIKITO, "--workspace", str(w.ws), *args], stdout=slave,
                             stderr=slave, env=clean_env(w.home, extra))
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        p.wait(timeout=10)
        os.close(master)
        return b"".join(chunks).decode("utf-8", "replace")

    out = on_pty(["sync", "project", "demo", "--dry-run"], {"NO_COLOR": "1"})
    assert "gone.md" in out and "\x1b[" not in out, repr(out)
    # SPEC §9: an explicit --color wins over the environment.
    out = on_pty(["sync", "project", "demo", "--dry-run", "--color"], {"NO_COLOR": "1"})
    assert "gone.md" in out and "\x1b[" in out, repr(out)
    out = on_pty(["sync", "project", "demo", "--dry-run", "--no-color"], {})
    assert "gone.md" in out and "\x1b[" not in out, repr(out)


def test_cli_text_errors_on_stderr_only(w):
    w.agent(raw="memory = 3\n")
    r = w.sync()
    assert r.rc == 4 and r.err.strip() and "memory" in r.err
    assert "memory" not in r.out


def test_usage_errors_exit_2(w):
    w.agent(memory=[])
    for args in (["sync", "project", "demo", "a", "b", "--json"],
                 ["sync", "project", "demo", "--out", w.tmp / "p.toml", "--json"],
                 ["sync", "project", "demo", "--lock-timeout", "-1", "--json"],
                 ["frobnicate"]):
        r = w.cli(*args)
        # AMBIGUOUS: `--out` without `--dry-run` — spec says "(with --dry-run)"; we expect a
        # usage error rather than a silent real sync.
        assert r.rc == 2, (args, r)
        assert not r.out.strip()
    assert not (w.tmp / "p.toml").exists()
