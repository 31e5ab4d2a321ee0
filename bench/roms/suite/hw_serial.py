"""Serial micro-ROM: internal-clock transfers, SC bit 7, the serial interrupt, SB after a transfer.

Expectations follow Pan Docs (Serial Data Transfer) for a DMG with no link
partner: writing $81 to SC starts a transfer on the internal clock; SC reads
$FF while it runs (bits 1-6 unused, read 1) and $7F once done; IF bit 3 is
raised when it completes and, with IE bit 3 and IME, the CPU jumps to $0058;
SB then holds $FF (the disconnected line shifts in 1s). The first message
byte is sent with polling, the rest interrupt-driven (HALT until the handler
has counted the byte). Serial output must be exactly MESSAGE + "Passed\\n".

Not tested (PyBoy differs from hardware, see history/pyboy-deviations.md):
how long a transfer takes, and SB read back while a transfer runs.
"""

from __future__ import annotations

from bench.roms.suite._hwlib import SCRATCH, byte_probe, hw_spec, probe_rom

MESSAGE = b"serial:" + bytes([0x00, 0x55, 0xAA, 0xFF, 0x80, 0x7F]) + b"\n"
ISR_COUNT = SCRATCH  # bytes whose completion interrupt the handler saw
ISR_LAST_SC = SCRATCH + 1  # SC as the handler read it

ROUTINES = f"""
HwSerialIsr:
    push af
    ldh a, [$02]
    ld [${ISR_LAST_SC:04X}], a
    ld a, [${ISR_COUNT:04X}]
    inc a
    ld [${ISR_COUNT:04X}], a
    pop af
    reti
"""

DATA = f"""
SECTION "serial_message", ROM0
HwMessageTail:
    db {", ".join(f"${b:02X}" for b in MESSAGE[1:])}
"""

_FIRST = f"""
    xor a
    ldh [$0F], a
    ldh [$FF], a
    ld a, ${MESSAGE[0]:02X}
    ldh [$01], a
    ld a, $81
    ldh [$02], a
    ldh a, [$02]
"""

_WAIT_POLL = """
.wait:
    ldh a, [$02]
    bit 7, a
    jr nz, .wait
"""

# Sends the rest of MESSAGE, each byte waited for by HALT until the handler counted it.
_SEND_REST = f"""
    xor a
    ld [${ISR_COUNT:04X}], a
    ldh [$0F], a
    ld a, $08
    ldh [$FF], a
    ei
    ld hl, HwMessageTail
    ld c, 0
.next:
    ld a, [hl+]
    ldh [$01], a
    ld a, $81
    ldh [$02], a
    inc c
.wait:
    halt
    nop
    ld a, [${ISR_COUNT:04X}]
    cp c
    jr nz, .wait
    ld a, c
    cp {len(MESSAGE) - 1}
    jr nz, .next
    di
    xor a
    ldh [$FF], a
    ld a, [${ISR_COUNT:04X}]
"""

PROBES = [
    byte_probe("SC reads $FF while an internal-clock transfer runs", _FIRST, 0xFF),
    byte_probe("SC reads $7F once the transfer is done", _WAIT_POLL, 0x7F),
    byte_probe("IF bit 3 raised by the finished transfer", "    ldh a, [$0F]\n    and $08\n", 0x08),
    byte_probe("SB reads $FF after a transfer with no partner", "    ldh a, [$01]\n", 0xFF),
    byte_probe("serial interrupts counted for the rest", _SEND_REST, len(MESSAGE) - 1),
    byte_probe("SC as the handler read it", f"    ld a, [${ISR_LAST_SC:04X}]\n", 0x7F),
    byte_probe("IF bit 3 cleared by dispatch", "    ldh a, [$0F]\n    and $08\n", 0x00),
]

ROMS = [
    hw_spec(
        "hw_serial",
        "Serial: internal-clock transfer of a known message, SC bit 7, IF bit 3, $0058 handler",
        lambda: probe_rom(
            "hw_serial",
            PROBES,
            routines=ROUTINES,
            vectors={0x58: "    jp HwSerialIsr"},
            data=DATA,
        ),
        serial_prefix=MESSAGE,
        tags=("serial", "hw"),
    ),
]
