"""A task running on a backend: per-env buffers on the device, a step's reward and ends.

:class:`TaskRuntime` binds a :class:`~gbxcule.tasks.task.Task`'s reads to the backend
(one gather a step, ``memory.py``), and keeps every per-env buffer the task needs in one
registry (``buffers``): each read's value at the last step and at the episode's start,
each term's own buffers, the step count, the episode return and its per-term parts, the
no-op steps left and the last action. Starting an episode, a swarm copy
(:meth:`copy_envs`) and a checkpoint (:meth:`state_dict`) all go through that registry,
so a buffer added to a task is never missed by one of them. Nothing here copies to the
host: rewards, ends and statistics stay on the backend's device.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch

from gbxcule.tasks.memory import TaskMemory, resolve
from gbxcule.tasks.reads import ReadError
from gbxcule.tasks.task import Task, TaskError
from gbxcule.tasks.terms import StepCost


class ReadValues(Mapping):
    """What a predicate sees: ``r[name]`` (this step), ``r.prev[name]`` (the step before),
    ``r.start[name]`` (the episode's first value), ``r.steps`` (steps taken), all ``[N]``."""

    def __init__(
        self,
        now: dict[str, torch.Tensor],
        prev: dict[str, torch.Tensor],
        start: dict[str, torch.Tensor],
        steps: torch.Tensor,
    ) -> None:
        self.now, self.prev, self.start, self.steps = now, prev, start, steps

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self.now[name]
        except KeyError:
            raise KeyError(f"no read {name!r}; reads: {', '.join(self.now)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.now)

    def __len__(self) -> int:
        return len(self.now)


# buffers only statistics read: a checkpoint that lacks one resumes with zeros
STATS_ONLY = {"ep_frames": "frames of the episode so far"}
STATS_HEAD = 4  # take_stats(): episodes, return, steps and frames sums, then the terms


def _step_frames_source(task: Task, backend: Any, device: torch.device) -> Any:
    """What ``step_frames`` reads: the backend's per-env count where steps vary (asked
    each step: a zero-copy view on Warp, a host call on PyBoy), else the task's constant
    length."""
    if task.timed:
        return backend.step_frames_torch
    return torch.full((backend.num_envs,), task.frames_per_step, dtype=torch.int64, device=device)


def swarm_sources(score: torch.Tensor) -> torch.Tensor:
    """int64 ``[N]``: the env a swarm copies into every env, the one with the best
    ``score`` (``Task.swarm``'s and the Gymnasium env's ``swarm_reset``)."""
    return torch.argmax(score).expand(score.shape[0]).contiguous()


def step_cost_reward(term: StepCost) -> float:
    value = float(term.weight)
    return value if term.clip is None else min(max(value, term.clip[0]), term.clip[1])


class TaskRuntime:
    """Per-env task state on ``device`` and the step's ``reward, terminated, truncated``."""

    def __init__(self, task: Task, backend: Any, device: Any, *, seed: int = 0) -> None:
        self.task = task
        self.device = torch.device(device)
        self.num_envs = n = backend.num_envs
        for name, read in task.reads.items():  # a read that cannot be made, by its name
            for source in read.sources():
                try:
                    resolve(backend, source)
                except (ReadError, KeyError) as exc:
                    msg = exc.args[0] if exc.args else exc
                    raise TaskError(f"task {task.name!r} read {name!r}: {msg}") from None
        self.memory = TaskMemory(backend, task.reads.values())
        self.terms = task.terms
        self.term_names = list(self.terms)
        self.noop = task.codec.masks.index(0) if 0 in task.codec.masks else None
        d = self.device
        zeros = lambda dtype: torch.zeros(n, dtype=dtype, device=d)  # noqa: E731
        self.buffers: dict[str, torch.Tensor] = {}
        for name in task.reads:
            self.buffers[f"read.{name}.prev"] = zeros(torch.int64)
            self.buffers[f"read.{name}.start"] = zeros(torch.int64)
        # each term's own buffers by their short names (the registry's tensors, in place)
        self.term_buffers: dict[str, dict[str, torch.Tensor]] = {}
        for tname, term in self.terms.items():
            self.term_buffers[tname] = term.make_buffers(n, d)
            for b, tensor in self.term_buffers[tname].items():
                self.buffers[f"term.{tname}.{b}"] = tensor
        self.buffers["steps"] = zeros(torch.int32)
        # float64: an episode's return and term sums as exact as a host sum of its rewards
        self.buffers["ep_return"] = zeros(torch.float64)
        self.buffers["ep_terms"] = torch.zeros((n, len(self.terms)), dtype=torch.float64, device=d)
        self.buffers["ep_frames"] = zeros(torch.int64)
        self.buffers["noop_left"] = zeros(torch.int32)
        self.buffers["last_action"] = zeros(torch.int64)
        # Finished-episode sums since the last take_stats(): count, return, length (steps),
        # frames, terms.
        self.finished = torch.zeros(STATS_HEAD + len(self.terms), dtype=torch.float64, device=d)
        self._frames = _step_frames_source(task, backend, d)
        self.last_terms = torch.zeros((n, len(self.terms)), dtype=torch.float32, device=d)
        self.gen = torch.Generator(device=d).manual_seed(int(seed))

    # ---- reads -------------------------------------------------------------------------

    def read_all(self) -> dict[str, torch.Tensor]:
        """Every read's value now, int64 ``[N]`` on the runtime's device."""
        raws = self.memory.gather()
        if self.memory.device != self.device:
            raws = {k: v.to(self.device, non_blocking=True) for k, v in raws.items()}
        return {name: read.value(raws) for name, read in self.task.reads.items()}

    @property
    def num_features(self) -> int:
        return len(self.task.features)

    def features(self, now: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """float32 ``[N, features]``: each feature read times its scale (reads now)."""
        now = self.read_all() if now is None else now
        cols = [now[k].to(torch.float32) * s for k, s in self.task.features.items()]  # type: ignore[union-attr]
        if not cols:
            return torch.zeros((self.num_envs, 0), dtype=torch.float32, device=self.device)
        return torch.stack(cols, dim=1)

    def _values(self, which: str) -> dict[str, torch.Tensor]:
        return {name: self.buffers[f"read.{name}.{which}"] for name in self.task.reads}

    # ---- episodes ----------------------------------------------------------------------

    @property
    def steps(self) -> torch.Tensor:
        return self.buffers["steps"]

    @property
    def ep_return(self) -> torch.Tensor:
        return self.buffers["ep_return"]

    def begin(self, mask: torch.Tensor | None = None) -> None:
        """The envs in ``mask`` (all when None) start an episode from what RAM holds now."""
        if mask is not None and self.device.type != "cuda" and not bool(mask.any()):
            self._draw_noops(mask)  # none starts (a CPU checks: no sync); the draw is kept
            return
        now = self.read_all()
        m = (
            torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
            if mask is None
            else mask
        )
        for name, value in now.items():
            for which in ("prev", "start"):
                buf = self.buffers[f"read.{name}.{which}"]
                buf.copy_(torch.where(m, value, buf))
        for tname, term in self.terms.items():
            term.start(now, self.term_buffers[tname], m)
        self.discard_step(m)
        self._draw_noops(m)
        if self.noop is not None:
            self.buffers["last_action"].masked_fill_(m, self.noop)

    def _draw_noops(self, mask: torch.Tensor) -> None:
        """The no-op prefix of the episodes starting in ``mask``: drawn for every env
        whether or not any starts, so each device draws the same sequence."""
        if self.task.noop_max:
            draw = torch.randint(
                0, self.task.noop_max + 1, (self.num_envs,), generator=self.gen, device=self.device
            ).to(torch.int32)
            left = self.buffers["noop_left"]
            left.copy_(torch.where(mask, draw, left))

    def discard_step(self, mask: torch.Tensor) -> None:
        """The envs in ``mask`` are at step 0 with no return (an episode's start; a
        Gymnasium ``next_step`` autoreset's step, which does not count)."""
        self.buffers["steps"].masked_fill_(mask, 0)
        self.buffers["ep_return"].masked_fill_(mask, 0.0)
        self.buffers["ep_terms"].masked_fill_(mask[:, None], 0.0)
        self.buffers["ep_frames"].masked_fill_(mask, 0)

    def after_reset(self, done: torch.Tensor) -> None:
        """The envs in ``done`` were restored to a start state: new episodes."""
        self.begin(done)

    def actions(self, actions: torch.Tensor) -> torch.Tensor:
        """The actions the envs run: the no-op during an episode's no-op prefix, and with
        probability ``sticky_actions`` the previous step's action (int64 ``[N]``)."""
        t = self.task
        if not t.noop_max and not t.sticky_actions:
            return actions
        out = actions.to(self.device, torch.int64)
        last = self.buffers["last_action"]
        if t.sticky_actions:
            shape, d = (self.num_envs,), self.device
            stick = torch.rand(shape, generator=self.gen, device=d) < t.sticky_actions
            out = torch.where(stick, last, out)
        if t.noop_max:
            left = self.buffers["noop_left"]
            out = torch.where(left > 0, torch.full_like(out, self.noop), out)  # type: ignore[arg-type]
            left.sub_((left > 0).to(torch.int32))
        last.copy_(out)
        return out

    def check_predicates(self) -> None:
        """Run ``terminated`` / ``truncated`` once on the reads as they are now, so a
        mistake in them is named before the first step, not in the middle of training."""
        now = self.read_all()
        values = ReadValues(now, self._values("prev"), self._values("start"), self.buffers["steps"])
        for which in ("terminated", "truncated"):
            self._predicate(which, values)

    def after_step(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``reward`` float32, ``terminated`` and ``truncated`` bool, all [N], no host sync.
        ``last_terms`` holds each term's part of the reward ``[N, terms]``."""
        now = self.read_all()
        for k, (tname, term) in enumerate(self.terms.items()):
            if isinstance(term, StepCost):
                self.last_terms[:, k] = step_cost_reward(term)
                continue
            self.last_terms[:, k] = term.reward(term.observe(now), self.term_buffers[tname])
        reward = self.last_terms.sum(dim=1)
        steps = self.buffers["steps"]
        steps += 1
        values = ReadValues(now, self._values("prev"), self._values("start"), steps)
        terminated = self._predicate("terminated", values)
        truncated = steps >= self.task.max_steps
        if self.task.truncated is not None:
            truncated = truncated | self._predicate("truncated", values)
        truncated = truncated & ~terminated
        for name, value in now.items():
            self.buffers[f"read.{name}.prev"].copy_(value)
        self.buffers["ep_return"] += reward
        self.buffers["ep_terms"] += self.last_terms
        self.buffers["ep_frames"] += self.step_frames()
        done = (terminated | truncated).to(torch.float64)
        self.finished[0] += done.sum()
        self.finished[1] += (self.buffers["ep_return"].to(torch.float64) * done).sum()
        self.finished[2] += (steps.to(torch.float64) * done).sum()
        self.finished[3] += (self.buffers["ep_frames"].to(torch.float64) * done).sum()
        self.finished[STATS_HEAD:] += (
            self.buffers["ep_terms"].to(torch.float64) * done[:, None]
        ).sum(0)
        return reward, terminated, truncated

    def step_frames(self) -> torch.Tensor:
        """int64 ``[N]``: the frames each env's last step ran (its action's own length, or
        less where the task's ``step_end`` cut it: ``core/step_end.py``)."""
        frames = self._frames() if callable(self._frames) else self._frames
        return frames.to(device=self.device, dtype=torch.int64)

    def swarm_targets(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(src, mask)`` of the task's swarm now: the envs that have not reached the
        milestone (mask) and, for every env, the env to copy (the one that has, with the
        highest episode return); an empty mask when none or all have. No host sync."""
        values = ReadValues(self.read_all(), self._values("prev"), self._values("start"),
                            self.buffers["steps"])  # fmt: skip
        reached = self._check("swarm", self.task.swarm.reached(values))  # type: ignore[union-attr]
        score = torch.where(reached, self.buffers["ep_return"], float("-inf"))
        mask = ~reached & reached.any()
        return swarm_sources(score), mask

    def _predicate(self, which: str, values: ReadValues) -> torch.Tensor:
        fn = getattr(self.task, which)
        if fn is None:
            return torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        try:
            out = fn(values)
        except Exception as exc:  # a task file's own mistake: name where it is
            raise TaskError(
                f"task {self.task.name!r}: its {which} raised {type(exc).__name__}: {exc}"
            ) from exc
        return self._check(which, out)

    def _check(self, which: str, out: Any) -> torch.Tensor:
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (self.num_envs,):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise TaskError(
                f"task {self.task.name!r}: {which} must return a tensor [N={self.num_envs}] "
                f"computed from the reads (e.g. r['over'] != 0), got {got}"
            )
        return out.to(torch.bool)

    # ---- statistics, swarms, checkpoints -------------------------------------------------

    def take_stats(self) -> torch.Tensor:
        """float64 ``[STATS_HEAD + terms]`` since the last call (a device copy): finished
        episodes, their return sum, length sum (steps), frame sum, then each term's sum."""
        out = self.finished.clone()
        self.finished.zero_()
        return out

    def copy_envs(self, src: torch.Tensor, mask: torch.Tensor) -> None:
        """Env ``i`` in ``mask`` takes env ``src[i]``'s buffers (a swarm reset)."""
        for buf in self.buffers.values():
            picked = buf[src]
            m = mask if buf.dim() == 1 else mask[:, None]
            buf.copy_(torch.where(m, picked, buf))

    def state_dict(self) -> dict[str, Any]:
        return {
            "buffers": {k: v.detach().cpu().clone() for k, v in self.buffers.items()},
            "generator": self.gen.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = dict(state["buffers"])
        for k in STATS_ONLY.keys() - saved.keys():  # a checkpoint from before it existed
            saved[k] = torch.zeros_like(self.buffers[k])
        missing = sorted(set(self.buffers) - set(saved))
        extra = sorted(set(saved) - set(self.buffers))
        if missing or extra:
            raise TaskError(
                f"task state does not match task {self.task.name!r}: missing {missing}, "
                f"unknown {extra}"
            )
        for k, v in saved.items():
            if tuple(v.shape) != tuple(self.buffers[k].shape):
                raise TaskError(
                    f"task buffer {k}: saved shape {tuple(v.shape)}, this run "
                    f"{tuple(self.buffers[k].shape)}"
                )
            self.buffers[k].copy_(v.to(self.device))
        self.gen.set_state(state["generator"])
