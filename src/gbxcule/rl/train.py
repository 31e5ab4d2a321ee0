"""The training loop: a run directory, the engine, metrics, checkpoints, fail-fast, resume.

:func:`train` creates a run (or reopens one with ``resume``), runs updates until the
step or time budget is spent, appends one metrics record per update and saves
``checkpoints/latest.pt`` after each (``update_XXXXXX.pt`` every ``checkpoint_every``).
On resume the last checkpoint's update index is the next one; metrics records at or
after it are dropped first (so indices stay continuous, without duplicates), and every
env starts a fresh episode from the checkpoint's start-state cache.

Any exception inside the loop (a non-finite loss included) writes a fail-fast bundle
and raises :class:`TrainingFailed` naming it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from gbxcule.core.actions import get_codec
from gbxcule.rl import schemas
from gbxcule.rl.async_ppo import Engine
from gbxcule.rl.experiment import Run, load_checkpoint
from gbxcule.rl.failfast import NonFiniteError, check_tensor, write_failure_bundle
from gbxcule.rl.models import ConvPolicy
from gbxcule.rl.rollout import make_env
from gbxcule.rl.schemas import TrainConfig
from gbxcule.rl.tasks import get_task


class TrainingFailed(RuntimeError):
    def __init__(self, bundle: Path, cause: BaseException) -> None:
        super().__init__(f"training failed ({type(cause).__name__}: {cause}); bundle: {bundle}")
        self.bundle = bundle
        self.cause = cause


def build_model(cfg: TrainConfig, num_actions: int) -> ConvPolicy:
    return ConvPolicy(num_actions, cfg.stack, cfg.obs_format, tuple(cfg.channels), cfg.hidden)


def _rng_state(engine: Engine) -> dict[str, Any]:
    out = {
        "torch": torch.get_rng_state(),
        "actor_gen": engine.actor_gen.get_state(),
        "learner_gen": engine.learner_gen.get_state(),
    }
    if torch.cuda.is_available():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def _set_rng_state(engine: Engine, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    engine.actor_gen.set_state(state["actor_gen"])
    engine.learner_gen.set_state(state["learner_gen"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _check_hot(engine: Engine) -> None:
    """Contracts of the hot tensors, checked once before the loop."""
    buf, cfg = engine.bufs[0], engine.cfg
    n, w = engine.env.num_envs, buf.width
    slots = cfg.stack + cfg.num_steps
    check_tensor(
        "frames", buf.frames, shape=(slots, n, 72, w), dtype=torch.uint8, device=engine.device
    )
    check_tensor("actions", buf.actions, dtype=torch.int64, device=engine.device)
    logits, value = engine.actor(buf.stacked(0))
    check_tensor("logits", logits, shape=(n, engine.actor.num_actions), dtype=torch.float32)
    check_tensor("value", value, shape=(n,), dtype=torch.float32)


def train(
    cfg: TrainConfig | None = None,
    *,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    minutes: float | None = None,
    on_update: Callable[[dict[str, Any]], None] | None = None,
    argv: list[str] | None = None,
) -> Run:
    """Train; returns the run. ``minutes`` overrides the config's wall budget for this
    invocation (a resumed run keeps its config otherwise)."""
    if resume is not None:
        run = Run.open(resume)
        run.remove_stale_temp_files()  # a kill -9 mid-write leaves one; never read
        cfg = run.config()
        ckpt = load_checkpoint(run.path) if run.latest_checkpoint() else None
    else:
        if cfg is None or out is None:
            raise ValueError("train() needs cfg and out, or resume")
        cfg.check()
        spec = get_task(cfg.task)
        rom = spec.rom_path(cfg.rom)
        state = cfg.state if cfg.state is not None else spec.state
        run = Run.create(out, cfg, rom, state, spec)
        ckpt = None
    cfg.check()
    spec = get_task(cfg.task)
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device if cfg.device != "cuda" else "cuda:0")
    env = make_env(spec, cfg, cfg.env_backend)
    model = build_model(cfg, get_codec(spec.action_codec).num_actions).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, eps=1e-5)
    engine = Engine(cfg, env, model, optimizer, device)
    env_steps, start_states = 0, None
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        _set_rng_state(engine, ckpt["rng"])
        engine.sync_actor()
        engine.update = int(ckpt["update"])
        env_steps = int(ckpt["env_steps"])
        start_states = ckpt["start_states"]
    run.trim_metrics(engine.update)
    engine.start(start_states)
    start_states = env.start_states()
    budget = cfg.minutes if minutes is None else minutes
    t0 = time.perf_counter()
    try:
        _check_hot(engine)
        while True:
            if cfg.total_steps > 0 and env_steps >= cfg.total_steps:
                break
            if budget > 0 and time.perf_counter() - t0 >= budget * 60:
                break
            if cfg.anneal_lr and cfg.total_steps > 0:
                frac = 1.0 - env_steps / cfg.total_steps
                for group in optimizer.param_groups:
                    group["lr"] = frac * cfg.lr
            tu = time.perf_counter()
            pending = engine.enqueue_update()
            numbers = engine.finish(pending)
            wall = time.perf_counter() - tu
            if numbers.get("nonfinite"):
                raise NonFiniteError(f"update {pending.update}: non-finite loss or logits")
            env_steps += cfg.num_envs * cfg.num_steps
            record = {
                "schema": schemas.METRICS_SCHEMA,
                "run_id": run.run_id,
                "time": time.time(),
                "wall_s": wall,
                "env_steps": env_steps,
                "sps": cfg.num_envs * cfg.num_steps / wall,
                **numbers,
            }
            run.append_metrics(record)
            run.save_checkpoint(
                {
                    "update": engine.update,
                    "env_steps": env_steps,
                    "model": model.state_dict(),
                    "model_spec": model.spec(),
                    "optimizer": optimizer.state_dict(),
                    "rng": _rng_state(engine),
                    "start_states": start_states,
                    "config": cfg.to_json(),
                    "task": cfg.task,
                },
                cfg.checkpoint_every,
            )
            if on_update is not None:
                on_update(record)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        buf = engine.bufs[(engine.update - 1) % 2]
        tensors = {
            "obs": buf.obs[-1],
            "actions": buf.actions.T,
            "rewards": buf.rewards.T,
            "logits": engine.last_logits,
        }
        bundle = write_failure_bundle(
            run.path,
            exc,
            update=engine.update - 1,
            config=cfg.to_json(),
            tensors=tensors,
            argv=argv,
        )
        raise TrainingFailed(bundle, exc) from exc
    finally:
        env.backend.close()
    return run


def progress_line(record: dict[str, Any]) -> str:
    ret = record.get("episode_return")
    ret_s = "-" if ret is None else f"{ret:.3f}"
    return (
        f"update {record['update']:5d} | steps {record['env_steps']:,} | "
        f"SPS {record['sps']:,.0f} | return {ret_s} | overlap "
        f"{record['overlap_efficiency'] or 0:.2f}"
    )


def print_progress(record: dict[str, Any]) -> None:
    sys.stderr.write("\r" + progress_line(record) + "   ")
    sys.stderr.flush()
