"""L4: a trained policy plays identical episodes on our backend and on PyBoy (both ways),
and a difference is caught at its step with a repro bundle."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.cli import main
from gbxcule.demo import game
from gbxcule.rl.agent import load_policy
from gbxcule.rl.l4 import (
    compare_backends,
    compare_policy,
    get_reference,
    make_backends,
    mean_ci,
    t_cdf,
    t_ppf,
    tost,
)
from gbxcule.rl.l4_bench import summarize, write_report
from gbxcule.rl.schemas import TrainConfig
from gbxcule.rl.train import train
from gbxcule.tasks import load_task

pytestmark = pytest.mark.l4

TINY = dict(num_envs=4, num_steps=8, total_steps=64, minibatch_size=16, update_epochs=1, threads=1)


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    return train(TrainConfig(**TINY), out=tmp_path_factory.mktemp("runs"))


def test_student_t_matches_closed_forms_and_tables():
    assert t_cdf(1.0, 1) == pytest.approx(0.75, abs=1e-12)  # Cauchy
    for t in (-3.0, -0.4, 0.0, 0.7, 2.5):  # df 2: 1/2 + t / (2 sqrt(2 + t^2))
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-12)
    assert t_cdf(2.228, 10) == pytest.approx(0.975, abs=2e-4)  # t table
    assert t_cdf(1.96, 1e7) == pytest.approx(0.975, abs=1e-4)  # -> normal
    assert t_ppf(0.95, 10) == pytest.approx(1.8125, abs=1e-3)
    assert t_cdf(t_ppf(0.3, 7.5), 7.5) == pytest.approx(0.3, abs=1e-9)  # non-integer df


def test_tost_and_confidence_intervals():
    rng = np.random.default_rng(0)
    a = 3 + rng.normal(0, 0.2, 10)
    same = tost(a, a + rng.normal(0, 0.05, 10), margin=0.5)
    assert same["equivalent"] and same["ci_lo"] > -0.5 and same["ci_hi"] < 0.5
    apart = tost(a, a + 1.0, margin=0.5)
    assert not apart["equivalent"] and apart["p"] > 0.5
    exact = tost([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], margin=0.5)  # zero variance: exact
    assert exact["equivalent"] and exact["p"] == 0.0 and exact["diff"] == 0.0
    m, lo, hi = mean_ci([1.0, 2.0, 3.0])
    assert (m, lo, hi) == pytest.approx(
        (2.0, 2.0 - 4.303 / math.sqrt(3), 2.0 + 4.303 / math.sqrt(3)), abs=2e-3
    )


def test_policy_trained_on_ours_plays_identically_on_pyboy_oracle_and_stock(warp_run, tmp_path):
    for ref in ("oracle", "stock"):
        eps = compare_policy(warp_run.path, reference=ref, episodes=2, bundle_root=tmp_path)
        assert [e.identical for e in eps] == [True, True], [e.first_diff for e in eps]
        assert all(e.ours_length == e.pyboy_length == 100 for e in eps)
        assert [e.sample_seed for e in eps] == [0, 1]
    assert not list(tmp_path.iterdir())  # no bundle


# what a run learned and saw, update by update (not its timings or names)
LEARNED = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "episode_return",
           "episode_length", "episodes", "reward/coins", "env_steps")  # fmt: skip


def test_policy_trained_on_pyboy_plays_identically_on_ours(warp_run, tmp_path):
    run = train(TrainConfig(env_backend="pyboy-mp", **TINY), out=tmp_path)
    assert run.config().env_backend == "pyboy-mp"
    assert len(run.metrics()) == 2
    # the same seed trains the same policy on either backend: the first observation of an
    # episode included (the screen at power-on, history/savestates.md)
    for ours, theirs in zip(warp_run.metrics(), run.metrics(), strict=True):
        assert {k: ours.get(k) for k in LEARNED} == {k: theirs.get(k) for k in LEARNED}
    eps = compare_policy(run.path, reference="oracle", episodes=2, compare_state=False)
    assert all(e.identical and e.actions_identical for e in eps)
    with pytest.raises(ValueError, match="env_backend must be one of"):
        TrainConfig(env_backend="gameboy", **TINY).check()
    with pytest.raises(ValueError, match="env_backend pyboy runs on the CPU"):
        TrainConfig(env_backend="pyboy", device="cuda", **TINY).check()


class _PokedPyBoy(PyBoySingleBackend):
    """PyBoy that adds a coin to env 1's score after its 5th step (a planted divergence)."""

    steps = 0

    def step(self, actions):
        super().step(actions)
        self.steps += 1
        if self.steps == 5:
            score = int(self.read_memory(1, game.W_SCORE, game.W_SCORE + 1)[0])
            self.write_memory(1, game.W_SCORE, (score + 1) & 0xFF)


def test_first_difference_is_reported_at_its_step_with_an_l3_bundle(warp_run, tmp_path):
    spec = load_task("demo-coins")
    rom = spec.rom_path()
    ref = get_reference("oracle")
    ours, plain = make_backends(spec, rom, ref, 2)
    plain.close()
    poked = _PokedPyBoy(rom, num_envs=2, frames_per_step=24, release_after_frames=8)
    model = load_policy(warp_run.path).model
    try:
        eps = compare_backends(model, spec, rom, ours, poked, ref, seed=3, bundle_root=tmp_path)
    finally:
        ours.close()
        poked.close()
    assert eps[0].identical and eps[0].bundle is None
    bad = eps[1]
    assert not bad.identical and bad.first_diff_step == 5 and bad.first_diff_kinds == ["reward"]
    assert bad.pyboy_return == bad.ours_return + 1  # the planted coin, nothing else
    assert any(f"${game.W_SCORE:04X}" in line for line in bad.first_diff)  # the L3 state diff
    bundle = tmp_path / bad.bundle.split("/")[-1]
    names = {p.name for p in bundle.iterdir()}
    assert {"actions.npy", "ref_state.json", "dut_state.json", "diff.txt", "repro.sh"} <= names
    assert {"ref_frame.npy", "dut_frame.npy", "metadata.json"} <= names
    assert np.load(bundle / "actions.npy").shape == (5, 1)
    meta = json.loads((bundle / "metadata.json").read_text())
    assert meta["l4_episode"] == 1 and meta["config"]["steps"] == 5
    assert "--ref=pyboy" in (bundle / "repro.sh").read_text()


def test_cli_compares_a_run_and_exits_zero(warp_run, tmp_path, capsys):
    out = tmp_path / "eps.jsonl"
    rc = main([
        "l4", str(warp_run.path), "--reference", "oracle", "--episodes", "2",
        "--no-state", "--jsonl", str(out), "--bundles", str(tmp_path / "b"),
    ])  # fmt: skip
    assert rc == 0, capsys.readouterr().out
    assert "L4 PASS" in capsys.readouterr().out
    assert [json.loads(line)["identical"] for line in out.read_text().splitlines()] == [True] * 2


def test_report_counts_tost_and_plot(tmp_path):
    recs = []
    for direction in ("warp", "pyboy-mp"):
        for seed in (1, 2, 3):
            for ep in range(2):
                r = float(seed + ep)
                recs.append({
                    "trained_on": direction, "train_seed": seed, "reference": "oracle",
                    "train_steps": 64, "train_s": 1.0, "eval_device": "cpu",
                    "episode": ep, "ours_return": r, "pyboy_return": r,
                    "identical": not (direction == "warp" and seed == 2 and ep == 1),
                    "actions_identical": True, "first_diff_step": 7, "bundle": "b",
                })  # fmt: skip
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    summary = write_report(tmp_path)
    groups = {g["trained_on"]: g for g in summary["groups"]}
    assert groups["warp"]["identical"] == 5 and groups["pyboy-mp"]["identical"] == 6
    assert groups["warp"]["divergent"][0]["train_seed"] == 2
    welch = groups["warp"]["tost"]  # per-seed means 1.5, 2.5, 3.5 on both sides
    assert welch["diff"] == 0.0 and welch["df"] == pytest.approx(4.0)
    p = 1.0 - t_cdf(0.5 / math.sqrt(2 / 3), 4.0)  # spread across seeds: not shown equivalent
    assert welch["p"] == pytest.approx(p) and not welch["equivalent"]
    assert groups["warp"]["tost_paired"]["equivalent"]  # paired: every difference 0, exact
    assert groups["warp"]["per_seed"][2] == {"ours": 2.5, "pyboy": 2.5}
    assert "11 of 12 episodes identical" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "returns_per_seed.png").read_bytes()[:4] == b"\x89PNG"
    assert summarize(recs, margin=0.1)["margin"] == 0.1


def test_cli_trains_then_compares(tmp_path, capsys):
    rc = main([
        "l4", "--train", "warp", "--total-steps", "1", "--runs", str(tmp_path / "runs"),
        "--reference", "stock", "--episodes", "1", "--no-state", "--bundles", str(tmp_path / "b"),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0 and "trained on warp" in out and "L4 PASS" in out
    assert main(["l4"]) == 2  # neither a run, --train nor --bench
