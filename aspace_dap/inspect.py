"""`aspace-dap inspect`: the call stack and variables of one lane, or an expression across lanes."""

from __future__ import annotations

import json
import sys

from .errors import AspaceError, LimitExceeded
from .session import Session
from .values.format import format_obj


def frame_report(session: Session, wave_id: int, lane: int) -> dict:
    wave = session.wave(wave_id)
    frames = []
    for frame in session.frames(wave_id, lane):
        variables = []
        for var in session.variables(frame):
            try:
                read = session.read_variable(frame, var)
                obj = read.obj_for(lane)
                if obj is None:
                    value, where = read.errors.get(lane, "<unavailable>"), "?"
                else:
                    value, where = format_obj(obj, 0), session.location_text(obj, 0)
            except LimitExceeded:
                raise
            except AspaceError as exc:  # one bad variable must not hide the frame's others
                value, where = f"<unavailable: {exc}>", "?"
            variables.append({"name": var.name, "kind": var.kind, "type": var.type_name("?"),
                              "value": value, "location": where})
        entry = {"index": frame.index, "function": frame.function, "file": frame.file, "line": frame.line,
                 "pc": f"0x{frame.runtime_pc:x}", "inlined": bool(frame.info and frame.info.is_inlined),
                 "variables": variables}
        if frame.column:
            entry["column"] = frame.column
        reason = session.no_variables_reason(frame)
        if reason is not None:
            entry["no_variables"] = reason
        frames.append(entry)
    return {"wave": wave.id, "thread": session.thread_name(wave), "lane": lane,
            "lane_state": session.lane_state(wave, lane), "frames": frames}


def fault_report(session: Session, wave_id: int) -> dict | None:
    """The wave's exception as the exception widget shows it (the faulting instruction, each lane's
    address at it); None when it raised none."""
    from .dap.exceptions import exception_lines

    detail = session.exception_detail(wave_id)
    if detail is None:
        return None
    description, lines = exception_lines(detail)
    return {"id": detail.raised.id, "description": description, "details": lines}


def print_report(report: dict, out=None) -> None:
    out = sys.stdout if out is None else out  # looked up per call: stdout may be redirected after import
    print(f"{report['thread']}  lane {report['lane']} ({report['lane_state']})", file=out)
    told = False
    for f in report["frames"]:
        where = f"{f['file']}:{f['line']}" if f["file"] else "??"
        inl = " [inlined]" if f["inlined"] else ""
        print(f"#{f['index']}  {f['pc']} in {f['function']}{inl} at {where}", file=out)
        if f.get("no_variables") and not told:  # the same for every frame of the build: said once
            print(f"    (no variables: {f['no_variables']})", file=out)
            told = True
        width = max((len(v["name"] or "?") for v in f["variables"]), default=0)
        for v in f["variables"]:
            print(f"    {(v['name'] or '?'):<{width}} = {v['value']}    [{v['kind']}, {v['type']}, {v['location']}]",
                  file=out)


def lane_table(session: Session, wave_id: int, expression: str) -> list[dict]:
    from .lane_values import lane_values
    return lane_values(session, expression, wave_id=wave_id, frame_index=0)


def _source_map(entries: list[str]) -> dict[str, str]:
    out = {}
    for entry in entries:
        src, sep, dst = entry.partition("=")
        if not sep or not src or not dst:
            raise AspaceError(f"--source-map {entry}: give FROM=TO (a folder as the debug info names it, "
                              "and the folder that holds those files here)")
        out[src] = dst
    return out


def main(args) -> int:
    try:
        # inspect is the user at a shell: it reads every source the user can (sources from anywhere)
        session = Session.open(args.state, code_object=args.code_object, wave=args.wave, lane=args.lane,
                               source_map=_source_map(getattr(args, "source_map", None) or []))
        wave_id = session.focus_wave
        if args.all_lanes:
            rows = lane_table(session, wave_id, args.all_lanes)
            if args.json:
                json.dump(rows, sys.stdout, indent=2)
                print()
            else:
                print(f"{args.all_lanes} across the lanes of {session.thread_name(session.wave(wave_id))}")
                for r in rows:
                    mark = " " if r["active"] else "-"
                    print(f"  {mark} lane {r['lane']:>2}: {r['value']}")
            return 0
        report = frame_report(session, wave_id, session.focus_lane)
        fault = fault_report(session, wave_id)
        if args.json:
            json.dump({**report, "exception": fault} if fault else report, sys.stdout, indent=2)
            print()
        else:
            for w in session.warnings:
                print(f"warning: {w}", file=sys.stderr)
            print_report(report)
            if fault:
                print(f"{fault['id']}: {fault['description']}")
                for line in fault["details"]:
                    print(f"  {line}")
        for note in session.notes:  # a source found elsewhere or not found: where it was looked for
            print(f"note: {note}", file=sys.stderr)
        return 0
    except AspaceError as e:
        print(f"aspace-dap inspect: {e}", file=sys.stderr)
        return 1

