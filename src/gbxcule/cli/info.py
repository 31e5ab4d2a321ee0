"""``gbxcule info``: a ROM's cartridge header, and whether we run it."""

from __future__ import annotations

import argparse
from pathlib import Path

from gbxcule.cli.command import EXIT_FAILED, EXIT_OK, UsageError

HELP = "print a ROM's cartridge header"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("rom", type=Path, help="ROM file")


def run(args: argparse.Namespace) -> int:
    from gbxcule.core.cartridge import CartridgeError, CartridgeHeader

    if not args.rom.is_file():
        raise UsageError(f"ROM file not found: {args.rom}")
    data = args.rom.read_bytes()
    try:
        h = CartridgeHeader.parse(data, strict=False, allow_cgb_only=True)
    except CartridgeError as exc:
        print(f"{args.rom}: not a cartridge: {exc}")
        return EXIT_FAILED
    rows = [
        ("file", f"{args.rom} ({len(data)} bytes)"),
        ("title", h.title),
        ("cartridge", f"${h.cart_type:02X} {h.cart_type_name} (mbc: {h.mbc})"),
        ("ROM", f"{h.rom_banks} banks of 16 KiB (code ${h.rom_size_code:02X})"),
        ("RAM", f"{h.ram_banks} banks, {h.ram_bytes} bytes (code ${h.ram_size_code:02X})"),
        ("extras", f"battery={h.has_battery} timer={h.has_timer} rumble={h.has_rumble}"),
        ("logo", "ok" if h.logo_ok else "MISMATCH"),
        ("header checksum", "ok" if h.header_checksum_ok else "MISMATCH"),
        ("global checksum", "ok" if h.global_checksum_ok else "mismatch (ignored by hardware)"),
        ("supported", "yes" if h.supported else "no: " + "; ".join(h.problems)),
    ]
    if h.cgb_flag & 0x80:
        kind = "Color-enhanced" if h.cgb_enhanced else "Game Boy Color only"
        rows.append(
            (
                "color",
                f"{kind}: runs on a Game Boy Color machine, as a stock PyBoy(rom) does "
                "(cgb=True; experimental, history/cgb.md)"
                + ("; cgb=False runs it as a DMG" if h.cgb_enhanced else ""),
            )  # fmt: skip
        )
    for key, value in rows:
        print(f"{key:>16}: {value}")
    return EXIT_OK if h.supported else EXIT_FAILED
