"""The emulator state as one Warp struct: structure-of-arrays, one row per env.

Per-env scalars are 1-D arrays indexed by env id ``i``; per-env RAM is the
2-D ``mem`` array laid out as ``gbxcule.core.memory_layout`` says; the ROM is
one shared copy. Every kernel and ``@wp.func`` takes the ``Machine`` and an
env index, and touches only that env's slots (pure functions of their arrays).

Field ownership while the emulator is being built (append fields in your
section only, never rewrite the file wholesale):
  CPU/bus/MBC section  -> kernels/cpu.py, kernels/bus.py, kernels/mbc.py
  IO/timing section    -> kernels/timer.py, ppu.py, interrupts.py, dma.py,
                          joypad.py, serial.py, step.py
  pixels section       -> kernels/render*.py
"""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.struct
class Machine:
    # ---- shared, read-only -------------------------------------------------
    rom: wp.array(dtype=wp.uint8)  # one copy of the cartridge ROM for all envs
    boot: wp.array(dtype=wp.uint8)  # 256-byte boot ROM mapped at 0x0000 until FF50 is written
    # ---- per-env RAM: [N, row_bytes], see core/memory_layout.py -----------
    mem: wp.array2d(dtype=wp.uint8)

    # ---- CPU/bus/MBC section ----------------------------------------------
    pc: wp.array(dtype=wp.int32)
    sp: wp.array(dtype=wp.int32)
    a: wp.array(dtype=wp.int32)
    f: wp.array(dtype=wp.int32)
    b: wp.array(dtype=wp.int32)
    c: wp.array(dtype=wp.int32)
    d: wp.array(dtype=wp.int32)
    e: wp.array(dtype=wp.int32)
    h: wp.array(dtype=wp.int32)
    l: wp.array(dtype=wp.int32)  # noqa: E741
    ime: wp.array(dtype=wp.int32)
    halted: wp.array(dtype=wp.int32)
    cycles: wp.array(dtype=wp.int64)  # T-cycles since reset
    locked: wp.array(dtype=wp.int32)  # 0, or 0x100 | illegal opcode that locked the env
    # PyBoy's memory_access_offset: T-cycles past m.cycles at which the access in
    # flight happens, as far as the PPU/DMA sync is concerned (0 for most accesses).
    access_offset: wp.array(dtype=wp.int32)
    rom_bank: wp.array(dtype=wp.int32)  # bank seen at 0x4000-0x7FFF
    rom_bank_low: wp.array(dtype=wp.int32)  # bank seen at 0x0000-0x3FFF (MBC1 mode 1)
    ram_bank: wp.array(dtype=wp.int32)  # cart RAM bank, or MBC3 RTC register 0x08-0x0C
    ram_enabled: wp.array(dtype=wp.int32)
    mbc_mode: wp.array(dtype=wp.int32)  # MBC1 banking mode (0/1)
    mbc_reg1: wp.array(dtype=wp.int32)  # MBC1 bank register 1 (5 bits, never 0)
    mbc_reg2: wp.array(dtype=wp.int32)  # MBC1 bank register 2 (2 bits)
    rtc: wp.array2d(dtype=wp.int64)  # [N, RTC_FIELDS] MBC3 clock, columns in kernels/rtc.py
    # cartridge constants, the same for every env (see backends/warp_base.py)
    mbc_kind: wp.int32  # MBC_NONE / MBC1 / MBC2 / MBC3 / MBC5 (kernels/mbc.py)
    rom_banks: wp.int32  # 16 KiB banks in the image
    ram_banks: wp.int32  # 8 KiB cart RAM banks backed in mem (PyBoy's external_ram_count)
    has_rtc: wp.int32  # MBC3+TIMER
    mbc1_multicart: wp.int32  # 64-bank MBC1 with the logo in every bank (4-bit bank shift)
    mbc30: wp.int32  # MBC3 with more than 4 RAM or 128 ROM banks: 8-bit ROM bank register

    # ---- IO/timing section --------------------------------------------------
    # Plain register values live in mem's IO page: FF00 P1 (as computed at the last
    # write), FF01 SB, FF02 SC, FF05 TIMA, FF06 TMA, FF07 TAC & 7, FF0F IF & 0x1F,
    # FF40-FF4B LCD registers (FF41 = PyBoy's STAT value, FF46 = DMA source), and IE
    # at IE_OFF. Reads go through kernels/io.py (masks, syncing). Powered-on values:
    # io.power_on_timing(m, i). Fields shared with cpu.py (PyBoy CPU attributes):
    ime_delay: wp.array(dtype=wp.int32)  # interrupt_enable_delay: EI sets 2, cpu.py counts down
    halt_ei: wp.array(dtype=wp.int32)  # halted_during_ei: set by HALT, cleared by interrupts.py
    boot_on: wp.array(dtype=wp.int32)  # boot ROM mapped at 0x0000-0x00FF (FF50 write clears)
    int_queued: wp.array(dtype=wp.int32)  # interrupt_queued
    frame_done: wp.array(dtype=wp.int32)  # lcd.frame_done: ends the frame loop
    # timer (DIV = tim_counter >> 8)
    tim_counter: wp.array(dtype=wp.int32)  # 16-bit divider counter
    tim_reload: wp.array(dtype=wp.int32)  # TIMA reload state 0/1/2
    tim_reload_left: wp.array(dtype=wp.int32)  # cycles left in the reload state
    tim_last: wp.array(dtype=wp.int64)  # cycle count of the last timer sync
    tim_to_irq: wp.array(dtype=wp.int64)  # timer._cycles_to_interrupt
    # LCD timing (mode sequence; registers in mem)
    lcd_clock: wp.array(dtype=wp.int64)
    lcd_target: wp.array(dtype=wp.int64)
    lcd_last: wp.array(dtype=wp.int64)
    lcd_to_irq: wp.array(dtype=wp.int64)
    lcd_to_frame: wp.array(dtype=wp.int64)
    lcd_irq_line: wp.array(dtype=wp.int32)  # STAT interrupt line level
    lcd_next_mode: wp.array(dtype=wp.int32)
    lcd_transition: wp.array(dtype=wp.int32)  # ppu.TRANS_*
    lcd_first_frame: wp.array(dtype=wp.int32)
    lcd_reset: wp.array(dtype=wp.int32)
    lcd_stat_override: wp.array(dtype=wp.int32)
    lcd_lyc_dirty: wp.array(dtype=wp.int32)  # LYC written while the LCD was off
    lcd_m3_adjust: wp.array(dtype=wp.int32)
    win_line: wp.array(dtype=wp.int32)  # renderer's window line counter (ly_window)
    win_active: wp.array(dtype=wp.int32)  # renderer's wy_activated_frame
    lcd_render: wp.array(dtype=wp.int32)  # renderer on this frame (PyBoy renders the last)
    # serial
    ser_last: wp.array(dtype=wp.int64)  # serial clock == cycle count of its last sync
    ser_target: wp.array(dtype=wp.int64)
    ser_to_irq: wp.array(dtype=wp.int64)
    ser_active: wp.array(dtype=wp.int32)  # transfer_enabled
    serial_buf: wp.array2d(dtype=wp.uint8)  # [N, serial.SERIAL_CAP] ring of SB writes
    serial_len: wp.array(dtype=wp.int32)  # SB writes since reset
    # OAM DMA
    dma_active: wp.array(dtype=wp.int32)
    dma_index: wp.array(dtype=wp.int32)
    dma_start: wp.array(dtype=wp.int64)
    # joypad
    joy_dir: wp.array(dtype=wp.int32)  # directional nibble, 0 = pressed
    joy_std: wp.array(dtype=wp.int32)  # standard nibble, 0 = pressed
    joy_rel_mask: wp.array2d(dtype=wp.int32)  # [N, joypad.JOY_QUEUE] pending release masks
    joy_rel_wait: wp.array2d(dtype=wp.int32)  # frames until each pending release

    # ---- pixels section -----------------------------------------------------
    # [N, 144, LATCH_FIELDS] registers per line of the step's last frame; written by
    # ppu.py, read by render.py; field indices in gbxcule.core.pixels (LATCH_*).
    line_latch: wp.array3d(dtype=wp.uint8)
    # [N, FRAME_VIDEO_BYTES] VRAM + OAM as they were when line 143 was latched
    # (render.snapshot_frame_video); the renderers read it, not mem.
    frame_video: wp.array2d(dtype=wp.uint8)
