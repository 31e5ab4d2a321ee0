"""Tiles, the 4x4 sliding-tile puzzle: see :mod:`.layout`."""
