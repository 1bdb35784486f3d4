"""§12 start-up, as structure and never as timing: what a plain warm ``aikito sync
project`` and ``aikito --version`` import, read from a real process (``-X importtime``).

A warm sync of a memory-only project (and one with skills and instructions) imports the
sync command's module and the rooms a sync runs through — never another command's module
(the root group loads commands lazily), never ``tomlkit`` (only registration and adopt
edit ``agent.toml``), never ``yaml``, and, with nothing to write, never the writer's guard.
``--version`` imports the package root, the command line root and click: nothing that
``python -c "import click"`` does not import besides them.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import imported_modules
from tests.helpers.workspace import WS

REPO = Path(__file__).resolve().parent.parent

#: The package modules ``aikito --version`` may import: the package, ``python -m``'s
#: entry and the command line root with the click-only options it is built from.
VERSION_MODULES = {"aikito_mem", "aikito_mem.__main__", "aikito_mem.console",
                   "aikito_mem.cli", "aikito_mem.cli.options"}

#: Command modules (and the rooms of other commands) a ``sync project`` never needs.
OTHER_COMMANDS = {"aikito_mem.cli.adopt", "aikito_mem.cli.apply", "aikito_mem.cli.doctor",
                  "aikito_mem.cli.init", "aikito_mem.cli.status", "aikito_mem.cli.sync_all"}


def _memory_project(ws: WS) -> None:
    for i in range(3):
        ws.add_file(f"team/r{i}.md", "x\n")
    ws.add_dir("glossary")
    ws.add_notes("demo")
    # One offline checkout beside the active one, as the benchmark's W1 has.
    ws.write_config("demo", memory=[f"team/r{i}.md" for i in range(3)] + ["glossary"],
                    paths=[ws.checkout("co"), f"{ws.checkouts_dir}/offline"])


def _segments_project(ws: WS) -> None:
    _memory_project(ws)
    for name in ("lint", "review"):
        ws.add_skill(name)
    ws.write_instructions("demo", "# demo\n\nProject instructions.\n")
    ws.add_agent("codex", '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n')
    ws.write_config("demo", memory=[f"team/r{i}.md" for i in range(3)] + ["glossary"],
                    paths=[ws.checkout("co"), f"{ws.checkouts_dir}/offline"],
                    skills=["lint", "review"])


def _warm_sync_imports(ws: WS) -> set[str]:
    cold, _ = imported_modules("--workspace", ws.root, "sync", "project", "demo")
    assert cold.returncode == 0, cold.stderr
    proc, imported = imported_modules("--workspace", ws.root, "sync", "project", "demo")
    assert proc.returncode == 0, proc.stderr
    assert ": in sync (" in proc.stdout  # warm: nothing to write ([U3]: one line)
    return imported


def _assert_plain_sync(imported: set[str]) -> None:
    assert "aikito_mem.cli.sync" in imported  # the one command module it needs
    assert not (OTHER_COMMANDS & imported), sorted(OTHER_COMMANDS & imported)
    commands = sorted(m for m in imported if m.startswith("aikito_mem.commands"))
    assert not commands, commands
    assert not {"tomlkit", "yaml"} & imported, sorted({"tomlkit", "yaml"} & imported)
    # Editing agent.toml and the writer's guard are for runs that write ([K4], [E9]).
    editing = {"aikito_mem.config.edit", "aikito_mem.config.toml_layout",
               "aikito_mem.executor.guard", "aikito_mem.executor.planfile"}
    assert not editing & imported, sorted(editing & imported)
    # Text output: no JSON encoder, no shell quoting, no completion machinery; nothing
    # occupied, so no question to git ([L1]) and no subprocess machinery.
    # The output width is read without ``shutil`` (and the compression modules it brings).
    # A plain sync compares agent.toml's bytes and hashes nothing: no ``hashlib`` (it
    # loads OpenSSL); a registration's compare-and-swap and a saved plan hash ([K4]).
    # click's own texts go through gettext, which imports ``locale``: the command line
    # makes its help and version options without it (the tool is not translated).
    extras = {"json", "shlex", "click.shell_completion", "aikito_mem.world.git",
              "subprocess", "shutil", "locale", "hashlib", "_hashlib"}
    assert not extras & imported, sorted(extras & imported)
    # Rooms only a rarer branch needs: shell completion (only when a shell asks), the
    # relink of --moved-from ([L4]), the per-agent skills directories ([N1]: none in the
    # registry), and ``bisect`` (a shared library loaded for one look-up).
    rare = {"aikito_mem.cli.complete", "aikito_mem.executor.relink",
            "aikito_mem.world.agent_skills", "bisect",
            # The help formatter: a run that writes no help or usage line never needs it.
            "aikito_mem.cli.help",
            # [E2]: a plan without writes has nothing to re-check before a first write.
            "aikito_mem.executor.verify",
            # [E4]: the guarded writes' room, for a plan that writes.
            "aikito_mem.executor.writer",
            # [A3]: Project.prepare's room, imported by its first call.
            "aikito_mem.prepare",
            # [L4]: the rules of a moved workspace, for --moved-from or a conflict's
            # remedy only (the relink's rule id is the planner package's).
            "aikito_mem.planner.moved",
            # What a clean observed [L3], and a per-agent skills directory's view [N1].
            "aikito_mem.views.clean", "aikito_mem.views.agent_skills"}
    assert not rare & imported, sorted(rare & imported)
    # What an in-sync run never shows or plans: a remedy's words (a conflict's, a foreign
    # entry's), the per-agent skills directories ([N1]: none in the registry), the path
    # display of a line that names a path ([U2]: the one line names none), a plan's
    # lines ([U3]: one line says it is in sync) and the JSON document.
    unshown = {"aikito_mem.planner.remedies", "aikito_mem.planner.agent_skills",
               "aikito_mem.render.paths", "aikito_mem.render.sync_plan",
               "aikito_mem.render.sync_json"}
    assert not unshown & imported, sorted(unshown & imported)


def test_warm_memory_sync_imports_only_the_sync_path(ws: WS) -> None:
    _memory_project(ws)
    imported = _warm_sync_imports(ws)
    _assert_plain_sync(imported)
    # No agents/ directory: the registry is known from one lstat ([G3]); nothing is read.
    assert "aikito_mem.config.registry_read" not in imported
    # No skill, no instruction target: neither segment's planner is loaded ([§12]).
    planners = {"aikito_mem.planner.skills", "aikito_mem.planner.instructions"}
    assert not planners & imported, sorted(planners & imported)


def test_an_empty_registry_is_never_read(ws: WS) -> None:
    """An ``agents/`` that holds no registry file (the reference tool wants the directory)
    is decided by its listing: the reader of registry files is not imported ([§12])."""
    _memory_project(ws)
    os.makedirs(f"{ws.root}/agents")
    with open(f"{ws.root}/agents/README.md", "w") as f:
        f.write("not a registry file\n")
    imported = _warm_sync_imports(ws)
    _assert_plain_sync(imported)
    assert "aikito_mem.config.registry_read" not in imported


def test_warm_segments_sync_imports_only_the_sync_path(ws: WS) -> None:
    _segments_project(ws)
    imported = _warm_sync_imports(ws)
    _assert_plain_sync(imported)
    assert "aikito_mem.config.registry_read" in imported  # the registry was read ([G3])


#: Run a warm ``sync project demo`` in-process and print every pattern a module of the
#: package handed to ``re`` (compiled at import or on the way): ``re``'s one compile
#: entry is watched, the module calling ``re`` recorded.
_PATTERN_SPY = """
import re, sys
seen = []
original = re._compile
def spy(pattern, flags):
    caller = sys._getframe(2).f_globals.get("__name__", "")
    if caller.split(".")[0] == "aikito_mem":
        seen.append((caller, str(pattern)))
    return original(pattern, flags)
re._compile = spy
from aikito_mem.cli import cli
try:
    cli(["--workspace", sys.argv[1], "sync", "project", "demo"], prog_name="aikito")
except SystemExit:
    pass
print(repr(seen))
"""


def _patterns_of_a_warm_sync(ws: WS) -> list[tuple[str, str]]:
    _warm_sync_imports(ws)
    proc = subprocess.run([sys.executable, "-c", _PATTERN_SPY, ws.root], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ": in sync (" in proc.stdout
    seen: list[tuple[str, str]] = eval(proc.stdout.strip().splitlines()[-1])
    return seen


def test_a_warm_sync_compiles_no_pattern(ws: WS) -> None:
    """The checks every run makes (clean references, control characters, agent names) use
    no regular expression, and the patterns of messages and path display are compiled
    when first used: a warm sync with nothing to say compiles none ([§12])."""
    _memory_project(ws)
    assert _patterns_of_a_warm_sync(ws) == []


def test_a_warm_segments_sync_compiles_no_pattern(ws: WS) -> None:
    _segments_project(ws)
    assert _patterns_of_a_warm_sync(ws) == []


def test_json_sync_imports_json_and_no_other_command(ws: WS) -> None:
    _memory_project(ws)
    proc, imported = imported_modules("--workspace", ws.root, "sync", "project", "demo",
                                      "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "json" in imported
    assert "aikito_mem.render.sync_json" in imported  # the document's own room
    assert not (OTHER_COMMANDS & imported), sorted(OTHER_COMMANDS & imported)


def test_version_imports_click_and_the_root_only() -> None:
    proc, imported = imported_modules("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("aikito ")
    ours = {m for m in imported if m.split(".")[0] == "aikito_mem"}
    assert ours <= VERSION_MODULES, sorted(ours - VERSION_MODULES)
    floor = subprocess.run([sys.executable, "-X", "importtime", "-c", "import click"],
                           capture_output=True, text=True, check=True, timeout=120)
    click_only = {line.rsplit("|", 1)[-1].strip() for line in floor.stderr.splitlines()
                  if line.startswith("import time:")}
    # ``-m`` itself imports runpy and importlib.util (the console script does not);
    # ``gc`` is built into the interpreter (the entry point turns the cyclic collector
    # off).  Never ``locale``: the --version and --help options are made without click's
    # gettext.
    allowed = {"runpy", "importlib.util", "importlib.machinery", "importlib._abc", "gc"}
    extra = imported - ours - click_only - allowed
    assert not extra, sorted(extra)
    assert "locale" not in imported


def test_help_still_lists_every_command() -> None:
    """The lazy root group loads every command for its help, and suggests among all of
    them for a misspelt one."""
    from tests.helpers.cli import aikito_argv

    helped = subprocess.run(aikito_argv("--help"), capture_output=True, text=True,
                            timeout=120)
    assert helped.returncode == 0
    for name in ("adopt", "apply", "doctor", "init", "status", "sync"):
        assert f"\n  {name} " in helped.stdout, name
    typo = subprocess.run(aikito_argv("doctr"), capture_output=True, text=True, timeout=120)
    assert typo.returncode == 2 and "'doctor'" in typo.stderr, typo.stderr


def test_the_command_line_turns_the_cyclic_collector_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of ``aikito`` is one short process: its entry point disables the cyclic
    garbage collector before the command runs (reference counting frees the rest)."""
    import aikito_mem.cli as cli_mod

    seen: list[bool] = []
    monkeypatch.setattr(cli_mod, "cli", lambda **kw: seen.append(gc.isenabled()))
    assert gc.isenabled()
    try:
        cli_mod.main()
    finally:
        gc.enable()
    assert seen == [False]


def test_the_console_entry_turns_the_collector_off_before_any_import() -> None:
    """The console scripts' entry (``aikito_mem.console:main``, also ``python -m``) turns
    the cyclic collector off before click, attrs or the command line are imported — they
    are most of what the collector would walk — and importing the package root and the
    entry imports neither ``typing`` nor click ([§12])."""
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as fh:
        scripts = tomllib.load(fh)["project"]["scripts"]
    assert set(scripts.values()) == {"aikito_mem.console:main"}
    code = ("import gc, sys\n"
            "import aikito_mem.console as entry\n"
            "early = sorted({'typing', 'click', 'attrs', 'aikito_mem.cli'} & set(sys.modules))\n"
            "seen = []\n"
            "class Spy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'click':\n"
            "            seen.append(gc.isenabled())\n"
            "        return None\n"
            "sys.meta_path.insert(0, Spy())\n"
            "sys.argv = ['aikito', '--version']\n"
            "try:\n"
            "    entry.main()\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(early, seen, gc.isenabled())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[] [False] False", proc.stdout


def test_the_console_entry_freezes_what_is_alive_when_the_command_ends() -> None:
    """[§12]: when a command has ended, the console scripts' entry freezes what is alive,
    so that the interpreter's finalization does not collect and free the run's objects
    one by one; the exit is otherwise the same — the exit code, every line written and
    flushed, the ``atexit`` handlers run — for a run that ends well and for a usage
    error."""
    code = ("import atexit, gc, sys\n"
            "import aikito_mem.console as entry\n"
            "atexit.register(lambda: print('atexit', gc.get_freeze_count() > 0))\n"
            "sys.argv = ['aikito', *sys.argv[1:]]\n"
            "assert gc.get_freeze_count() == 0\n"
            "try:\n"
            "    entry.main()\n"
            "except SystemExit as exc:\n"
            "    print('exit', exc.code, gc.get_freeze_count() > 0, gc.isenabled())\n"
            "    raise\n")
    version = subprocess.run([sys.executable, "-c", code, "--version"],
                             capture_output=True, text=True, timeout=120, cwd=REPO)
    assert version.returncode == 0, version.stderr
    from aikito_mem import __version__

    assert version.stdout.splitlines() == [f"aikito {__version__} (aikito_mem)",
                                           "exit 0 True False", "atexit True"], version.stdout
    usage = subprocess.run([sys.executable, "-c", code, "syncc"],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert usage.returncode == 2, usage.stderr
    assert usage.stdout.splitlines() == ["exit 2 True False", "atexit True"], usage.stdout
    assert "Error: No such command 'syncc'." in usage.stderr, usage.stderr


def test_the_api_leaves_the_collector_alone(ws: WS) -> None:
    """Imported as a library, nothing of the package touches the host's collector."""
    _memory_project(ws)
    code = ("import gc, sys\n"
            "from aikito_mem import Project\n"
            "import aikito_mem.cli\n"
            "Project.load('demo', workspace=sys.argv[1]).sync()\n"
            "assert gc.isenabled(), 'the collector was disabled'\n")
    proc = subprocess.run([sys.executable, "-c", code, ws.root], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_long_sync_leaves_no_cyclic_garbage(ws: WS) -> None:
    """What the disabled collector would have found after start-up: nothing that grows
    with the plan — the same few hundred objects for 3 and for 300 references."""
    code = ("import gc, sys\n"
            "from aikito_mem.cli import cli\n"
            "gc.collect(); gc.disable()\n"
            "try:\n"
            "    cli(['--workspace', sys.argv[1], 'sync', 'project', 'demo'],"
            " prog_name='aikito')\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(gc.collect())\n")

    def garbage(n: int) -> int:
        refs = [f"r{i:03d}.md" for i in range(n)]
        for ref in refs:
            ws.add_file(ref, "x\n")
        ws.write_config("demo", memory=refs, paths=[ws.checkout("co")])
        proc = subprocess.run([sys.executable, "-c", code, ws.root], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout.strip().splitlines()[-1])

    small, large = garbage(3), garbage(300)
    assert large - small < 100, (small, large)
