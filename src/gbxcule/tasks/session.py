"""A task on a backend, built and driven in one place.

:class:`TaskSession` is what the trainer (``rl/rollout.py``), evaluation, L4 and the
Gymnasium / SB3 / PufferLib envs share: it builds the backend a task asks for (or takes
one), loads the task's start pool, draws each episode's start from a generator seeded
by the run, applies the task's action rules (no-op prefix, sticky actions), and resets,
copies (swarm) and checkpoints envs together with the task's per-env buffers
(:class:`~gbxcule.tasks.runtime.TaskRuntime`). Callers render observations themselves.

The backend is a ``TrainingBackend`` (``backends/protocol.py``) of either family: it
keeps the start pool in its start slots (Warp: whole env states on the device, restored
in one launch; PyBoy: ``.state`` bytes loaded per env), and with no start files the pool
is the state right after ``reset()`` (the boot's end), so a finished episode starts
again from there on every backend.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from gbxcule.backends.protocol import TrainingBackend, check_obs_format
from gbxcule.backends.registry import make_backend, task_backend_name
from gbxcule.core.pixels import OBS_FRAME_SHAPES
from gbxcule.core.step_end import StepEnd
from gbxcule.tasks.memory import resolve
from gbxcule.tasks.reads import U8
from gbxcule.tasks.runtime import TaskRuntime
from gbxcule.tasks.task import Task, TaskError


def backend_options(task: Task, num_envs: int) -> dict[str, Any]:
    """The step settings every backend of ``task`` is built with."""
    return dict(
        num_envs=num_envs,
        frames_per_step=task.frames_per_step,
        release_after_frames=task.release_after_frames,
        action_codec=task.action_codec,
    )


def make_task_backend(
    task: Task,
    num_envs: int,
    *,
    kind: str = "warp",
    device: str = "cpu",
    rom: str | Path | None = None,
    threads: int | None = None,
    **kwargs: Any,
) -> Any:
    """The backend for ``task``: ``kind`` one of ``registry.TASK_BACKENDS`` (warp on
    ``device``; pyboy, pyboy-mp). Start states are loaded by the session."""
    try:
        name = task_backend_name(kind, device, num_envs)
    except ValueError as exc:
        raise TaskError(str(exc)) from None
    common = {**backend_options(task, num_envs), **kwargs}
    if name.startswith("pyboy"):
        common = {"render": True, **common}
    elif name == "warp-cuda":
        common["device"] = device if ":" in str(device) else "cuda:0"
    else:
        common["threads"] = threads
    return make_backend(name, str(task.rom_path(rom)), **common)


_NOTED: set[tuple[str, str]] = set()


def _check_start_provenance(paths: list[Path], datas: list[bytes], backend: Any) -> None:
    """A state whose sidecar names another ROM is refused (``provenance.py``). A PyBoy
    ``.state`` with no sidecar does not say which game saved it: loading refuses one of
    another cartridge layout or bank count (``core/pyboy_state_io.py``), but one of another
    game with this ROM's layout loads and starts episodes in nonsense, so the user is told,
    once a process per (state, ROM), what could not be checked."""
    from gbxcule.core.snapshot import SNAPSHOT_MAGIC
    from gbxcule.games import is_bundled_start
    from gbxcule.tasks.provenance import check_state_rom

    rom = Path(backend.rom_path)
    rom_bytes = rom.read_bytes() if rom.is_file() else b""
    for path, data in zip(paths, datas, strict=True):
        key = (str(path.resolve()), str(rom))
        if data.startswith(SNAPSHOT_MAGIC) or is_bundled_start(path, rom):
            continue  # our snapshots carry their ROM's sha256 and are checked on load
        if check_state_rom(path, data, rom_bytes, rom.name) or key in _NOTED:
            continue
        _NOTED.add(key)
        warnings.warn(
            f"{path}: a PyBoy state does not record which ROM saved it; only its cartridge "
            f"layout was checked against {rom.name or 'the ROM'}. Make sure it was saved on "
            "this game (a state of another game with the same layout starts every episode "
            "in nonsense); states made by `gbxcule states` carry their ROM's sha256.",
            UnverifiedStartState,
            stacklevel=3,
        )


class UnverifiedStartState(UserWarning):
    """A start state whose game the file cannot prove (see ``_check_start_provenance``)."""


def resolve_step_end(end: StepEnd, backend: Any) -> StepEnd:
    """``end`` with a symbol looked up in ``backend``'s ``.sym`` file (as reads are)."""
    if isinstance(end.where, int):
        return end
    addr, _ = resolve(backend, U8(end.where))
    return replace(end, where=addr)


@dataclass
class StepResult:
    """One step of every env (``TaskSession.step``), in tensors the caller owns on the
    session's device (``allocate`` once, hand it to every step: PufferLib's
    ``set_buffers``). The episode fields are the episode's through this step, so a
    finished episode's return and length are read where ``done`` is set."""

    reward: torch.Tensor  # float32 [N]
    terms: torch.Tensor  # float32 [N, terms]: each reward term's part of it
    terminated: torch.Tensor  # bool [N]
    truncated: torch.Tensor  # bool [N]
    done: torch.Tensor  # bool [N]: terminated | truncated
    episode_return: torch.Tensor  # float64 [N]
    episode_length: torch.Tensor  # int32 [N]: steps
    episode_terms: torch.Tensor  # float64 [N, terms]
    frames: torch.Tensor  # int64 [N]: frames this step ran
    restarted: torch.Tensor  # bool [N]: now at a new episode's start (``reset_done``)
    swarmed: torch.Tensor  # bool [N]: now a copy of env ``swarm_src`` (the task's swarm)
    swarm_src: torch.Tensor  # int64 [N]: the env each swarmed env copies (else itself)

    @classmethod
    def allocate(cls, num_envs: int, num_terms: int, device: Any) -> StepResult:
        def z(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(shape, dtype=dtype, device=device)

        n, b = num_envs, torch.bool
        return cls(
            z(n), z(n, num_terms), z(n, dtype=b), z(n, dtype=b), z(n, dtype=b),
            z(n, dtype=torch.float64), z(n, dtype=torch.int32),
            z(n, num_terms, dtype=torch.float64), z(n, dtype=torch.int64),
            z(n, dtype=b), z(n, dtype=b), torch.arange(n, device=device),
        )  # fmt: skip


class TaskSession:
    """``task`` on ``backend`` (a ``TrainingBackend``) with its start pool (``starts``
    overrides the task's)."""

    def __init__(
        self,
        task: Task,
        backend: TrainingBackend,
        *,
        starts: list[str | Path] | None = None,
        seed: int = 0,
    ) -> None:
        self.task = task
        self.backend = backend
        self.num_envs = n = backend.num_envs
        self.device = torch.device(backend.torch_device)
        self.start_files = [Path(p) for p in (task.start_paths() if starts is None else starts)]
        for p in self.start_files:
            if not p.is_file():
                raise TaskError(f"task {task.name!r}: start state {p} does not exist")
        self._start_bytes = [p.read_bytes() for p in self.start_files]
        _check_start_provenance(self.start_files, self._start_bytes, backend)
        if task.step_end is not None:
            backend.set_step_end(resolve_step_end(task.step_end, backend))
        self.runtime = TaskRuntime(task, backend, self.device, seed=seed)
        self.steps_taken = 0  # steps since start(), for the swarm's cadence
        self.slots = torch.zeros(n, dtype=torch.int32, device=self.device)
        self._all = torch.ones(n, dtype=torch.bool, device=self.device)

    @property
    def num_starts(self) -> int:
        return int(self.backend.num_start_states)

    def start(self, start_states: list | None = None) -> None:
        """Every env to a start drawn from the pool, new episodes. ``start_states``
        (captured states, e.g. a checkpoint's) replace the pool."""
        b = self.backend
        b.reset()
        self.steps_taken = 0
        b.clear_start_states()
        sources = start_states if start_states else self._start_bytes
        for source in sources:
            b.add_start_state(source)
        if not sources:
            b.capture_start_state(0)  # power-on, then the boot ROM
        self.slots.copy_(self._draw(self._all))
        b.reset_envs(self._all, slots=self.slots)
        self.runtime.begin()
        self.runtime.check_predicates()

    def place_at_first_start(self) -> None:
        """Every env at the pool's first start, drawing nothing and starting no episode
        (for a measurement of the emulator; :meth:`start` sets the run's envs up anew)."""
        b = self.backend
        b.reset()
        b.clear_start_states()
        if self._start_bytes:
            b.add_start_state(self._start_bytes[0])
        else:
            b.capture_start_state(0)
        b.reset_envs(self._all, slots=torch.zeros_like(self.slots))

    def _draw(self, mask: torch.Tensor) -> torch.Tensor:
        count = self.num_starts
        if count == 1:
            return torch.zeros_like(self.slots)
        gen = self.runtime.gen
        drawn = torch.randint(0, count, (self.num_envs,), generator=gen, device=self.device)
        return torch.where(mask, drawn.to(torch.int32), self.slots)

    def act(self, actions: Any) -> None:
        """One step of every env with the task's action rules applied."""
        if self.task.noop_max or self.task.sticky_actions:
            actions = self.runtime.actions(torch.as_tensor(actions, device=self.device))
        self.backend.step(actions)

    def new_result(self) -> StepResult:
        """Buffers for :meth:`step` on this session's device."""
        return StepResult.allocate(self.num_envs, len(self.task.terms), self.device)

    def step(
        self,
        actions: Any,
        out: StepResult | None = None,
        *,
        reset_done: bool = False,
        discard: torch.Tensor | None = None,
    ) -> StepResult:
        """One step of every env: ``act``, then the task's rewards and ends into ``out``
        (new buffers when None). ``reset_done``: the finished envs start new episodes
        from freshly drawn starts, then the task's swarm runs (``restarted``,
        ``swarmed``). ``discard`` (bool [N]): envs restarted right after the launch
        instead (Gymnasium's ``next_step`` autoreset): their step reports reward 0, not
        done, and does not count in their new episode."""
        out = self.new_result() if out is None else out
        rt = self.runtime
        self.act(actions)
        out.frames.copy_(rt.step_frames())
        if discard is not None and (self.device.type == "cuda" or bool(discard.any())):
            self.reset_envs(discard)  # (a CPU skips it when empty: no draw, no launch)
        reward, terminated, truncated = rt.after_step()
        terms = rt.last_terms
        if discard is not None:
            reward = reward.masked_fill(discard, 0.0)
            terms = terms.masked_fill(discard[:, None], 0.0)
            terminated, truncated = terminated & ~discard, truncated & ~discard
            rt.discard_step(discard)
        out.reward.copy_(reward)
        out.terms.copy_(terms)
        out.terminated.copy_(terminated)
        out.truncated.copy_(truncated)
        torch.logical_or(terminated, truncated, out=out.done)
        out.episode_return.copy_(rt.ep_return)
        out.episode_length.copy_(rt.steps)
        out.episode_terms.copy_(rt.buffers["ep_terms"])
        out.restarted.zero_()
        out.swarmed.zero_()
        out.swarm_src.copy_(torch.arange(self.num_envs, device=self.device))
        if reset_done:
            self.reset_envs(out.done)
            out.restarted.copy_(out.done)
            self._swarm_into(out)
        return out

    def reset_envs(self, mask: torch.Tensor) -> None:
        """The envs in ``mask`` start new episodes from freshly drawn starts."""
        self.slots.copy_(self._draw(mask))  # drawn even for none: each device draws alike
        if self.device.type == "cuda" or bool(mask.any()):  # a CPU skips an empty restore
            self.backend.reset_envs(mask, slots=self.slots)
        self.runtime.after_reset(mask)

    def swarm(self) -> torch.Tensor | None:
        """Call after each step (``step(..., reset_done=True)`` does): the task's swarm
        reset every ``every`` steps since :meth:`start`
        (:class:`~gbxcule.tasks.task.Swarm`); returns the copied envs' mask, else None."""
        self.steps_taken += 1
        swarm = self.task.swarm
        if swarm is None or self.steps_taken % swarm.every:
            return None
        src, mask = self.runtime.swarm_targets()
        self.copy_envs(src, mask)
        self.swarm_src = torch.where(mask, src, torch.arange(self.num_envs, device=self.device))
        return mask

    def _swarm_into(self, out: StepResult) -> None:
        swarmed = self.swarm()
        if swarmed is not None:
            out.swarmed.copy_(swarmed)
            out.swarm_src.copy_(self.swarm_src)

    def copy_envs(self, src: torch.Tensor, mask: torch.Tensor) -> None:
        """Envs in ``mask`` become copies of env ``src[e]``: machine and task buffers."""
        self.backend.copy_envs(src, mask)
        self.runtime.copy_envs(src, mask)
        self.slots.copy_(torch.where(mask, self.slots[src], self.slots))

    def check_obs_format(self, obs_format: str) -> None:
        """``ValueError`` unless the backend's machine draws ``obs_format`` (a DMG: u8,
        packed2; a Game Boy Color machine: luma, rgb)."""
        check_obs_format(obs_format, bool(getattr(self.backend, "cgb", False)))

    def observe(self, obs_format: str = "u8") -> torch.Tensor:
        """``uint8 [N, *frame]`` on the session's device: every env's last frame as an
        observation (``render_obs``; ``core.pixels.OBS_FRAME_SHAPES``), in a new tensor."""
        self.check_obs_format(obs_format)
        frame = OBS_FRAME_SHAPES[obs_format]
        out = torch.empty((self.num_envs, *frame), dtype=torch.uint8, device=self.device)
        self.backend.render_obs(out, 0, obs_format)
        return out

    def start_states(self) -> list:
        """The pool as the backend holds it (saved in checkpoints)."""
        return [self.backend.start_state(s) for s in range(self.backend.num_start_states)]

    def state_dict(self) -> dict[str, Any]:
        return {"runtime": self.runtime.state_dict(), "slots": self.slots.cpu().clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.runtime.load_state_dict(state["runtime"])
        self.slots.copy_(state["slots"].to(self.device))

    def close(self) -> None:
        self.backend.close()
