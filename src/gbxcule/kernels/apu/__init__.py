"""The sound unit: registers and frame sequencer (``apu``), the four channels
(``apu_channels``), the sample clock (``apu_clock``) and its state row's columns
(``apu_layout``)."""
