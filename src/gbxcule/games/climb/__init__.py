"""Climb: a small vertical platformer built from our own source (see :mod:`.layout`)."""
