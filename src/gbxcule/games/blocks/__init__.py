"""Blocks, the falling-block puzzle: see :mod:`.layout`."""
