"""The PPO engine: double-buffered rollouts, an actor stream and a learner stream.

One update ``u`` enqueues, in this order:

* actor stream: wait ``policy_ready`` (the learner's last weight copy) and
  ``buffer_free[b]`` (the learner is done reading buffer ``b = u % 2``); carry the
  previous rollout's last frames over; collect ``T`` steps into ``b`` (policy forward,
  env step, task reward, ``reset_envs``, one render into the next slot); record
  ``buffer_ready[b]``.
* learner stream: wait ``buffer_ready`` of the buffer it trains on (``b`` in ``sync``
  mode; the previous rollout ``1 - b`` in ``async`` mode, so it runs while the actor
  collects ``b``); PPO; record ``buffer_free``; wait the actor's end of rollout (the
  actor no longer reads its weights); copy the learner's weights into the actor's;
  record ``policy_ready``.

On CUDA the two streams overlap (``async``); the env's Warp launches and renders run on
the actor stream (``wp.ScopedStream``). Every dependency is a GPU event; the host does
not wait while enqueueing, and ``torch.cuda.set_sync_debug_mode("error")`` around the
enqueue proves it (``sync_guard``). On the CPU there are no streams and the events become
wall-clock stamps: ``sync`` runs the same steps in program order; ``async`` runs the
learner's PPO on a thread of its own while the actor collects (Torch and Warp release
the GIL in their kernels), so a core the emulator leaves idle trains; the learner's
weights reach the actor after both, as on CUDA, so the numbers are those of a CUDA
``async`` run. Several ranks keep program order (their collectives stay on one thread). Per update: ``t_actor``, ``t_learner``, ``t_total`` (CUDA events
or wall clock) and ``overlap_efficiency = (t_actor + t_learner) / t_total``.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from gbxcule.rl.models import sample_actions
from gbxcule.rl.ppo import STAT_NAMES, ppo_update
from gbxcule.rl.rollout import RolloutBuffer


class WallEvent:
    """A CPU stand-in for ``torch.cuda.Event``: record() stamps the wall clock."""

    def __init__(self) -> None:
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: WallEvent) -> float:
        return 0.0 if self.t is None or end.t is None else (end.t - self.t) * 1000.0

    def synchronize(self) -> None:
        pass


class Streams:
    """The actor and learner streams of a device (CUDA), or program order (CPU)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.device = device
        if self.cuda:
            self.actor = torch.cuda.Stream(device)
            self.learner = torch.cuda.Stream(device)
            import warp as wp

            self._actor_wp = wp.stream_from_torch(self.actor)

    def event(self) -> Any:
        return torch.cuda.Event(enable_timing=True) if self.cuda else WallEvent()

    @contextlib.contextmanager
    def on(self, which: str):
        if not self.cuda:
            yield
            return
        import warp as wp

        stream = self.actor if which == "actor" else self.learner
        with torch.cuda.stream(stream):
            if which == "actor":  # the emulator's launches go on the actor stream too
                with wp.ScopedStream(self._actor_wp):
                    yield
            else:
                yield

    def wait(self, which: str, event: Any) -> None:
        if self.cuda and event is not None:
            (self.actor if which == "actor" else self.learner).wait_event(event)

    def record(self, which: str, event: Any) -> None:
        if self.cuda:
            event.record(self.actor if which == "actor" else self.learner)
        else:
            event.record()

    @contextlib.contextmanager
    def no_host_sync(self, enabled: bool):
        """``torch.cuda.set_sync_debug_mode("error")`` while enqueueing (CUDA only)."""
        if not (self.cuda and enabled):
            yield
            return
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous)


@dataclass
class Pending:
    """What one enqueued update will have produced (tensors filled once its events are done)."""

    update: int
    buffer: int
    trained: int | None  # the buffer the learner trained on (None: nothing yet, async u=0)
    events: dict[str, Any]
    stats: torch.Tensor | None
    episode_stats: torch.Tensor
    actor_checksum: torch.Tensor
    learner_checksum: torch.Tensor
    read_versions: torch.Tensor | None  # buffer version when the learner began and ended reading
    host: dict[str, float] = field(default_factory=dict)


def checksum(model: torch.nn.Module) -> torch.Tensor:
    """float64 sum of every parameter (a device tensor; no host sync)."""
    return torch.stack([p.detach().to(torch.float64).sum() for p in model.parameters()]).sum()


class Engine:
    def __init__(
        self,
        cfg: Any,
        env: Any,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        device: torch.device,
        dist: Any = None,
    ) -> None:
        if cfg.num_steps < cfg.stack:
            raise ValueError(f"num_steps ({cfg.num_steps}) must be >= stack ({cfg.stack})")
        self.cfg, self.env, self.device = cfg, env, device
        # Several ranks (gbxcule.rl.distributed): global action noise, sharded PPO.
        self.dist = dist if dist is not None and dist.sharded else None
        self.learner, self.optimizer = model, optimizer
        self.actor = copy.deepcopy(model).requires_grad_(False)
        self.streams = Streams(device)
        n = env.num_envs
        self.bufs = [
            RolloutBuffer(
                cfg.num_steps,
                n,
                cfg.stack,
                cfg.obs_format,
                device,
                num_features=env.task.num_features,
                num_terms=len(env.task.term_names),
            )
            for _ in range(2)
        ]
        # Device counters: +1 when the actor starts writing a buffer (the race test reads them).
        self.versions = torch.zeros(2, dtype=torch.int64, device=device)
        self.policy_ready: Any = None
        self.buffer_ready: list[Any] = [None, None]
        self.buffer_free: list[Any] = [None, None]
        self.actor_gen = torch.Generator(device=device)
        self.actor_gen.manual_seed(cfg.seed * 2 + 1)
        self.learner_gen = torch.Generator(device=device)
        self.learner_gen.manual_seed(cfg.seed * 2 + 2)
        self.update = 0
        self.host_times = {"render_s": 0.0, "obs_s": 0.0, "env_s": 0.0}
        self.last_logits: torch.Tensor | None = None
        self.inject_nan_at = getattr(cfg, "debug_nan_at_update", -1)

    # ---- set-up -------------------------------------------------------------------

    def start(self, start_states: list | None = None) -> None:
        with self.streams.on("actor"):
            self.env.start(self.bufs[0], start_states)
        if self.streams.cuda:
            torch.cuda.synchronize(self.device)

    def sync_actor(self) -> None:
        """Copy the learner's weights into the actor (after loading a checkpoint)."""
        with torch.no_grad():
            for a, b in zip(self.actor.state_dict().values(), self.learner.state_dict().values()):
                a.copy_(b)

    # ---- one update ---------------------------------------------------------------

    def enqueue_update(self) -> Pending:
        cfg, s = self.cfg, self.streams
        u = self.update
        b = u % 2
        train = b if cfg.mode == "sync" else (1 - b if u > 0 else None)
        if not s.cuda and cfg.mode == "async" and self.dist is None:
            return self._update_threaded(u, b, train)
        ev = self._begin_update()
        with s.no_host_sync(getattr(cfg, "sync_guard", True)):
            with s.on("actor"):
                s.wait("actor", self.policy_ready)
                s.wait("actor", self.buffer_free[b])
                s.record("actor", ev["actor_start"])
                buf, actor_checksum = self._act(u, b)
                s.record("actor", ev["actor_end"])
                self.buffer_ready[b] = s.event()
                s.record("actor", self.buffer_ready[b])
            stats = read_versions = None
            with s.on("learner"):
                if train is not None:
                    s.wait("learner", self.buffer_ready[train])
                s.record("learner", ev["learner_start"])
                if train is not None:
                    stats, read_versions = self._learn(u, train)
                    self.buffer_free[train] = s.event()
                    s.record("learner", self.buffer_free[train])
                s.record("learner", ev["learner_end"])
                s.wait("learner", ev["actor_end"])  # the actor is done with its weights
                learner_checksum = self._copy_weights()
                self.policy_ready = s.event()
                s.record("learner", self.policy_ready)
                s.record("learner", ev["done"])
        return self._pending(u, b, train, ev, buf, stats, read_versions,
                             actor_checksum, learner_checksum)  # fmt: skip

    def _update_threaded(self, u: int, b: int, train: int | None) -> Pending:
        """CPU ``async``: PPO on rollout ``train`` in the learner's thread while this thread
        collects rollout ``b``; the weights reach the actor once both are done."""
        ev = self._begin_update()
        result: dict[str, Any] = {}

        def learn() -> None:
            ev["learner_start"].record()
            try:
                if train is not None:
                    result["stats"], result["versions"] = self._learn(u, train)
            except BaseException as exc:  # raised again on the caller's thread
                result["error"] = exc
            ev["learner_end"].record()

        learner = threading.Thread(target=learn, name="gbxcule-learner", daemon=True)
        learner.start()
        try:
            ev["actor_start"].record()
            buf, actor_checksum = self._act(u, b)
            ev["actor_end"].record()
        finally:
            learner.join()
        if "error" in result:
            raise result["error"]
        learner_checksum = self._copy_weights()
        ev["done"].record()
        return self._pending(u, b, train, ev, buf, result.get("stats"), result.get("versions"),
                             actor_checksum, learner_checksum)  # fmt: skip

    # ---- the pieces of an update, shared by both ways of running one ----------------

    def _begin_update(self) -> dict[str, Any]:
        """The update's events, and its host-time counters zeroed."""
        ev = {k: self.streams.event() for k in ("actor_start", "actor_end", "learner_start",
                                                "learner_end", "done")}  # fmt: skip
        self.host_times = {"render_s": 0.0, "obs_s": 0.0, "env_s": 0.0}
        if hasattr(self.env, "render_s"):
            self.env.render_s = 0.0
        return ev

    def _act(self, u: int, b: int) -> tuple[RolloutBuffer, torch.Tensor]:
        """Collect rollout ``b`` (carried on from the other buffer after the first); the
        buffer and the checksum of the weights the actor collected it with."""
        actor_checksum = checksum(self.actor)
        self.versions[b] += 1
        buf = self.bufs[b]
        if u > 0:
            buf.carry_from(self.bufs[1 - b])
        self._collect(buf)
        return buf, actor_checksum

    def _learn(self, u: int, train: int) -> tuple[torch.Tensor, torch.Tensor]:
        """PPO on rollout ``train``: its stats, and the buffer's version before and after
        (equal when nothing rewrote it meanwhile)."""
        v0 = self.versions[train].clone()
        stats = ppo_update(
            self.learner,
            self.optimizer,
            self.bufs[train],
            self.cfg,
            self.learner_gen,
            inject_nan=(u == self.inject_nan_at),
            dist=self.dist,
        )
        return stats, torch.stack([v0, self.versions[train].clone()])

    def _copy_weights(self) -> torch.Tensor:
        """The learner's weights into the actor; the checksum of what was copied."""
        with torch.no_grad():
            for a, p in zip(self.actor.parameters(), self.learner.parameters()):
                a.copy_(p)
        return checksum(self.learner)

    def _pending(self, u, b, train, ev, buf, stats, read_versions, actor_ck, learner_ck):
        self.update += 1
        return Pending(
            update=u,
            buffer=b,
            trained=train,
            events=ev,
            stats=stats,
            episode_stats=buf.episode_stats,
            actor_checksum=actor_ck,
            learner_checksum=learner_ck,
            read_versions=read_versions,
            host={**self.host_times, "render_s": getattr(self.env, "render_s", 0.0)},
        )

    @torch.no_grad()
    def _collect(self, buf: RolloutBuffer) -> None:
        timed = not self.streams.cuda
        for t in range(buf.T):
            t0 = time.perf_counter() if timed else 0.0
            obs = buf.stacked(t)
            if timed:
                self.host_times["obs_s"] += time.perf_counter() - t0
            logits, value = self.actor(obs, buf.features_at(t))
            action = self._sample(logits)
            logp = torch.log_softmax(logits, dim=-1).gather(1, action.unsqueeze(1)).squeeze(1)
            buf.values[t] = value
            buf.actions[t] = action
            buf.logprobs[t] = logp
            t1 = time.perf_counter() if timed else 0.0
            self.env.step(action, buf, t)
            if timed:
                self.host_times["env_s"] += time.perf_counter() - t1
        buf.values[buf.T] = self.actor(buf.stacked(buf.T), buf.features_at(buf.T))[1]
        self.last_logits = logits
        buf.episode_stats.copy_(self.env.task.take_stats())

    def _sample(self, logits: torch.Tensor) -> torch.Tensor:
        """One process: Gumbel-max over this rank's envs. Several ranks: the noise is drawn
        for every global env (the same generator state on every rank) and this rank takes
        its rows, so global env ``g`` gets the same action noise at any world size."""
        if self.dist is None:
            return sample_actions(logits, self.actor_gen)
        lo, n = self.dist.env_lo, logits.shape[0]
        full = logits.new_zeros((self.dist.num_envs_global, logits.shape[1]))
        full[lo : lo + n] = logits
        return sample_actions(full, self.actor_gen)[lo : lo + n]

    # ---- host side ------------------------------------------------------------------

    def finish(self, p: Pending) -> dict[str, Any]:
        """Wait for ``p``'s events and return its numbers (host values)."""
        ev = p.events
        ev["done"].synchronize()
        t_actor = ev["actor_start"].elapsed_time(ev["actor_end"])
        t_learner = ev["learner_start"].elapsed_time(ev["learner_end"])
        t_total = max(
            ev["actor_start"].elapsed_time(ev["done"]),
            ev["learner_start"].elapsed_time(ev["done"]),
        )
        out: dict[str, Any] = {
            "update": p.update,
            "trained": p.trained is not None,
            "actor_ms": t_actor,
            "learner_ms": t_learner,
            "total_ms": t_total,
            "overlap_efficiency": (t_actor + t_learner) / t_total if t_total > 0 else None,
        }
        stats, episode_stats = p.stats, p.episode_stats
        if self.dist is not None:  # the ranks' shares and episode sums, summed (gloo, CPU)
            stats = None if stats is None else self.dist.sum_(stats.to("cpu", torch.float64))
            episode_stats = self.dist.sum_(episode_stats.to("cpu", torch.float64).clone())
        if stats is not None:
            out.update(dict(zip(STAT_NAMES, stats.tolist())))
        n_ep, ret_sum, len_sum, frames_sum, *term_sums = episode_stats.tolist()
        out["episodes"] = int(n_ep)
        out["episode_return"] = ret_sum / n_ep if n_ep else None
        out["episode_length"] = len_sum / n_ep if n_ep else None
        out["episode_frames"] = frames_sum / n_ep if n_ep else None
        for name, total in zip(self.env.task.term_names, term_sums):  # each term's mean part
            out[f"reward/{name}"] = total / n_ep if n_ep else None
        if not self.streams.cuda:
            out["render_ms"] = p.host["render_s"] * 1000.0
            out["obs_ms"] = (p.host["render_s"] + p.host["obs_s"]) * 1000.0
            out["env_ms"] = p.host["env_s"] * 1000.0  # step + task + reset + render
        return out
