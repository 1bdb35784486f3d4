"""§16 Habits of the reference tool, and output a person can read — [U1]–[U4].

Black-box conformance, from SPEC.md alone: see :mod:`tests.conformance`.  Real ``aikito``
processes in a fresh home and real temporary directories; a remedy is checked by running
what the tool printed, from the directory where it printed it; the pre-commit hook by
running the entry ``.pre-commit-hooks.yaml`` declares, in a real git repository.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.conformance._support import W, run, tlist, unwrapped
from tests.helpers.gitrepo import init_repo, needs_git
from tests.helpers.snapshots import snapshot
from tests.helpers.width import too_wide

REPO = Path(__file__).resolve().parents[2]
FAKE = "aikito-conformance-agent"


def _world(w: W, paths=None, agents_md: str | None = "Be kind.\n") -> None:
    """Skill ``alpha``, memory ``style.md``, the project's ``AGENTS.md``."""
    w.builder.add_skill("alpha")
    w.mem("style.md", "style\n")
    if agents_md is not None:
        w.builder.write_instructions("demo", agents_md)
    w.agent(memory=["style.md"], paths=paths, extra='skills = ["alpha"]\n')


def _agent(w: W, name: str, target: str, *, commands=(), paths=()) -> Path:
    return Path(w.builder.add_agent(name, (
        f'[agents.{name}]\nproject_instruction_path = "{target}"\n'
        f"[agents.{name}.detect]\ncommands = {tlist(commands)}\npaths = {tlist(paths)}\n")))


def _ws_cli(w: W, *args, **kw):
    """``aikito ARGS`` with the workspace found through ``AIKITO_DIR`` (no ``--workspace``
    in front: the argument vector is the user's own)."""
    env = {"AIKITO_DIR": str(w.ws), **kw.pop("extra_env", {})}
    return run(list(args), w.home, extra_env=env, **kw)


def _too_wide(text: str, width: int) -> list[str]:
    """The lines of ``text`` wider than ``width`` that are not one path, or one command of
    this tool, alone ([U2])."""
    return too_wide(text, width)


# ------------------------------------------------------------------------------- [U1]


@pytest.mark.parametrize("options", [
    ("--dry-run", "--json"),
    ("-v", "--dry-run", "--json"),
    ("--verbose", "--json", "--dry-run"),
    ("--dry-run", "-v"),
    ("--dry-run",),
])
def test_U1_options_before_project_mean_the_same_byte_for_byte(w, options):
    _world(w)
    before = w.cli("sync", *options, "project", "demo")
    after = w.cli("sync", "project", "demo", *options)
    assert before.rc == after.rc == 0, (before, after)
    assert before.out == after.out and before.err == after.err
    assert before.out


def test_U1_options_before_project_with_the_name_omitted(w):
    _world(w)
    before = w.cli("sync", "--dry-run", "--json", "-v", "project", cwd=w.co)
    after = w.cli("sync", "project", "--dry-run", "--json", "-v", cwd=w.co)
    dotted = w.cli("sync", "--dry-run", "--json", "-v", "project", ".", cwd=w.co)
    assert before.rc == after.rc == dotted.rc == 0, (before, after)
    assert before.out == after.out == dotted.out
    assert before.json["project"] == "demo"


def test_U1_options_before_project_in_a_real_run(w):
    _world(w)
    first = w.cli("sync", "-v", "--json", "project", "demo")
    assert first.rc == 0 and first.json["outcome"] == "applied", first
    again = [w.cli("sync", "--json", "-v", "project", "demo"),
             w.cli("sync", "project", "demo", "--json", "-v")]
    assert again[0].rc == again[1].rc == 0
    assert again[0].out == again[1].out
    assert again[0].json["outcome"] == "unchanged"


@pytest.mark.parametrize("argv", [
    ("sync", "--force"),
    ("sync", "--force", "project", "demo"),
    ("sync", "project", "--force", "demo"),
    ("sync", "project", "demo", "--force"),
    ("sync", "--dry-run", "project", "demo", "--json", "--force"),
    ("sync", "project", "demo", "{co}", "--force"),
])
def test_U1_force_anywhere_is_a_usage_error_naming_adopt_and_clean(w, argv):
    _world(w)
    (w.co / "AGENTS.md").write_text("mine\n")
    before = snapshot(w.co, w.ws)
    r = w.cli(*[a.format(co=w.co) for a in argv])
    assert r.rc == 2, r
    assert r.out == ""  # usage errors: no JSON, stderr only
    said = " ".join(r.err.split())
    assert "never overwrites" in said, said
    assert "aikito adopt" in said and "aikito clean" in said, said
    assert snapshot(w.co, w.ws) == before


def test_U1_init_workspace_is_init(w):
    one, two = w.tmp / "one", w.tmp / "two"
    other_home = w.tmp / "other-home"
    other_home.mkdir()
    a = run(["init", one, "--json"], w.home)  # each in a home of its own: the pointer file
    b = run(["init", "workspace", two, "--json"], other_home)
    assert a.rc == b.rc == 0, (a, b)

    def tree(root: Path) -> list[tuple[str, bool]]:
        return sorted((str(p.relative_to(root)), p.is_dir()) for p in root.rglob("*"))

    assert tree(one) == tree(two)
    assert (a.out.replace(str(one), "PATH").replace(str(w.home), "HOME")
            == b.out.replace(str(two), "PATH").replace(str(other_home), "HOME"))
    assert tree(w.home) == tree(other_home)
    # Dry runs agree too, and write nothing.
    three = w.tmp / "three"
    c = run(["init", three, "--dry-run"], w.home)
    d = run(["init", "workspace", three, "--dry-run"], w.home)
    assert c.rc == d.rc == 0 and c.out == d.out and not three.exists()


@needs_git
def test_U1_init_project_inside_a_git_work_tree_registers_its_root(w):
    repo = Path(init_repo(w.tmp / "code" / "api"))
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    r = run(["--workspace", w.ws, "init", "project", "api"], w.home, cwd=sub)
    assert r.rc == 0, r
    import tomllib

    doc = tomllib.loads((w.ws / "projects/api/agent.toml").read_text())
    registered = doc.get("paths", doc.get("path"))
    assert [_resolved(w, w.home, p) for p in registered] == [str(repo)]


@needs_git
def test_U1_init_project_in_a_refused_work_tree_does_not_register_it(w):
    init_repo(w.home)  # a home directory under git: refused as a checkout ([H1])
    r = run(["--workspace", w.ws, "init", "project", "api"], w.home, cwd=w.home)
    toml = w.ws / "projects/api/agent.toml"
    if toml.exists():
        import tomllib

        doc = tomllib.loads(toml.read_text())
        listed = [_resolved(w, w.home, p)
                  for p in doc.get("paths", doc.get("path", []))]
        assert str(w.home) not in listed, r
    else:
        assert r.rc == 4, r


# ------------------------------------------------------------------------------- [U2]


def _busy_world(w: W) -> Path:
    """A checkout deep enough that its paths are wider than a narrow terminal, with a
    conflict in every segment, a foreign file and an offline checkout."""
    deep = w.tmp / "code" / ("a-rather-long-directory-name-" * 3) / "checkout"
    deep.mkdir(parents=True)
    _world(w, paths=[str(deep), str(w.tmp / "gone" / ("x" * 70))])
    (deep / ".agents/skills/alpha").mkdir(parents=True)
    (deep / ".agents/memory").mkdir(parents=True)
    (deep / ".agents/memory/style.md").write_text("my own style\n")
    (deep / ".agents/memory/extra.txt").write_text("mine\n")
    (deep / "AGENTS.md").write_text("mine\n")
    _agent(w, "claude", ".claude/CLAUDE.md", paths=[".claude"])
    return deep


COMMANDS = [
    ("sync", "project", "demo"),
    ("sync", "project", "demo", "-v"),
    ("sync", "project", "demo", "--dry-run", "-v"),
    ("sync", "project", "demo", "--check"),
    ("sync",),
    ("sync", "-v"),
    ("sync", "project", "nope"),
    ("sync", "project", "demo", "--force"),
    ("sync", "project", "demo", "{gone}"),
    ("status",),
    ("doctor",),
    ("doctor", "-v"),
    ("clean", "project", "demo", "--dry-run"),
    ("adopt", "{deep}/.agents/memory/style.md", "--dry-run"),
]


@pytest.mark.parametrize("width", [60, 100])
def test_U2_every_line_of_every_report_fits_the_width(w, width):
    deep = _busy_world(w)
    for cwd in (w.home, deep):
        for argv in COMMANDS:
            args = [a.format(deep=deep, gone=w.tmp / "gone" / "nothing") for a in argv]
            r = _ws_cli(w, *args, cwd=cwd, extra_env={"COLUMNS": str(width)})
            assert r.out or r.err, (argv, r)
            assert "Traceback" not in r.err
            assert _too_wide(r.out, width) == [], (argv, r.out)
            assert _too_wide(r.err, width) == [], (argv, r.err)


@pytest.mark.parametrize("width", [60, 100])
def test_U2_the_agents_catalogue_fits_the_width(w, width):
    _busy_world(w)
    r = _ws_cli(w, "agents", extra_env={"COLUMNS": str(width)})
    assert r.rc == 0, r
    unknown = _ws_cli(w, "agents", "add", "nosuchagent", extra_env={"COLUMNS": str(width)})
    assert unknown.rc == 4, unknown
    assert _too_wide(r.out, width) == [] and _too_wide(unknown.err, width) == [], (r, unknown)


HELP = [(), ("sync",), ("sync", "project"), ("apply",), ("clean",), ("hook",),
        ("hook", "install"), ("agents",), ("agents", "add"), ("init",),
        ("init", "project"), ("status",), ("doctor",), ("adopt",)]
@pytest.mark.parametrize("width", [60, 100])
def test_U2_every_line_of_help_fits_the_width(w, width):
    wide = {}
    for argv in HELP:
        r = run([*argv, "--help"], w.home, extra_env={"COLUMNS": str(width)})
        assert r.rc == 0, (argv, r)
        if lines := _too_wide(r.out, width):
            wide[" ".join(argv)] = lines
    assert wide == {}


def test_U2_a_path_wider_than_the_line_is_printed_whole_on_its_own(w):
    deep = _busy_world(w)
    r = _ws_cli(w, "sync", "project", "demo", extra_env={"COLUMNS": "60"})
    assert r.rc == 1, r
    lines = r.out.splitlines()
    assert _too_wide(r.out, 60) == []
    alone = [line.strip() for line in lines if len(line) > 60]
    assert str(deep) in alone, r.out  # the checkout's header: its path on a line of its own
    for line in lines:  # every absolute path on a line is one that exists, never cut
        for word in line.split():
            word = word.strip("'\"(),;:")
            if word.startswith(str(w.tmp)) and not word.startswith(str(w.tmp / "gone")):
                assert os.path.lexists(word), (word, line)


def test_U2_targets_relative_to_their_checkout_sources_to_the_workspace(w):
    _world(w)
    r = w.sync("--dry-run")
    assert r.rc == 0, r
    assert [line.strip() for line in r.out.splitlines() if line.startswith("  +")] == [
        "+ .agents/skills/alpha -> skills/alpha",
        "+ AGENTS.md -> projects/demo/AGENTS.md",
        "+ .agents/memory/style.md -> memory/style.md",
    ]


def _pasted(text: str, verb: str) -> list[str]:
    """The ``aikito … VERB ARG`` commands a text prints, as argument vectors."""
    flat = " ".join(unwrapped(text).split())
    found = re.findall(rf"aikito (?:--workspace \S+ )?{verb} [^\s()]+", flat)
    return [shlex.split(c.rstrip(";,")) for c in found]


def _resolved(w: W, cwd: Path, path: str) -> str:
    """Where ``path``, pasted in ``cwd``, leads (``~/`` is the run's home)."""
    if path.startswith("~/"):
        path = str(w.home) + path[1:]
    return os.path.realpath(os.path.join(cwd, path))


def _paste(w: W, argv: list[str], cwd: Path):
    """Run a pasted command as a shell would: ``~/`` expanded to the home directory."""
    assert argv[0] == "aikito"
    args = [str(w.home) + a[1:] if a.startswith("~/") else a for a in argv[1:]]
    return run(args, w.home, cwd=cwd)


@pytest.mark.parametrize("where", ["checkout", "subdirectory", "home", "workspace",
                                   "elsewhere"])
def test_U2_the_adopt_remedies_work_pasted_where_they_were_printed(w, where):
    """A foreign memory file, an identical copy of a skill and the user's ``AGENTS.md``
    holding the project's text: each remedy names ``aikito adopt``; pasted, it works."""
    _world(w)
    (w.co / ".agents/memory").mkdir(parents=True)
    (w.co / ".agents/memory/extra.txt").write_text("mine\n")
    skill = w.co / ".agents/skills/alpha"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text((w.ws / "skills/alpha/SKILL.md").read_text())
    (w.co / "AGENTS.md").write_text("Be kind.\n")
    (w.co / "src").mkdir()
    cwd = {"checkout": w.co, "subdirectory": w.co / "src", "home": w.home, "workspace": w.ws,
           "elsewhere": w.tmp}[where]
    r = run(["--workspace", w.ws, "sync", "project", "demo"], w.home, cwd=cwd)
    assert r.rc == 1, r
    # A file to edit, named from here: relative when below, else ~/ or absolute.
    flat = " ".join(unwrapped(r.out).split())
    (edit,) = set(re.findall(r"from skills in (\S+?)\)", flat))
    assert not edit.startswith(".."), edit
    assert _resolved(w, cwd, edit) == str(w.toml)
    commands = _pasted(r.out, "adopt")
    assert not any(a.startswith("..") for c in commands for a in c), commands
    targets = {_resolved(w, cwd, c[-1]) for c in commands}
    assert targets == {str(w.co / ".agents/memory/extra.txt"), str(skill),
                       str(w.co / "AGENTS.md")}, r.out
    for argv in commands:
        done = _paste(w, argv, cwd)
        assert done.rc == 0, (argv, done)
    assert os.readlink(w.co / ".agents/memory/extra.txt") == w.src("extra.txt")
    assert os.readlink(skill) == str(w.ws / "skills/alpha")
    assert os.readlink(w.co / "AGENTS.md") == str(w.ws / "projects/demo/AGENTS.md")
    after = run(["--workspace", w.ws, "sync", "project", "demo"], w.home, cwd=cwd)
    assert after.rc == 0, after


def test_U2_a_remedy_outside_the_current_directory_names_the_home_as_tilde(w):
    co = w.home / "code" / "demo"
    co.mkdir(parents=True)
    _world(w, paths=[str(co)])
    (co / ".agents/memory").mkdir(parents=True)
    (co / ".agents/memory/extra.txt").write_text("mine\n")
    r = run(["--workspace", w.ws, "sync", "project", "demo"], w.home, cwd=w.ws)
    assert r.rc == 0, r
    (argv,) = _pasted(r.out, "adopt")
    assert argv[-1] == "~/code/demo/.agents/memory/extra.txt", r.out
    done = _paste(w, argv, w.ws)
    assert done.rc == 0, done
    assert os.readlink(co / ".agents/memory/extra.txt") == w.src("extra.txt")


def test_U2_the_check_remedy_of_an_explicit_checkout_names_it(w):
    _world(w, paths=[])
    r = run(["--workspace", w.ws, "sync", "project", "demo", ".", "--check",
             "--no-register"], w.home, cwd=w.co)
    assert r.rc == 7, r
    last = r.out.splitlines()[-1]
    argv = shlex.split(last[last.index("aikito"):])
    done = _paste(w, argv, w.co)
    assert done.rc == 0, done
    assert os.readlink(w.rt("style.md")) == w.src("style.md")
    assert str(w.co) not in w.toml.read_text()  # --no-register was kept


@pytest.mark.parametrize("where", ["checkout", "home"])
def test_U2_the_check_remedy_works_pasted_where_it_was_printed(w, where):
    _world(w)
    cwd = w.co if where == "checkout" else w.home
    r = run(["--workspace", w.ws, "sync", "project", "demo", "--check"], w.home, cwd=cwd)
    assert r.rc == 7, r
    last = r.out.splitlines()[-1]
    command = last[last.index("aikito"):]
    argv = shlex.split(command)
    assert argv[argv.index("sync"):][:3] == ["sync", "project", "demo"], last
    done = _paste(w, argv, cwd)
    assert done.rc == 0, done
    again = run(["--workspace", w.ws, "sync", "project", "demo", "--check"], w.home, cwd=cwd)
    assert again.rc == 0, again


# ------------------------------------------------------------------------------- [U3]


def test_U3_an_undetected_agents_skip_is_shown_only_with_verbose_and_counted(w):
    _world(w)
    _agent(w, "claude", ".claude/CLAUDE.md", commands=[FAKE])
    _agent(w, "codex", "AGENTS.md")
    quiet = w.sync("--dry-run")
    assert quiet.rc == 0, quiet
    assert ".claude/CLAUDE.md" not in quiet.out and "not detected" not in quiet.out
    assert "instructions: 1 to create, 0 to unlink, 0 conflicts, 0 unchanged, 1 skipped" \
        in quiet.out.splitlines()
    verbose = w.sync("--dry-run", "-v")
    skipped = [line for line in verbose.out.splitlines() if ".claude/CLAUDE.md" in line]
    assert len(skipped) == 1 and "agent not detected" in skipped[0], verbose.out


def test_U3_a_run_with_nothing_to_change_prints_one_line(w):
    gone = w.tmp / "gone"
    second = w.co.parent / "second"
    second.mkdir()
    _world(w, paths=[str(w.co), str(second), str(gone)])
    assert w.sync().rc == 0
    r = w.sync()
    assert r.rc == 0, r
    assert r.out == "demo: in sync (3 checkouts, 1 offline)\n"
    assert r.err == ""
    verbose = w.sync("-v")
    assert verbose.rc == 0
    assert "= .agents/memory/style.md -> memory/style.md" in verbose.out
    assert len(verbose.out.splitlines()) > 1


def test_U3_one_line_then_the_warnings(w):
    _world(w)
    assert w.sync().rc == 0
    (w.co / ".agents/memory/extra.txt").write_text("mine\n")
    r, doc = w.jsync()
    assert r.rc == 0 and doc["outcome"] == "unchanged", r
    (finding,) = [f for f in doc["findings"] if f["severity"] == "warning"]
    assert finding["path"] == str(w.co / ".agents/memory/extra.txt")
    text = w.sync()
    lines = text.out.splitlines()
    assert lines[0] == "demo: in sync (1 checkout)", text
    rest = unwrapped("\n".join(lines[1:]))
    assert rest.strip().startswith("warning:") and "extra.txt" in rest, text.out


def test_U3_bare_sync_prints_one_line_per_project_and_may_add_a_total(w):
    _world(w)
    other = w.co.parent / "other"
    other.mkdir()
    (w.ws / "projects/zeta").mkdir()
    (w.ws / "projects/zeta/agent.toml").write_text(f"paths = {tlist([str(other)])}\n")
    assert w.cli("sync").rc == 0
    r = w.cli("sync")
    assert r.rc == 0, r
    lines = r.out.splitlines()
    assert lines[:2] == ["demo: in sync (1 checkout)", "zeta: in sync (1 checkout)"], r.out
    assert len(lines) <= 3


@pytest.mark.parametrize("n", [1, 2])
def test_U3_every_checkout_offline_is_a_warning_and_a_finding(w, n):
    _world(w, paths=[str(w.tmp / f"gone{i}") for i in range(n)])
    r, doc = w.jsync()
    assert r.rc == 0, r
    (finding,) = [f for f in doc["findings"] if f["code"] == "sync.all_offline"]
    assert finding["severity"] == "warning"
    assert finding["message"].startswith("nothing was synced: every checkout is offline")
    text = w.sync()
    flat = " ".join(text.out.split() + text.err.split())
    assert f"warning: {finding['message']}" in flat, text


def test_U3_every_warning_in_text_is_a_finding_in_json(w):
    deep = _busy_world(w)
    (deep / ".agents/memory/.DS_Store").write_text("")
    text = w.sync()
    warnings = [line for line in unwrapped(text.out + text.err).splitlines()
                if line.strip().startswith("warning:")]
    _r, doc = w.jsync()
    found = [f for f in doc["findings"] if f["severity"] == "warning"]
    assert warnings and len(warnings) == len(found), (warnings, found)
    for f in found:
        if (f.get("path") or "").startswith(str(deep)):
            assert any(os.path.basename(f["path"]) in line for line in warnings), f


def test_U3_check_with_changes_pending_ends_with_the_command_that_applies_them(w):
    _world(w)
    r = w.cli("sync", "project", "demo", "--check", cwd=w.co)
    assert r.rc == 7, r
    last = r.out.splitlines()[-1]
    assert re.search(r"aikito( --workspace \S+)? sync project demo$", last), last


@pytest.mark.parametrize("where", ["checkout", "workspace"])
def test_U3_bare_sync_check_with_changes_pending_ends_with_the_command(w, where):
    _world(w)
    cwd = w.co if where == "checkout" else w.ws
    r = run(["--workspace", w.ws, "sync", "--check"], w.home, cwd=cwd)
    assert r.rc == 7, r
    last = r.out.splitlines()[-1]
    argv = shlex.split(last[last.index("aikito"):])
    assert argv[-1] == "sync", last
    done = _paste(w, argv, cwd)
    assert done.rc == 0, done
    assert run(["--workspace", w.ws, "sync", "--check"], w.home, cwd=cwd).rc == 0


@pytest.mark.parametrize("command", [("sync", "project", "demo"), ("sync",)])
def test_U3_the_check_command_of_a_moved_workspace_applies_the_relinks(w, command):
    _world(w)
    assert w.sync().rc == 0
    new = w.tmp / "moved"
    os.rename(w.ws, new)
    check = run(["--workspace", new, *command, "--moved-from", w.ws, "--check"], w.home,
                cwd=w.tmp)
    assert check.rc == 7, check
    last = check.out.splitlines()[-1]
    argv = shlex.split(last[last.index("aikito"):])
    done = _paste(w, argv, w.tmp)
    assert done.rc == 0, (argv, done)
    assert os.readlink(w.co / ".agents/memory/style.md") == str(new / "memory/style.md")
    assert os.readlink(w.co / "AGENTS.md") == str(new / "projects/demo/AGENTS.md")


@pytest.mark.parametrize("where", ["above", "inside the old place"])
def test_U2_the_moved_from_remedy_works_pasted_where_it_was_printed(w, where):
    _world(w)
    assert w.sync().rc == 0
    new = w.tmp / "moved"
    os.rename(w.ws, new)
    cwd = w.tmp
    if where != "above":
        cwd = w.ws  # a new directory where the workspace was
        cwd.mkdir()
    r = run(["--workspace", new, "sync", "project", "demo"], w.home, cwd=cwd)
    assert r.rc == 1, r
    flat = " ".join(unwrapped(r.out).split())
    commands = set(re.findall(r"aikito (?:--workspace \S+ )?sync --moved-from [^\s()]+", flat))
    assert len(commands) == 1, r.out
    (command,) = commands
    argv = shlex.split(command)
    done = _paste(w, argv, cwd)
    assert done.rc == 0, (argv, done)
    assert os.readlink(w.co / ".agents/memory/style.md") == str(new / "memory/style.md")


@pytest.mark.parametrize(("state", "code"), [
    ("in sync", 0), ("pending", 7), ("blocked", 1), ("misconfigured", 4)])
def test_U3_status_uses_the_codes_of_sync_check(w, state, code):
    _world(w)
    if state != "pending":
        assert w.sync().rc == 0
    if state == "blocked":
        (w.co / ".agents/skills/alpha").unlink()
        (w.co / ".agents/skills/alpha").mkdir()
    elif state == "misconfigured":
        w.toml.write_text('memory = "style.md"\n')
    r = w.cli("status")
    assert r.rc == code, r
    check = w.cli("sync", "--check")
    assert check.rc == code, check
    doc = w.cli("status", "--json")
    assert doc.rc == code and doc.json["exit_code"] == code


# ------------------------------------------------------------------------------- [U4]


def _hook_entry() -> list[str]:
    """The entry of hook ``aikito-sync-check`` in ``.pre-commit-hooks.yaml``."""
    text = (REPO / ".pre-commit-hooks.yaml").read_text()
    hooks = [h for h in re.split(r"^- ", text, flags=re.M)[1:]]
    (hook,) = [h for h in hooks if re.match(r"id: aikito-sync-check\s*$", h, re.M)]
    fields = dict(re.findall(r"^\s*(\w+): (.*)$", hook, re.M))
    assert fields["language"] == "python"
    assert fields["pass_filenames"] == "false" and fields["always_run"] == "true"
    argv = shlex.split(fields["entry"])
    assert argv[0] == "aikito"
    return argv


def _precommit(w: W, repo: Path, extra_env: dict | None = None):
    """The hook as pre-commit runs it: its entry, at the root of the repository."""
    argv = _hook_entry()
    return run(argv[1:], w.home, cwd=repo, extra_env=extra_env)


def test_U4_the_hook_is_declared_for_pre_commit(w):
    argv = _hook_entry()
    assert argv[1:3] == ["sync", "project"]
    assert "--check" in argv and "--no-register" in argv


@needs_git
@pytest.mark.parametrize("how", ["none configured", "AIKITO_DIR missing", "pointer missing"])
def test_U4_without_a_workspace_the_hook_passes_with_one_line(w, how):
    repo = Path(init_repo(w.tmp / "repo"))
    env = {}
    if how == "AIKITO_DIR missing":
        env["AIKITO_DIR"] = str(w.tmp / "no-such-workspace")
    elif how == "pointer missing":
        pointer = w.home / ".config" / "aikito" / "workspace"
        pointer.parent.mkdir(parents=True)
        pointer.write_text(f"{w.tmp / 'no-such-workspace'}\n")
    before = snapshot(repo, w.home)
    r = _precommit(w, repo, env)
    assert r.rc == 0, r
    lines = (r.out + r.err).splitlines()
    assert len(lines) == 1 and lines[0].strip(), r
    assert snapshot(repo, w.home) == before


@needs_git
def test_U4_the_hook_checks_only_the_checkout_being_committed(w):
    repo = Path(init_repo(w.co / "repo"))
    other = w.co / "other"
    other.mkdir()
    _world(w, paths=[str(repo), str(other)])
    (other / "AGENTS.md").write_text("a conflict in the other checkout\n")
    env = {"AIKITO_DIR": str(w.ws)}
    toml = w.toml.read_bytes()
    before = snapshot(repo, other, w.ws)
    r = _precommit(w, repo, env)
    assert r.rc == 7, r  # this checkout: changes pending; the other's conflict not looked at
    assert str(other) not in r.out + r.err
    assert snapshot(repo, other, w.ws) == before
    assert w.sync().rc == 1  # the other checkout is blocked
    (other / "AGENTS.md").unlink()
    assert w.sync().rc == 0
    (other / "AGENTS.md").unlink()
    (other / "AGENTS.md").write_text("a conflict again\n")
    r = _precommit(w, repo, env)
    assert r.rc == 0, r
    assert w.toml.read_bytes() == toml  # nothing registered


@needs_git
def test_U4_the_hook_fails_on_a_blocked_or_misconfigured_checkout(w):
    repo = Path(init_repo(w.co / "repo"))
    _world(w, paths=[str(repo)])
    env = {"AIKITO_DIR": str(w.ws)}
    (repo / "AGENTS.md").write_text("mine, not committed\n")
    assert _precommit(w, repo, env).rc == 1
    w.toml.write_text(w.toml.read_text().replace('memory = ["style.md"]', 'memroy = []'))
    assert _precommit(w, repo, env).rc == 4


@needs_git
@pytest.mark.parametrize("listing", ["another checkout", "no project"])
@pytest.mark.parametrize("how", ["AIKITO_DIR", "pointer"])
def test_U4_a_workspace_that_does_not_list_this_checkout_lets_the_hook_pass(
        w, how, listing):
    """A teammate's workspace exists but none of its projects has the repository being
    committed (its project lists another checkout, or it has no project): the hook passes
    with one line of notice — ``sync.no_project`` under ``--json`` — and writes nothing;
    once a project lists the repository, the same hook checks it."""
    repo = Path(init_repo(w.tmp / "repo"))
    if listing == "another checkout":
        _world(w, paths=[str(w.co)])
    else:
        (w.ws / "projects" / "demo").rmdir()
    env = {}
    if how == "AIKITO_DIR":
        env["AIKITO_DIR"] = str(w.ws)
    else:
        pointer = w.home / ".config" / "aikito" / "workspace"
        pointer.parent.mkdir(parents=True)
        pointer.write_text(f"{w.ws}\n")
    before = snapshot(repo, w.ws, w.home)
    r = _precommit(w, repo, env)
    assert r.rc == 0, r
    lines = (r.out + r.err).splitlines()
    assert len(lines) == 1 and lines[0].strip(), r
    j = run([*_hook_entry()[1:], "--json"], w.home, cwd=repo, extra_env=env)
    assert j.rc == 0, j
    doc = j.json
    assert (doc["exit_code"], doc["outcome"], doc["error"]) == (0, "unchanged", None)
    assert [(f["code"], f["severity"], f["path"]) for f in doc["findings"]] == [
        ("sync.no_project", "info", str(repo))]
    assert snapshot(repo, w.ws, w.home) == before
    _world(w, paths=[str(w.co), str(repo)])
    assert _precommit(w, repo, env).rc == 7  # listed now: checked (its links are pending)
