"""A timing program for the stack's memory accesses (a body for ``emu_timing_programs.program``).

With SP pointed at the timer, each stack access lands on DIV, TIMA or TMA, so the
cycle it happens at shows in what is read or in how TIMA counts on after a write.
TIMA counts every 16 cycles and before each case a jump into a 4-NOP sled delays
it by 0-12 cycles, chosen by a pseudo-random sequence (a fixed rule such as the
pass number can lock into step with the count), so each case meets all four
phases of the 16-cycle count and an access 4 cycles early or late changes the log.

- POP BC from $FF04: C = DIV, B = TIMA (reads at +0 and +4).
- RET and RET Z from $FF05: the low byte is TIMA (read at +4 / +8), the high byte
  TMA = $D1, so the CPU lands in a 256 x ``inc b`` sled at $D100 and B tells where.
- PUSH BC, CALL and RST $08 with SP = $FF07: the pushed bytes go to TMA and TIMA
  (at +8/+12, +16/+20, +8/+12); TIMA is read back 8 cycles later.
Each pass appends its bytes to a log at $D300-$DEFF (pointer DE, wrapping).
``STACK_TIMER_EI`` runs the same with an EI before every stack instruction.
"""

from __future__ import annotations

_STACK_TIMER = """
SECTION "rst08", ROM0[$0008]
    jp RstTarget
SECTION "main", ROM0[$0150]
Main:
    ld sp, $DFF0
    ld a, $D1
    ldh [$06], a          ; TMA: RET lands in page $D1
    ld a, $05
    ldh [$07], a          ; TIMA every 16 cycles
    ld hl, $D100          ; the sled: 256 x inc b, then jp Landed
    ld b, 0
.fill:
    ld a, $04
    ld [hl+], a
    dec b
    jr nz, .fill
    ld a, $C3
    ld [hl+], a
    ld bc, Landed
    ld a, c
    ld [hl+], a
    ld a, b
    ld [hl], a
    ld de, $D300
    xor a
    ldh [$91], a          ; the pass counter
    ldh [$92], a          ; Shift's LCG
Pass:
    call Shift
    ld sp, $FF04          ; POP from DIV and TIMA
{EI}    pop bc
    ld sp, $DFF0
    ld a, c
    call Log
    ld a, b
    call Log
    call Shift
    ld a, $00             ; RET from TIMA/TMA
    ldh [$90], a
    ld b, 0
    ld sp, $FF05
{EI}    ret
AfterRet:
    call Shift
    ld a, $01             ; RET Z from TIMA/TMA
    ldh [$90], a
    ld b, 0
    xor a
    ld sp, $FF05
{EI}    ret z
AfterRetZ:
    call Shift
    ld bc, $3456          ; PUSH into TMA/TIMA
    ld sp, $FF07
{EI}    push bc
    ld sp, $DFF0
    nop
    ldh a, [$05]
    call Log
    call Shift
    ld sp, $FF07          ; CALL pushes into TMA/TIMA
{EI}    call CallTarget
CallBack:
    call Shift
    ld sp, $FF07          ; RST $08 pushes into TMA/TIMA
{EI}    rst $08
RstBack:
    ld a, $D1
    ldh [$06], a
    ldh a, [$91]
    inc a
    ldh [$91], a
    jp Pass

Landed:                   ; from the sled: B = 256 - (TIMA read by the RET)
    ld sp, $DFF0
    ld a, b
    call Log
    ldh a, [$90]
    and a
    jp z, AfterRet
    jp AfterRetZ

CallTarget:
    ld sp, $DFF0
    ldh a, [$05]
    call Log
    jp CallBack

RstTarget:
    ld sp, $DFF0
    ldh a, [$05]
    call Log
    jp RstBack

Shift:                    ; returns 0-3 x 4 cycles late: bits 4-5 of an LCG at $FF92
    ldh a, [$92]
    ld c, a
    add a, a
    add a, a
    add a, c
    inc a
    ldh [$92], a
    swap a
    and $03
    ld hl, NopSled
    add a, l
    ld l, a
    jr nc, .jump
    inc h
.jump:
    jp hl
NopSled:
    nop
    nop
    nop
    nop
    ret

Log:                      ; [DE++] = A, DE wraps from $DF00 to $D300
    ld [de], a
    inc de
    ld a, d
    cp $DF
    ret nz
    ld d, $D3
    ret

Hook:
Rst0:
    ret
"""

# The stack instructions run on the CPU's fast path (kernels/cpu/cpu_fast.py) ...
STACK_TIMER = _STACK_TIMER.replace("{EI}", "")
# ... and, each right after an EI (whose countdown sends it the general way), on cpu_step's
# phases. IE stays 0, so IME on changes nothing else.
STACK_TIMER_EI = _STACK_TIMER.replace("{EI}", "    ei\n")
