"""Tasks of quest, the second bundled game (gbxcule.games.quest.layout), written as a user
writes a task for their own game: reads by the symbols of its ``.sym`` file.

quest-score          the score (4 BCD digits, a byte at a time) as progress; game over ends
                     the episode; from the state at the start of play
quest-score-random   the same from 12 starts at other places, maps and generator states
quest-explore        new (map, x, y) cells and new event flags (places reached, gems taken);
                     1,000-step episodes, game over ends one; from the start of play
quest-explore-random the same from the 12 random starts
"""

from dataclasses import replace

from gbxcule.games.quest import layout
from gbxcule.games.quest.starts import RANDOM_STARTS
from gbxcule.tasks import BCD, U8, BitCount, Novelty, Progress, Task

ROM = "bundled:quest"
PLAY = ["bundled:quest/play"]
RANDOM = [f"bundled:quest/random-{k}" for k in range(RANDOM_STARTS)]
ACTIONS = ["up", "down", "left", "right", "noop"]
READS = {
    "score": BCD("wScore", 2, endian="little"),
    "mode": U8("wMode"),
    "map": U8("wMap"),
    "x": U8("wPlayerX"),
    "y": U8("wPlayerY"),
    # places reached and gem slots taken (flags 0-87); the slimes met (88-127) cost lives
    "flags": BitCount("wFlags", layout.FLAG_ENEMIES // 8),
}
FEATURES = {"map": 1 / 4, "x": 1 / 32, "y": 1 / 32}


def game_over(r):
    return r["mode"] == layout.MODE_OVER


SCORE = Task(
    name="quest-score",
    rom=ROM,
    starts=PLAY,
    actions=ACTIONS,
    reads=READS,
    reward={"score": Progress("score", weight=0.1)},
    terminated=game_over,
    features=FEATURES,
    max_steps=1000,
    description="quest: +0.1 a point (gems 10, new places 1); game over ends it",
)
EXPLORE = Task(
    name="quest-explore",
    rom=ROM,
    starts=PLAY,
    actions=ACTIONS,
    reads=READS,
    reward={
        "cells": Novelty(keys=("map", "x", "y"), weight=0.05),
        "flags": Progress("flags"),
    },
    terminated=game_over,
    features=FEATURES,
    max_steps=1000,
    description="quest: 0.05 a new (map, x, y) cell, 1 a new event flag; 1,000 steps",
)
# The same tasks from the random starts (a few idle steps first, so no two episodes
# from one start are alike).
SCORE_RANDOM = replace(
    SCORE,
    name="quest-score-random",
    starts=RANDOM,
    noop_max=8,
    description="quest-score from 12 random starts (other places, maps, generator states)",
)
EXPLORE_RANDOM = replace(
    EXPLORE,
    name="quest-explore-random",
    starts=RANDOM,
    noop_max=8,
    description="quest-explore from 12 random starts",
)
