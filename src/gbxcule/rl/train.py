"""The training loop: a run directory, the engine, metrics, checkpoints, fail-fast, resume.

:func:`train` creates a run (or reopens one with ``resume``), runs updates until the
step or time budget is spent, appends one metrics record per update and saves
``checkpoints/latest.pt`` after each (``update_XXXXXX.pt`` every ``checkpoint_every``).
On resume the last checkpoint's update index is the next one; metrics records at or
after it are dropped first (so indices stay continuous, without duplicates), and every
env starts a fresh episode from the checkpoint's start-state cache.

Any exception inside the loop (a non-finite loss included) writes a fail-fast bundle
and raises :class:`TrainingFailed` naming it.

Under ``torchrun`` (:mod:`gbxcule.rl.distributed`) every rank runs this loop on its own
envs and device; rank 0 owns the run directory (it creates or opens it and broadcasts
the config, the path and the checkpoint), writes metrics (env steps and SPS summed over
the ranks) and checkpoints holding every rank's RNG state and start states. A resumed
run must have the world size it was trained with. A dead rank makes its peers'
collectives fail (or torchrun SIGTERMs them); the lowest survivor writes the bundle
naming the dead rank.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from gbxcule.rl import distributed, schemas
from gbxcule.rl.agent import check_policy_fits, policy_fit
from gbxcule.rl.async_ppo import Engine
from gbxcule.rl.experiment import Run, check_run_inputs, newest_valid_checkpoint, write_json
from gbxcule.rl.failfast import NonFiniteError, check_tensor, write_failure_bundle
from gbxcule.rl.models import ConvPolicy, resolve_precision
from gbxcule.rl.monitor import Monitor
from gbxcule.rl.rollout import make_env
from gbxcule.rl.schemas import TrainConfig
from gbxcule.tasks.load import check_overrides, load_run_task, load_task, run_task_sha256
from gbxcule.tasks.task import TaskError


class TrainingFailed(RuntimeError):
    def __init__(self, bundle: Path | None, cause: BaseException) -> None:
        where = bundle if bundle is not None else "written by another rank"
        super().__init__(f"training failed ({type(cause).__name__}: {cause}); bundle: {where}")
        self.bundle = bundle
        self.cause = cause


def build_model(cfg: TrainConfig, num_actions: int, num_features: int = 0) -> ConvPolicy:
    channels = tuple(cfg.channels)
    precision = resolve_precision(cfg.precision, cfg.device)
    return ConvPolicy(
        num_actions, cfg.stack, cfg.obs_format, channels, cfg.hidden, num_features, precision
    )


def _rng_state(engine: Engine) -> dict[str, Any]:
    out = {
        "torch": torch.get_rng_state(),
        "actor_gen": engine.actor_gen.get_state(),
        "learner_gen": engine.learner_gen.get_state(),
        # the task's draws: episode starts, sticky actions, no-op prefixes
        "task_gen": engine.env.session.runtime.gen.get_state(),
    }
    if torch.cuda.is_available():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def _set_rng_state(engine: Engine, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    engine.actor_gen.set_state(state["actor_gen"])
    engine.learner_gen.set_state(state["learner_gen"])
    if "task_gen" in state:  # checkpoints from before tasks had their own generator lack it
        engine.env.session.runtime.gen.set_state(state["task_gen"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _check_hot(engine: Engine) -> None:
    """Contracts of the hot tensors, checked once before the loop."""
    buf, cfg = engine.bufs[0], engine.cfg
    n, frame = engine.env.num_envs, buf.frame
    slots = cfg.stack + cfg.num_steps
    check_tensor(
        "frames", buf.frames, shape=(slots, n, *frame), dtype=torch.uint8, device=engine.device
    )
    check_tensor("actions", buf.actions, dtype=torch.int64, device=engine.device)
    logits, value = engine.actor(buf.stacked(0), buf.features_at(0))
    check_tensor("logits", logits, shape=(n, engine.actor.num_actions), dtype=torch.float32)
    check_tensor("value", value, shape=(n,), dtype=torch.float32)


def train(
    cfg: TrainConfig | None = None,
    *,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    minutes: float | None = None,
    total_steps: int | None = None,
    on_update: Callable[[dict[str, Any]], None] | None = None,
    argv: list[str] | None = None,
) -> Run:
    """Train; returns the run. With ``resume``, ``total_steps`` extends the run's step
    budget and ``minutes`` sets its wall budget for this invocation, both written into
    the run's config.json (a resumed run keeps its config otherwise). Under torchrun,
    every rank calls this with the same arguments."""
    ctx = distributed.setup(_timeout_s(cfg, resume))
    finished = False
    try:
        distributed.install_sigterm(ctx)
        budget = {"minutes": minutes, "total_steps": total_steps}
        run = _train(ctx, cfg, out, resume, budget, on_update, argv)
        finished = True
        return run
    finally:
        distributed.teardown(ctx, finished=finished)


def _timeout_s(cfg: TrainConfig | None, resume: str | Path | None) -> float:
    if cfg is not None:
        return cfg.dist_timeout_s
    if resume is not None and (Path(resume) / "config.json").is_file():
        return Run.open(resume).config().dist_timeout_s
    return TrainConfig.dist_timeout_s


def _on_main(ctx: distributed.DistContext, fn: Callable[[], Any]) -> Any:
    """``fn()`` on rank 0, its result (or its exception) on every rank."""
    result: Any = None
    if ctx.is_main:
        try:
            result = ("ok", fn())
        except Exception as exc:  # every rank raises it, none waits for a broadcast
            result = ("error", exc)
    kind, value = ctx.broadcast(result)
    if kind == "error":
        raise value
    return value


def _resolve_config(ctx, cfg, out, resume, budget, held: list) -> dict:
    if resume is not None:
        run = Run.open(resume)
        held.append(run.hold_writer())  # before anything of the run is touched
        run.remove_stale_temp_files()  # a kill -9 mid-write leaves one; never read
        cfg = run.config()
        distributed.check_world_size(cfg.world_size, ctx, f"run {run.path}")
        changes = {k: v for k, v in budget.items() if v is not None}
        trained = max((int(r.get("env_steps", 0)) for r in run.metrics()), default=0)
        if 0 < changes.get("total_steps", 0) < trained:
            raise ValueError(
                f"{run.path.name} has trained {trained:,} env steps; --total-steps "
                f"{changes['total_steps']:,} is fewer (the run is left as it was)"
            )
        if len(changes) == 1:  # the budget given governs: steps or minutes
            other = "minutes" if "total_steps" in changes else "total_steps"
            changes[other] = 0
        if changes:  # the run's budget, extended: recorded in its config
            cfg = dataclasses.replace(cfg, **changes).check()
            write_json(run.path / "config.json", cfg.to_json())
    else:
        if cfg is None or out is None:
            raise ValueError("train() needs cfg and out, or resume")
        # the run records where its files are, not where they were from this shell
        rom, state = (None if p is None else str(Path(p).resolve()) for p in (cfg.rom, cfg.state))
        precision = resolve_precision(cfg.precision, cfg.device)  # recorded as chosen
        cfg = dataclasses.replace(
            cfg, world_size=ctx.world_size, rom=rom, state=state, precision=precision
        )
    return cfg.check().to_json()


def _open_run(ctx, cfg: TrainConfig, out, resume, infos) -> tuple[str, dict | None]:
    if resume is not None:
        run = Run.open(resume)
        task = load_run_task(run.path)
        check_run_inputs(run, cfg, task)  # before anything of the run is trimmed
        ckpt = None
        if any((run.path / "checkpoints").glob("*.pt")):
            path, ckpt, skipped = newest_valid_checkpoint(run.path)
            for problem in skipped:  # a file cut short by a crash: the one before it
                print(f"gbxcule train: warning: {problem}; resuming from {path}", file=sys.stderr)
        if ckpt is not None:  # checked before the run's metrics are trimmed to it
            fit = policy_fit(cfg, task, run_task_sha256(run.path))
            check_policy_fits(ckpt, fit, path)
            distributed.check_world_size(
                ckpt.get("world_size", 1), ctx, f"the checkpoint of {run.path}"
            )
            run.trim_metrics(int(ckpt["update"]))
        else:
            run.trim_metrics(0)
        return str(run.path), ckpt
    task = check_overrides(load_task(cfg.task), cfg.rom, cfg.state)
    rom = task.rom_path(cfg.rom)
    starts = [str(p) for p in task.start_paths(cfg.state)]
    for what, p in [("ROM", rom), *(("start state", s) for s in starts)]:
        if not Path(p).is_file():
            raise TaskError(f"task {task.name!r}: its {what} {p} does not exist")
    extra = {"world_size": ctx.world_size, "dist_backend": ctx.backend, "ranks": infos}
    return str(Run.create(out, cfg, rom, starts, task, meta_extra=extra).path), None


def _checkpoint(engine, run, ctx, cfg, env_steps, rank_states, score=None) -> None:
    rngs = ctx.all_gather(_rng_state(engine))  # every rank's RNG state, saved by rank 0
    if not ctx.is_main:
        return
    ranks = [
        {"rank": r, "rng": rng, "start_states": states}
        for r, (rng, states) in enumerate(zip(rngs, rank_states))
    ]
    run.save_checkpoint(
        {
            "update": engine.update,
            "env_steps": env_steps,
            "model": engine.learner.state_dict(),
            "model_spec": engine.learner.spec(),
            "optimizer": engine.optimizer.state_dict(),
            "rng": rngs[0],
            "start_states": rank_states[0],
            "world_size": ctx.world_size,
            "ranks": ranks,
            "config": cfg.to_json(),
            "task": cfg.task,
            "task_sha256": run_task_sha256(run.path),
        },
        cfg.checkpoint_every,
        keep=cfg.keep_checkpoints,
        score=score,
    )


def _train(ctx, cfg, out, resume, budget, on_update, argv) -> Run:
    held: list = []  # rank 0's writer lock on the run, for the whole of training
    try:
        return _train_held(ctx, cfg, out, resume, budget, on_update, argv, held)
    finally:
        for lock in held:
            if lock is not None:
                lock.close()


def _train_held(ctx, cfg, out, resume, budget, on_update, argv, held: list) -> Run:
    resolved = _on_main(ctx, lambda: _resolve_config(ctx, cfg, out, resume, budget, held))
    cfg = TrainConfig.from_json(resolved)
    device = ctx.device_for(cfg.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {cfg.device}: there is no CUDA device here (Torch sees none)")
    ctx.set_envs(cfg.num_envs)
    infos = ctx.all_gather(distributed.rank_info(ctx, device, cfg.num_envs))
    path, ckpt = _on_main(ctx, lambda: _open_run(ctx, cfg, out, resume, infos))
    run = Run(path)
    if ctx.is_main and not held:  # a new run: nobody else knows its name yet
        held.append(run.hold_writer())
    task = load_run_task(run.path)
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    env_cfg = dataclasses.replace(cfg, device=str(device))
    env = None
    try:  # until the first update: a new run that cannot start leaves nothing behind
        env = make_env(task, env_cfg, cfg.env_backend, env_offset=ctx.env_lo)
        model = build_model(cfg, task.codec.num_actions, len(task.features)).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, eps=1e-5)
        engine = Engine(cfg, env, model, optimizer, device, dist=ctx)
        env_steps, start_states = 0, None
        if ckpt is not None:
            mine = ckpt["ranks"][ctx.rank] if "ranks" in ckpt else ckpt
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            _set_rng_state(engine, mine["rng"])
            engine.sync_actor()
            engine.update = int(ckpt["update"])
            env_steps = int(ckpt["env_steps"])
            start_states = mine["start_states"]
        emulator_sps = env.emulator_sps(cfg.num_steps, seed=cfg.seed) * ctx.world_size
        engine.start(start_states)
        rank_states = ctx.all_gather(env.start_states())
    except BaseException:
        if env is not None:
            env.backend.close()
        if resume is None and ctx.is_main and not run.metrics():
            for lock in held:
                lock.close()
            held.clear()
            shutil.rmtree(run.path, ignore_errors=True)
        raise
    monitor = None
    if ctx.is_main:
        monitor = Monitor(run.path, cfg, tensorboard=cfg.tensorboard, wandb=cfg.wandb,
                          media_every=cfg.media_every)  # fmt: skip
    if ctx.is_main:
        print(
            f"gbxcule train: the emulator alone runs {emulator_sps:,.0f} env-steps/s here "
            f"({cfg.num_envs * ctx.world_size} envs, random actions, observations rendered); "
            "metrics' vs_emulator is training's share of it",
            file=sys.stderr,
        )
    try:
        _check_hot(engine)
        _loop(engine, run, ctx, cfg, env_steps, rank_states, monitor, on_update, emulator_sps)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        raise _fail(engine, run, ctx, cfg, infos, exc, argv) from exc
    finally:
        env.backend.close()
        if monitor is not None:
            monitor.close()
    return run


def _loop(engine, run, ctx, cfg, env_steps, rank_states, monitor, on_update, emu_sps) -> None:
    """Updates until the step or wall budget is spent (the ranks stop together)."""
    steps_per_update = cfg.num_envs * cfg.num_steps * ctx.world_size
    if cfg.total_steps > 0 and env_steps >= cfg.total_steps and ctx.is_main:
        print(
            f"gbxcule train: {run.path.name} has trained its {cfg.total_steps:,} env steps; "
            "pass --total-steps with a larger number (or --minutes) to go on",
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    start_steps = env_steps
    while True:
        done = cfg.total_steps > 0 and env_steps >= cfg.total_steps
        late = cfg.minutes > 0 and time.perf_counter() - t0 >= cfg.minutes * 60
        if ctx.any(done or late):  # the ranks stop at the same update
            return
        distributed.maybe_kill_self(ctx, engine.update)
        if cfg.anneal_lr and cfg.total_steps > 0:
            for group in engine.optimizer.param_groups:
                group["lr"] = (1.0 - env_steps / cfg.total_steps) * cfg.lr
        tu = time.perf_counter()
        pending = engine.enqueue_update()
        numbers = engine.finish(pending)
        wall = time.perf_counter() - tu
        if numbers.get("nonfinite"):
            raise NonFiniteError(f"update {pending.update}: non-finite loss or logits")
        env_steps += steps_per_update
        elapsed = time.perf_counter() - t0
        record = {
            "schema": schemas.METRICS_SCHEMA,
            "run_id": run.run_id,
            "time": time.time(),
            "wall_s": wall,
            "env_steps": env_steps,
            "sps": steps_per_update / wall,  # every rank's env steps
            "emulator_sps": emu_sps,  # the emulator alone on these envs (measured at start)
            "vs_emulator": steps_per_update / wall / emu_sps,
            "world_size": ctx.world_size,
            "elapsed_s": elapsed,
            "eta_s": _eta(cfg, env_steps - start_steps, env_steps, elapsed),
            **numbers,
        }
        if monitor is not None:
            monitor.add_recent(record)
            run.append_metrics(record)
            monitor.log(record)
            frames = engine.bufs[pending.buffer].frames
            monitor.media(int(record["update"]) + 1, env_steps, frames)
        score = record.get("episode_return_recent") if monitor is not None else None
        _checkpoint(engine, run, ctx, cfg, env_steps, rank_states, score)
        if on_update is not None and ctx.is_main:
            on_update(record)


def _eta(cfg: TrainConfig, done_here: int, env_steps: int, elapsed: float) -> float | None:
    """Seconds left of this invocation's budget (None before the first update)."""
    if cfg.minutes > 0:
        return max(cfg.minutes * 60 - elapsed, 0.0)
    if cfg.total_steps > 0 and done_here > 0:
        return max(cfg.total_steps - env_steps, 0) * elapsed / done_here
    return None


def _fail(engine, run, ctx, cfg, infos, exc, argv) -> TrainingFailed:
    """Write the bundle (on the rank that should) and return the error to raise."""
    distributed.ignore_sigterm(ctx)
    report, write = distributed.classify_failure(ctx, infos, exc)
    bundle = None
    if write:
        buf = engine.bufs[(engine.update - 1) % 2]
        tensors = {
            "obs": buf.obs[-1],
            "actions": buf.actions.T,
            "rewards": buf.rewards.T,
            "logits": engine.last_logits,
        }
        failed = getattr(report, "ranks", None)
        bundle = write_failure_bundle(
            run.path,
            report,
            update=engine.update - 1,
            config=cfg.to_json(),
            tensors=tensors,
            argv=argv,
            extra={
                "rank": ctx.rank,
                "world_size": ctx.world_size,
                "failed_ranks": failed if failed is not None else [ctx.rank],
            },
        )
    return TrainingFailed(bundle, report)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def progress_line(record: dict[str, Any]) -> str:
    ret = record.get("episode_return_recent", record.get("episode_return"))
    ret_s = "-" if ret is None else f"{ret:.3f}"
    return (
        f"update {record['update']:5d} | steps {record['env_steps']:,} | "
        f"SPS {record['sps']:,.0f}{_share(record)} | return {ret_s} | overlap "
        f"{record['overlap_efficiency'] or 0:.2f} | {_clock(record.get('elapsed_s'))} "
        f"elapsed, ETA {_clock(record.get('eta_s'))}"
    )


def _share(record: dict[str, Any]) -> str:
    share = record.get("vs_emulator")
    return "" if share is None else f" ({share:.2f}x emulator)"


def print_progress(record: dict[str, Any], stream: Any = None) -> None:
    """A live line on a terminal; in a log file (not a TTY) one line per update."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        stream.write("\r" + progress_line(record) + "   ")
    else:
        stream.write(progress_line(record) + "\n")
    stream.flush()
