"""gbxcule: thousands of Game Boys per NVIDIA Warp launch, in lockstep with PyBoy."""

__version__ = "0.1.0"
