"""Memory requests: memorySpaces, memoryLayout (which variables sit in a range), readMemory and
writeMemory, and saveDump, which writes the dump with this session's changes as a new dump folder
(save_dump also answers the REPL's `save`)."""

from __future__ import annotations

import base64

import numpy as np

from .. import limits
from ..deadline import work_time
from ..errors import AspaceError, LimitExceeded
from ..paths import save_place, save_target
from ..session import Session
from .connection import followed_frame, state_of
from .dispatch import HandlerTable, Reply
from .protocol import Base64Bytes
from .refs import wave_of_thread

requests = HandlerTable()
MAX_READ = 16 << 20


@requests.request("memorySpaces", required={"threadId": int}, optional={"lane": int})
def memory_spaces(ctx, args):
    s = state_of(ctx).need()
    wave = wave_of_thread(s, args["threadId"])
    return {"spaces": s.memory_spaces(wave.id, args.get("lane"))}


@requests.request("memoryLayout", required={"memoryReference": str, "count": int},
                  optional={"threadId": int, "frameId": int, "offset": int})
def memory_layout(ctx, args):
    """Which variables of the frame occupy which bytes of a memory range (the memory view colours them),
    and the scalar elements of each inside the range, with their kind from the DWARF type (the view's
    typed column shows each in its own type)."""
    st = state_of(ctx)
    s = st.need()
    count = args["count"]
    if count < 0 or count > MAX_READ:
        raise LimitExceeded(f"memoryLayout of {count} bytes is over the limit of {MAX_READ}")
    if args.get("frameId") is not None:
        frame = followed_frame(st, s, args["frameId"])
    else:
        wave = wave_of_thread(s, args["threadId"]) if args.get("threadId") is not None else s.wave()
        frame = s.frames(wave.id, s.focus_lane)[0]
    found = s.memory_layout(frame, args["memoryReference"], args.get("offset") or 0, count)
    return {"variables": [_placed(v) for v in found]}


def _placed(v: dict) -> dict:
    out = v | {"address": f"0x{v['address']:x}"}
    if "elements" in v:
        out["elements"] = [{"address": f"0x{a:x}", "size": n, "kind": kind} for a, n, kind in v["elements"]]
    return out


@requests.request("readMemory", required={"memoryReference": str, "count": int}, optional={"offset": int})
def read_memory(ctx, args):
    s = state_of(ctx).need()
    count = args["count"]
    if count < 0 or count > MAX_READ:
        raise LimitExceeded(f"readMemory of {count} bytes is over the limit of {MAX_READ}")
    start, data, valid = s.read_memory(args["memoryReference"], args.get("offset") or 0, count)
    if start < 0:
        raise AspaceError(f"readMemory at {args['memoryReference']} offset {args.get('offset')} is before address 0")
    if count == 0:
        return {"address": f"0x{start:x}"}
    # DAP returns a contiguous readable run; what follows it is reported as unreadable
    if len(valid) and valid.all():
        first_bad = len(data)
    else:
        first_bad = int(np.argmin(valid)) if len(valid) else 0
    if first_bad == 0:
        good_after = np.nonzero(valid)[0]
        skip = int(good_after[0]) if len(good_after) else count
        return {"address": f"0x{start:x}", "unreadableBytes": skip}
    body = {"address": f"0x{start:x}", "data": Base64Bytes.encode(data[:first_bad])}
    if first_bad < count:
        body["unreadableBytes"] = count - first_bad
    return body


@requests.request("writeMemory", required={"memoryReference": str, "data": str}, optional={"offset": int,
                                                                                           "allowPartial": bool})
def write_memory(ctx, args):
    s = state_of(ctx).need()
    try:
        raw = base64.b64decode(args["data"], validate=True)
    except ValueError as e:
        raise AspaceError(f"data is not base64: {e}") from None
    n = s.write_memory(args["memoryReference"], args.get("offset") or 0, raw)
    state_of(ctx).reset_views()
    return Reply({"bytesWritten": n}, events_after=[("memory", {"memoryReference": args["memoryReference"],
                                                                  "offset": args.get("offset") or 0, "count": n})])


def save_dump(s: Session, path: str) -> str:
    """The overlay (every write made in this session) plus the dump, as a new dump folder.

    A save has its own time budget (MAX_SAVE_SECONDS), holds a chunk and the manifest at a time,
    stops at the next piece when the client cancels it (DAP `cancel`) or leaves, and leaves nothing
    behind when it stops or fails: no partial folder, no parent folder it made."""
    target = save_target(path)
    with save_place(target, path), work_time("the save", limits.MAX_SAVE_SECONDS, "MAX_SAVE_SECONDS"):
        try:
            return str(s.state.save(target))
        except OSError as exc:
            raise AspaceError(f"cannot save to {path}: {exc.strerror or exc}") from None
        except MemoryError:
            raise AspaceError(f"cannot save to {path}: the dump declares more than fits in memory") from None


@requests.request("saveDump", required={"path": str})
def save_dump_request(ctx, args):
    return {"path": save_dump(state_of(ctx).need(), args["path"])}
