"""Make the PyBoy ``.state`` fixtures in tests/fixtures/states/, one per PyPI release layout.

For each release in :data:`RELEASES` this builds a throwaway venv in a temp dir
(``python -m venv``, ``pip install pyboy==X`` from the configured registry), runs
our probe ROM (:func:`probe_rom`, built by ``gbxcule.asm.build_rom``) after our
boot ROM for :data:`FRAMES` frames, saves the state, and records what the
release itself reports through its public API (memory, and registers where the
release has ``register_file``) in ``index.json``: at the save, after running on for
:data:`MORE_FRAMES` frames, and after loading the saved file into a fresh PyBoy of the
same release and running those frames (``after_load``: what a loader must reproduce). Releases without
``register_file`` are run a second time with the same sources in pure-Python
mode (compiled modules hidden), which exposes the CPU object; the tool requires
that run's state file to be byte-identical to the compiled one before it trusts
those registers.

Re-runnable and idempotent: fixtures are gzip files with a zero timestamp, the
index is written with sorted keys, and a release whose fixture and index entry
already match the current probe ROM and boot ROM is skipped (``--force`` redoes it).

Usage: ``.venv/bin/python tools/make_state_fixtures.py [--only 2.8.1 ...] [--force]``.
The same file is the worker that runs inside each venv (``--worker``); that part
uses only the standard library and the installed PyBoy, and stays Python 3.9-clean.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FRAMES = 60  # frames run before the state is saved
MORE_FRAMES = 30  # frames the release runs on after saving (recorded for reference)
FIXTURE_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "states"
ROM_NAME = "probe.gb"

# (pip version, state version it writes, Python it needs, extra pins). One release per layout:
# v15 appears twice because 2.7.0 added the NR50 byte to the sound block without a version bump.
RELEASES: tuple[tuple[str, int, str, tuple[str, ...]], ...] = (
    ("1.4.7", 7, "3.9", ("numpy<2", "pysdl2-dll")),
    ("1.5.5", 8, "3.9", ("numpy<2",)),
    ("1.6.14", 9, "3.11", ("numpy<2",)),
    ("2.2.1", 10, "3.11", ("numpy<2",)),
    ("2.3.0", 11, "3.11", ("numpy<2",)),
    ("2.4.1", 12, "3.11", ("numpy<2",)),
    ("2.5.4", 14, "3.11", ()),
    ("2.6.1", 15, "3.11", ()),
    ("2.7.0", 15, "3.11", ()),
    ("2.8.1", 29, "3.11", ()),
)

# Probe ROM: MBC1 with 4 ROM banks and 4 RAM banks. It fills VRAM, OAM, WRAM, HRAM and
# every cart RAM bank with fixed patterns (checked by the tests without PyBoy), sets the
# palettes, scroll, window, LYC, timer, serial and P1, leaves RAM bank 2 and ROM bank 3
# selected with RAM enabled, then counts: frames (VBlank), timer and LYC interrupts,
# and a busy-loop counter that also samples DIV.
WRAM_FRAMES = 0xC000  # 16-bit VBlank count
WRAM_LYC_HITS = 0xC004
WRAM_TIMER = 0xC008  # 16-bit timer interrupt count
WRAM_BUSY = 0xC010  # 16-bit busy-loop count
WRAM_PATTERN = 0xC200  # 256 bytes: i ^ $5A
HRAM_PATTERN = 0xFF80  # 16 bytes: $80 + i
CART_RAM_PATTERN_LEN = 256  # bank b, byte i: (b * $40 + i) & $FF
RAM_BANK_LEFT = 2
ROM_BANK_LEFT = 3
PROBE_SOURCE = """
SECTION "vblank", ROM0[$0040]
    jp VBlank
SECTION "stat", ROM0[$0048]
    jp Stat
SECTION "timer", ROM0[$0050]
    jp Timer

SECTION "main", ROM0[$0150]
Start:
    di
    ld sp, $DFF0
.wait_vblank:
    ldh a, [$FF44]
    cp 144
    jr c, .wait_vblank
    xor a
    ldh [$FF40], a
    ld hl, $8000
    ld bc, $0800
.tiles:
    ld a, l
    xor $A5
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .tiles
    ld hl, $9800
    ld bc, $0400
.map:
    ld a, l
    and $7F
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .map
    ld hl, $FE00
    ld c, 160
    ld a, 3
.oam:
    ld [hl+], a
    add a, 7
    dec c
    jr nz, .oam
    ld hl, $C000
    ld bc, $2000
.clear:
    xor a
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .clear
    ld hl, $C200
    ld c, 0
.wram:
    ld a, c
    xor $5A
    ld [hl+], a
    inc c
    jr nz, .wram
    ld hl, $FF80
    ld a, $80
.hram:
    ld [hl+], a
    inc a
    cp $90
    jr nz, .hram
    ld a, $0A
    ld [$0000], a
    ld a, 1
    ld [$6000], a
    ld d, 0
.bank:
    ld a, d
    ld [$4000], a
    ld hl, $A000
    ld a, d
    rrca
    rrca
    ld c, 0
.bank_fill:
    ld [hl+], a
    inc a
    dec c
    jr nz, .bank_fill
    inc d
    ld a, d
    cp 4
    jr nz, .bank
    ld a, 2
    ld [$4000], a
    ld a, 3
    ld [$2000], a
    ld a, $E4
    ldh [$FF47], a
    ld a, $D2
    ldh [$FF48], a
    ld a, $1B
    ldh [$FF49], a
    ld a, 5
    ldh [$FF42], a
    ld a, 100
    ldh [$FF4A], a
    ld a, 87
    ldh [$FF4B], a
    ld a, 40
    ldh [$FF45], a
    ld a, $40
    ldh [$FF41], a
    ld a, $F0
    ldh [$FF06], a
    ld a, $05
    ldh [$FF07], a
    ld a, $20
    ldh [$FF00], a
    ld a, "G"
    ldh [$FF01], a
    ld a, $81
    ldh [$FF02], a
    ld a, $07
    ldh [$FFFF], a
    xor a
    ldh [$FF0F], a
    ld a, $F3
    ldh [$FF40], a
    ei
Busy:
    ldh a, [$FF04]
    ld b, a
    ld hl, $C010
    inc [hl]
    jr nz, Busy
    inc hl
    inc [hl]
    ld e, b
    jr Busy

VBlank:
    push af
    push hl
    ld hl, $C000
    inc [hl]
    jr nz, .low_only
    inc hl
    inc [hl]
.low_only:
    ld a, [$C000]
    ld [$9A00], a
    ld [$A100], a
    ldh [$FF43], a
    pop hl
    pop af
    reti

Stat:
    push af
    ld a, [$C004]
    inc a
    ld [$C004], a
    ldh a, [$FF45]
    add a, 9
    cp 144
    jr c, .keep
    sub 144
.keep:
    ldh [$FF45], a
    pop af
    reti

Timer:
    push af
    push hl
    ld hl, $C008
    inc [hl]
    jr nz, .done
    inc hl
    inc [hl]
.done:
    pop hl
    pop af
    reti
"""


def probe_rom() -> bytes:
    from gbxcule.asm import build_rom

    return build_rom(PROBE_SOURCE, title="SVPROBE", cart_type="MBC1+RAM", rom_banks=4, ram_banks=4)


def fixture_name(pyboy_version: str, state_version: int) -> str:
    return f"pyboy-{pyboy_version}-v{state_version}.state.gz"


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


# ---------------------------------------------------------------- worker (inside the venv)


def _hidden_compiled_copy(tmp: str) -> str:
    """A copy of the installed pyboy package without its compiled modules: imports the .py files."""
    import importlib.util

    spec = importlib.util.find_spec("pyboy")
    if spec is None or spec.origin is None:
        raise SystemExit("pyboy is not installed in this venv")
    src = os.path.dirname(spec.origin)
    dst = os.path.join(tmp, "purepy")
    shutil.copytree(src, os.path.join(dst, "pyboy"), ignore=shutil.ignore_patterns("*.so", "*.c"))
    return dst


def _make_pyboy(version: str, rom: str, boot: str):
    from pyboy import PyBoy

    if version.startswith("1."):
        kwargs = {"window_type": "headless", "bootrom_file": boot, "sound": False}
        if not version.startswith("1.4."):
            kwargs["cgb"] = False
        return PyBoy(rom, **kwargs)
    return PyBoy(rom, window="null", bootrom=boot, sound_emulated=False, cgb=False)


def observation(span) -> dict:
    """What a run is recorded as; ``span(lo, hi)`` gives the bytes the CPU reads at
    ``lo..hi-1``. (The tests read our backend and PyBoy 2.8.1 through this too.)"""
    wram = span(0xC000, 0xE000)
    return {
        "wram_sha256": hashlib.sha256(wram).hexdigest(),
        "wram_counters": wram[:0x20].hex(),
        "vram_sha256": hashlib.sha256(span(0x8000, 0xA000)).hexdigest(),
        "oam": span(0xFE00, 0xFEA0).hex(),
        "hram": span(0xFF80, 0xFFFF).hex(),
        "cart_ram_selected_sha256": hashlib.sha256(span(0xA000, 0xC000)).hexdigest(),
        "ie": span(0xFFFF, 0x10000)[0],
    }


def _observe(pb, version: str) -> dict:
    if version.startswith("1."):

        def read(a):
            return pb.get_memory_value(a)
    else:

        def read(a):
            return pb.memory[a]

    return observation(lambda lo, hi: bytes(read(a) for a in range(lo, hi)))


def _registers_from_api(pb) -> dict:
    rf = pb.register_file
    return {
        "a": rf.A,
        "f": rf.F,
        "b": rf.B,
        "c": rf.C,
        "d": rf.D,
        "e": rf.E,
        "hl": rf.HL,
        "sp": rf.SP,
        "pc": rf.PC,
    }


def _registers_from_cpu(pb) -> dict:
    cpu = pb.mb.cpu
    return {
        "a": cpu.A,
        "f": cpu.F,
        "b": cpu.B,
        "c": cpu.C,
        "d": cpu.D,
        "e": cpu.E,
        "hl": cpu.HL,
        "sp": cpu.SP,
        "pc": cpu.PC,
    }


def worker(args: argparse.Namespace) -> None:
    tmp = tempfile.mkdtemp()
    if args.pure:
        sys.path.insert(0, _hidden_compiled_copy(tmp))
    import pyboy

    pb = _make_pyboy(args.version, args.rom, args.boot)
    for _ in range(args.frames):
        pb.tick()
    with open(args.state, "wb") as f:
        pb.save_state(f)
    report = {"pyboy_file": pyboy.__file__, "at_save": _observe(pb, args.version)}
    if args.pure:
        report["registers"] = _registers_from_cpu(pb)
    elif hasattr(pb, "register_file"):
        report["registers"] = _registers_from_api(pb)
    for _ in range(args.more):
        pb.tick()
    report["after_more"] = _observe(pb, args.version)
    pb.stop(save=False)
    # The release loading its own file into a fresh machine and running on: what a loader
    # of this file must reproduce (the run above never went through the file).
    pb = _make_pyboy(args.version, args.rom, args.boot)
    with open(args.state, "rb") as f:
        pb.load_state(f)
    for _ in range(args.more):
        pb.tick()
    report["after_load"] = _observe(pb, args.version)
    pb.stop(save=False)
    with open(args.report, "w") as f:
        json.dump(report, f)
    shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- driver


def _python_for(minor: str) -> str:
    """An interpreter for ``minor`` (e.g. "3.9"): on PATH, or any pyenv install of it."""
    if sys.version_info[:2] == tuple(int(x) for x in minor.split(".")):
        return sys.executable
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which(f"python{minor}")]
    candidates += sorted(str(p) for p in pyenv_root.glob(f"versions/{minor}.*/bin/python{minor}"))
    for exe in filter(None, candidates):
        probe = subprocess.run([exe, "--version"], capture_output=True)
        if probe.returncode == 0:
            return exe
    raise SystemExit(f"python{minor} not found; it is needed for releases without cp311 wheels")


def _run(cmd: list[str], **kw) -> None:
    subprocess.run(cmd, check=True, **kw)


def _run_worker(venv_py: str, version: str, rom: Path, boot: Path, tmp: Path, pure: bool):
    tag = "pure" if pure else "compiled"
    state, report = tmp / f"{tag}.state", tmp / f"{tag}.json"
    cmd = [venv_py, __file__, "--worker", "--version", version, "--rom", str(rom)]
    cmd += ["--boot", str(boot), "--frames", str(FRAMES), "--more", str(MORE_FRAMES)]
    cmd += ["--state", str(state), "--report", str(report)]
    if pure:
        cmd.append("--pure")
    # Run outside the repo so the venv imports its own pyboy, never ours.
    _run(cmd, cwd=tmp)
    return state.read_bytes(), json.loads(report.read_text())


def make_fixture(
    version: str, state_version: int, python: str, pins: tuple[str, ...], rom: bytes, boot: bytes
) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"pyboy-{version}-") as tmp_name:
        tmp = Path(tmp_name)
        rom_path, boot_path = tmp / ROM_NAME, tmp / "boot.bin"
        rom_path.write_bytes(rom)
        boot_path.write_bytes(boot)
        _run([_python_for(python), "-m", "venv", str(tmp / "venv")])
        venv_py = str(tmp / "venv" / "bin" / "python")
        pip = [venv_py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        _run(pip + [f"pyboy=={version}", *pins])
        state, report = _run_worker(venv_py, version, rom_path, boot_path, tmp, pure=False)
        if state[0] != state_version:
            raise SystemExit(f"pyboy {version} wrote state version {state[0]}, not {state_version}")
        registers_from = "register_file"
        if "registers" not in report:
            pure_state, pure_report = _run_worker(
                venv_py, version, rom_path, boot_path, tmp, pure=True
            )
            if pure_state != state:
                raise SystemExit(f"pyboy {version}: pure-Python run wrote a different state")
            report["registers"] = pure_report["registers"]
            registers_from = "pure-python run of the same release (byte-identical state)"
    name = fixture_name(version, state_version)
    (FIXTURE_DIR / name).write_bytes(gzip_bytes(state))
    return {
        "file": name,
        "pyboy_version": version,
        "state_version": state_version,
        "python": python,
        "pins": list(pins),
        "state_bytes": len(state),
        "state_sha256": hashlib.sha256(state).hexdigest(),
        "frames": FRAMES,
        "registers": report["registers"],
        "registers_from": registers_from,
        "at_save": report["at_save"],
        "after_more_frames": MORE_FRAMES,
        "after_more": report["after_more"],
        "after_load": report["after_load"],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", nargs="*", help="pip versions to (re)make")
    ap.add_argument("--force", action="store_true", help="remake even when up to date")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("--version", "--rom", "--boot", "--state", "--report"):
        ap.add_argument(name, help=argparse.SUPPRESS)
    ap.add_argument("--frames", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--more", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--pure", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return

    from gbxcule.asm.bootrom import boot_rom_bytes

    rom, boot = probe_rom(), boot_rom_bytes()
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    (FIXTURE_DIR / (ROM_NAME + ".gz")).write_bytes(gzip_bytes(rom))
    index_path = FIXTURE_DIR / "index.json"
    index: dict[str, Any] = json.loads(index_path.read_text()) if index_path.exists() else {}
    common = {
        "rom": ROM_NAME + ".gz",
        "rom_sha256": hashlib.sha256(rom).hexdigest(),
        "boot_rom_sha256": hashlib.sha256(boot).hexdigest(),
    }
    if {k: index.get(k) for k in common} != common:
        index = {"fixtures": {}}  # another ROM or boot ROM: every fixture is stale
    index.update(common)
    fixtures = index.setdefault("fixtures", {})
    for version, state_version, python, pins in RELEASES:
        if args.only and version not in args.only:
            continue
        entry = fixtures.get(version)
        path = FIXTURE_DIR / fixture_name(version, state_version)
        if entry and "after_load" in entry and path.exists() and not args.force:
            stored = gzip.decompress(path.read_bytes())
            if hashlib.sha256(stored).hexdigest() == entry["state_sha256"]:
                print(f"pyboy {version}: up to date")
                continue
        print(f"pyboy {version}: making v{state_version} fixture", flush=True)
        fixtures[version] = make_fixture(version, state_version, python, pins, rom, boot)
        index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
