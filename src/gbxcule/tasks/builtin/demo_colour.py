"""demo-colour-coins: the demo's Game Boy Color edition (gbxcule.demo.colour), +1 per coin
collected, 100 steps from power-on (PyBoy's CGB boot ROM): a colour game's task."""

from gbxcule.demo import game
from gbxcule.tasks import U16, Progress, Task

TASK = Task(
    name="demo-colour-coins",
    rom="bundled:demo-colour",
    reads={"coins": U16(game.W_SCORE)},  # 16-bit little-endian count
    reward={"coins": Progress("coins")},
    actions="pokemonred_puffer_v1",
    max_steps=100,
    description="the demo's Game Boy Color edition: +1 per coin collected (16-bit count at "
    "0xC102), 100 steps from the post-boot state; observe it as luma or rgb",
)
