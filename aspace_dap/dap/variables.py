"""Values shown as DAP variables: scopes (Locals, Arguments, Shared, Globals, Registers), variables
(paged children of scopes, objects and vector registers), setVariable, and evaluate (an expression,
or in the Debug Console a REPL command, which repl.py answers)."""

from __future__ import annotations

import functools
import re

import numpy as np

from ..deadline import evaluation_time
from ..dwarf.storage import write_bytes
from ..dwarf.types import ArrayType, PointerType, StructType
from ..errors import AspaceError, LimitExceeded
from ..expressions import convert, evaluate_expression
from ..session import Frame, Session
from ..values.format import format_obj
from ..values.objects import Obj
from . import repl
from .connection import followed_frame, frame_of, state_of
from .dispatch import HandlerTable
from .focus import change_focus
from .inputs import not_negative, parsed
from .refs import NoteHandle, ObjectHandle, RegistersHandle, ScopeHandle, VectorRegisterHandle

requests = HandlerTable()
PAGE_LIMIT = 10_000  # elements per variables response; clients page with start/count


def in_client_order(ctx) -> bool:
    """Whether scopes answer their variables in the order the client draws them: nvim-dap's views
    sort by name the variables they fetch themselves (entity.lua's sort_vars / cmp_vars) and show the
    ones its session fetched after a stop as answered, so a sidebar drawn one way, then the other,
    reorders unless both are in its order. Every other client gets declaration order, as gdb's
    `info locals` prints it."""
    caps = ctx.client_capabilities
    return "neovim" in (caps.get("clientID"), caps.get("clientId"))  # nvim-dap up to 0.7.0 sent `clientId`


def _shown_name(s: Session, frame: Frame, var) -> str:
    """The name a scope shows for a variable (HIP's `threadIdx.x` for its static member)."""
    coordinate = s.coordinate_global(frame, var)
    if coordinate is None:
        return var.name or "?"
    return coordinate[0] if coordinate[1] is None else ".".join(coordinate)


# a register alone prints as the Registers scope shows it: in hex
_REGISTER_ALONE = re.compile(r"^\s*\$(?!lane\b)[A-Za-z_]\w*\s*$")


@requests.request("scopes", required={"frameId": int})
def scopes(ctx, args):
    st = state_of(ctx)
    s = st.need()
    fid = args["frameId"]
    f = frame_of(st, fid)
    if f.wave_id != s.focus_wave:
        # A frame handed out since the last focus change the server announced is a selection
        # (Call Stack): the focus moves there. An older one is a client refreshing the frame it
        # showed before it followed (or without following): it gets the focused wave's frame.
        if st.frame_generation.get(fid) == st.focus_generation:
            change_focus(ctx, st, s, wave=f.wave_id, client_follows=True)
            f = frame_of(st, fid)
        else:
            f = followed_frame(st, s, fid)
    variables = s.variables(f)
    params = [v for v in variables if v.kind == "parameter"]
    shared_var = s.adapter.workgroup_variable
    file_scope = s.globals(f)
    locals_ = [v for v in variables if v.kind != "parameter" and not shared_var(v)]
    shared = [v for v in variables + file_scope if shared_var(v)]
    globals_ = [g for g in file_scope if not shared_var(g)]
    if in_client_order(ctx):
        # names compared as Lua compares them in the C locale: byte by byte (a stable sort keeps
        # a shadowed variable before the one hiding it)
        locals_, params, shared, globals_ = (sorted(vs, key=lambda v: _shown_name(s, f, v).encode())
                                             for vs in (locals_, params, shared, globals_))
    out = []
    # Locals first: VS Code expands the first inexpensive scope. A scope with no variables is not
    # listed: nvim-dap 0.10.0's scopes sidebar stops rendering at a scope whose variables are empty.
    for name, hint, vars_ in (("Locals", "locals", locals_), ("Arguments", "arguments", params),
                              ("Shared", None, shared), ("Globals", None, globals_)):
        if not vars_:
            continue
        ref = st.handles.add(ScopeHandle(f, vars_))
        item = {"name": name, "variablesReference": ref, "namedVariables": len(vars_), "expensive": name == "Globals"}
        if hint:
            item["presentationHint"] = hint
        out.append(item)
    reason = s.no_variables_reason(f)
    if reason is not None and not out:
        out.append({"name": "Locals", "presentationHint": "locals", "variablesReference":
                    st.handles.add(NoteHandle(reason)), "namedVariables": 1, "expensive": False})
    ref = st.handles.add(RegistersHandle(f.wave_id, f.lane))
    out.append({"name": "Registers", "presentationHint": "registers", "variablesReference": ref, "expensive": False})
    return {"scopes": out}


@requests.request("variables", required={"variablesReference": int},
                  optional={"start": int, "count": int, "filter": str, "format": dict})
def variables(ctx, args):
    with evaluation_time("reading these variables"):  # a page of big arrays is formatted here
        return _variables(ctx, args)


def _variables(ctx, args):
    st = state_of(ctx)
    s = st.need()
    handle = st.handles.get(args["variablesReference"])
    hex_ = bool((args.get("format") or {}).get("hex"))
    start = not_negative(args, "start")
    count = min(not_negative(args, "count") or PAGE_LIMIT, PAGE_LIMIT)
    if isinstance(handle, ScopeHandle):
        frame = handle.frame
        return {"variables": [s.remembered(frame, ("variable", var, hex_),
                                           lambda var=var: _scope_variable(st, s, frame, var, hex_))
                              for var in handle.variables[start:start + count]]}
    if isinstance(handle, NoteHandle):
        return {"variables": [{"name": "(no variable information)", "value": handle.text,
                               "variablesReference": 0}][start:start + count]}
    if isinstance(handle, ObjectHandle):
        return {"variables": _children(st, s, handle, start, count, hex_)}
    if isinstance(handle, RegistersHandle):
        registers = _registers(st, s, handle, hex_)
        if in_client_order(ctx):
            registers.sort(key=lambda r: r["name"].encode())
        return {"variables": registers[start:start + count]}
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
    name = _shown_name(s, frame, var)
    if s.coordinate_global(frame, var) is not None:
        # HIP's threadIdx (and its static member x): nothing in the DWARF, the lane's coordinates instead
        obj = evaluate_expression(s, name, frame=frame, lanes=[frame.lane])
        return _object_var(st, s, name, obj, frame, hex_, evaluate_name=name)
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
    return {"name": name, "value": value, "type": var.type_name(), "variablesReference": 0}


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


@requests.request("setVariable", required={"variablesReference": int, "name": str, "value": str})
def set_variable(ctx, args):
    with evaluation_time():
        return _set_variable(ctx, args)


def _set_variable(ctx, args):
    st = state_of(ctx)
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
    obj = parsed(evaluate_expression, s, target_name, frame=frame, lanes=[frame.lane])
    new = parsed(evaluate_expression, s, args["value"], frame=frame, lanes=[frame.lane])
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


@requests.request("evaluate", required={"expression": str}, optional={"frameId": int, "context": str, "format": dict})
def evaluate_request(ctx, args):
    with evaluation_time():  # evaluating and showing the value: one MAX_EVAL_SECONDS
        return _evaluate(ctx, args)


def _names_variable(s: Session, frame, name: str) -> bool:
    """Whether `name` is a variable of the frame (its locals, parameters, globals)."""
    f = frame()
    return any(v.name == name for v in s.variables(f)) or any(v.name == name for v in s.globals(f))


def _evaluate(ctx, args):
    st = state_of(ctx)
    s = st.need()
    text = args["expression"]
    hex_ = bool((args.get("format") or {}).get("hex"))
    if args.get("context") == "repl":
        out = repl.run(s, text, focus=functools.partial(change_focus, ctx, st, s),
                       frame=lambda: followed_frame(st, s, args.get("frameId")))
        if out is not None:
            return {"result": out, "variablesReference": 0}
        text, hex_ = repl.print_format(text, hex_, functools.partial(_names_variable, s,
                                                                       lambda: followed_frame(st, s, args.get("frameId"))))
    frame = followed_frame(st, s, args.get("frameId"))
    obj = parsed(evaluate_expression, s, text, frame=frame, lanes=[frame.lane])
    hex_ = hex_ or bool(_REGISTER_ALONE.match(text))
    item = _object_var(st, s, text, obj, frame, hex_, evaluate_name=text)
    body = {"result": item["value"], "type": item.get("type"), "variablesReference": item["variablesReference"]}
    for k in ("memoryReference", "indexedVariables", "namedVariables"):
        if k in item:
            body[k] = item[k]
    return body
