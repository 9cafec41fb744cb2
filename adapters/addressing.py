"""A memory instruction's address operands in a form any part can evaluate, whatever the vendor.

Each adapter reads its own decoder's text (nvdisasm's `desc[UR4][R2.64+0x10]`, LLVM's
`global_store_dword v[0:1], v2, off`, IGA's `send` with its descriptor) into these shapes
(adapters/<vendor>/addressing.py); the session reads the named registers of each lane from the dump
and adds the terms up (aspace_dap/session/lane_addresses.py). Nothing here reads a dump.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Term:
    """One register (or register pair) an address is made of."""

    text: str                    # as the decoder printed it: `R2.64`, `v[0:1]`, `s[0:1]`, `UR4`, `r68`
    registers: tuple[str, ...]   # the dump's register names, lowest part first
    per_lane: bool               # a value per lane (vector registers); else one value for the wave
    size: int = 4                # bytes of the value: the registers together, or a payload's element
    signed: bool = False         # an offset sign-extended to the address's width
    scale: int = 1               # the value is multiplied by this (nvdisasm's `.X4`)
    # Intel's message payloads: lane L's value is element (L - first_lane) of the registers laid end to
    # end, `size` bytes each; a per-lane register of the others holds lane L's value in lane L's slot
    payload: bool = False
    first_lane: int = 0


@dataclass(frozen=True)
class Operand:
    """One address an instruction forms per lane: the sum of its terms and an immediate."""

    text: str                       # the operand as printed: `desc[UR4][R2.64+0x10]`, `v[0:1] offset:16`
    space: str                      # the adapter's space (global, generic, local, shared, private_lane);
    #                                 another name where `base` says what the address counts from
    terms: tuple[Term, ...]
    offset: int = 0                 # the immediate, signed
    bits: int = 64                  # the address's width: sums wrap there
    size: int | None = None         # bytes each lane accesses, where the opcode says
    base: str | None = None         # what the address counts from when the dump cannot place it:
    #                                 "binding table entry 0's surface", "the buffer resource s[0:3]"


@dataclass
class MemoryAccess:
    """What a memory instruction addresses, as its decoder's text says."""

    opcode: str
    operands: list[Operand] = field(default_factory=list)
    # lanes whose predicate is false did not access memory: (register, negated, per lane)
    predicate: tuple[str, bool, bool] | None = None
    channels: tuple[int, int] | None = None   # (first lane, count) the instruction covers (Intel's (8|M16))
    every_channel: bool = False               # runs in every channel, whatever the execution mask (Intel's (W))
    uniform: bool = False                     # one access for the wave (AMD's scalar loads)
    notes: list[str] = field(default_factory=list)  # what the text leaves undecoded, said to the user


def register_span(prefix: str, first: int, count: int) -> tuple[str, ...]:
    """`count` registers from `first`: ("v0", "v1") for v[0:1]."""
    return tuple(f"{prefix}{first + i}" for i in range(count))


def immediate(text: str) -> int | None:
    """An integer as decoders print them (0x10, -0x10, 16, -16); None for anything else."""
    try:
        return int(text, 0)
    except ValueError:
        return None
