"""Shared helpers for the CPU tests: run a program on PyBoy and on our CPU up to a label.

Both sides start at power-on and run our boot ROM. PyBoy runs whole frames with
a hook on the stop address; ours runs ``kernels/run_cpu.run_instructions`` (no
timing, no interrupts) up to the same address. Programs used here keep IME or
IE off and touch no timing-dependent IO, so the two must agree exactly:
registers, cycle count and RAM.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from gbxcule.asm import assemble, build_rom
from gbxcule.asm.bootrom import boot_rom_bytes
from gbxcule.backends.pyboy_backend import cpu_block, make_pyboy
from gbxcule.backends.warp_base import allocate_machine, cart_config, field_view

STOP_LABEL = "Done"
RAM_RANGES = ((0x8000, 0xA000), (0xC000, 0xE000), (0xFE00, 0xFF00), (0xFF80, 0x10000))
REGS = ("pc", "sp", "a", "f", "b", "c", "d", "e", "h", "l", "ime", "cycles")


def program_rom(body: str, **build_kwargs) -> tuple[bytes, int]:
    """ROM whose code starts at 0x0150 with ``body`` and ends at label ``Done`` (then spins)."""
    # The hook sits on a NOP: PyBoy never gets past a hook on a jump-to-self.
    source = f'SECTION "main", ROM0[$0150]\nMain:\n{body}\n{STOP_LABEL}:\n    nop\n.spin:\n    jr .spin\n'
    source += build_kwargs.pop("extra", "")
    stop = assemble(source).symbols[STOP_LABEL]
    return build_rom(source, **build_kwargs), stop


def pyboy_run_to(rom: bytes, stop: int, max_frames: int = 600, bank: int = 0) -> dict:
    """PyBoy's registers and RAM when PC first reaches ``stop``."""
    pyboy = make_pyboy(rom)
    got: dict = {}

    def capture(_ctx: object) -> None:
        if not got:
            got.update(cpu_block(pyboy))
            for lo, hi in RAM_RANGES:
                got[(lo, hi)] = np.array(pyboy.memory[lo:hi], dtype=np.uint8)

    try:
        pyboy.hook_register(bank, stop, capture, None)
        for _ in range(max_frames):
            pyboy.tick(1, False)
            if got:
                break
    finally:
        pyboy.stop(save=False)
    if not got:
        raise AssertionError(f"PyBoy never reached ${stop:04X} in {max_frames} frames")
    return got


def warp_machine(rom: bytes, num_envs: int = 1, mem_layout: str = "env_major"):
    from gbxcule.kernels.step.reset import power_on

    _, cart = cart_config(rom)
    m = allocate_machine(
        num_envs,
        rom=np.frombuffer(rom, np.uint8),
        boot=np.frombuffer(boot_rom_bytes(), np.uint8),
        cart=cart,
        device="cpu",
        mem_layout=mem_layout,
    )
    wp.launch(power_on, dim=num_envs, inputs=[m], device="cpu")
    return m


def warp_read(m, env: int, lo: int, hi: int) -> np.ndarray:
    """Bytes as the CPU reads them (no side effects for the RAM regions compared here)."""
    from gbxcule.backends.warp_vec import peek_memory

    return peek_memory(m, env, lo, hi)


def warp_run_to(rom: bytes, stop: int, max_instructions: int = 20_000_000) -> dict:
    from gbxcule.kernels.cpu.run_cpu import run_instructions

    m = warp_machine(rom)
    wp.launch(run_instructions, dim=1, inputs=[m, max_instructions, stop], device="cpu")
    got = {name: int(field_view(m, name).numpy()[0]) for name in REGS}
    got["locked"] = int(field_view(m, "locked").numpy()[0])
    for lo, hi in RAM_RANGES:
        got[(lo, hi)] = warp_read(m, 0, lo, hi)
    return got


def assert_same(ours: dict, theirs: dict, label: str = "") -> None:
    assert ours.get("locked", 0) == 0, f"{label}: env locked with {ours['locked']:#x}"
    diffs = [f"{k}: ours {ours[k]:#x} pyboy {theirs[k]:#x}" for k in REGS if ours[k] != theirs[k]]
    for rng in RAM_RANGES:
        bad = np.nonzero(ours[rng] != theirs[rng])[0]
        if len(bad):
            a = rng[0] + int(bad[0])
            diffs.append(
                f"{len(bad)} bytes differ in ${rng[0]:04X}-${rng[1] - 1:04X}, first ${a:04X}: "
                f"ours {ours[rng][bad[0]]:#04x} pyboy {theirs[rng][bad[0]]:#04x}"
            )
    assert not diffs, f"{label}: " + "; ".join(diffs)


def run_both(body: str, label: str = "", **build_kwargs) -> tuple[dict, dict]:
    rom, stop = program_rom(body, **build_kwargs)
    ours = warp_run_to(rom, stop)
    theirs = pyboy_run_to(rom, stop)
    assert_same(ours, theirs, label)
    return ours, theirs


def instruction_starts(rom: bytes, lo: int, hi: int) -> list[int]:
    """Addresses of the instructions in ``rom[lo:hi]`` by linear sweep (straight-line code)."""
    from gbxcule.core.isa import BASE, CB_PREFIX

    out = []
    pc = lo
    while pc < hi:
        out.append(pc)
        pc += 2 if rom[pc] == CB_PREFIX else BASE[rom[pc]].length
    return out


def pyboy_trace(rom: bytes, addrs: list[int], stop: int, max_frames: int = 600) -> list[dict]:
    """PyBoy's registers each time PC reaches one of ``addrs``, until it reaches ``stop``."""
    pyboy = make_pyboy(rom)
    trace: list[dict] = []
    done: list[bool] = []

    def capture(addr: int) -> None:
        if not done:
            trace.append(cpu_block(pyboy))
            if addr == stop:
                done.append(True)

    try:
        for addr in [*addrs, stop]:
            pyboy.hook_register(0, addr, capture, addr)
        for _ in range(max_frames):
            pyboy.tick(1, False)
            if done:
                break
    finally:
        pyboy.stop(save=False)
    if not done:
        raise AssertionError(f"PyBoy never reached ${stop:04X} in {max_frames} frames")
    return trace


def warp_trace(rom: bytes, addrs: list[int], stop: int, limit: int = 100_000) -> list[dict]:
    """Our registers at the same points, single-stepping the CPU."""
    from gbxcule.kernels.cpu.run_cpu import run_instructions

    m = warp_machine(rom)
    wp.launch(run_instructions, dim=1, inputs=[m, 1_000_000, 0x150], device="cpu")
    watch = {*addrs, stop}
    trace = []
    for _ in range(limit):
        state = {name: int(field_view(m, name).numpy()[0]) for name in (*REGS, "locked")}
        if state["pc"] in watch:
            trace.append(state)
            if state["pc"] == stop:
                return trace
        if state["locked"]:
            break
        wp.launch(run_instructions, dim=1, inputs=[m, 1, -1], device="cpu")
    raise AssertionError(f"our CPU never reached ${stop:04X} (last state {state})")


def assert_same_trace(ours: list[dict], theirs: list[dict], label: str) -> None:
    keys = (*REGS, "halted") if "halted" in ours[0] else REGS
    for k, (o, t) in enumerate(zip(ours, theirs)):
        diffs = [f"{key}: ours {o[key]:#x} pyboy {t[key]:#x}" for key in keys if o[key] != t[key]]
        if diffs:
            prev = f" after the instruction at ${ours[k - 1]['pc']:04X}" if k else ""
            raise AssertionError(f"{label}: step {k}{prev}: " + "; ".join(diffs))
    assert len(ours) == len(theirs), f"{label}: trace lengths {len(ours)} vs {len(theirs)}"


def wram_program(code: str, base: int = 0xD000) -> tuple[str, str]:
    """(body, extra) for ``program_rom`` that copies ``code`` to WRAM at ``base`` and runs it
    there, so it keeps running while the ROM banks under it change. ``code`` must be
    position-independent (``jr`` only) and is followed by a jump back to ROM."""
    body = "\n".join(
        [
            "    ld hl, WramStart",
            f"    ld de, ${base:04X}",
            "    ld bc, WramEnd - WramStart",
            ".copy:",
            "    ld a, [hl+]",
            "    ld [de], a",
            "    inc de",
            "    dec bc",
            "    ld a, b",
            "    or c",
            "    jr nz, .copy",
            f"    jp ${base:04X}",
            "WramBack:",
        ]
    )
    extra = f'\nSECTION "wram_code", ROM0[$1000]\nWramStart:\n{code}\n    jp WramBack\nWramEnd:\n'
    return body, extra
