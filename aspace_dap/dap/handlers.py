"""DAP requests → session calls. Every handler is synchronous and I/O-free."""

from __future__ import annotations

import base64
import os
import re

import numpy as np

from ..dwarf.storage import write_bytes
from ..dwarf.types import ArrayType, PointerType, StructType
from .. import limits
from ..errors import AspaceError, LimitExceeded
from ..codeobj.loader import CODE_OBJECT_MAGICS
from ..paths import check_client_file, check_dump_path, check_save_place, client_path, save_target
from ..deadline import check_time, evaluation_time
from ..expressions import convert, evaluate_expression, lane_values
from ..memref import format_memref
from ..session import Frame, Session
from ..state.files import DUMP_FILE_MAGICS, MANIFEST
from ..values.format import format_obj
from ..values.objects import Obj
from .dispatch import HandlerTable, Reply
from .errors import ArgumentError
from .protocol import Base64Bytes, json_type
from .refs import Handles, ObjectHandle, RegistersHandle, ScopeHandle, VectorRegisterHandle, thread_id, wave_of_thread

handlers = HandlerTable()
PAGE_LIMIT = 10_000  # elements per variables response; clients page with start/count
MAX_EXAMINE_BYTES = 64 << 10  # one `x/N` REPL command; its text grows ~4x the bytes

CAPABILITIES = {
    "supportsConfigurationDoneRequest": True,
    "supportsEvaluateForHovers": True,
    "supportsReadMemoryRequest": True,
    "supportsWriteMemoryRequest": True,
    "supportsSetVariable": True,
    "supportsCancelRequest": True,
    "supportsTerminateRequest": True,
    "supportsLoadedSourcesRequest": True,
    "supportsModulesRequest": True,
    "supportsClipboardContext": True,
    "supportsValueFormattingOptions": True,
    "supportsDelayedStackTraceLoading": True,
}


class DebugState:
    """Per-connection: the session (after launch) and the variablesReference table."""

    def __init__(self):
        self.session: Session | None = None
        self.handles = Handles()
        self.frame_ids: dict[int, Frame] = {}  # frames of the current focus, by frame_id()
        # the thread of the last `stopped` event the client has not yet looked at (no stackTrace
        # for it since): a `continue` for it is the client declining a second stopped thread
        self.unseen_stop: int | None = None
        # server-side focus changes so far, and the one each frame id was last handed out in: a
        # client without `invalidated` still holding an older id has not followed the focus
        self.focus_generation = 0
        self.frame_generation: dict[int, int] = {}
        self.stopped_threads: set[int] = set()  # threads a `stopped` event named

    def need(self) -> Session:
        if self.session is None:
            raise AspaceError("no dump is open: send launch or attach first")
        return self.session

    def reset_views(self):
        self.handles.clear()
        self.frame_ids.clear()


def _st(ctx) -> DebugState:
    return ctx.state


@handlers.request("initialize")
def initialize(ctx, args):
    return dict(CAPABILITIES)


@handlers.request("launch", required={"state": str},
                  optional={"codeObject": str, "wave": int, "lane": int, "sourceMap": dict})
def launch(ctx, args):
    st = _st(ctx)
    # every path a client names goes through the path policy (aspace_dap/paths.py) first
    path = check_dump_path(args["state"], MANIFEST, DUMP_FILE_MAGICS)
    if args.get("codeObject") is not None:
        check_client_file(args["codeObject"], "the code object", CODE_OBJECT_MAGICS)
    source_map = _source_map(args.get("sourceMap"))
    pid = ctx.progress_start(f"Opening {os.path.basename(path)}")
    try:
        st.session = Session.open(path, code_object=args.get("codeObject"), wave=args.get("wave"),
                                  lane=args.get("lane"), source_map=source_map)
        if pid:
            ctx.progress_update(pid, "indexing code objects")
        st.session.programs()
    finally:
        if pid:
            ctx.progress_end(pid)
    for w in st.session.warnings:
        ctx.output(f"warning: {w}\n", "console")
    _say_notes(ctx, st.session)
    return None


def _say_notes(ctx, s: Session) -> None:
    """Tell the user, once, what the session substituted for them (a source found elsewhere)."""
    while s.notes:
        ctx.output(s.notes.pop(0) + "\n", "console")


def _source_map(value) -> dict[str, str] | None:
    if value is None:
        return None
    for key, target in value.items():
        if not isinstance(target, str):
            raise ArgumentError(f"launch: sourceMap values must be strings; {key!r} maps to a {json_type(target)}")
        client_path(key, "a sourceMap key")
        client_path(target, "a sourceMap target")
    return value


handlers.request("attach", required={"state": str},
                 optional={"codeObject": str, "wave": int, "lane": int, "sourceMap": dict})(launch)


@handlers.request("configurationDone")
def configuration_done(ctx, args):
    st = _st(ctx)
    if st.session is None:
        return None
    return Reply(None, events_after=[_stopped(st, st.session)])


STOP_BADGES = {"exception": "Exception", "breakpoint": "Breakpoint", "function breakpoint": "Breakpoint",
               "data breakpoint": "Data breakpoint", "step": "Step", "entry": "Entry", "goto": "Goto"}


def _stopped(st: DebugState, s: Session, *, all_threads: bool = True, reason: str | None = None) -> tuple:
    """A `stopped` event for the focused wave, remembered as not yet looked at.

    `description` is the short badge clients print next to the thread (VS Code upper-cases it in the
    Call Stack, where a long one hides the wave's name); the dump's full stop text goes in `text`.
    """
    stop = s.state.stop
    dump_reason = stop.reason if stop and stop.reason else "pause"
    reason = reason or dump_reason
    wave = s.wave()
    lane = f"lane {s.focus_lane} ({s.lane_state(wave, s.focus_lane)})"
    full = s.stop_text()
    body = {"reason": reason, "threadId": thread_id(wave.id),
            "description": STOP_BADGES.get(dump_reason, "Paused"),
            "text": f"{full} · {lane}" if full else lane}
    if all_threads:
        body["allThreadsStopped"] = True
    st.unseen_stop = body["threadId"]
    st.stopped_threads.add(body["threadId"])
    return ("stopped", body)


@handlers.request("threads")
def threads(ctx, args):
    s = _st(ctx).need()
    return {"threads": [{"id": thread_id(w.id), "name": name} for w, name in zip(s.state.waves, s.thread_names())]}


GROUP_WAVES_SHOWN = 8  # wave ids per group in the summary; `waveGroups {group}` lists them all


@handlers.request("waveGroups", optional={"group": int})
def wave_groups(ctx, args):
    """Waves grouped by dispatch and call stack, smallest groups first; `group` asks for one group's every wave."""
    s = _st(ctx).need()
    groups = s.wave_groups()
    wanted = args.get("group")
    if wanted is not None:
        if not 0 <= wanted < len(groups):
            raise AspaceError(f"no wave group {wanted}: there are {len(groups)}")
        return {"groups": [_group_body(s, wanted, groups[wanted], full=True)], "totalGroups": len(groups),
                "totalWaves": len(s.state.waves)}
    return {"groups": [_group_body(s, i, g, full=False) for i, g in enumerate(groups)], "totalGroups": len(groups),
            "totalWaves": len(s.state.waves)}


def _group_body(s: Session, index: int, group, full: bool) -> dict:
    ids = group.wave_ids if full else group.wave_ids[:GROUP_WAVES_SHOWN]
    frames = []
    for f in group.frames:
        item = {"name": f["name"], "line": f["line"] or 0, "column": f["column"] or 0}
        if f["file"]:
            item["source"] = {"name": os.path.basename(f["file"]), "path": f["file"]}
        frames.append(item)
    dispatch = group.dispatch
    return {"id": index, "dispatch": dispatch.id if dispatch is not None else None,
            "kernel": dispatch.kernel if dispatch is not None else None, "frames": frames,
            "waveCount": len(group.wave_ids), "activeLanes": group.active_lanes, "lanes": group.valid_lanes,
            "waveIds": ids.tolist(), "threadIds": [thread_id(w) for w in ids.tolist()],
            "waveRanges": coalesce_ranges(group.wave_ids), "hasFocus": bool((group.wave_ids == s.focus_wave).any())}


def coalesce_ranges(ids, limit: int = 8) -> str:
    """Sorted wave ids as ranges, like cuda-gdb: `0-3995, 3997`; past `limit` ranges, a count of the rest."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids):
        return ""
    breaks = np.nonzero(np.diff(ids) != 1)[0]
    starts = np.concatenate(([ids[0]], ids[breaks + 1])).tolist()
    ends = np.concatenate((ids[breaks], [ids[-1]])).tolist()
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in zip(starts[:limit], ends[:limit])]
    if len(starts) > limit:
        parts.append(f"... ({len(starts) - limit} more ranges)")
    return ", ".join(parts)


def _where(frames: list[dict]) -> str:
    out = []
    for f in frames:
        place = f"{os.path.basename(f['file'])}:{f['line']}" if f["file"] and f["line"] else None
        out.append(f"{f['name']} ({place})" if place else f["name"])
    return " <- ".join(out) or "?"


def _info_waves(s: Session) -> str:
    groups = s.wave_groups()
    total = len(s.state.waves)
    lines = [f"{total} wave{'s' if total != 1 else ''} in {len(groups)} group{'s' if len(groups) != 1 else ''}"
             " (by dispatch and call stack, smallest first):",
             f"  {'Waves':>7}  {'Active lanes':>15}  Dispatch  Where"]
    for g in groups:
        mark = "*" if (g.wave_ids == s.focus_wave).any() else " "
        dispatch = f"{g.dispatch.id} {g.dispatch.kernel}" if g.dispatch is not None else "-"
        lines.append(f"{mark} {len(g.wave_ids):>7}  {f'{g.active_lanes}/{g.valid_lanes}':>15}  {dispatch}  "
                     f"{_where(g.frames)}")
        lines.append(f"  {'':>7}  waves {coalesce_ranges(g.wave_ids)}")
    lines.append(f"* focus: {s.thread_name(s.wave())}")
    return "\n".join(lines)


@handlers.request("stackTrace", required={"threadId": int}, optional={"startFrame": int, "levels": int})
def stack_trace(ctx, args):
    st = _st(ctx)
    s = st.need()
    wave = wave_of_thread(s, args["threadId"])
    if st.unseen_stop == args["threadId"]:
        st.unseen_stop = None
    frames = s.frames(wave.id, s.focus_lane)
    _say_notes(ctx, s)
    start = _not_negative(args, "startFrame")
    levels = _not_negative(args, "levels") or len(frames)
    out = []
    for f in frames[start:start + max(0, levels)]:
        fid = frame_id(wave.id, f.index)
        st.frame_ids[fid] = f
        st.frame_generation[fid] = st.focus_generation
        item = {"id": fid, "name": f.name, "line": f.line or 0, "column": f.column or 0}
        if f.note is None:
            item["instructionPointerReference"] = f"0x{f.runtime_pc:x}"
        else:
            item["presentationHint"] = "label"
        if f.file:
            item["source"] = {"name": os.path.basename(f.file), "path": f.file}
        if f.info is not None and f.info.is_inlined:
            item["presentationHint"] = "subtle"
        out.append(item)
    return {"stackFrames": out, "totalFrames": len(frames)}


def _not_negative(args: dict, name: str) -> int:
    value = args.get(name) or 0
    if value < 0:
        raise AspaceError(f"{name} must not be negative")
    return value


def _parsed(evaluate, session, text, *args, **kw):
    """Run an expression evaluator; input nested past Python's stack is the client's error, not a crash."""
    if len(text) > limits.MAX_EXPRESSION_CHARS:
        raise LimitExceeded(f"the expression has {len(text)} characters, over the limit of "
                            f"{limits.MAX_EXPRESSION_CHARS} " + limits.limit_hint("MAX_EXPRESSION_CHARS"))
    try:
        return evaluate(session, text, *args, **kw)
    except RecursionError:
        raise LimitExceeded("expression is nested too deeply") from None


def _frame(st: DebugState, frame_id) -> Frame:
    if frame_id is None:
        s = st.need()
        frames = s.frames()
        return frames[0]
    f = st.frame_ids.get(frame_id)
    if f is not None:
        return f
    # ids name (wave, depth), so a client that keeps a frame selected across a lane change
    # (VS Code after `invalidated`) gets that depth of the newly focused lane's stack
    s = st.need()
    wave_id, index = _wave_and_depth(s, frame_id)
    frames = s.frames(wave_id, s.focus_lane)
    if not 0 <= index < len(frames):
        raise AspaceError(f"unknown frameId {frame_id}: the focused lane's stack has {len(frames)} frames")
    st.frame_ids[frame_id] = frames[index]
    return frames[index]


def _wave_and_depth(s: Session, frame_id: int) -> tuple[int, int]:
    wave_id, index = divmod(frame_id - 1, FRAMES_PER_WAVE)
    try:
        if frame_id <= 0:
            raise AspaceError("not a frame")
        s.state.wave_by_id(wave_id)
    except AspaceError:
        raise AspaceError(f"unknown frameId {frame_id}") from None
    return wave_id, index


def _followed_frame(st: DebugState, s: Session, frame_id) -> Frame:
    """The frame an evaluation runs in: the client's frame when it is on the focused wave, else the
    same depth of the focused wave's stack. A client that did not follow a focus change the server
    announced (nvim-dap without `invalidated`) still names the old wave's frame; the focus wins."""
    if frame_id is not None:
        wave_id, index = _wave_and_depth(s, frame_id)
        if wave_id != s.focus_wave:
            frames = s.frames()
            return frames[min(index, len(frames) - 1)]
    return _frame(st, frame_id)


FRAMES_PER_WAVE = 4096  # more than session.MAX_FRAMES


def frame_id(wave_id: int, index: int) -> int:
    return wave_id * FRAMES_PER_WAVE + index + 1


@handlers.request("scopes", required={"frameId": int})
def scopes(ctx, args):
    st = _st(ctx)
    s = st.need()
    fid = args["frameId"]
    f = _frame(st, fid)
    if f.wave_id != s.focus_wave:
        # A frame handed out since the last focus change the server announced is a selection
        # (Call Stack): the focus moves there. An older one is a client refreshing the frame it
        # showed before it followed (or without following): it gets the focused wave's frame.
        if st.frame_generation.get(fid) == st.focus_generation:
            change_focus(ctx, st, s, wave=f.wave_id, client_follows=True)
            f = _frame(st, fid)
        else:
            f = _followed_frame(st, s, fid)
    variables = s.variables(f)
    params = [v for v in variables if v.kind == "parameter"]
    shared_var = s.adapter.workgroup_variable
    file_scope = s.globals(f)
    locals_ = [v for v in variables if v.kind != "parameter" and not shared_var(v)]
    shared = [v for v in variables + file_scope if shared_var(v)]
    globals_ = [g for g in file_scope if not shared_var(g)]
    out = []
    # Locals first: VS Code expands the first inexpensive scope
    for name, hint, vars_ in (("Locals", "locals", locals_), ("Arguments", "arguments", params),
                              ("Shared", None, shared), ("Globals", None, globals_)):
        if name in ("Shared", "Globals") and not vars_:
            continue
        ref = st.handles.add(ScopeHandle(f, vars_))
        item = {"name": name, "variablesReference": ref, "namedVariables": len(vars_), "expensive": name == "Globals"}
        if hint:
            item["presentationHint"] = hint
        out.append(item)
    ref = st.handles.add(RegistersHandle(f.wave_id, f.lane))
    out.append({"name": "Registers", "presentationHint": "registers", "variablesReference": ref, "expensive": False})
    return {"scopes": out}


@handlers.request("variables", required={"variablesReference": int},
                  optional={"start": int, "count": int, "filter": str, "format": dict})
def variables(ctx, args):
    with evaluation_time("reading these variables"):  # a page of big arrays is formatted here
        return _variables(ctx, args)


def _variables(ctx, args):
    st = _st(ctx)
    s = st.need()
    handle = st.handles.get(args["variablesReference"])
    hex_ = bool((args.get("format") or {}).get("hex"))
    start = _not_negative(args, "start")
    count = min(_not_negative(args, "count") or PAGE_LIMIT, PAGE_LIMIT)
    if isinstance(handle, ScopeHandle):
        frame = handle.frame
        return {"variables": [s.remembered(frame, ("variable", var, hex_),
                                           lambda var=var: _scope_variable(st, s, frame, var, hex_))
                              for var in handle.variables[start:start + count]]}
    if isinstance(handle, ObjectHandle):
        return {"variables": _children(st, s, handle, start, count, hex_)}
    if isinstance(handle, RegistersHandle):
        return {"variables": _registers(st, s, handle, hex_)[start:start + count]}
    if isinstance(handle, VectorRegisterHandle):
        wave = s.wave(handle.wave_id)
        data, valid = wave.registers.lane_view(handle.name, wave.lanes)
        out = []
        for lane in range(start, min(wave.lanes, start + count)):
            v = int.from_bytes(bytes(data[lane]), "little") if valid[lane].all() else None
            out.append({"name": f"[{lane}]", "value": "<unavailable>" if v is None else (f"0x{v:08x}" if hex_ else str(v)),
                        "type": "uint32", "variablesReference": 0,
                        "presentationHint": {"attributes": [] if s.active_lanes(wave)[lane] else ["readOnly"]}})
        return {"variables": out}
    raise AspaceError(f"unknown variablesReference {args['variablesReference']}")


def _scope_variable(st, s: Session, frame: Frame, var, hex_: bool) -> dict:
    name = var.name or "?"
    try:
        read = s.read_variable(frame, var)
        obj = read.obj_for(frame.lane)
        if obj is not None:
            return _object_var(st, s, name, obj, frame, hex_, evaluate_name=name)
        value = read.errors.get(frame.lane, "<unavailable>")
    except LimitExceeded:
        raise  # the request's budget: the whole answer fails, and nothing is remembered
    except AspaceError as exc:
        # one variable the debug info or the dump cannot give must not hide the frame's others
        value = f"<unavailable: {exc}>"
    return {"name": name, "value": value, "type": var.type.display_name() if var.type else "",
            "variablesReference": 0}


def _object_var(st, s: Session, name: str, obj: Obj, frame: Frame, hex_: bool, evaluate_name: str | None = None) -> dict:
    t = obj.stripped
    item = {"name": name, "value": format_obj(obj, 0, hex=hex_), "type": obj.type.display_name(),
            "variablesReference": 0}
    if evaluate_name:
        item["evaluateName"] = evaluate_name
    ref = s.memory_reference(obj, frame.wave_id, 0)
    if ref:
        item["memoryReference"] = ref
    kind = "data"
    if isinstance(t, (StructType, ArrayType)) or (isinstance(t, PointerType) and t.target is not None):
        h = st.handles.add(ObjectHandle(obj, frame, evaluate_name))
        item["variablesReference"] = h
        if isinstance(t, ArrayType):
            item["indexedVariables"] = obj.element_count()
        elif isinstance(t, StructType):
            item["namedVariables"] = len(t.members)
        else:
            item["namedVariables"] = 1
    item["presentationHint"] = {"kind": kind, "attributes": [] if obj.memory_place() or _is_reg(obj) else ["readOnly"]}
    return item


def _is_reg(obj: Obj) -> bool:
    from ..dwarf.locations import RegisterLocation
    return obj.location is not None and isinstance(obj.location.primary, RegisterLocation)


def _children(st, s, handle: ObjectHandle, start, count, hex_):
    obj, frame = handle.obj, handle.frame
    t = obj.stripped
    base = handle.evaluate_name
    out = []
    if isinstance(t, ArrayType):
        n = obj.element_count()
        for i in range(start, min(n, start + count)):
            name = f"[{i}]"
            out.append(_object_var(st, s, name, obj.element(i), frame, hex_, f"{base}[{i}]" if base else None))
    elif isinstance(t, StructType):
        for name, m in obj.members()[start:start + count]:
            out.append(_object_var(st, s, name, m, frame, hex_, f"{base}.{name}" if base else None))
    elif isinstance(t, PointerType):
        target = s.pointer_target(obj, 0, frame.dialect)
        if target is not None:
            out.append(_object_var(st, s, f"*{base or ''}", target, frame, hex_, f"*{base}" if base else None))
    return out


def _registers(st, s: Session, handle: RegistersHandle, hex_: bool) -> list[dict]:
    wave = s.wave(handle.wave_id)
    out = []
    for name in wave.registers.names:
        if name.startswith("_"):  # a save-area slot that holds no register (see adapters/amdgpu/cwsr.py)
            continue
        size = wave.registers.size(name) or 0
        if size == 4 * wave.lanes and size > 8:  # vector register: the focused lane's value, expandable
            data, valid = wave.registers.lane_view(name, wave.lanes)
            v = int.from_bytes(bytes(data[handle.lane]), "little") if valid[handle.lane].all() else None
            text = "<unavailable>" if v is None else f"0x{v:08x}"
            ref = st.handles.add(VectorRegisterHandle(wave.id, name))
            out.append({"name": name, "value": text, "type": f"uint32[{wave.lanes}]", "variablesReference": ref,
                        "indexedVariables": wave.lanes})
            continue
        v = wave.registers.value(name)
        if v is None:
            out.append({"name": name, "value": "<unavailable>", "variablesReference": 0})
            continue
        if name == wave.exec_register:
            text = f"0x{v:0{size * 2}x} ({bin(v).count('1')} lanes)"
        else:
            text = f"0x{v:0{size * 2}x}"
        out.append({"name": name, "value": text, "type": f"uint{size * 8}", "variablesReference": 0})
    return out


_REPL_LANE = re.compile(r"^\s*lane\s+(\d+)\s*$")
_REPL_WAVE = re.compile(r"^\s*wave\s+(\d+)\s*$")
# `x` only with its `/FMT`: `x * 2` and `x + 1` are expressions (kernels have variables named x)
_REPL_X = re.compile(r"^\s*x/(\d*)([xduotcfb]?)([bhwg]?)\s+(.+)$")
_REPL_HELP = ("help", "?", "aspace help", "-help", "aspace")
HELP = """aspace-dap REPL commands:
  lane N              focus lane N of the current wave
  wave N              focus wave N
  info lanes          every lane of the focused wave: state, work-item, position
  info waves          the waves grouped by dispatch and call stack, as ranges of wave ids
  x/NFU ADDRESS       examine memory: N units, format x/d/u/o/t/c/f, unit b/h/w/g; ADDRESS like
                      local#0x40, a pointer (x/4dw out) or an object's address (x/4dw &row_sums)
  save PATH           write the dump with your changes (setVariable, writeMemory) as a new dump folder
  EXPRESSION          evaluate a C expression: p.a, arr[3], *ptr, $v3, $exec, $lane, *(int *) private_lane#0x10
  print/x EXPRESSION  the same in hex, every element and member (also p/x; print EXPRESSION)
  aspace help         this list (also `-help`, for clients whose REPL keeps `help` for itself)
"""


_REGISTER_ALONE = re.compile(r"^\s*\$(?!lane\b)[A-Za-z_]\w*\s*$")


@handlers.request("evaluate", required={"expression": str}, optional={"frameId": int, "context": str, "format": dict})
def evaluate_request(ctx, args):
    with evaluation_time():  # evaluating and showing the value: one MAX_EVAL_SECONDS
        return _evaluate(ctx, args)


def _evaluate(ctx, args):
    st = _st(ctx)
    s = st.need()
    text = args["expression"]
    if args.get("context") == "repl":
        out = _repl_command(ctx, st, s, text, args.get("frameId"))
        if out is not None:
            return {"result": out, "variablesReference": 0}
    hex_ = bool((args.get("format") or {}).get("hex"))
    m = _REPL_PRINT.match(text) if args.get("context") == "repl" else None
    if m:  # GDB's `print/x EXPR`: the format applies to every element and member
        text, hex_ = m[3], hex_ or "x" in (m[1], m[2])
    frame = _followed_frame(st, s, args.get("frameId"))
    obj = _parsed(evaluate_expression, s, text, frame=frame, lanes=[frame.lane])
    # a register alone prints as the Registers scope shows it: in hex
    hex_ = hex_ or bool(_REGISTER_ALONE.match(text))
    item = _object_var(st, s, text, obj, frame, hex_, evaluate_name=text)
    body = {"result": item["value"], "type": item.get("type"), "variablesReference": item["variablesReference"]}
    for k in ("memoryReference", "indexedVariables", "namedVariables"):
        if k in item:
            body[k] = item[k]
    return body


def _address_of_expression(s: Session, frame: Frame, text: str) -> str:
    """`x/4dw &row_sums`, `x/4dw out`: a pointer's value in its address space (generic pointers
    resolved as ROCgdb does), or the place of an object in memory."""
    obj = _parsed(evaluate_expression, s, text, frame=frame, lanes=[frame.lane])
    if isinstance(obj.stripped, PointerType):
        obj = _parsed(evaluate_expression, s, f"*({text})", frame=frame, lanes=[frame.lane])
    place = obj.memory_place()
    if place is None:
        raise AspaceError(f"x: {text} is not in memory; give an address with its space, like local#0x40")
    ref = s.memref_for_space(place.space.name, int(place.address[0]), frame.wave_id, int(place.lanes[0]))
    return format_memref(ref)


def _repl_command(ctx, st, s: Session, text: str, frame_id=None) -> str | None:
    if text.strip() in _REPL_HELP:
        return HELP
    m = _REPL_LANE.match(text)
    if m:
        change_focus(ctx, st, s, lane=_whole_number(m[1]))
        w = s.wave()
        return f"[Switching to lane {s.focus_lane} of wave {w.id} ({s.lane_state(w, s.focus_lane)})]"
    m = _REPL_WAVE.match(text)
    if m:
        change_focus(ctx, st, s, wave=_whole_number(m[1]))
        return f"[Switching to {s.thread_name(s.wave())}, lane {s.focus_lane}]"
    if text.strip() == "info lanes":
        return "\n".join(_lane_line(s, row) for row in lane_rows(s, s.focus_wave))
    if text.strip() == "info waves":
        return _info_waves(s)
    m = _REPL_X.match(text)
    if m:
        where = m[4].strip()
        if "#" not in where:
            where = _address_of_expression(s, _followed_frame(st, s, frame_id), where)
        return _examine(s, _whole_number(m[1] or "1"), m[2] or "x", m[3] or "w", where)
    m = _REPL_SAVE.match(text)
    if m:
        return f"saved to {save_dump(s, m[1].strip())}"
    return None


def _whole_number(digits: str) -> int:
    """A count or id typed in the REPL (Python refuses to convert thousands of digits)."""
    if len(digits) > 20:
        raise AspaceError(f"{digits[:20]}... is larger than any wave, lane or count")
    return int(digits)


_REPL_SAVE = re.compile(r"^\s*save\s+(.+)$")
# `print EXPR`, `print/x EXPR`, `p/x EXPR`; a bare `p ` is left alone: `p + 1` is an expression
_REPL_PRINT = re.compile(r"^\s*(?:print(?:/([xd]))?|p/([xd]))\s+(.+)$")


def save_dump(s: Session, path: str) -> str:
    """The overlay (every write made in this session) plus the dump, as a new dump folder."""
    target = save_target(path)
    check_save_place(target, path)
    try:
        return str(s.state.save(target))
    except OSError as exc:
        raise AspaceError(f"cannot save to {path}: {exc.strerror or exc}") from None


@handlers.request("saveDump", required={"path": str})
def save_dump_request(ctx, args):
    return {"path": save_dump(_st(ctx).need(), args["path"])}


def _lane_line(s, row) -> str:
    mark = "*" if row["lane"] == s.focus_lane else " "
    where = f"{os.path.basename(row['source']['path'])}:{row['line']}" if row.get("source") else row["pc"]
    wi = ",".join(str(x) for x in row["workItem"])
    return f"{mark} lane {row['lane']:>2}  {row['state']:<8} work-item ({wi})  {where}"


def _examine(s: Session, n: int, fmt: str, unit: str, where: str) -> str:
    size = {"b": 1, "h": 2, "w": 4, "g": 8}[unit]
    if fmt == "c":
        size = 1
    if n * size > MAX_EXAMINE_BYTES:
        raise LimitExceeded(f"x/{n}: {n * size} bytes is over the limit of {MAX_EXAMINE_BYTES}; use readMemory")
    start, data, valid = s.read_memory(where, 0, n * size)
    space = where.split("#")[0]
    lines, per_line = [], max(1, 16 // size)
    for i in range(n):
        if i % 1024 == 0:
            check_time()
        chunk, ok = data[i * size:(i + 1) * size], valid[i * size:(i + 1) * size]
        if len(chunk) < size or not ok.all():
            text = "<unavailable>"
        else:
            v = int.from_bytes(chunk, "little")
            text = {"x": f"0x{v:0{size * 2}x}", "d": str(int.from_bytes(chunk, "little", signed=True)),
                    "u": str(v), "o": f"0{v:o}", "t": f"{v:b}", "c": f"{v} {chr(v)!r}" if 32 <= v < 127 else str(v),
                    "f": str(np.frombuffer(chunk, {4: "<f4", 8: "<f8"}.get(size, "<u1"))[0])}.get(fmt, f"0x{v:x}")
        if i % per_line == 0:
            lines.append(f"{space}#0x{start + i * size:x}:")
        lines[-1] += "\t" + text
    return "\n".join(lines)


def _focus_body(s: Session) -> dict:
    w = s.wave()
    return {"threadId": thread_id(w.id), "lane": s.focus_lane, "active": bool(s.active_lanes(w)[s.focus_lane]),
            "lanes": w.lanes}


def change_focus(ctx, st: DebugState, s: Session, *, wave: int | None = None, lane: int | None = None,
                 client_follows: bool = False) -> dict:
    """The one place the focus changes (REPL `wave`/`lane`, setFocus, a frame selected in another wave).

    Every change is announced with a `focus` event (the extension's status bar, lanes view and panels
    follow it). Unless the client made the change itself, it is also told to refresh: another wave
    becomes the stopped thread (`stopped` without allThreadsStopped, which nvim-dap does not answer
    with `continue`), another lane of the same wave is an `invalidated` (or a `stopped` of the same
    thread for clients without it). Returns the focus event's body.
    """
    before = (s.focus_wave, s.focus_lane)
    s.set_focus(wave=wave, lane=lane)
    body = _focus_body(s)
    if (s.focus_wave, s.focus_lane) == before and client_follows:
        return body
    st.reset_views()
    ctx.send_event("focus", body)
    invalidates = bool(ctx.client_capabilities.get("supportsInvalidatedEvent"))
    if invalidates and s.focus_wave != before[0]:
        # VS Code re-reads only the first stop it holds when `invalidated` arrives, and focuses its
        # thread: the old waves' stops are withdrawn (`continued` for each) and the focused wave's
        # announced, so later refreshes stay on it. A client that selected the frame keeps it.
        for tid in sorted(st.stopped_threads - {body["threadId"]}):
            ctx.send_event("continued", {"threadId": tid, "allThreadsContinued": False})
        stopped = _stopped(st, s, reason="pause")
        stopped[1]["preserveFocusHint"] = client_follows
        ctx.send_event(*stopped)
        st.focus_generation += 1
        return body
    if client_follows:
        return body
    st.focus_generation += 1
    if s.focus_wave != before[0]:
        ctx.send_event(*_stopped(st, s, all_threads=False, reason="pause"))
    elif invalidates:
        ctx.send_event("invalidated", {"areas": ["threads", "stacks", "variables"], "threadId": body["threadId"]})
    else:
        ctx.send_event(*_stopped(st, s, all_threads=False, reason="pause"))
    return body


@handlers.request("setFocus", optional={"threadId": int, "lane": int})
def set_focus(ctx, args):
    st = _st(ctx)
    s = st.need()
    wave = wave_of_thread(s, args["threadId"]) if args.get("threadId") is not None else None
    return change_focus(ctx, st, s, wave=wave.id if wave is not None else None, lane=args.get("lane"))


@handlers.request("laneValues", required={"threadId": int, "expression": str}, optional={"frameId": int})
def lane_values_request(ctx, args):
    st = _st(ctx)
    s = st.need()
    wave = wave_of_thread(s, args["threadId"])
    frame_index = 0
    if args.get("frameId") is not None:
        frame_index = _frame(st, args["frameId"]).index
    return {"lanes": _parsed(lane_values, s, args["expression"], wave_id=wave.id, frame_index=frame_index)}


def lane_rows(s: Session, wave_id: int) -> list[dict]:
    wave = s.wave(wave_id)
    rows = []
    for lane in range(wave.lanes):
        state = s.lane_state(wave, lane)
        row = {"lane": lane, "state": state, "workItem": list(wave.global_id(lane)), "pc": "0x0"}
        try:
            pc = s.lane_pc(wave, lane)
            if pc is None:
                rows.append(row | {"pc": "unknown"})
                continue
            row["pc"] = f"0x{pc:x}"
            program = s.program_for(wave)
            if program.index is not None:
                li = program.index.line_for_pc(program.elf_pc(pc))
                if li is not None:
                    row["source"] = {"path": s.map_source(li.file), "name": os.path.basename(li.file)}
                    row["line"] = li.line
        except AspaceError:
            pass
        rows.append(row)
    return rows


@handlers.request("lanes", required={"threadId": int})
def lanes_request(ctx, args):
    s = _st(ctx).need()
    wave = wave_of_thread(s, args["threadId"])
    return {"lanes": lane_rows(s, wave.id), "focus": s.focus_lane}


@handlers.request("memorySpaces", required={"threadId": int}, optional={"lane": int})
def memory_spaces(ctx, args):
    s = _st(ctx).need()
    wave = wave_of_thread(s, args["threadId"])
    return {"spaces": s.memory_spaces(wave.id, args.get("lane"))}


@handlers.request("memoryLayout", required={"memoryReference": str, "count": int},
                  optional={"threadId": int, "frameId": int, "offset": int})
def memory_layout(ctx, args):
    """Which variables of the frame occupy which bytes of a memory range (the memory view colours them)."""
    st = _st(ctx)
    s = st.need()
    count = args["count"]
    if count < 0 or count > MAX_READ:
        raise LimitExceeded(f"memoryLayout of {count} bytes is over the limit of {MAX_READ}")
    if args.get("frameId") is not None:
        frame = _followed_frame(st, s, args["frameId"])
    else:
        wave = wave_of_thread(s, args["threadId"]) if args.get("threadId") is not None else s.wave()
        frame = s.frames(wave.id, s.focus_lane)[0]
    found = s.memory_layout(frame, args["memoryReference"], args.get("offset") or 0, count)
    return {"variables": [v | {"address": f"0x{v['address']:x}"} for v in found]}


MAX_READ = 16 << 20


@handlers.request("readMemory", required={"memoryReference": str, "count": int}, optional={"offset": int})
def read_memory(ctx, args):
    s = _st(ctx).need()
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


@handlers.request("writeMemory", required={"memoryReference": str, "data": str}, optional={"offset": int,
                                                                                           "allowPartial": bool})
def write_memory(ctx, args):
    s = _st(ctx).need()
    try:
        raw = base64.b64decode(args["data"], validate=True)
    except ValueError as e:
        raise AspaceError(f"data is not base64: {e}") from None
    n = s.write_memory(args["memoryReference"], args.get("offset") or 0, raw)
    _st(ctx).reset_views()
    return Reply({"bytesWritten": n}, events_after=[("memory", {"memoryReference": args["memoryReference"],
                                                                  "offset": args.get("offset") or 0, "count": n})])


@handlers.request("setVariable", required={"variablesReference": int, "name": str, "value": str})
def set_variable(ctx, args):
    with evaluation_time():
        return _set_variable(ctx, args)


def _set_variable(ctx, args):
    st = _st(ctx)
    s = st.need()
    handle = st.handles.get(args["variablesReference"])
    if isinstance(handle, ScopeHandle):
        frame, target_name = handle.frame, args["name"]
    elif isinstance(handle, ObjectHandle) and handle.evaluate_name:
        frame = handle.frame
        name = args["name"]
        target_name = f"{handle.evaluate_name}{name}" if name.startswith("[") else f"{handle.evaluate_name}.{name}"
    else:
        raise AspaceError("this variable cannot be changed")
    obj = _parsed(evaluate_expression, s, target_name, frame=frame, lanes=[frame.lane])
    new = _parsed(evaluate_expression, s, args["value"], frame=frame, lanes=[frame.lane])
    value = convert(s, frame, obj.type, new)
    data, state = value.bytes(0, obj.size)
    if state.any():
        raise AspaceError("the new value is not fully known")
    if obj.location is None:
        raise AspaceError("this value has no storage to change")
    s.note_write()
    write_bytes(obj.location, obj.target, np.asarray(data))
    fresh = evaluate_expression(s, target_name, frame=frame, lanes=[frame.lane])
    return {"value": format_obj(fresh, 0), "type": fresh.type.display_name()}


@handlers.request("source", optional={"source": dict, "sourceReference": int})
def source(ctx, args):
    s = _st(ctx).need()
    path = (args.get("source") or {}).get("path")
    if not path:
        raise AspaceError("source needs a path")
    named = []
    for p in s.programs():
        if p.index is None:
            continue
        for f in p.index.source_files():
            if path in (f, s.map_source(f)):
                named.append(f)
                text = p.index.source_text(f)
                if text is not None:
                    return {"content": text}
    # only files the debug info names, read where the path policy allows (see Session.read_source_file):
    # the server may listen beyond this machine, and `source` must not read arbitrary files
    if not named:
        raise AspaceError(f"source {path} is not a source file of the loaded code objects")
    for f in named:
        try:
            return {"content": s.read_source_file(f, limits.MAX_SOURCE_BYTES, "MAX_SOURCE_BYTES")}
        except AspaceError as exc:
            refusal = exc
    raise AspaceError(f"source {path}: neither embedded in the code object nor readable on disk ({refusal})")


@handlers.request("loadedSources")
def loaded_sources(ctx, args):
    s = _st(ctx).need()
    out, seen = [], set()
    for p in s.programs():
        if p.index is None:
            continue
        for f in p.index.source_files():
            path = s.map_source(f)
            if path not in seen:
                seen.add(path)
                out.append({"name": os.path.basename(path), "path": path})
    return {"sources": out}


@handlers.request("modules", optional={"startModule": int, "moduleCount": int})
def modules(ctx, args):
    s = _st(ctx).need()
    mods = []
    for p in s.programs():
        co = p.code_object
        mods.append({"id": p.id, "name": os.path.basename(p.path), "path": p.path,
                     "symbolStatus": "symbols loaded" if p.index is not None else "no DWARF",
                     "addressRange": f"0x{p.load_address:x}", "version": getattr(co, "processor", "")})
    start = _not_negative(args, "startModule")
    count = _not_negative(args, "moduleCount") or len(mods)
    return {"modules": mods[start:start + count], "totalModules": len(mods)}


@handlers.request("disconnect", optional={"restart": bool, "terminateDebuggee": bool, "suspendDebuggee": bool})
def disconnect(ctx, args):
    st = _st(ctx)
    if st.session is not None:
        st.session.state.close()
    st.session = None
    return None


@handlers.request("terminate", optional={"restart": bool})
def terminate(ctx, args):
    return None


@handlers.request("pause", required={"threadId": int})
def pause(ctx, args):
    return None


for _cmd in ("continue", "next", "stepIn", "stepOut"):
    @handlers.request(_cmd, required={"threadId": int}, optional={"singleThread": bool, "granularity": str})
    def _post_mortem(ctx, args, _cmd=_cmd):
        """Nothing can run, but the answer is a success that leaves the session stopped: an error makes
        clients such as nvim-dap drop their stopped state. The focused wave is stopped again, except when
        the `continue` declines a stop the client was just told about (and has not looked at)."""
        st = _st(ctx)
        s = st.need()
        tid = args["threadId"]
        wave_of_thread(s, tid)
        w = s.wave()
        ctx.output(f"{_cmd}: this is a post-mortem dump, execution cannot resume; still stopped in "
                   f"{s.thread_name(w)}, lane {s.focus_lane}\n", "console")
        body = {"allThreadsContinued": False} if _cmd == "continue" else None
        if st.unseen_stop == tid:
            return Reply(body)
        st.reset_views()
        return Reply(body, events_after=[_stopped(st, s)])
