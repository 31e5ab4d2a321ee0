"""What the CPU reaches through the bus: the address decode (``bus``, ``memmap``), the IO
page (``io``, ``ioregs``), the cartridge's bank controllers and clock (``mbc``, ``rtc``),
OAM DMA, and the small IO units (timer, serial port, joypad)."""
