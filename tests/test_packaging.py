"""Packaging: the pre-commit hook, license metadata that builds without deprecation
warnings, and ``make demo`` installing only the runtime package (SPEC §11)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

#: What setuptools prints for a license table or license classifiers.
DEPRECATIONS = (
    "SetuptoolsDeprecationWarning",
    "BuildBackendWarning",
    "License classifiers are deprecated",
    "project.license` as a TOML table is deprecated",
)


def test_pre_commit_hook() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [h["id"] for h in hooks] == ["aikito-sync-check"]
    hook = hooks[0]
    # [U4]: only the checkout being committed (pre-commit runs hooks at the work tree's
    # root); a machine without a workspace passes (tests/test_cli_habits.py runs it for real).
    assert hook["entry"] == ("aikito sync project . . --check --no-register "
                             "--skip-without-workspace")
    assert hook["language"] == "python"
    # The check is about the whole checkout: it must never receive file names.
    assert hook["pass_filenames"] is False
    assert hook["always_run"] is True
    # The entry's command is the console script this package installs.
    assert hook["entry"].split()[0] in PYPROJECT["project"]["scripts"]


def test_pre_commit_entry_is_a_real_command() -> None:
    script = Path(sys.executable).parent / "aikito"
    if not script.exists():
        pytest.skip(f"no aikito script beside {sys.executable}")
    proc = subprocess.run([str(script), "sync", "project", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "--check" in proc.stdout


def test_license_metadata_is_an_spdx_expression() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    # An SPDX string and license-files need setuptools 77 or later.
    assert PYPROJECT["build-system"]["requires"] == ["setuptools>=77"]


@pytest.mark.slow
def test_build_prints_no_deprecation_warning(tmp_path: Path) -> None:
    """Build the wheel from a copy of the tree (the build writes into its source).

    Slow: the isolated build downloads setuptools into a cold cache (the home directory
    is a fresh temporary one); 5 s on an idle machine, far more on a busy one.
    """
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "aikito_mem", src / "aikito_mem",
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir",
         "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True, text=True, timeout=600,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and "setuptools" in output and (
        "No matching distribution" in output or "Could not find a version" in output
    ):
        pytest.skip("setuptools>=77 cannot be downloaded for the isolated build here")
    assert proc.returncode == 0, output
    assert not [w for w in DEPRECATIONS if w in output], output
    (wheel,) = (tmp_path / "dist").glob("aikito_mem-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = zf.read(metadata).decode("utf-8")
    assert "License-Expression: MIT" in text.splitlines()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Requires-Dist: PyYAML>=6.0" in text.splitlines()


def _make_n(target: str, venv: Path) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    proc = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # What each ``pip install`` installs (the text after it; the venv path may say "pytest").
    return [line.split("pip install", 1)[1] for line in proc.stdout.splitlines()
            if "pip install" in line]


def test_make_demo_installs_only_the_runtime_package(tmp_path: Path) -> None:
    installs = _make_n("demo", tmp_path / "venv")
    assert installs, "make demo installs nothing"
    assert not [line for line in installs if ".[" in line or "pytest" in line]
    assert any(line.rstrip().endswith("-e .") for line in installs)


@pytest.mark.parametrize("target", ["test", "lint"])
def test_make_test_and_lint_install_the_tools(tmp_path: Path, target: str) -> None:
    installs = _make_n(target, tmp_path / "venv")
    assert any("'.[test,lint]'" in line for line in installs)
