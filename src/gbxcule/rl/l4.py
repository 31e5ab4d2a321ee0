"""L4: a trained policy plays the same episodes on our backend and on PyBoy, step by step.

:func:`compare_policy` loads a run's policy (:func:`gbxcule.rl.agent.load_policy`) and
plays ``episodes`` fresh episodes on our backend (CPU or CUDA) and on PyBoy 2.8.1 side by
side. Episode ``e`` samples its actions with a ``torch.Generator`` seeded ``seed + e`` on
*both* sides, and each side's agent sees only its own emulator's frames, so the two
trajectories are the same exactly when the emulators agree on everything the policy
observes. After every step it compares, per episode:

* the frame the agent sees (``uint8 [72, 80]`` shades: ours ``pixels_torch()``, PyBoy's
  ``frame_shades`` downsampled),
* the action each agent chose and the reward of the step,
* with ``compare_state`` (default), the L3 snapshot: registers, VRAM..IE as the CPU reads
  them (minus the reference's ``lockstep_ignore``), serial output, the 160x144 frame.

At an episode's first difference it writes an L3 repro bundle
(:func:`gbxcule.lockstep.write_bundle`: ROM, the actions so far, both states and frames,
diff, ``repro.sh`` re-running that action prefix with ``gbxcule verify``); the episode
then plays on to its end on each side with that side's own actions, so both returns are
reported. Each agent sees its own backend's screen from the first step on: the frame an
episode starts on (the start state's saved screen, or the power-on frame) is the same on
both backends (``history/savestates.md``), and is what training showed.

References (:data:`REFERENCES`): ``oracle`` is our oracle configuration (PyBoy with our
fast boot ROM, sound on; ours ``boot="fast"``), ``stock`` an unmodified ``PyBoy(rom)``
(its boot ROM, palette and sound; ours ``boot="pyboy"``), both compared in full.

Statistics for noisy comparisons: :func:`tost` (two one-sided Welch t-tests at a stated
margin) and :func:`mean_ci`, with the Student t distribution computed here
(:func:`t_cdf`, :func:`t_ppf`; no SciPy).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gbxcule.backends.registry import make_backend
from gbxcule.lockstep import LockstepConfig, compare_snapshots, take_snapshot, write_bundle
from gbxcule.rl.agent import Agent, load_policy, policy_fit
from gbxcule.rl.experiment import Run, check_run_inputs
from gbxcule.tasks.load import load_run_task, run_task_sha256
from gbxcule.tasks.session import TaskSession, backend_options
from gbxcule.tasks.task import Task


@dataclass(frozen=True)
class Reference:
    name: str
    lockstep_ref: str  # its name in gbxcule.backends.registry (the bundle's --ref)
    boot: str  # the boot mode of both sides
    stock: bool


REFERENCES: dict[str, Reference] = {
    "oracle": Reference("oracle", "pyboy", "fast", False),
    "stock": Reference("stock", "pyboy-stock", "pyboy", True),
}


def get_reference(name: str) -> Reference:
    try:
        return REFERENCES[name]
    except KeyError:
        raise ValueError(f"unknown reference {name!r}; known: {', '.join(REFERENCES)}") from None


@dataclass
class EpisodeResult:
    episode: int
    sample_seed: int  # the torch.Generator seed of this episode's actions, on both sides
    reference: str
    ours_return: float
    pyboy_return: float
    ours_length: int
    pyboy_length: int
    actions_identical: bool  # the whole action sequences
    identical: bool  # frames, actions, rewards (and states with compare_state) every step
    first_diff_step: int | None = None  # emulator steps taken when the difference was seen
    first_diff_kinds: list[str] = field(default_factory=list)  # frame/action/reward/state
    first_diff: list[str] = field(default_factory=list)  # the first lines of the diff
    bundle: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class _Side:
    """One emulator with a task runtime and one agent + generator per episode."""

    def __init__(self, session: TaskSession, model: Any, seeds: list[int]) -> None:
        self.session = session
        self.result = session.new_result()
        self.backend = backend = session.backend
        self.n = backend.num_envs
        self.agents = [Agent(model) for _ in range(self.n)]
        self.gens = [torch.Generator().manual_seed(s) for s in seeds]
        self.actions: list[list[int]] = [[] for _ in range(self.n)]
        self.returns = [0.0] * self.n
        self.lengths = [0] * self.n
        self.alive = [True] * self.n

    def begin(self) -> None:
        self.session.start()
        for a in self.agents:
            a.reset()

    def frames(self) -> torch.Tensor:
        """``uint8 [N, 72, 80]`` (a Game Boy Color policy's luma, or ``[N, 72, 80, 3]``
        rgb): what the agents see before the next step."""
        fmt = self.agents[0].obs_format if self.agents else "u8"
        return self.session.observe("u8" if fmt == "packed2" else fmt).cpu()

    def act(self, frames: torch.Tensor) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.int64)  # finished episodes idle on action 0
        rt = self.session.runtime
        feats = rt.features().cpu() if rt.num_features else None
        for e in range(self.n):
            if self.alive[e]:
                f = None if feats is None else feats[e : e + 1]
                action = self.agents[e].act(frames[e : e + 1], generator=self.gens[e], features=f)
                out[e] = int(action[0])
                self.actions[e].append(int(out[e]))
        return out

    def step(self, actions: np.ndarray) -> np.ndarray:
        """Step; an episode's return and length are kept where it ends (the session's
        episode fields). Returns the float rewards of this step (0 when finished)."""
        r = self.session.step(actions, self.result)
        done = r.done.cpu().tolist()
        rewards = r.reward.to(torch.float64).cpu().numpy().copy()
        returns, lengths = r.episode_return.cpu().tolist(), r.episode_length.cpu().tolist()
        for e in range(self.n):
            if not self.alive[e]:
                rewards[e] = 0.0
                continue
            self.returns[e], self.lengths[e] = returns[e], lengths[e]
            if done[e]:
                self.alive[e] = False
        return rewards


def _step_diffs(
    ours: _Side, ref: _Side, e: int, fo: torch.Tensor | None, fr: torch.Tensor | None, what: str
) -> tuple[list[str], list[str]]:
    """(kinds, lines) of the agent-visible differences of episode ``e``."""
    kinds, lines = [], []
    if what == "frame" and fo is not None and fr is not None and not torch.equal(fo[e], fr[e]):
        differ = fo[e] != fr[e]
        ys, xs = torch.nonzero(differ.any(-1) if differ.ndim == 3 else differ, as_tuple=True)
        y, x = int(ys[0]), int(xs[0])
        kinds.append("frame")
        lines.append(
            f"agent frame (72x80): {len(ys)} pixels differ; first at (y={y}, x={x}): "
            f"pyboy {fr[e, y, x].tolist()} ours {fo[e, y, x].tolist()}"
        )
    if what == "action" and ours.actions[e][-1:] != ref.actions[e][-1:]:
        kinds.append("action")
        lines.append(f"action: pyboy {ref.actions[e][-1:]} ours {ours.actions[e][-1:]}")
    return kinds, lines


class _Comparison:
    """The per-episode first-difference bookkeeping, and the bundle writer."""

    def __init__(
        self, rom_path: Path, cfg: LockstepConfig, bundle_root: Path | None, meta: dict
    ) -> None:
        self.rom_path = rom_path
        self.cfg = cfg
        self.bundle_root = bundle_root
        self.meta = meta
        self.first: dict[int, tuple[int, list[str], list[str], str | None]] = {}

    def diverged(self, e: int) -> bool:
        return e in self.first

    def record(
        self, e: int, steps: int, kinds: list[str], lines: list[str], sides: tuple[_Side, _Side]
    ) -> None:
        """Episode ``e`` differs after ``steps`` emulator steps: snapshot both, write a bundle."""
        ours, ref = sides
        r = take_snapshot(ref.backend, e, self.cfg, steps, True)
        d = take_snapshot(ours.backend, e, self.cfg, steps, True)
        state_diffs = compare_snapshots(r, d, self.cfg)
        r, d = dataclasses.replace(r, env=0), dataclasses.replace(d, env=0)  # bundle: 1 env
        bundle = None
        if self.bundle_root is not None:
            actions = np.asarray(ref.actions[e][:steps], dtype=np.int64).reshape(-1, 1)
            cfg = dataclasses.replace(self.cfg, steps=max(steps, 1))
            meta = {**self.meta, "l4_episode": e, "l4_kinds": kinds}
            path = write_bundle(
                self.bundle_root, self.rom_path, actions, cfg, r, d, lines + state_diffs, meta
            )
            bundle = str(path)
        self.first[e] = (steps, kinds, (lines + state_diffs)[:12], bundle)


def compare_backends(
    model: Any,
    spec: Task,
    rom_path: str | Path,
    ours_backend: Any,
    ref_backend: Any,
    reference: Reference,
    *,
    seed: int = 0,
    starts: list[str | Path] | None = None,
    compare_state: bool = True,
    bundle_root: str | Path | None = None,
    meta: dict[str, Any] | None = None,
) -> list[EpisodeResult]:
    """Play one episode per env on both backends (already built, ``num_envs`` each) with
    the same model and per-episode sampling seeds ``seed + e``, each env from the same
    start of the task's pool (``starts`` overrides it) on both; see the module doc."""
    n = ours_backend.num_envs
    if ref_backend.num_envs != n:
        raise ValueError(f"the backends have {n} and {ref_backend.num_envs} envs")
    seeds = [seed + e for e in range(n)]
    ours = _Side(TaskSession(spec, ours_backend, starts=starts, seed=seed), model, seeds)
    ref = _Side(TaskSession(spec, ref_backend, starts=starts, seed=seed), model, seeds)
    dut = "warp-cuda" if "cuda" in type(ours_backend).__name__.lower() else "warp-cpu"
    cfg = LockstepConfig(
        ref=reference.lockstep_ref,
        dut=dut,
        frames_per_step=spec.frames_per_step,
        release_after_frames=spec.release_after_frames,
        codec=spec.action_codec,
        boot=reference.boot,
        ignore=tuple(getattr(ref_backend, "lockstep_ignore", ())),
    )
    cmp = _Comparison(Path(rom_path), cfg, None if bundle_root is None else Path(bundle_root), {
        "l4_reference": reference.name, "ref_backend": cfg.ref, "dut_backend": dut,
        **(meta or {}),
    })  # fmt: skip
    ours.begin()
    ref.begin()
    for t in range(spec.max_steps):
        fo, fr = ours.frames(), ref.frames()
        ao, ar = ours.act(fo), ref.act(fr)
        for e in range(n):
            if cmp.diverged(e) or not ref.alive[e]:
                continue
            kinds, lines = _step_diffs(ours, ref, e, fo, fr, "frame")
            k2, l2 = _step_diffs(ours, ref, e, None, None, "action")
            if kinds or k2:
                cmp.record(e, t, kinds + k2, lines + l2, (ours, ref))
        alive_before = list(ref.alive)
        ro, rr = ours.step(ao), ref.step(ar)
        for e in range(n):
            if cmp.diverged(e) or not alive_before[e]:
                continue
            kinds, lines = [], []
            if ro[e] != rr[e] or ours.alive[e] != ref.alive[e]:
                kinds.append("reward")
                lines.append(
                    f"reward: pyboy {rr[e]} ours {ro[e]}; done: pyboy {not ref.alive[e]} "
                    f"ours {not ours.alive[e]}"
                )
            if compare_state and not kinds:
                r = take_snapshot(ref.backend, e, cfg, t + 1, True)
                d = take_snapshot(ours.backend, e, cfg, t + 1, True)
                if compare_snapshots(r, d, cfg):
                    kinds.append("state")
            if kinds:
                cmp.record(e, t + 1, kinds, lines, (ours, ref))
        if not any(ours.alive) and not any(ref.alive):
            break
    return [_result(e, seeds[e], reference.name, ours, ref, cmp) for e in range(n)]


def _result(
    e: int, sample_seed: int, reference: str, ours: _Side, ref: _Side, cmp: _Comparison
) -> EpisodeResult:
    steps, kinds, lines, bundle = cmp.first.get(e, (None, [], [], None))
    return EpisodeResult(
        episode=e,
        sample_seed=sample_seed,
        reference=reference,
        ours_return=ours.returns[e],
        pyboy_return=ref.returns[e],
        ours_length=ours.lengths[e],
        pyboy_length=ref.lengths[e],
        actions_identical=ours.actions[e] == ref.actions[e],
        identical=steps is None,
        first_diff_step=steps,
        first_diff_kinds=kinds,
        first_diff=lines,
        bundle=bundle,
    )


def make_backends(
    spec: Task, rom_path: str | Path, reference: Reference, episodes: int, device: str = "cpu"
) -> tuple[Any, Any]:
    """(ours, PyBoy) with ``episodes`` envs each, in the reference's boot mode (a Game Boy
    Color game has one: PyBoy's CGB boot ROM, on both)."""
    from gbxcule.core.cartridge import colour_cartridge

    rom = str(rom_path)
    colour = colour_cartridge(Path(rom).read_bytes()[:0x150])
    common = dict(**backend_options(spec, episodes), boot=None if colour else reference.boot)
    if device.startswith("cuda"):
        dev = device if ":" in device else "cuda:0"
        ours = make_backend("warp-cuda", rom, device=dev, **common)
    elif device == "cpu":
        ours = make_backend("warp-cpu", rom, threads=1, **common)
    else:
        raise ValueError(f"device must be cpu or cuda[:N], got {device!r}")
    try:
        ref = make_backend("pyboy", rom, stock=reference.stock, **common)
    except BaseException:
        ours.close()
        raise
    return ours, ref


def compare_policy(
    run_dir: str | Path,
    *,
    reference: str = "oracle",
    episodes: int = 4,
    seed: int = 0,
    device: str = "cpu",
    compare_state: bool = True,
    bundle_root: str | Path | None = None,
) -> list[EpisodeResult]:
    """L4 of a trained run (run dir or checkpoint) against one reference; see the module doc."""
    run = Run.open(run_dir) if Path(run_dir).is_dir() else Run.open(Path(run_dir).parents[1])
    cfg = run.config()
    spec = load_run_task(run.path)
    check_run_inputs(run, cfg, spec)
    rom = spec.rom_path(cfg.rom)
    ref = get_reference(reference)
    model = load_policy(run_dir, fit=policy_fit(cfg, spec, run_task_sha256(run.path))).model
    ours_b, ref_b = make_backends(spec, rom, ref, episodes, device)
    try:
        return compare_backends(
            model,
            spec,
            rom,
            ours_b,
            ref_b,
            ref,
            seed=seed,
            starts=None if cfg.state is None else [cfg.state],
            compare_state=compare_state,
            bundle_root=bundle_root,
            meta={"l4_run": str(run.path), "l4_trained_on": cfg.env_backend},
        )
    finally:
        ours_b.close()
        ref_b.close()


# ---- statistics (no SciPy) ----------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):  # fmt: skip
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` (> 0, not necessarily integer) degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_ppf(p: float, df: float) -> float:
    """The inverse of :func:`t_cdf` (bisection)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def mean_ci(x: Any, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the Student-t confidence interval of the mean of ``x``."""
    x = np.asarray(x, dtype=float)
    m = float(x.mean())
    if len(x) < 2:
        return m, math.nan, math.nan
    se = float(x.std(ddof=1)) / math.sqrt(len(x))
    h = t_ppf(0.5 + level / 2.0, len(x) - 1) * se if se > 0 else 0.0
    return m, m - h, m + h


def tost(a: Any, b: Any, margin: float, alpha: float = 0.05) -> dict[str, Any]:
    """Two one-sided Welch t-tests of |mean(a) - mean(b)| < ``margin``.

    H0: diff <= -margin or diff >= margin; equivalence when both one-sided p-values are
    below ``alpha`` (equivalently, the (1 - 2 alpha) Welch CI of the difference lies inside
    (-margin, margin)). With zero variance in both samples the test is exact: equivalent
    iff |diff| < margin (p 0), else not (p 1)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("TOST needs at least 2 values per sample")
    diff = float(a.mean() - b.mean())
    va, vb = float(a.var(ddof=1)) / len(a), float(b.var(ddof=1)) / len(b)
    se = math.sqrt(va + vb)
    out: dict[str, Any] = {"diff": diff, "margin": margin, "alpha": alpha, "se": se}
    if se == 0.0:
        p = 0.0 if abs(diff) < margin else 1.0
        out.update(df=None, p_lower=p, p_upper=p, ci_lo=diff, ci_hi=diff)
    else:
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb else 1.0
        df = max(df, 1.0)
        p_lower = 1.0 - t_cdf((diff + margin) / se, df)  # H0: diff <= -margin
        p_upper = t_cdf((diff - margin) / se, df)  # H0: diff >= +margin
        h = t_ppf(1.0 - alpha, df) * se
        out.update(df=df, p_lower=p_lower, p_upper=p_upper, ci_lo=diff - h, ci_hi=diff + h)
    out["p"] = max(out["p_lower"], out["p_upper"])
    out["equivalent"] = bool(out["p"] < alpha)
    return out


def tost_paired(a: Any, b: Any, margin: float, alpha: float = 0.05) -> dict[str, Any]:
    """TOST on the paired differences ``a - b`` (one-sample t on the differences): the
    test for the same seeds and episodes played on both emulators. Zero variance: exact."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) < 2:
        raise ValueError("TOST needs at least 2 pairs")
    diff = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(len(d))
    out: dict[str, Any] = {"diff": diff, "margin": margin, "alpha": alpha, "se": se}
    if se == 0.0:
        p = 0.0 if abs(diff) < margin else 1.0
        out.update(df=len(d) - 1, p_lower=p, p_upper=p, ci_lo=diff, ci_hi=diff)
    else:
        df = len(d) - 1
        h = t_ppf(1.0 - alpha, df) * se
        out.update(
            df=df,
            p_lower=1.0 - t_cdf((diff + margin) / se, df),
            p_upper=t_cdf((diff - margin) / se, df),
            ci_lo=diff - h,
            ci_hi=diff + h,
        )
    out["p"] = max(out["p_lower"], out["p_upper"])
    out["equivalent"] = bool(out["p"] < alpha)
    return out
