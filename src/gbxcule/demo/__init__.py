"""The demo game: rules and WRAM layout (``game``), SM83 source (``asm``), ROM (``rom``)."""
