"""Lockstep harness: the pass path over the ROM suite (PyBoy vs PyBoy), the failure path with
deliberately wrong backends (bundle contents, and repro.sh reproducing the divergence), the
micro-ROM spec runner, and the gbxcule CLI around it."""

from __future__ import annotations

import io
import json
import os
import subprocess

import numpy as np
import pytest

from bench.roms import spec as spec_runner
from bench.roms.build import all_roms
from bench.roms.spec import RomSpec
from gbxcule import cli, lockstep
from gbxcule.asm import build_rom
from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.core.cartridge import header_checksum
from gbxcule.lockstep import LockstepConfig, parse_ranges, run_lockstep

pytestmark = pytest.mark.api

# Counts frames into $C000 and keeps the last joypad mask (1 = pressed) at $C001.
COUNTER = """
Main:
    ld a, $10
    ldh [$00], a
.loop:
    ld a, $20
    ldh [$00], a
    ldh a, [$00]
    and $0F
    ld b, a
    ld a, $10
    ldh [$00], a
    ldh a, [$00]
    and $0F
    swap a
    or b
    cpl
    ld [$C001], a
    ld hl, $C000
    inc [hl]
    jr .loop
"""

# Sends "Passed\\n" over serial, then records every joypad mask it sees at $C010 + (mask & 7).
SELF_CHECK = """
Main:
    ld hl, Text
.next:
    ld a, [hl+]
    and a
    jr z, .poll
    ldh [$01], a
    ld a, $81
    ldh [$02], a
.wait:
    ldh a, [$02]
    bit 7, a
    jr nz, .wait
    jr .next
.poll:
    ld a, $20
    ldh [$00], a
    ldh a, [$00]
    cpl
    and $07
    ld l, a
    ld h, $C0
    ld a, l
    add a, $10
    ld l, a
    ld [hl], $AA
    jr .poll
Text:
    db "Passed", 10, 0
"""


class IgnoresState(PyBoySingleBackend):
    """Drops every load_state: a side that would start at power-on, not at the state."""

    def load_state(self, source, envs=None):
        return None


class FlipWramAfterStep(PyBoySingleBackend):
    """Corrupts WRAM byte $C123 of every env right after its third step."""

    FLIP_STEP, ADDR = 3, 0xC123

    def reset(self, seed=None):
        super().reset(seed)
        self.steps_done = 0

    def step(self, actions):
        super().step(actions)
        self.steps_done += 1
        if self.steps_done == self.FLIP_STEP:
            for env in range(self.num_envs):
                value = int(self.read_memory(env, self.ADDR, self.ADDR + 1)[0])
                self.write_memory(env, self.ADDR, value ^ 0xFF)


class FlipRegisterAfterStep(FlipWramAfterStep):
    """Reports register B with bit 0 flipped from step 2 on."""

    def step(self, actions):
        PyBoySingleBackend.step(self, actions)
        self.steps_done += 1

    def get_cpu_state(self, env):
        state = super().get_cpu_state(env)
        if self.steps_done >= 2:
            state["b"] ^= 1
        return state


class DoubleCycles(PyBoySingleBackend):
    def get_cpu_state(self, env):
        state = super().get_cpu_state(env)
        state["cycles"] *= 2
        return state


class ExtraSerialByte(PyBoySingleBackend):
    def serial_output(self, env):
        return super().serial_output(env) + b"!"


class OnePixelOff(PyBoySingleBackend):
    def frame_shades(self, env):
        shades = super().frame_shades(env).copy()
        shades[10, 20] ^= 1
        return shades


HERE = "tests.test_harness"


@pytest.fixture
def counter_rom(tmp_path):
    path = tmp_path / "counter.gb"
    path.write_bytes(build_rom(COUNTER, title="COUNTER"))
    return path


def _cfg(dut: str, **kw) -> LockstepConfig:
    base = dict(ref="pyboy", dut=dut, steps=6, frames_per_step=2, release_after_frames=1)
    return LockstepConfig(**{**base, **kw})


def _actions(cfg: LockstepConfig) -> np.ndarray:
    return lockstep.make_actions("random", cfg.steps, cfg.num_envs, cfg.codec, seed=1)


def _suite() -> list[RomSpec]:
    return all_roms() or [_self_check_spec()]


def _one_per_tag() -> list[RomSpec]:
    """The first suite ROM of each tag: every kind of ROM once (every ROM is compared with
    PyBoy by our backend in test_emu_timing_lockstep.py, which a PyBoy that disagreed with
    itself would fail too)."""
    picked: dict[str, RomSpec] = {}
    for spec in _suite():
        for tag in spec.tags or ("untagged",):
            picked.setdefault(tag, spec)
    return list({s.name: s for s in picked.values()}.values())


def _self_check_spec() -> RomSpec:
    def check(backend, env):
        assert backend.serial_output(env) == b"Passed\n", backend.serial_output(env)
        seen = backend.read_memory(env, 0xC010, 0xC018).tolist()
        # inputs right, left, up, and nothing: masks 1, 2, 4 and 0 each seen
        assert seen == [0xAA, 0xAA, 0xAA, 0, 0xAA, 0, 0, 0], seen

    return RomSpec(
        name="harness_self_check",
        description="serial verdict plus joypad inputs cycling through the spec",
        build=lambda: build_rom(SELF_CHECK, title="SELFCHECK"),
        check=check,
        steps=8,
        frames_per_step=2,
        release_after_frames=2,
        inputs=(0x01, 0x02, 0x04, 0x00),
    )


@pytest.mark.parametrize("spec", _one_per_tag(), ids=lambda s: s.name)
def test_pyboy_vs_pyboy_agrees_on_every_kind_of_suite_rom(spec: RomSpec, tmp_path) -> None:
    cfg = spec_runner.spec_config(spec, "pyboy", "pyboy")
    result = run_lockstep(
        spec_runner.spec_rom_file(spec), spec_runner.spec_actions(spec), cfg, bundle_root=tmp_path
    )
    assert result.ok, result.diffs
    assert result.checks == spec.steps + 1
    assert not list(tmp_path.iterdir())


def test_pyboy_vs_pyboy_mp_agrees_with_random_actions(counter_rom, tmp_path) -> None:
    cfg = _cfg("pyboy-mp", num_envs=2, steps=5)
    result = run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=tmp_path)
    assert result.ok, result.diffs


def test_spec_runner_runs_inputs_and_self_check() -> None:
    spec = _self_check_spec()
    spec_runner.check_spec(spec, "pyboy", num_envs=2)
    failing = RomSpec(**{**spec.__dict__, "inputs": (0x01,)})
    with pytest.raises(AssertionError, match="harness_self_check on pyboy env 0"):
        spec_runner.check_spec(failing, "pyboy")
    backend = spec_runner.make_spec_backend(spec, "pyboy")
    try:
        wrong_pace = RomSpec(**{**spec.__dict__, "frames_per_step": 3})
        with pytest.raises(ValueError, match="needs \\(3, 2\\)"):
            spec_runner.run_spec(wrong_pace, backend)
    finally:
        backend.close()


def test_divergence_writes_bundle_and_repro_reproduces_it(counter_rom, tmp_path, capsys) -> None:
    bundles = tmp_path / "bundles"
    code = cli.main(
        [
            "verify",
            f"--rom={counter_rom}",
            f"--dut={HERE}:FlipWramAfterStep",
            "--steps=8",
            "--frames-per-step=3",
            "--release-after-frames=2",
            "--seed=5",
            f"--bundle-dir={bundles}",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "DIVERGED counter: step 3, env 0" in out and "memory $C123 (wram)" in out
    (bundle,) = bundles.iterdir()
    assert not bundle.name.startswith(".tmp")
    files = {p.name for p in bundle.iterdir()}
    assert files >= {
        "counter.gb",
        "actions.npy",
        "ref_state.json",
        "dut_state.json",
        "ref_memory.bin",
        "dut_memory.bin",
        "ref_frame.npy",
        "dut_frame.npy",
        "diff.txt",
        "metadata.json",
        "repro.sh",
    }
    assert (bundle / "counter.gb").read_bytes() == counter_rom.read_bytes()
    actions = np.load(bundle / "actions.npy")
    assert actions.shape == (3, 1)
    assert np.array_equal(
        actions, lockstep.make_actions("random", 8, 1, "pokemonred_puffer_v1", 5)[:3]
    )
    meta = json.loads((bundle / "metadata.json").read_text())
    assert meta["step"] == 3 and meta["seed"] == 5
    assert meta["config"]["frames_per_step"] == 3 and meta["dut_backend"].endswith(
        "FlipWramAfterStep"
    )
    assert meta["versions"]["pyboy"] == "2.8.1"
    ref_state = json.loads((bundle / "ref_state.json").read_text())
    dut_state = json.loads((bundle / "dut_state.json").read_text())
    assert ref_state["cpu"] == dut_state["cpu"] and ref_state["step"] == 3
    base = int(ref_state["memory_file_base"], 16)
    ref_mem = (bundle / "ref_memory.bin").read_bytes()
    dut_mem = (bundle / "dut_memory.bin").read_bytes()
    differing = [base + i for i, (x, y) in enumerate(zip(ref_mem, dut_mem)) if x != y]
    assert differing == [0xC123, 0xE123]  # the dump spans 8000-FFFF, echo RAM included
    assert ref_mem[0xC123 - base] ^ dut_mem[0xC123 - base] == 0xFF
    assert "memory $C123 (wram): ref $00 dut $FF" in (bundle / "diff.txt").read_text()
    assert os.access(bundle / "repro.sh", os.X_OK)

    env = {k: v for k, v in os.environ.items() if k != "GBXCULE_REPO"}
    still = subprocess.run(
        ["bash", str(bundle / "repro.sh")], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert still.returncode == 1, still.stdout + still.stderr
    assert "DIVERGED" in still.stdout and "memory $C123 (wram): ref $00 dut $FF" in still.stdout
    assert list(bundles.iterdir()) == [bundle], "repro.sh must not write another bundle"
    fixed = subprocess.run(
        ["bash", str(bundle / "repro.sh"), "--dut=pyboy"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "PASS counter: 3 steps" in fixed.stdout


def test_verify_from_a_state_starts_both_sides_there_and_the_bundle_keeps_it(
    counter_rom, tmp_path, capsys
) -> None:
    """``verify --state``: both backends load the PyBoy state after reset (the counter
    program's RAM at 90 frames, not power-on's), and a bundle carries its own copy."""
    pyboy = PyBoySingleBackend(counter_rom, frames_per_step=90, release_after_frames=1)
    pyboy.step(np.zeros(1, dtype=np.int64))
    state = tmp_path / "at90.state"
    buf = io.BytesIO()
    pyboy.pyboy(0).save_state(buf)
    state.write_bytes(buf.getvalue())
    pyboy.close()
    base = ["verify", f"--rom={counter_rom}", "--steps=4", "--frames-per-step=3"]
    assert cli.main([*base, f"--state={state}", "--no-bundle"]) == 0
    assert "PASS counter: 4 steps" in capsys.readouterr().out
    bundles = tmp_path / "bundles"
    flip = [f"--dut={HERE}:FlipWramAfterStep", f"--bundle-dir={bundles}"]
    assert cli.main([*base, f"--state={state}", *flip]) == 1
    (bundle,) = bundles.iterdir()
    assert (bundle / "start.state").read_bytes() == state.read_bytes()
    assert '--state "$HERE/start.state"' in (bundle / "repro.sh").read_text()
    env = {k: v for k, v in os.environ.items() if k != "GBXCULE_REPO"}
    again = subprocess.run(["bash", str(bundle / "repro.sh")], capture_output=True, text=True,
                           cwd=tmp_path, env=env)  # fmt: skip
    assert again.returncode == 1 and "DIVERGED counter: step 3" in again.stdout
    ignores = [f"--dut={HERE}:IgnoresState", "--no-bundle"]  # starts at power-on instead
    assert cli.main([*base, f"--state={state}", *ignores]) == 1
    assert "DIVERGED counter: step 0" in capsys.readouterr().out
    assert cli.main([*base, "--state=missing.state"]) == 2
    assert cli.main(["verify", "--suite", "flow", f"--state={state}"]) == 2
    assert "--state goes with --rom" in capsys.readouterr().err


def test_register_divergence_found_at_the_next_check(counter_rom) -> None:
    cfg = _cfg(f"{HERE}:FlipRegisterAfterStep", steps=10, every=4)
    result = run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=None)
    assert not result.ok and result.divergence_step == 4 and result.bundle is None
    (line,) = result.diffs
    ref_b, dut_b = (int(part.split("(")[1].rstrip(")")) for part in line.split(" dut "))
    assert line.startswith("register b: ref $") and ref_b ^ dut_b == 1
    every_step = run_lockstep(
        counter_rom, _actions(cfg), LockstepConfig(**{**cfg.__dict__, "every": 1}), bundle_root=None
    )
    assert every_step.divergence_step == 2


def test_cycles_compared_only_when_asked(counter_rom) -> None:
    cfg = _cfg(f"{HERE}:DoubleCycles")
    assert run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=None).ok
    cfg = _cfg(f"{HERE}:DoubleCycles", compare_cycles=True)
    result = run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=None)
    assert result.divergence_step == 0 and result.diffs[0].startswith("register cycles: ref $148")


def test_ignore_mask_and_regions(counter_rom) -> None:
    dut = f"{HERE}:FlipWramAfterStep"
    assert run_lockstep(
        counter_rom,
        _actions(_cfg(dut)),
        _cfg(dut, ignore=parse_ranges("C120-C12F")),
        bundle_root=None,
    ).ok
    assert run_lockstep(
        counter_rom,
        _actions(_cfg(dut)),
        _cfg(dut, regions=parse_ranges("vram,io")),
        bundle_root=None,
    ).ok
    result = run_lockstep(
        counter_rom, _actions(_cfg(dut)), _cfg(dut, regions=parse_ranges("C123")), bundle_root=None
    )
    assert result.divergence_step == 3


def test_serial_and_frame_divergences_are_reported(counter_rom) -> None:
    cfg = _cfg(f"{HERE}:ExtraSerialByte")
    result = run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=None)
    assert result.divergence_step == 0 and "serial output differs at byte 0" in result.diffs[0]
    cfg = _cfg(f"{HERE}:OnePixelOff")
    result = run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=None)
    assert result.divergence_step == 1
    assert result.diffs[0].startswith("frame: 1 pixels differ; first at (y=10, x=20)")
    cfg = _cfg(f"{HERE}:OnePixelOff", compare_frames=False)
    assert run_lockstep(counter_rom, _actions(cfg), cfg, bundle_root=None).ok


def test_parse_ranges() -> None:
    assert parse_ranges("wram, FF04,FF40-FF4B") == (
        (0xC000, 0xE000),
        (0xFF04, 0xFF05),
        (0xFF40, 0xFF4C),
    )
    assert lockstep.format_ranges(parse_ranges("io,C000")) == "FF00-FF7F,C000-C000"
    with pytest.raises(ValueError, match="bad address range 'vramm'"):
        parse_ranges("vramm")
    with pytest.raises(ValueError, match="outside 0000-FFFF or reversed"):
        parse_ranges("FF40-FF00")


def test_make_actions_sources(tmp_path) -> None:
    a = lockstep.make_actions("random", 4, 3, "pokemonred_puffer_v1", seed=2)
    assert a.shape == (4, 3) and a.max() < 7
    assert np.array_equal(a, lockstep.make_actions("random", 4, 3, "pokemonred_puffer_v1", seed=2))
    assert not lockstep.make_actions("none", 2, 1, "buttons").any()
    with pytest.raises(ValueError, match="no no-op action"):
        lockstep.make_actions("none", 2, 1, "pokemonred_puffer_v1")
    np.save(tmp_path / "a.npy", np.array([[1], [2], [300]]))
    with pytest.raises(ValueError, match="has 3 steps, 5 requested"):
        lockstep.make_actions(str(tmp_path / "a.npy"), 5, 1, "buttons")
    with pytest.raises(ValueError, match="out of range"):
        lockstep.make_actions(str(tmp_path / "a.npy"), 3, 1, "buttons")
    with pytest.raises(ValueError, match="need \\[steps, 2\\]"):
        lockstep.make_actions(str(tmp_path / "a.npy"), 2, 2, "buttons")
    with pytest.raises(FileNotFoundError, match="actions file not found"):
        lockstep.make_actions(str(tmp_path / "nope.npy"), 2, 1, "buttons")


def test_cli_usage_errors_exit_2(counter_rom, tmp_path, capsys) -> None:
    assert cli.main(["verify", f"--rom={tmp_path / 'missing.gb'}", "--dut=pyboy"]) == 2
    assert "ROM file not found" in capsys.readouterr().err
    assert cli.main(["verify", f"--rom={counter_rom}", "--dut=gameboy-9000", "--no-bundle"]) == 2
    assert "unknown backend 'gameboy-9000'" in capsys.readouterr().err
    assert cli.main(["verify", "--suite", "no_such_rom", "--dut=pyboy"]) == 2
    assert "no ROM named 'no_such_rom'" in capsys.readouterr().err
    assert cli.main(["verify", f"--rom={counter_rom}", "--regions=nowhere", "--dut=pyboy"]) == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["verify", "--dut=pyboy"])  # no --rom/--suite/--all
    assert exc.value.code == 2


def test_cli_info_and_commands(counter_rom, tmp_path, capsys) -> None:
    assert cli.main(["info", str(counter_rom)]) == 0
    out = capsys.readouterr().out
    assert "COUNTER" in out and "ROM_ONLY" in out and "supported: yes" in out
    broken = bytearray(counter_rom.read_bytes())
    broken[0x14D] ^= 0xFF
    (tmp_path / "broken.gb").write_bytes(bytes(broken))
    assert cli.main(["info", str(tmp_path / "broken.gb")]) == 1
    assert "header checksum mismatch" in capsys.readouterr().out
    assert set(cli.COMMANDS) >= {"verify", "info", "demo", "bench", "record"}


def test_bad_logo_is_refused_with_its_override_which_runs_it_like_pyboy(
    tmp_path, counter_rom
) -> None:
    """ROM hacks often carry a wrong Nintendo logo; PyBoy runs them. Every backend refuses
    one and names the override; with it, ours matches PyBoy. A wrong header checksum
    PyBoy refuses too, and so do we, override or not."""
    from gbxcule.backends.registry import make_backend
    from gbxcule.core.cartridge import CartridgeError

    rom = bytearray(counter_rom.read_bytes())
    rom[0x104] ^= 0xFF
    rom[0x14D] = header_checksum(rom)
    bad = tmp_path / "hack.gb"
    bad.write_bytes(bytes(rom))
    for name in ("pyboy", "pyboy-mp", "warp-cpu"):
        with pytest.raises(CartridgeError, match="allow_bad_logo=True"):
            make_backend(name, str(bad))
    args = ["verify", f"--rom={bad}", "--steps=3", "--no-bundle"]
    assert cli.main(args) == 2
    assert cli.main([*args, "--allow-bad-logo"]) == 0

    rom[0x14D] ^= 0xFF
    bad.write_bytes(bytes(rom))
    for name in ("pyboy", "warp-cpu"):
        with pytest.raises(CartridgeError, match="header checksum mismatch.*PyBoy refuses it too"):
            make_backend(name, str(bad), allow_bad_logo=True)
