"""The demo game as a user's game: coins (progress), new places, a time cost."""

from gbxcule.tasks import U8, U16, Novelty, Progress, StepCost, Task

TASK = Task(
    name="coins-and-places",
    rom="game.gb",
    starts=[
        "train0.state",
        "train1.state",
        "train2.state",
        "train3.state",
        "train4.state",
        "train5.state",
        "train6.state",
        "train7.state",
    ],
    actions=["left", "right", "up", "down", "noop"],
    reads={"coins": U16(0xC102), "x": U8(0xC100), "y": U8(0xC101)},
    reward={
        "coins": Progress("coins"),
        "places": Novelty(keys=("x", "y"), weight=0.01),
        "time": StepCost(-0.005),
    },
    sticky_actions=0.1,
    max_steps=100,
)
