"""The step the CPU benchmarks time: 24 frames, the buttons released after 8, Pokémon Red's
action codec (how RL users step, README). No imports, so a child that must set Warp's
compiler flags before anything imports the kernels (bench/cpu_instr_count.py), or that
runs another revision's ``gbxcule`` (bench/cpu_ab.py), can take it."""

FRAMES_PER_STEP = 24
RELEASE_AFTER_FRAMES = 8
ACTION_CODEC = "pokemonred_puffer_v1"
