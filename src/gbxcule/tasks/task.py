"""A task: the game, where its episodes start, what the agent may press, what it reads
from RAM, how that becomes a reward, and when an episode ends.

    from gbxcule.tasks import BCD, Progress, StepCost, Task, U8

    TASK = Task(
        name="puzzle-score",
        rom="puzzle.gb",                      # relative to this file
        starts=["level1.state", "level2.state"],
        actions=["left", "right", "down", "a", "b", "noop"],
        reads={"score": BCD(0xC0A0, 3), "over": U8(0xC0B0), "lives": U8(0xC0B1)},
        reward={"score": Progress("score", weight=0.01), "time": StepCost(-0.001)},
        terminated=lambda r: r["over"] != 0,   # or: r["lives"] < r.prev["lives"]
        max_steps=2000,
    )

``features`` names reads the policy sees beside the screen (``{"x": 1/255, "map": 1/64}``:
read -> scale; a list means scale 1): a float32 vector a step, a ``Dict`` observation in
the envs and an MLP branch of the built-in PPO's net.

Steps of their own length: an action may carry its own timing (``"a hold=2 frames=60"``
or ``Action("a", hold=2, frames=60)``: held 2 frames, a 60-frame step), and
``step_end=StepEnd(addr_or_symbol, changes=True, min_frames=8)`` ends any step early
after the first frame at whose end that RAM byte changed (or ``equals=V`` /
``not_equals=V``): a menu or a map change is one step, whatever it takes. The frames
each env's step ran are in the envs' infos (``frames``) and the run's ``episode_frames``.

``terminated`` and ``truncated`` are predicates over the reads of this step
(:class:`gbxcule.tasks.runtime.ReadValues`: ``r[name]``, ``r.prev[name]``,
``r.start[name]``, ``r.steps``), returning a bool tensor ``[N]`` on the backend's device;
``max_steps`` truncates as well. Paths are relative to the task file's folder; ``rom``
may also name a bundled game, ``"bundled:quest"`` (``None``: the demo).

Episode starts: ``starts`` is a pool of PyBoy ``.state`` files (none: power-on, then the
boot ROM, as ``boot`` says); each episode draws one from a generator seeded by the run.
``noop_max`` holds the buttons released for a random 0..noop_max steps at an episode's
start, and ``sticky_actions`` repeats the previous step's action with that probability
(the ALE's 0.25 convention): a policy cannot replay one memorised route.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gbxcule.core.actions import ActionCodec, codec_from_buttons, get_codec
from gbxcule.core.step_end import StepEnd
from gbxcule.tasks.expressions import Expression, ExpressionError
from gbxcule.tasks.reads import Read
from gbxcule.tasks.terms import Term, as_term


class TaskError(ValueError):
    """A task that cannot run as written; the message names the field."""


@dataclass(frozen=True)
class Swarm:
    """Swarm resets on a milestone (pokemonred_puffer's): every ``every`` steps, if some
    envs have ``reached`` the milestone (a predicate over the reads, like ``terminated``)
    and others have not, each env that has not becomes a copy of the one that has with
    the highest episode return so far (its machine and task buffers, one launch). The
    copied envs start a new stretch of experience there (their frame stacks blank)."""

    reached: Callable[[Any], Any] | str
    every: int = 128

    def __post_init__(self) -> None:
        if isinstance(self.reached, str):
            object.__setattr__(self, "reached", _expression("swarm.reached", self.reached))
        if not callable(self.reached):
            raise TaskError(
                f"Swarm.reached must be a predicate over the reads, got {self.reached!r}"
            )
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise TaskError(f"Swarm.every must be an int >= 1, got {self.every!r}")


@dataclass(frozen=True)
class Task:
    name: str
    reads: Mapping[str, Read]
    reward: Mapping[str, Any]  # name -> Term, or a read's name (Progress of it)
    rom: str | Path | None = None
    starts: Sequence[str | Path] = ()
    actions: str | Sequence[str] = "pokemonred_puffer_v1"  # a codec name or button combos
    terminated: Callable[[Any], Any] | str | None = None  # str: an Expression (expressions.py)
    truncated: Callable[[Any], Any] | str | None = None
    max_steps: int = 1000
    frames_per_step: int = 24
    release_after_frames: int = 8
    sticky_actions: float = 0.0
    noop_max: int = 0
    features: Mapping[str, float] | Sequence[str] = ()  # reads the policy sees beside pixels
    swarm: Swarm | None = None
    step_end: StepEnd | None = None  # core/step_end.py: a step ends early on a RAM byte
    description: str = ""
    base_dir: Path | None = field(default=None, compare=False)  # where relative paths start
    source: Any = field(default=None, compare=False, repr=False)  # load.TaskSource

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TaskError(f"a task needs a name, got {self.name!r}")
        reads = dict(self.reads)
        for key, read in reads.items():
            if not isinstance(read, Read):
                raise TaskError(f"read {key!r} must be a Read (U8, U16, BCD, ...), got {read!r}")
        object.__setattr__(self, "reads", reads)
        terms = {k: as_term(k, t) for k, t in dict(self.reward).items()}
        if not terms:
            raise TaskError(f"task {self.name!r} has no reward terms")
        for key, term in terms.items():
            for read in term.watches:
                if read not in reads:
                    raise TaskError(
                        f"reward term {key!r} watches read {read!r}, which the task does not "
                        f"define; reads: {', '.join(reads) or 'none'}"
                    )
        object.__setattr__(self, "reward", terms)
        features = self.features
        scales = dict(features) if isinstance(features, Mapping) else {f: 1.0 for f in features}
        for name, scale in scales.items():
            if name not in reads:
                raise TaskError(f"feature {name!r} is not one of the task's reads")
            if (
                isinstance(scale, bool)
                or not isinstance(scale, (int, float))
                or not math.isfinite(scale)
            ):
                raise TaskError(
                    f"feature {name!r}: its scale must be a finite number, got {scale!r}"
                )
        object.__setattr__(self, "features", {k: float(v) for k, v in scales.items()})
        object.__setattr__(self, "starts", tuple(self.starts))
        from gbxcule.core.actions import MAX_STEP_FRAMES

        _positive_int("max_steps", self.max_steps, most=2**31 - 1)  # an int32 count per env
        _positive_int("frames_per_step", self.frames_per_step, most=MAX_STEP_FRAMES)
        release = self.release_after_frames
        if (
            isinstance(release, bool)
            or not isinstance(release, int)
            or not (1 <= release <= self.frames_per_step)
        ):
            raise TaskError(
                f"release_after_frames must be an int in 1..frames_per_step "
                f"({self.frames_per_step}), got {release!r}"
            )
        if not 0.0 <= float(self.sticky_actions) < 1.0:
            raise TaskError(f"sticky_actions must be in [0, 1), got {self.sticky_actions}")
        if (
            isinstance(self.noop_max, bool)
            or not isinstance(self.noop_max, int)
            or self.noop_max < 0
        ):
            raise TaskError(f"noop_max must be an int >= 0, got {self.noop_max!r}")
        if self.noop_max and 0 not in self.codec.masks:
            raise TaskError("noop_max needs an action that presses nothing: add 'noop' to actions")
        if self.step_end is not None and not isinstance(self.step_end, StepEnd):
            raise TaskError(
                f"step_end must be a StepEnd(where, changes=True | equals=V | not_equals=V), "
                f"got {self.step_end!r}"
            )
        from gbxcule.core.actions import check_step_timing

        codec = self.codec  # (its own error names the task)
        try:
            check_step_timing(codec, self.frames_per_step, self.release_after_frames, self.step_end)
        except ValueError as exc:
            raise TaskError(f"task {self.name!r}: {exc}") from None
        if self.swarm is not None and not isinstance(self.swarm, Swarm):
            raise TaskError(f"swarm must be a Swarm(reached=..., every=...), got {self.swarm!r}")
        for key in ("terminated", "truncated"):
            fn = getattr(self, key)
            if isinstance(fn, str):
                object.__setattr__(self, key, fn := _expression(key, fn))
            if fn is not None and not callable(fn):
                raise TaskError(f"{key} must be a predicate over the reads, got {fn!r}")
        predicates = {"terminated": self.terminated, "truncated": self.truncated}
        if self.swarm is not None:
            predicates["swarm.reached"] = self.swarm.reached
        for key, fn in predicates.items():
            if not isinstance(fn, Expression):
                continue
            unknown = sorted(fn.reads - set(reads))
            if unknown:
                raise TaskError(
                    f"task {self.name!r} {key} {fn.text!r} reads {', '.join(map(repr, unknown))}, "
                    f"which the task does not define; reads: {', '.join(reads) or 'none'}"
                )
        from gbxcule.games import GAMES, bundled_name

        game = bundled_name(self.rom)
        if game is not None and game not in GAMES:
            raise TaskError(
                f"task {self.name!r} rom: no bundled game {game!r}; bundled games: "
                f"{', '.join(GAMES)}"
            )

    @property
    def terms(self) -> dict[str, Term]:
        return dict(self.reward)  # type: ignore[arg-type]

    @property
    def codec(self) -> ActionCodec:
        """The action list as a codec; button lists travel as their codec name."""
        try:
            if isinstance(self.actions, str):
                return get_codec(self.actions)
            return codec_from_buttons(self.actions)
        except ValueError as exc:
            raise TaskError(f"task {self.name!r} actions: {exc}") from None

    @property
    def timed(self) -> bool:
        """Whether its steps vary in length (timed actions or a ``step_end``)."""
        return self.step_end is not None or self.codec.timed

    @property
    def action_codec(self) -> str:
        return self.codec.name

    def path(self, p: str | Path) -> Path:
        p = Path(p)
        return p if p.is_absolute() or self.base_dir is None else self.base_dir / p

    def rom_path(self, override: str | Path | None = None) -> Path:
        """The ROM: ``override``, else the task's own: a path, ``"bundled:NAME"`` (a bundled
        game, :mod:`gbxcule.games`) or None (the bundled demo)."""
        from gbxcule.games import bundled_name, bundled_rom_path

        if override is not None:
            return Path(override)
        name = bundled_name(self.rom)
        if name is None:
            return self.path(self.rom)  # type: ignore[arg-type]
        try:
            return bundled_rom_path(name)
        except ValueError as exc:
            raise TaskError(f"task {self.name!r} rom: {exc}") from None

    def start_paths(self, override: str | Path | None = None) -> list[Path]:
        """The start states: ``override``, else the task's: paths, or ``"bundled:GAME/NAME"``
        (a bundled game's named start, made on first use: :mod:`gbxcule.games`)."""
        from gbxcule.games import BUNDLED_PREFIX, bundled_start_path

        if override is not None:
            return [Path(override)]
        out = []
        for p in self.starts:
            if isinstance(p, str) and p.startswith(BUNDLED_PREFIX):
                try:
                    out.append(bundled_start_path(p[len(BUNDLED_PREFIX) :]))
                except ValueError as exc:
                    raise TaskError(f"task {self.name!r} starts: {exc}") from None
            else:
                out.append(self.path(p))
        return out


def _expression(key: str, text: str) -> Expression:
    try:
        return Expression(text)
    except ExpressionError as exc:
        raise TaskError(f"{key}: {exc}") from None


def _positive_int(name: str, value: Any, *, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise TaskError(f"{name} must be an int in 1..{most}, got {value!r}")
    return value
