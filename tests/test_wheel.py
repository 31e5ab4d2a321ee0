"""The built wheel is the whole product: installed into a fresh venv, outside the checkout,
its CLI runs the demo, records, reads headers and verifies.

The wheel is built from a copy of this checkout's sources and installed with no dependencies into a new
venv; the dependencies (Warp, NumPy, Torch, PyBoy, Pillow) come from the test's own
environment through a path file, which adds their folder but none of its own path
files, so the checkout's editable install is not visible there. Every command runs
in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

pytestmark = [pytest.mark.tooling, pytest.mark.xdist_group("wheel")]  # one wheel build

REPO = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bin/`` of a fresh venv holding only the wheel of this checkout."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # a copy: setuptools builds in the source folder (build/, egg-info)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, source / name)
    dist = root / "dist"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        cwd=root,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("gbxcule-*.whl")
    env_dir = root / "venv"
    venv.create(env_dir)  # no pip of its own (ensurepip took ~6 s): this pip installs into it
    bin_dir = env_dir / "bin"
    site = Path(
        _run(
            [
                str(bin_dir / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ],
            cwd=root,
        ).stdout.strip()
    )
    (site / "gbxcule_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    done = _run(
        [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q",
         "--no-deps", "--no-index", str(wheel)],
        cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return bin_dir


def test_the_wheel_is_imported_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    code = "import gbxcule, gbxcule.files as f; print(gbxcule.__file__); print(f.checkout_root())"
    done = _run([str(installed / "python"), "-c", code], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    location, root = done.stdout.split()
    assert str(REPO) not in location and "site-packages" in location
    assert root == "None"


def test_demo_record_info_verify_run_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    gbxcule = str(installed / "gbxcule")
    demo = _run([gbxcule, "demo", "--steps", "3", "--envs", "2", "--device", "cpu"], cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert "steps/s" in demo.stdout
    assert (tmp_path / "out" / "demo" / "final_frames.png").stat().st_size > 0
    assert (tmp_path / "out" / "demo" / "envs.gif").stat().st_size > 0

    rom = _run(
        [
            str(installed / "python"),
            "-c",
            "from gbxcule.demo.rom import demo_rom_path as p; print(p())",
        ],
        cwd=tmp_path,
    ).stdout.strip()
    info = _run([gbxcule, "info", rom], cwd=tmp_path)
    assert info.returncode == 0 and "GBXCULE DEMO" in info.stdout, info.stderr

    gif = tmp_path / "env0.gif"
    record = _run([gbxcule, "record", rom, "--steps", "2", "--out", str(gif)], cwd=tmp_path)
    assert record.returncode == 0, record.stderr
    assert gif.stat().st_size > 0

    verify = _run([gbxcule, "verify", "--rom", rom, "--steps", "2"], cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "PASS" in verify.stdout

    quest = _run(
        [
            gbxcule,
            "demo",
            "--game",
            "quest",
            "--steps",
            "2",
            "--envs",
            "1",
            "--device",
            "cpu",
            "--save-rom",
            "quest.gb",
        ],
        cwd=tmp_path,
    )
    assert quest.returncode == 0, quest.stderr
    assert "wScore" in (tmp_path / "quest.sym").read_text()  # symbols from the wheel alone


def test_checkout_only_commands_say_so_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    gbxcule = str(installed / "gbxcule")
    for args in (["bench"], ["verify", "--all"]):
        done = _run([gbxcule, *args], cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "source checkout" in done.stderr, done.stderr
