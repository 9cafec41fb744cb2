"""`make demo` keeps working: the walkthrough drives the real server and prints each part."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_walkthrough():
    out = subprocess.run([sys.executable, "-m", "aspace_dap", "demo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for part in ("== Call stack", "== Variables of lane", "== After `setFocus lane", "in every lane (laneValues",
                 "== LDS of the workgroup", "stopped in a device function, the caller unwound", "== Attach your editor"):
        assert part in text, part
    assert "#1 0x3da4 divergent at divergent_call.hip:25" in text
    # both __shared__ arrays read from LDS at the offsets the kernel's ISA uses, and the lens says where
    assert "[Share] row_sums = {4284, 4540, 4796, 5052, 0 <repeats 12 times>}  @ local@wg(1,1,0)#0x440" in text
    assert "[Share] tile = {{264, 264.5, " in text
    assert "row_sums \u27f6 local#0x440 (LDS)" in text and "tile \u27f6 local#0x0 (LDS)" in text


def test_an_installed_package_runs_the_demo_and_lists_its_commands(tmp_path):
    """`pip install .` into a fresh environment (its dependencies are this one's, reached through a .pth
    file, so nothing is downloaded): `aspace-dap demo` opens the examples the package carries, and
    `aspace-dap --help` lists the commands."""
    import shutil
    import sysconfig

    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} cannot build this package (77+ can): make setup installs it")
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for part in ("aspace_dap", "adapters", "examples/lds_tiles", "examples/divergent_call"):
        shutil.copytree(os.path.join(ROOT, part), source / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), source / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", str(source)], check=True, cwd=tmp_path, env=env, timeout=300)
    where = subprocess.run([str(python), "-c", "import aspace_dap; print(aspace_dap.__file__)"], check=True,
                           capture_output=True, text=True, cwd=tmp_path, env=env).stdout
    assert where.startswith(site), where
    shutil.rmtree(source)  # the installed package stands alone
    command = str(venv / "bin" / "aspace-dap")
    usage = subprocess.run([command, "--help"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert usage.returncode == 0, usage.stderr
    for line in ("aspace-dap inspect STATE", "aspace-dap state validate PATH", "aspace-dap state convert CORE",
                 "aspace-dap lsp", "aspace-dap demo"):
        assert line in usage.stdout, usage.stdout
    out = subprocess.run([command, "demo"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "== Opened examples/lds_tiles/dumps/gfx90a.O0" in out.stdout
    assert "#1 0x3da4 divergent at divergent_call.hip:25" in out.stdout
    assert "row_sums \u27f6 local#0x440 (LDS)" in out.stdout
