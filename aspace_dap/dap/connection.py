"""What one DAP connection remembers, and how a client's frameId becomes a frame.

DebugState holds the session (after launch), the variablesReference handles, the frames handed out
for the current focus and the focus generation each was handed out in. Frame ids name (wave, depth),
so an id still means something after the focus has moved.
"""

from __future__ import annotations

from ..errors import AspaceError
from ..session import Frame, Session
from .refs import Handles

FRAMES_PER_WAVE = 4096  # more than session.MAX_FRAMES


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
        self.note_sources: dict[int, str] = {}  # sourceReference -> text of a "position unknown" frame

    def note_source(self, note: str) -> int:
        """The sourceReference of a document holding a frame's note (one per distinct note)."""
        for ref, text in self.note_sources.items():
            if text == note:
                return ref
        ref = len(self.note_sources) + 1
        self.note_sources[ref] = note
        return ref

    def need(self) -> Session:
        if self.session is None:
            raise AspaceError("no dump is open: send launch or attach first")
        return self.session

    def reset_views(self):
        self.handles.clear()
        self.frame_ids.clear()


def state_of(ctx) -> DebugState:
    return ctx.state


def frame_id(wave_id: int, index: int) -> int:
    return wave_id * FRAMES_PER_WAVE + index + 1


def frame_of(st: DebugState, frame_id) -> Frame:
    if frame_id is None:
        s = st.need()
        frames = s.frames()
        return frames[0]
    f = st.frame_ids.get(frame_id)
    if f is not None:
        return f
    # ids name (wave, depth), so a client that still holds a frame id after a lane change gets that
    # depth of the newly focused lane's stack
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


def followed_frame(st: DebugState, s: Session, frame_id) -> Frame:
    """The frame an evaluation runs in: the client's frame when it is on the focused wave, else the
    same depth of the focused wave's stack. A client that did not follow a focus change the server
    announced (one that ignored its stop) still names the old wave's frame; the focus wins."""
    if frame_id is not None:
        wave_id, index = _wave_and_depth(s, frame_id)
        if wave_id != s.focus_wave:
            frames = s.frames()
            return frames[min(index, len(frames) - 1)]
    return frame_of(st, frame_id)
