"""The world package's entry, the one observation pass of a project: importing one room
of ``world/`` alone (the writer's observation, the git room) brings no other room and no
value of the registry — the pass imports the rooms it runs through when it is called."""

from __future__ import annotations

import subprocess
import sys

#: The rooms the observation pass runs through, imported by its first call.
PASS_ROOMS = {"aikito_mem.world.checkouts", "aikito_mem.world.segments",
              "aikito_mem.world.resources", "aikito_mem.config.registry",
              "aikito_mem.views"}


def _imported_with(module: str) -> set[str]:
    code = (f"import sys, {module}\n"
            "print('\\n'.join(m for m in sys.modules if m.startswith('aikito_mem')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return set(proc.stdout.split())


def test_one_room_imported_alone_brings_no_other() -> None:
    for module in ("aikito_mem.world.observe", "aikito_mem.world.git"):
        imported = _imported_with(module)
        assert module in imported
        assert not PASS_ROOMS & imported, (module, sorted(PASS_ROOMS & imported))


def test_the_pass_is_the_package_s_entry() -> None:
    import aikito_mem.world as world

    assert world.__all__ == ["load_registry", "observe_project"]
    assert callable(world.observe_project) and callable(world.load_registry)
