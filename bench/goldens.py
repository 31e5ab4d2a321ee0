"""Golden state hashes: the one definition of a state digest, rollouts, and the goldens file.

A **state digest** is SHA-256 over one env's observable state, in this order:

1. ``HASH_VERSION`` (so a change of definition can never match an old golden);
2. the registers ``CPU_STATE_KEYS`` (``cycles`` included), each 8 bytes little-endian;
3. the memory regions :data:`HASH_REGIONS` read through ``read_memory`` (what the CPU
   reads: current ROM/RAM banks, IO read masks): VRAM, cart RAM at the current bank,
   WRAM, OAM, the IO page ANDed with :data:`IO_HASH_MASK`, HRAM, IE;
4. the serial output since reset (length, then bytes);
5. the frame shades ``[144, 160]`` of the last frame, from step 1 on (right after reset
   the screen buffer is not part of the backend contract).

:data:`IO_HASH_MASK` keeps every bit of every IO register: PyBoy 2.8.1 and our emulator
agree on the whole page as the CPU reads it (unused bits, the sound unit's registers and
wave RAM with PyBoy's sound on, and the unmapped holes included), which ``make test`` re-proves on every golden.
A register that had to be left out would be zeroed in the mask, with the reason here.

Observation is part of the protocol: a rollout digests the observed envs right after
``reset`` and after every step, and those reads have PyBoy's side effects (a STAT read
consumes the one-shot mode override, IO reads catch the timer/LCD/serial up), which
our ``read_memory`` reproduces. So a digest sequence is comparable only with one taken
the same way: every step, same regions, same order.

A **rollout** of ``steps`` steps gives ``steps + 1`` state digests (step 0 = after
reset) and one rolling digest ``r_k = sha256(r_{k-1} || d_k)`` over them, with
``r_-1 = sha256(HASH_VERSION)``. The rolling digest is the golden; the per-step
digests (first 16 hex digits kept in the file) locate the first divergent step.

Golden cases: every suite ROM with its own inputs, steps and frame pacing ("buttons"
codec), plus ``demo_game_random``: the demo game, 24 frames a step, release after 8,
the ``pokemonred_puffer_v1`` codec and seeded random actions. ``tools/make_goldens.py``
writes PyBoy's digests to ``tests/goldens/goldens.json``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.roms.spec import spec_actions, spec_rom_file
from gbxcule.backends.protocol import CPU_STATE_KEYS, Backend
from gbxcule.core.actions import get_codec
from gbxcule.lockstep import REGIONS

HASH_VERSION = "gbxcule-state-v1"
GOLDENS_FORMAT = "gbxcule-goldens-v1"
REPO_ROOT = Path(__file__).resolve().parents[1]
GOLDENS_PATH = REPO_ROOT / "tests" / "goldens" / "goldens.json"
HASH_REGIONS: tuple[tuple[str, int, int], ...] = tuple(
    (name, *REGIONS[name]) for name in ("vram", "cartram", "wram", "oam", "io", "hram", "ie")
)
IO_HASH_MASK = np.full(0x80, 0xFF, dtype=np.uint8)  # FF00-FF7F; see the module doc
STEP_DIGEST_HEX = 16  # hex digits of each per-step digest kept in the goldens file

DEMO_CASE = "demo_game_random"
DEMO_STEPS = 50


class GoldenError(ValueError):
    """A goldens file or case that cannot be used (missing, malformed, stale ROM)."""


# ---------------------------------------------------------------- the state digest


@dataclass
class StateView:
    """What a state digest covers, as read from one env of a backend."""

    cpu: dict[str, int]
    memory: dict[str, np.ndarray]  # HASH_REGIONS name -> uint8 bytes
    serial: bytes
    frame: np.ndarray | None  # uint8 [144, 160], None at step 0


def capture_state(backend: Backend, env: int, *, with_frame: bool) -> StateView:
    """Read one env's digest inputs from ``backend`` (regions in :data:`HASH_REGIONS` order)."""
    memory = {
        name: np.asarray(backend.read_memory(env, lo, hi), dtype=np.uint8)
        for name, lo, hi in HASH_REGIONS
    }
    frame = np.asarray(backend.frame_shades(env), dtype=np.uint8) if with_frame else None
    return StateView(
        cpu={k: int(v) for k, v in backend.get_cpu_state(env).items()},
        memory=memory,
        serial=bytes(backend.serial_output(env)),
        frame=frame,
    )


def state_digest(view: StateView) -> bytes:
    """SHA-256 of a :class:`StateView` (see the module doc for the exact byte order)."""
    h = hashlib.sha256(HASH_VERSION.encode())
    for key in CPU_STATE_KEYS:
        if key not in view.cpu:
            raise KeyError(f"register {key!r} missing from the CPU state")
        h.update(int(view.cpu[key]).to_bytes(8, "little"))
    for name, lo, hi in HASH_REGIONS:
        data = np.asarray(view.memory[name], dtype=np.uint8)
        if data.shape != (hi - lo,):
            raise ValueError(f"region {name} has {data.shape} bytes, expected {hi - lo}")
        if name == "io":
            data = data & IO_HASH_MASK
        h.update(name.encode())
        h.update(data.tobytes())
    h.update(len(view.serial).to_bytes(8, "little"))
    h.update(view.serial)
    if view.frame is None:
        h.update(b"no-frame")
    else:
        frame = np.asarray(view.frame, dtype=np.uint8)
        if frame.shape != (144, 160):
            raise ValueError(f"frame shades must be [144, 160], got {list(frame.shape)}")
        h.update(b"frame")
        h.update(np.ascontiguousarray(frame).tobytes())
    return h.digest()


def roll(previous: bytes, step: bytes) -> bytes:
    return hashlib.sha256(previous + step).digest()


ROLL_START = hashlib.sha256(HASH_VERSION.encode()).digest()


@dataclass
class Rollout:
    """Digests of one env over a rollout: ``steps[k]`` after step k (0 = after reset)."""

    steps: list[bytes] = field(default_factory=list)
    rolling: bytes = ROLL_START
    last_view: StateView | None = None  # the state behind the last digest

    def add(self, view: StateView) -> None:
        digest = state_digest(view)
        self.steps.append(digest)
        self.rolling = roll(self.rolling, digest)
        self.last_view = view

    @property
    def digest(self) -> str:
        return self.rolling.hex()

    def step_hex(self) -> list[str]:
        return [d.hex()[:STEP_DIGEST_HEX] for d in self.steps]


StepHook = Callable[[int, list[dict[int, Rollout]]], None]


def run_rollouts(
    backends: Sequence[Backend],
    actions: np.ndarray,
    envs: Sequence[int] = (0,),
    on_step: StepHook | None = None,
) -> list[dict[int, Rollout]]:
    """Reset ``backends``, step them together through ``actions`` [steps, num_envs] and
    digest ``envs`` of each after reset and after every step. ``on_step(step, rollouts)``
    runs after each round of digests (e.g. to compare the backends' full state)."""
    actions = np.asarray(actions)
    for b in backends:
        if actions.ndim != 2 or actions.shape[1] != b.num_envs:
            raise ValueError(
                f"actions must be [steps, {b.num_envs}] for backend {b.name}, got {actions.shape}"
            )
    out = [{env: Rollout() for env in envs} for _ in backends]
    for b in backends:
        b.reset(0)
    for step in range(len(actions) + 1):
        if step:
            for b in backends:
                b.step(actions[step - 1])
        for b, rollouts in zip(backends, out):
            for env, rollout in rollouts.items():
                rollout.add(capture_state(b, env, with_frame=step > 0))
        if on_step is not None:
            on_step(step, out)
    return out


def run_rollout(
    backend: Backend, actions: np.ndarray, envs: Sequence[int] = (0,)
) -> dict[int, Rollout]:
    """:func:`run_rollouts` for one backend."""
    return run_rollouts([backend], actions, envs)[0]


def describe_difference(ref: StateView, got: StateView, limit: int = 8) -> list[str]:
    """What differs between two views (empty when their digests would agree)."""
    out = [
        f"register {k}: {ref.cpu[k]:#x} vs {got.cpu[k]:#x}"
        for k in CPU_STATE_KEYS
        if ref.cpu.get(k) != got.cpu.get(k)
    ]
    for name, lo, _ in HASH_REGIONS:
        a, b = ref.memory[name], got.memory[name]
        if name == "io":
            a, b = a & IO_HASH_MASK, b & IO_HASH_MASK
        bad = np.flatnonzero(a != b)
        if len(bad):
            first = int(bad[0])
            out.append(
                f"{name}: {len(bad)} bytes differ, first ${lo + first:04X}: "
                f"${a[first]:02X} vs ${b[first]:02X}"
            )
    if ref.serial != got.serial:
        out.append(f"serial: {ref.serial[-24:]!r} vs {got.serial[-24:]!r}")
    if (ref.frame is None) != (got.frame is None):
        out.append("frame present on one side only")
    elif ref.frame is not None and got.frame is not None:
        bad = np.argwhere(ref.frame != got.frame)
        if len(bad):
            y, x = (int(v) for v in bad[0])
            out.append(f"frame: {len(bad)} pixels differ, first (y={y}, x={x})")
    return out[:limit]


def first_divergence(expected: Sequence[str], got: Sequence[str]) -> int | None:
    """First step whose (possibly truncated) hex digests differ; None when all agree."""
    for k, (a, b) in enumerate(zip(expected, got)):
        n = min(len(a), len(b))
        if a[:n] != b[:n]:
            return k
    if len(expected) != len(got):
        return min(len(expected), len(got))
    return None


# ---------------------------------------------------------------- golden cases


@dataclass(frozen=True)
class GoldenCase:
    """A deterministic workload: which ROM, how it is paced, which actions."""

    name: str
    rom: str  # suite ROM name (bench.roms.build.get_rom)
    steps: int
    frames_per_step: int
    release_after_frames: int
    codec: str
    actions: str  # "spec": the ROM's own inputs; "random": seeded, env k uses seed + k
    seed: int = 0

    def rom_path(self) -> Path:
        return _built_rom(self.rom)

    def backend_kwargs(self, num_envs: int = 1) -> dict[str, Any]:
        return {
            "num_envs": num_envs,
            "frames_per_step": self.frames_per_step,
            "release_after_frames": self.release_after_frames,
            "action_codec": self.codec,
        }

    def make_backend(self, backend: str, num_envs: int = 1, **extra: Any) -> Backend:
        from gbxcule.backends.registry import make_backend

        return make_backend(backend, str(self.rom_path()), **self.backend_kwargs(num_envs), **extra)

    def action_array(self, num_envs: int = 1, *, random_others: bool = False) -> np.ndarray:
        """int64 [steps, num_envs]. ``random_others``: envs 1.. get seeded random actions
        (seed + k) whatever the case's own actions, env 0 keeps them."""
        if self.actions == "spec":
            from bench.roms.build import get_rom

            out = spec_actions(get_rom(self.rom), num_envs)
        elif self.actions == "random":
            out = np.stack([self._random(self.seed + k) for k in range(num_envs)], axis=1)
        else:
            raise GoldenError(f"case {self.name}: unknown actions kind {self.actions!r}")
        if random_others:
            for k in range(1, num_envs):
                out[:, k] = self._random(self.seed + k)
        return out

    def _random(self, seed: int) -> np.ndarray:
        n = get_codec(self.codec).num_actions
        return np.random.default_rng(seed).integers(0, n, size=self.steps, dtype=np.int64)


@functools.cache
def _built_rom(name: str) -> Path:
    """The suite ROM's file, built (or refreshed) once per process."""
    from bench.roms.build import get_rom

    return spec_rom_file(get_rom(name))


def golden_cases() -> list[GoldenCase]:
    """Every suite ROM with its own inputs, then the demo game under random actions."""
    from bench.roms.build import all_roms

    cases = [
        GoldenCase(
            name=spec.name,
            rom=spec.name,
            steps=spec.steps,
            frames_per_step=spec.frames_per_step,
            release_after_frames=spec.release_after_frames,
            codec="buttons",
            actions="spec",
        )
        for spec in all_roms()
    ]
    cases.append(
        GoldenCase(
            name=DEMO_CASE,
            rom="demo_game",
            steps=DEMO_STEPS,
            frames_per_step=24,
            release_after_frames=8,
            codec="pokemonred_puffer_v1",
            actions="random",
        )
    )
    return cases


def case_record(case: GoldenCase, rollout: Rollout) -> dict[str, Any]:
    """The goldens-file entry of ``case``: its config, ROM hash and digests."""
    rom_sha = hashlib.sha256(case.rom_path().read_bytes()).hexdigest()
    return {
        **asdict(case),
        "rom_sha256": rom_sha,
        "digest": rollout.digest,
        "step_digests": rollout.step_hex(),
    }


def load_goldens(path: Path = GOLDENS_PATH) -> dict[str, dict[str, Any]]:
    """case name -> record, from a goldens file; ``GoldenError`` if missing or malformed."""
    if not path.is_file():
        raise GoldenError(f"goldens file not found: {path} (write it with tools/make_goldens.py)")
    data = json.loads(path.read_text())
    if data.get("format") != GOLDENS_FORMAT or data.get("hash_version") != HASH_VERSION:
        raise GoldenError(
            f"{path} is format {data.get('format')!r} / hash {data.get('hash_version')!r}; "
            f"this code reads {GOLDENS_FORMAT!r} / {HASH_VERSION!r}: regenerate it"
        )
    return data["cases"]


def check_record(case: GoldenCase, record: dict[str, Any]) -> None:
    """Raise ``GoldenError`` when ``record`` was made for another config or ROM image."""
    want = asdict(case)
    got = {k: record.get(k) for k in want}
    if got != want:
        raise GoldenError(f"golden {case.name}: recorded config {got} != current {want}")
    rom_sha = hashlib.sha256(case.rom_path().read_bytes()).hexdigest()
    if record.get("rom_sha256") != rom_sha:
        raise GoldenError(
            f"golden {case.name}: ROM {case.rom} changed since the golden was made; "
            "regenerate with tools/make_goldens.py and say why in the commit"
        )


def mismatch_message(case: GoldenCase, backend: str, record: dict, rollout: Rollout) -> str:
    """Empty when ``rollout`` reproduces ``record``, else where it first diverged."""
    if rollout.digest == record["digest"]:
        return ""
    step = first_divergence(record["step_digests"], rollout.step_hex())
    return (
        f"{case.name} on {backend}: rolling digest {rollout.digest[:16]} != golden "
        f"{record['digest'][:16]}; first differing state at step {step} of {case.steps} "
        f"(after {step} steps of {case.frames_per_step} frames)"
    )


def write_goldens(records: dict[str, dict[str, Any]], meta: dict[str, Any], path: Path) -> None:
    """Write the goldens file atomically: one line per top-level key and per case."""
    head = {
        "format": GOLDENS_FORMAT,
        "hash_version": HASH_VERSION,
        "hash": {
            "registers": list(CPU_STATE_KEYS),
            "regions": [[n, f"{lo:04X}-{hi - 1:04X}"] for n, lo, hi in HASH_REGIONS],
            "io_mask": IO_HASH_MASK.tobytes().hex(),
            "serial": True,
            "frame": "shades [144, 160] from step 1",
            "step_digest_hex": STEP_DIGEST_HEX,
        },
        **meta,
    }
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    cases = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in records.items()]
    text = "{\n" + "\n".join(lines) + '\n "cases": {\n' + ",\n".join(cases) + "\n }\n}\n"
    json.loads(text)  # the hand-joined layout must stay valid JSON
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)
