"""The LCD: its mode transitions and STAT/VBlank flags (``ppu``), whole quiet lines in one
jump (``ppu_quiet``), the per-line register latches and VRAM/OAM write log that let the
last frame be drawn as PyBoy drew it (``video_log``), and the renderers (``render``)."""
