"""bench/ncu_step.py: the ncu command, and its CSV read back into the summary (no GPU here)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from bench import ncu_step

pytestmark = pytest.mark.tooling

HEAD = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value",'
    '"Rule Name","Rule Type","Rule Description"'
)
KERNEL = "step_kernel_3f2a_cuda_kernel_forward"


def _row(section: str, name: str, unit: str, value: str) -> str:
    return (
        f'"0","77","python3","h","{KERNEL}","1","13","(256, 1, 1)","(64, 1, 1)","0","9.0",'
        f'"{section}","{name}","{unit}","{value}","","",""'
    )


CSV = "\n".join(
    [
        "==PROF== Connected to process 77 (/usr/bin/python3)",
        '==PROF== Profiling "step_kernel": 0%....50%....100% - 40 passes',
        HEAD,
        _row("Launch Statistics", "Registers Per Thread", "register/thread", "255"),
        _row("Occupancy", "Theoretical Occupancy", "%", "12.50"),
        _row("Occupancy", "Achieved Occupancy", "%", "11.87"),
        _row("Warp State Statistics", "Avg. Active Threads Per Warp", "", "19.2"),
        _row("GPU Speed Of Light Throughput", "Duration", "nsecond", "48,123,456"),
        _row("Command line profiler metrics", ncu_step.LOCAL_BYTES[0], "byte", "1.2e9"),
        '"0","77","python3","h","k","1","13","(256, 1, 1)","(64, 1, 1)","0","9.0","Occupancy",'
        '"","","","OccupancyRule","WRN","registers limit occupancy"',
        "==PROF== Disconnected from process 77",
    ]
)


def test_parse_details_reads_metrics_and_skips_noise_and_rules():
    got = ncu_step.parse_details(CSV)
    assert [m["name"] for m in got] == [
        "Registers Per Thread",
        "Theoretical Occupancy",
        "Achieved Occupancy",
        "Avg. Active Threads Per Warp",
        "Duration",
        ncu_step.LOCAL_BYTES[0],
    ]
    by = {m["name"]: m for m in got}
    assert by["Duration"]["value"] == 48123456.0  # thousands separators dropped
    assert by["Achieved Occupancy"] == {
        "kernel": KERNEL,
        "section": "Occupancy",
        "name": "Achieved Occupancy",
        "unit": "%",
        "value": 11.87,
    }
    assert ncu_step.parse_details("==PROF== nothing profiled\n") == []


def test_summary_shows_the_issue_metrics_beside_the_estimates():
    text = "\n".join(ncu_step.summary_lines(ncu_step.parse_details(CSV), "demo, 16384 envs"))
    assert "| Achieved Occupancy | 11.87 | % | at most the theoretical |" in text
    assert "| Registers Per Thread | 255.00 |" in text
    assert "| Branch Efficiency | not reported |" in text
    assert "Lanes busy per issued instruction: 60.0% of 32." in text


def test_command_profiles_the_second_warm_up_step():
    cmd = ncu_step.ncu_command("/opt/ncu", 4096, "busy", True)
    assert cmd[:8] == [
        "/opt/ncu",
        "--target-processes",
        "all",
        "--kernel-name",
        "regex:step_kernel",
        "--launch-skip",
        "3",
        "--launch-count",
    ]
    assert ",".join(ncu_step.LOCAL_BYTES) in cmd
    i = cmd.index(sys.executable)
    assert cmd[i : i + 3] == [sys.executable, "-m", "bench.sweep"]
    assert cmd[cmd.index("--envs") + 1] == "4096" and cmd[-2:] == ["--rom", "busy"]
    assert cmd[cmd.index("--mem-layout") + 1] == "interleaved"  # the CUDA backend's default
    plain = ncu_step.ncu_command("ncu", 1, "demo", False, "env_major")
    assert "--metrics" not in plain and "--rom" not in plain
    assert plain[plain.index("--mem-layout") + 1] == "env_major"


def test_the_uncoalesced_access_rule_is_read():
    rule = (
        '"0","1","step_kernel","uncoalesced","This kernel has uncoalesced global accesses '
        "resulting in a total of 8154904479 excessive sectors (82% of the total 9997798098 "
        'sectors). Check the L2 Theoretical Sectors Global Excessive table"'
    )
    assert ncu_step.excess_sectors(CSV + "\n" + rule) == {
        "excess": 8154904479,
        "percent": 82,
        "total": 9997798098,
    }
    assert ncu_step.excess_sectors(CSV) is None


def test_missing_ncu_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ncu_step.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit):
        ncu_step.main(["--out", str(tmp_path)])
    assert "ncu (Nsight Compute) is not on the PATH" in capsys.readouterr().err
    kept = tmp_path / "kept.csv"
    kept.write_text(CSV)
    assert ncu_step.main(["--parse", str(kept)]) == 0
    assert "Achieved Occupancy | 11.87" in capsys.readouterr().out


def test_run_falls_back_to_sections_when_the_counters_are_refused(tmp_path, monkeypatch, capsys):
    """A stand-in ncu that refuses ``--metrics`` (as ncu does for an unknown counter)."""
    fake = tmp_path / "ncu"
    (tmp_path / "out.csv").write_text(CSV)
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--metrics*) echo "==ERROR== Failed to find metric" >&2; exit 1;; esac\n'
        f'cat "{tmp_path / "out.csv"}"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    out = tmp_path / "results"
    assert ncu_step.main(["--envs", "64", "--out", str(out)]) == 0
    row = json.loads((out / "results.jsonl").read_text())
    assert row["attempts"] == [
        {"local_bytes": True, "rc": 1, "metrics": 0},
        {"local_bytes": False, "rc": 0, "metrics": 6},
    ]
    assert (out / "ncu-demo-64-interleaved.csv").read_text().startswith("==PROF== Connected")
    assert "## demo, 64 envs" in (out / "summary.md").read_text()
    assert "Failed to find metric" in capsys.readouterr().err


def test_the_fourth_step_kernel_launch_is_the_second_warm_up_step(monkeypatch):
    """What --launch-skip 3 lands on: every reset runs the boot ROM through the step kernel
    (once in the constructor, once in bench.sweep.measure), then come the steps."""
    from bench import sweep
    from gbxcule.backends.warp_vec import WarpVecBase

    calls = []
    real_reset, real_step = WarpVecBase.reset, WarpVecBase.step

    def reset(self, seed=None):
        calls.append("boot")
        return real_reset(self, seed)

    def step(self, actions):
        calls.append("step")
        return real_step(self, actions)

    monkeypatch.setattr(WarpVecBase, "reset", reset)
    monkeypatch.setattr(WarpVecBase, "step", step)
    cmd = ncu_step.ncu_command("ncu", 1, "demo", True)
    steps = int(cmd[cmd.index("--steps") + 1])
    sweep.measure("warp-cpu", sweep.default_rom(), 1, steps, 24, 0)
    assert calls == ["boot", "boot", "step", "step", "step"]
    skip = int(cmd[cmd.index("--launch-skip") + 1])
    assert calls[: skip + 1] == ["boot", "boot", "step", "step"]  # profiled: the 2nd step
