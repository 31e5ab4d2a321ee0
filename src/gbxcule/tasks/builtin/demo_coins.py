"""demo-coins: the bundled demo game, +1 per coin collected, 100 steps from power-on."""

from gbxcule.demo import game
from gbxcule.tasks import U16, Progress, Task

TASK = Task(
    name="demo-coins",
    rom=None,  # the bundled demo game
    reads={"coins": U16(game.W_SCORE)},  # 16-bit little-endian count
    reward={"coins": Progress("coins")},
    actions="pokemonred_puffer_v1",
    max_steps=100,
    description="the demo game: +1 per coin collected (16-bit count at 0xC102), "
    "100 steps from the post-boot state",
)
