"""DAP requests → session calls. Every handler is synchronous and I/O-free.

This module answers the session's life (initialize, launch/attach, configurationDone, disconnect,
terminate), a post-mortem's run control (continue, next, stepIn, stepOut, pause), threads, stack
traces, the focus (setFocus), lanes, lane values and wave groups, sources and modules. The other
requests are answered in variables.py (scopes, variables, setVariable, evaluate, whose Debug Console
commands repl.py runs), memory.py (memory requests, saveDump), exceptions.py (exceptionInfo) and
disassembly.py (disassemble), find.py (findLanes); `handlers` is the one table of them all that each connection's dispatcher
copies.
"""

from __future__ import annotations

import os
from json.encoder import encode_basestring_ascii

from .. import limits
from ..errors import AspaceError
from ..codeobj.loader import CODE_OBJECT_MAGICS
from ..paths import check_client_file, check_dump_path, client_path
from ..lane_values import lane_values
from ..session import Session
from ..state.files import DUMP_FILE_MAGICS, MANIFEST
from . import disassembly, exceptions, find, memory, variables
from .connection import frame_id, frame_of, state_of
from .dispatch import HandlerTable, Reply
from .errors import ArgumentError
from .focus import change_focus, stop_badges, stopped
from .inputs import not_negative, parsed
from .protocol import JsonText, json_type
from .refs import thread_ids, wave_of_thread
from .waves import group_body, lane_rows

requests = HandlerTable()

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
    "supportsExceptionInfoRequest": True,
    "supportsDisassembleRequest": True,
}


@requests.request("initialize")
def initialize(ctx, args):
    return dict(CAPABILITIES)


LAUNCH_OPTIONS = {"codeObject": str, "wave": int, "lane": int, "sourceMap": dict, "workspaceFolder": str}


@requests.request("launch", required={"state": str}, optional=LAUNCH_OPTIONS)
def launch(ctx, args):
    st = state_of(ctx)
    # every path a client names goes through the path policy (aspace_dap/paths.py) first
    path = check_dump_path(args["state"], MANIFEST, DUMP_FILE_MAGICS)
    if args.get("codeObject") is not None:
        check_client_file(args["codeObject"], "the code object", CODE_OBJECT_MAGICS)
    source_map = _source_map(args.get("sourceMap"))
    # the editor's folder (VS Code's workspace folder): sources are looked for there too
    workspace = args.get("workspaceFolder")
    if workspace is not None:
        client_path(workspace, "workspaceFolder")
    pid = ctx.progress_start(f"Opening {os.path.basename(path)}")
    try:
        st.session = Session.open(path, read_ahead=True, code_object=args.get("codeObject"), wave=args.get("wave"),
                                  lane=args.get("lane"), source_map=source_map, workspace=workspace,
                                  client_is_user=ctx.client_is_user)
        if pid:
            ctx.progress_update(pid, "indexing code objects")
        st.session.programs()
        st.session.active_lanes(st.session.wave())  # what the stopped function's lane attributes say, told now
    finally:
        if pid:
            ctx.progress_end(pid)
    for w in st.session.warnings:
        ctx.output(f"warning: {w}\n", "console")
    _say_notes(ctx, st.session)
    # from now on a note (a source found elsewhere or not found) is said by whichever request comes upon it
    st.session.set_note_sink(ctx.connection_output())
    return None


def _say_notes(ctx, s: Session) -> None:
    """Tell the user, once, what the session substituted for them (a source found elsewhere) or could not find."""
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


requests.request("attach", required={"state": str}, optional=LAUNCH_OPTIONS)(launch)


@requests.request("configurationDone")
def configuration_done(ctx, args):
    st = state_of(ctx)
    if st.session is None:
        return None
    return Reply(None, events_after=[stopped(st, st.session), *stop_badges(ctx, st, st.session)])


@requests.request("threads")
def threads(ctx, args):
    s = state_of(ctx).need()
    entry = '{"id":%d,"name":%s}'.__mod__  # (JSON text in one pass: a dump may have 100,000 threads)
    listed = ",".join(map(entry, zip(thread_ids(s.wave_ids()), map(encode_basestring_ascii, s.thread_names()))))
    return {"threads": JsonText(f"[{listed}]".encode("ascii"))}


@requests.request("waveGroups", optional={"group": int})
def wave_groups(ctx, args):
    """Waves grouped by dispatch and where they stand, smallest groups first; `group` asks for one group's every
    wave. `waveWord` is what the vendor's debugger calls a wave (warp, thread), for views to say."""
    s = state_of(ctx).need()
    groups = s.wave_groups()
    wanted = args.get("group")
    if wanted is not None:
        if not 0 <= wanted < len(groups):
            raise AspaceError(f"no wave group {wanted}: there are {len(groups)}")
        return {"groups": [group_body(s, wanted, groups[wanted], full=True)], "totalGroups": len(groups),
                "totalWaves": len(s.state.waves), "waveWord": s.adapter.wave_word}
    return {"groups": [group_body(s, i, g, full=False) for i, g in enumerate(groups)], "totalGroups": len(groups),
            "totalWaves": len(s.state.waves), "waveWord": s.adapter.wave_word}


def _instruction_at(s, frame) -> int:
    """The address of the instruction at the frame's PC: the one whose bytes hold it, as the Disassembly
    View, `x/i $pc` and `info registers pc` name it (a dump's PC can lie inside an instruction)."""
    try:
        row = s.instruction_holding(frame.runtime_pc)
    except AspaceError:
        row = None
    return frame.runtime_pc if row is None else row.address


@requests.request("stackTrace", required={"threadId": int}, optional={"startFrame": int, "levels": int})
def stack_trace(ctx, args):
    st = state_of(ctx)
    s = st.need()
    wave = wave_of_thread(s, args["threadId"])
    if st.unseen_stop == args["threadId"]:
        st.unseen_stop = None
    frames = s.frames(wave.id, s.focus_lane)
    _say_notes(ctx, s)
    start = not_negative(args, "startFrame")
    levels = not_negative(args, "levels") or len(frames)
    out = []
    for f in frames[start:start + max(0, levels)]:
        fid = frame_id(wave.id, f.index)
        st.frame_ids[fid] = f
        st.frame_generation[fid] = st.focus_generation
        item = {"id": fid, "name": f.name, "line": f.line or 0, "column": f.column or 0}
        if f.note is None:
            item["instructionPointerReference"] = f"0x{_instruction_at(s, f):x}"
        else:
            # "position unknown": its source is a short document saying so, which lets clients
            # select the frame on a stop (VS Code and nvim-dap take the first frame with a source)
            item["presentationHint"] = "label"
            note = st.note_source(f.note.strip("<>") + "\n")
            item["source"] = {"name": f"no pc for lane {f.lane}", "sourceReference": note}
            item["line"], item["column"] = 1, 1
        if f.file and f.note is None:
            item["source"] = _frame_source(st, s, f)
        # an inlined function's frame is a real source position, where the lanes stand: no "subtle" hint (VS
        # Code folds such frames under "Show N More Stack Frames" and selects none of them on a stop, so
        # neither the stopped line nor the exception widget would show)
        out.append(item)
    return {"stackFrames": out, "totalFrames": len(frames)}


def _frame_source(st, s: Session, f) -> dict:
    """A frame's source: the file found here; else a short document at the frame's line saying where the file
    was looked for and the sourceMap entry that would find it. A path is never sent for a file that is not
    there: VS Code would offer to create it, nvim-dap would open an empty buffer, and a relative one would be
    taken from the client's own folder (doubling the folder the path starts with). The document keeps the
    stop in the editor: VS Code shows the exception under the frame's line, nvim-dap opens it as a buffer."""
    name = os.path.basename(f.file)
    if s.openable(f.file):
        return {"name": name, "path": f.file}
    line = f.line or 1
    text = s.missing_source_text(f.file).splitlines()
    marker = f"{f.file}:{line}: the stop is here (the source text is not on this machine; see above)"
    if line > MAX_PLACEHOLDER_LINES:
        body = [*text, marker]
    else:
        body = text[:line - 1] + [""] * (line - 1 - len(text)) + [marker] + text[line - 1:]
    return {"name": f"{name} (not found)", "sourceReference": st.note_source("\n".join(body) + "\n"),
            "origin": "source not found"}


MAX_PLACEHOLDER_LINES = 100_000  # past this, a missing file's document does not pad to the frame's line


@requests.request("setFocus", optional={"threadId": int, "lane": int})
def set_focus(ctx, args):
    st = state_of(ctx)
    s = st.need()
    wave = wave_of_thread(s, args["threadId"]) if args.get("threadId") is not None else None
    return change_focus(ctx, st, s, wave=wave.id if wave is not None else None, lane=args.get("lane"))


@requests.request("laneValues", required={"threadId": int, "expression": str}, optional={"frameId": int})
def lane_values_request(ctx, args):
    st = state_of(ctx)
    s = st.need()
    wave = wave_of_thread(s, args["threadId"])
    frame_index = 0
    if args.get("frameId") is not None:
        frame_index = frame_of(st, args["frameId"]).index
    return {"lanes": parsed(lane_values, s, args["expression"], wave_id=wave.id, frame_index=frame_index)}


@requests.request("lanes", required={"threadId": int})
def lanes_request(ctx, args):
    s = state_of(ctx).need()
    wave = wave_of_thread(s, args["threadId"])
    return {"lanes": lane_rows(s, wave.id), "focus": s.focus_lane}


@requests.request("source", optional={"source": dict, "sourceReference": int})
def source(ctx, args):
    st = state_of(ctx)
    s = st.need()
    reference = args.get("sourceReference") or (args.get("source") or {}).get("sourceReference")
    if reference:
        text = st.note_sources.get(reference) if isinstance(reference, int) else None
        if text is None:
            raise AspaceError(f"unknown sourceReference {reference}")
        return {"content": text, "mimeType": "text/plain"}
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


@requests.request("loadedSources")
def loaded_sources(ctx, args):
    s = state_of(ctx).need()
    out, seen = [], set()
    for p in s.programs():
        if p.index is None:
            continue
        for f in p.index.source_files():
            path = s.map_source(f)
            if path not in seen and s.openable(path):  # a file not found here has no path to give
                seen.add(path)
                out.append({"name": os.path.basename(path), "path": path})
    return {"sources": out}


@requests.request("modules", optional={"startModule": int, "moduleCount": int})
def modules(ctx, args):
    s = state_of(ctx).need()
    mods = []
    for p in s.programs():
        co = p.code_object
        mods.append({"id": p.id, "name": os.path.basename(p.path), "path": p.path,
                     "symbolStatus": "no DWARF" if p.index is None else
                     "symbols loaded" if p.index.has_units() else "line tables only",
                     "addressRange": f"0x{p.load_address:x}", "version": getattr(co, "processor", "")})
    start = not_negative(args, "startModule")
    count = not_negative(args, "moduleCount") or len(mods)
    return {"modules": mods[start:start + count], "totalModules": len(mods)}


@requests.request("disconnect", optional={"restart": bool, "terminateDebuggee": bool, "suspendDebuggee": bool})
def disconnect(ctx, args):
    st = state_of(ctx)
    if st.session is not None:
        st.session.state.close()
    st.session = None
    return None


@requests.request("terminate", optional={"restart": bool})
def terminate(ctx, args):
    return None


@requests.request("pause", required={"threadId": int})
def pause(ctx, args):
    return None


for _cmd in ("continue", "next", "stepIn", "stepOut"):
    @requests.request(_cmd, required={"threadId": int}, optional={"singleThread": bool, "granularity": str})
    def _post_mortem(ctx, args, _cmd=_cmd):
        """Nothing can run, but the answer is a success that leaves the session stopped: an error makes
        clients such as nvim-dap drop their stopped state. The focused wave is stopped again, except when
        the `continue` declines a stop the client was just told about (and has not looked at)."""
        st = state_of(ctx)
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
        return Reply(body, events_after=[stopped(st, s), *stop_badges(ctx, st, s)])


handlers = HandlerTable.joined(requests, variables.requests, memory.requests, exceptions.requests,
                               disassembly.requests, find.requests)
