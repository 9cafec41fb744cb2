"""What the session shows for a lane's innermost frame: the shared reading of the Intel example tests."""

from aspace_dap.session import Frame, Session
from aspace_dap.values.format import format_obj


def shown(s: Session, lane: int) -> tuple[Frame, dict[str, str]]:
    """Focus `lane`; its top frame and every variable's text there (an error's text where unreadable)."""
    s.set_focus(lane=lane)
    frame = s.frames()[0]
    out = {}
    for var in s.variables(frame):
        read = s.read_variable(frame, var)
        obj = read.obj_for(lane)
        out[var.name] = format_obj(obj, 0, top=False) if obj is not None else str(read.errors.get(lane, "<none>"))
    return frame, out
