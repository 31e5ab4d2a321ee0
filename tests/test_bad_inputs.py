"""Bad numbers on the command line and in a training config: each a specific error (exit
code 2, one line naming the value), never a traceback, a silent clamp or a run started."""

from __future__ import annotations

import argparse
import dataclasses
import math

import pytest
import torch

from gbxcule.cli import main
from gbxcule.rl.schemas import TrainConfig

pytestmark = pytest.mark.api

TRAIN = ["train", "--envs", "4", "--steps", "8", "--minibatch", "16", "--total-steps", "64"]


@pytest.mark.parametrize(
    "argv,said",
    [
        (["train", "--threads", "-1"], "threads must be >= 0, got -1"),
        (["train", "--torch-threads", "-1"], "torch_threads must be >= 0, got -1"),
        (["train", "--checkpoint-every", "-1"], "checkpoint_every must be >= 0, got -1"),
        (["train", "--lr", "0"], "lr must be > 0, got 0.0"),
        (["train", "--lr", "nan"], "lr must be > 0, got nan"),
        (["train", "--ent-coef", "-0.5"], "ent_coef must be >= 0, got -0.5"),
        (["train", "--dist-timeout", "0"], "dist_timeout_s must be > 0"),
    ],
)
def test_a_bad_training_number_is_refused_before_a_run_exists(tmp_path, capsys, argv, said):
    assert main([*TRAIN, *argv[1:], "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())


def test_cuda_without_a_gpu_is_refused_before_a_run_exists(tmp_path, capsys):
    if torch.cuda.is_available():  # the statement under test is about a machine without one
        return
    assert main([*TRAIN, "--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "there is no CUDA device here" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv,said",
    [
        (["verify", "x.gb", "--steps", "0"], "--steps: 0 is not a count >= 1"),
        (["verify", "x.gb", "--every", "-1"], "--every: -1 is not a count >= 1"),
        (["eval", "RUN", "--episodes", "-3"], "--episodes: -3 is not a count >= 1"),
        (["l4", "RUN", "--episodes", "0"], "--episodes: 0 is not a count >= 1"),
        ([*TRAIN, "--eval-episodes", "-3"], "--eval-episodes: -3 is not a count >= 0"),
        (["demo", "--seed", str(2**70)], f"seed {2**70} is not below 2**63"),
        (["demo", "--envs", "many"], "--envs: 'many' is not a whole number"),
        (["record", "x.gb", "--scale", "0"], "--scale: 0 is not a count >= 1"),
    ],
)
def test_a_bad_count_is_an_argument_error(capsys, argv, said):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err


def test_envs_that_cannot_fit_are_refused_with_the_numbers(capsys):
    assert main(["demo", "--envs", str(10**9), "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "1,000,000,000 envs need" in err and "GiB free: use fewer envs" in err


@pytest.mark.parametrize(
    "change",
    [
        {"gamma": 1.5},
        {"gae_lambda": -0.1},
        {"clip_coef": 0.0},
        {"max_grad_norm": math.inf},
        {"hidden": 0},
        {"channels": (16, 0)},
        {"vf_coef": -1.0},
        {"minutes": -2.0},
    ],  # fmt: skip
)
def test_a_config_made_in_code_is_checked_the_same(change):
    cfg = dataclasses.replace(TrainConfig(), **change)
    with pytest.raises(ValueError, match=next(iter(change))):
        cfg.check()


def test_env_indices_given_as_a_mask_are_refused_by_both_families():
    """``reset_envs([0, 5])`` on 2 envs: env indices, not a mask (Warp once reset env 1)."""
    from gbxcule.backends.protocol import EnvMaskError
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.backends.warp_vec import WarpVecCpuBackend
    from gbxcule.games import bundled_rom_path

    for cls in (WarpVecCpuBackend, PyBoySingleBackend):
        with cls(str(bundled_rom_path("demo")), num_envs=2) as b:
            b.reset()
            b.capture_start_state(0)
            with pytest.raises(EnvMaskError, match="mask"):
                b.reset_envs([0, 5])
            b.reset_envs([1, 0] if cls is WarpVecCpuBackend else [True, False])  # a mask: fine


def _with_cgb_flag(flag: int) -> bytes:
    from gbxcule.asm.header import build_rom
    from gbxcule.core.cartridge import CGB_FLAG_OFFSET, HEADER_CHECKSUM_OFFSET, header_checksum

    rom = bytearray(build_rom('SECTION "main", ROM0[$0150]\nMain:\n    jr Main\n'))
    rom[CGB_FLAG_OFFSET] = flag
    rom[HEADER_CHECKSUM_OFFSET] = header_checksum(rom)
    return bytes(rom)


def test_color_games_run_on_color_machines_unless_forced_to_dmg(tmp_path, capsys):
    """PyBoy's rule (header bit 7): a Color-only and a Color-enhanced game run on a Game
    Boy Color machine by default; cgb=False forces a DMG, which refuses a Color-only game
    by name and runs a Color-enhanced one."""
    from gbxcule.backends.warp_vec import WarpVecCpuBackend
    from gbxcule.core.cartridge import CartridgeError

    only, enhanced = tmp_path / "only.gb", tmp_path / "enhanced.gb"
    only.write_bytes(_with_cgb_flag(0xC0))
    enhanced.write_bytes(_with_cgb_flag(0x80))
    with pytest.raises(CartridgeError, match=r"Game Boy Color only \(\$C0 at 0x0143\)"):
        WarpVecCpuBackend(str(only), num_envs=1, cgb=False)
    with pytest.raises(ValueError, match="CGB boot ROM"):
        WarpVecCpuBackend(str(only), num_envs=1, boot="fast")
    assert main(["info", str(only)]) == 0
    assert "Game Boy Color only: runs on a Game Boy Color machine" in capsys.readouterr().out
    assert main(["info", str(enhanced)]) == 0
    assert "cgb=False runs it as a DMG" in capsys.readouterr().out
    for path, cgb, colour in ((only, None, True), (enhanced, None, True), (enhanced, False, False)):
        with WarpVecCpuBackend(str(path), num_envs=1, cgb=cgb) as b:
            assert b.cgb is colour and b.boot == ("pyboy" if colour else "fast")
            b.reset()
            b.step([0])


def _typed_options():
    """Every option of every subcommand whose value goes through one of the CLI's checked
    types (a count, a count >= 1, a seed): (command, flag, type name)."""
    from gbxcule.cli import build_parser
    from gbxcule.cli.command import nonnegative_int, positive_int, seed_int

    checked = {nonnegative_int: "count", positive_int: "positive", seed_int: "seed"}
    out = []

    def walk(words: str, parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, p in action.choices.items():
                    walk(f"{words} {name}".strip(), p)
            elif action.option_strings and action.type in checked:
                out.append((words, action.option_strings[0], checked[action.type]))

    walk("", build_parser())
    return out


TYPED = _typed_options()
BAD = {"count": ["-1", "x", "1.5"], "positive": ["0", "-3", "ten"], "seed": ["-1", str(2**64), "s"]}
POSITIONAL = {"verify": ["x.gb"], "eval": ["RUN"], "l4": ["RUN"], "record": ["x.gb"],
              "states": ["x.gb"], "task check": ["T"]}  # fmt: skip


def test_the_typed_options_cover_every_command_that_takes_a_count():
    assert {cmd for cmd, _, _ in TYPED} == {"demo", "eval", "l4", "record", "train", "verify",
                                            "states", "task check"}  # fmt: skip
    assert len(TYPED) >= 20


@pytest.mark.parametrize(
    "command,flag,value",
    [(c, f, v) for c, f, kind in TYPED for v in BAD[kind]],
    ids=lambda x: str(x)[:12],
)
def test_every_typed_option_refuses_bad_values_by_name(capsys, command, flag, value):
    with pytest.raises(SystemExit) as exit_:
        main([*command.split(), *POSITIONAL.get(command, []), f"{flag}={value}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err, err


TRAIN_NUMBERS = {  # TrainConfig fields a user sets, with values check() refuses
    "--threads": ["-2"], "--torch-threads": ["-1"], "--checkpoint-every": ["-5"],
    "--keep-checkpoints": ["-1"], "--lr": ["0", "-1e-3", "inf", "nan"], "--ent-coef": ["-1", "nan"],
    "--dist-timeout": ["0", "-4"], "--envs": ["0", "-8"], "--steps": ["0"], "--epochs": ["0"],
    "--minibatch": ["0"], "--stack": ["0", "-1"], "--media-every": ["-1"], "--hidden": ["0", "-4"],
    "--learner-chunk": ["-1"],
}  # fmt: skip


@pytest.mark.parametrize(
    "flag,value", [(f, v) for f, vs in TRAIN_NUMBERS.items() for v in vs], ids=str
)
def test_every_bad_training_number_is_one_line_and_no_run(tmp_path, capsys, flag, value):
    code = main([*TRAIN, f"{flag}={value}", "--out", str(tmp_path)])  # the last one counts
    err = capsys.readouterr().err
    assert code == 2 and "error:" in err and "Traceback" not in err, (code, err)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["8", "8,0", "8,16,32", "a,b", "-8,16", ""])
def test_a_bad_channel_pair_is_an_argument_error(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main([*TRAIN, f"--channels={value}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --channels" in err and "is not two counts >= 1" in err
