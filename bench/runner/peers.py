"""Find or install the tools the benchmark compares against.

- the reference tool ``aikito==1.61.1`` from PyPI, in its own virtual environment under
  ``bench/.cache/`` (it needs Python >= 3.12, looked up on this machine, never assumed);
- GNU Stow and strace from Debian, found on ``PATH``. Installing them is opt-in: only
  when the caller passes ``allow_install`` (``python -m bench --install``), only when
  missing, and only as root. Otherwise a missing one is reported with the way to get it
  (``strace not installed: pass --install or apt-get install strace``).

The reference tool's environment is the benchmark's own set-up, like the project's
``.venv``: it is created on first use unless ``--no-install`` forbids it, and it changes
nothing outside ``bench/.cache``. Nothing here runs during ``make test``. A peer that
cannot be had is returned with ``path=None`` and the reason, so the harness reports it
as a "missing" row.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.suite import Built, Workload

REF_VERSION = "1.61.1"
CACHE = Path(__file__).resolve().parents[1] / ".cache"


@dataclass
class Peer:
    name: str
    path: str | None  # executable, None when missing
    version: str = ""
    reason: str = ""  # why it is missing, or how it was obtained
    python: str | None = None  # the peer's interpreter, when it has one


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _run(cmd: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def _python_ok(exe: str) -> bool:
    try:
        r = _run([exe, "-c", "import sys, venv; sys.exit(sys.version_info < (3, 12))"], 60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def find_python312() -> str | None:
    """A Python >= 3.12 interpreter: pyenv versions first, then PATH."""
    candidates: list[str] = []
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for version in ("3.12.*", "3.13.*", "3.14.*"):
        pattern = os.path.join(pyenv_root, "versions", version, "bin", "python3")
        candidates += sorted(glob.glob(pattern))
    for name in ("python3.12", "python3.13", "python3.14", "python3"):
        found = shutil.which(name)
        if found:
            candidates.append(found)
    for exe in candidates:
        if _python_ok(exe):
            return exe
    return None


def reference_tool(allow_install: bool) -> Peer:
    """The public reference tool in ``bench/.cache/ref-venv`` (created on first use)."""
    venv = CACHE / "ref-venv"
    exe = venv / "bin" / "aikito"
    py = venv / "bin" / "python"

    def version() -> str:
        try:
            r = _run([str(exe), "--version"], 120)
        except OSError:
            return ""
        return r.stdout.strip() if r.returncode == 0 else ""

    v = version() if exe.exists() else ""
    if REF_VERSION in v:
        return Peer("reference", str(exe), v, "cached in bench/.cache/ref-venv", str(py))
    if not allow_install:
        why = "not installed in bench/.cache/ref-venv (--no-install)"
        return Peer("reference", None, reason=why)
    # Parallel test workers may all ask at once: one installs, the others wait and find it.
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "ref-venv.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        v = version() if exe.exists() else ""
        if REF_VERSION in v:
            return Peer("reference", str(exe), v, "cached in bench/.cache/ref-venv", str(py))
        return _install_reference(venv, exe, py, version)


def _install_reference(venv: Path, exe: Path, py: Path, version: Callable[[], str]) -> Peer:
    """Create ``venv`` and install the reference tool into it (the caller holds the lock)."""
    base = find_python312()
    if base is None:
        return Peer("reference", None, reason="no Python >= 3.12 found (pyenv or PATH)")
    _log(f"installing aikito=={REF_VERSION} into bench/.cache/ref-venv (python: {base})")
    if venv.exists():
        shutil.rmtree(venv)
    CACHE.mkdir(parents=True, exist_ok=True)
    r = _run([base, "-m", "venv", str(venv)])
    if r.returncode != 0:
        return Peer("reference", None, reason=f"venv creation failed: {r.stderr.strip()[-200:]}")
    r = _run([str(py), "-m", "pip", "install", "-q", f"aikito=={REF_VERSION}"], 900)
    if r.returncode != 0:
        return Peer("reference", None, reason=f"pip install failed: {r.stderr.strip()[-300:]}")
    v = version()
    if REF_VERSION not in v:
        return Peer("reference", None, reason=f"installed but --version said {v!r}")
    return Peer("reference", str(exe), v, f"installed from PyPI with {base}", str(py))


_apt_updated = False


def _apt_install(packages: list[str]) -> str:
    """Install Debian packages; returns '' on success, else the reason."""
    global _apt_updated
    if shutil.which("apt-get") is None:
        return "apt-get not available"
    if os.geteuid() != 0:
        return "not root: cannot apt-get install"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not _apt_updated:
        _log("apt-get update")
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, check=False)
        _apt_updated = True
    _log(f"apt-get install -y {' '.join(packages)}")
    r = subprocess.run(
        ["apt-get", "install", "-y", "-qq", *packages],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return "" if r.returncode == 0 else f"apt-get install failed: {r.stderr.strip()[-200:]}"


def not_installed(name: str) -> str:
    """The reason shown for a Debian tool that is missing and was not to be installed."""
    return f"{name} not installed: pass --install or apt-get install {name}"


def debian_tool(name: str, allow_install: bool) -> Peer:
    """``stow`` or ``strace`` from PATH; installed from Debian only when missing and
    ``allow_install`` (``--install``) — never by default."""
    path = shutil.which(name)
    how = "found on PATH"
    if path is None:
        if not allow_install:
            return Peer(name, None, reason=not_installed(name))
        reason = _apt_install([name])
        if reason:
            return Peer(name, None, reason=reason)
        path = shutil.which(name)
        how = "installed with apt-get"
        if path is None:
            return Peer(name, None, reason="apt-get succeeded but it is not on PATH")
    r = _run([path, "--version"], 60)
    first = (r.stdout or r.stderr).strip().splitlines()
    return Peer(name, path, first[0] if first else "", how)


# --------------------------------------------------------------------------- GNU Stow


def write_stow_scripts(b: Built, stow: str) -> None:
    """The Stow job scripts ``stow.sh`` and ``stow-empty.sh`` (argument: the variant).

    The nearest equivalent of a sync with GNU Stow: the workspace ``memory/`` directory is
    the package, each active checkout's ``.agents/memory`` the target. The empty project's
    package is an empty ``memory/`` directory.
    """
    empty_pkg = b.base / "stow-empty"
    (empty_pkg / "memory").mkdir(parents=True, exist_ok=True)
    for script, stow_dir, cos in (
        ("stow.sh", b.ws, b.active),
        ("stow-empty.sh", empty_pkg, b.empty_active),
    ):
        targets = " ".join(f"'{co}/.agents/memory'" for co in cos)
        (b.base / script).write_text(
            "#!/bin/sh\n"
            "# Nearest equivalent of a sync with GNU Stow: the workspace memory/ directory\n"
            "# is the package, each active checkout's .agents/memory the target.\n"
            "set -e\n"
            f"for t in {targets}; do\n"
            '  case "$1" in\n'
            f"    cold) mkdir -p \"$t\"; '{stow}' -d '{stow_dir}' -t \"$t\" memory ;;\n"
            f"    warm) '{stow}' -d '{stow_dir}' -t \"$t\" memory ;;\n"
            f"    dry) '{stow}' -n -d '{stow_dir}' -t \"$t\" memory ;;\n"
            "  esac\n"
            "done\n"
        )


def stow_note(wl: Workload) -> str:
    """How Stow's job differs from the sync on ``wl`` (a note of its rows)."""
    parts = ["relative links; no config/validation/plan"]
    if wl.nested:
        parts.append("nested refs folded into one dir link")
    if wl.notes:
        parts.append("no notes resource")
    if wl.offline:
        parts.append("offline checkouts not listed")
    if wl.active > 1:
        parts.append(f"{wl.active} stow processes")
    return "stow: " + ", ".join(parts)
