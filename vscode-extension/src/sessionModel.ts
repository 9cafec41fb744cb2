// What the extension knows about one aspace-gpu debug session, learned by
// watching the DAP traffic between VS Code and the server: which wave is
// shown, which frame's variables are on screen, the lane focus, the lanes.

import { focusFromLanes } from './lanes';
import { parseFocus, type FocusInfo, type LanesReply } from './protocol';

export interface DapMessage {
  type?: string;
  seq?: number;
  command?: string;
  event?: string;
  request_seq?: number;
  success?: boolean;
  arguments?: unknown;
  body?: unknown;
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

export class SessionModel {
  /** The wave whose lanes are shown. */
  threadId: number | undefined;
  /** The frame whose variables VS Code shows (last `scopes` request). */
  frameId: number | undefined;
  focus: FocusInfo | undefined;
  lanes: LanesReply | undefined;
  readonly threadNames = new Map<number, string>();
  private readonly frameThreads = new Map<number, number>();
  private readonly stackTraceRequests = new Map<number, number>();

  /** A message VS Code sends to the server; true when lane views must refresh. */
  observeRequest(msg: DapMessage): boolean {
    if (msg.type !== 'request') return false;
    if (msg.command === 'stackTrace') {
      const threadId = integer(field(msg.arguments, 'threadId'));
      if (msg.seq !== undefined && threadId !== undefined) this.stackTraceRequests.set(msg.seq, threadId);
      return false;
    }
    if (msg.command === 'scopes') {
      const frameId = integer(field(msg.arguments, 'frameId'));
      if (frameId === undefined) return false;
      this.frameId = frameId;
      // Selecting a frame of another wave in the Call Stack view shows that wave's lanes.
      const threadId = this.frameThreads.get(frameId);
      if (threadId !== undefined && threadId !== this.threadId) {
        this.threadId = threadId;
        return true;
      }
    }
    return false;
  }

  /** A message the server sends to VS Code; true when lane views must refresh. */
  observeMessage(msg: DapMessage): boolean {
    if (msg.type === 'response') return this.observeResponse(msg);
    if (msg.type !== 'event') return false;
    switch (msg.event) {
      case 'stopped': {
        const threadId = integer(field(msg.body, 'threadId'));
        if (field(msg.body, 'preserveFocusHint') === true) {
          // a stop that leaves the focus where it is (the stop's badge put back on another wave the
          // dump stopped in): the shown wave stays, only that thread's frames are new
          if (threadId !== undefined) this.forgetFrames(threadId);
          return false;
        }
        if (threadId !== undefined) this.threadId = threadId;
        this.frameThreads.clear();
        return true;
      }
      case 'invalidated':
        this.frameThreads.clear();
        return true;
      case 'focus': {
        let focus: FocusInfo;
        try {
          focus = parseFocus(msg.body, 'focus event');
        } catch {
          return true; // still worth re-reading the lanes
        }
        this.applyFocus(focus);
        return true;
      }
      default:
        return false;
    }
  }

  private observeResponse(msg: DapMessage): boolean {
    if (msg.command === 'stackTrace' && msg.request_seq !== undefined) {
      const threadId = this.stackTraceRequests.get(msg.request_seq);
      this.stackTraceRequests.delete(msg.request_seq);
      const frames = field(msg.body, 'stackFrames');
      if (msg.success && threadId !== undefined && Array.isArray(frames)) {
        for (const frame of frames) {
          const id = integer(field(frame, 'id'));
          if (id !== undefined) this.frameThreads.set(id, threadId);
        }
      }
      return false;
    }
    if (msg.command === 'threads' && msg.success) {
      const threads = field(msg.body, 'threads');
      if (!Array.isArray(threads)) return false;
      const shownName = this.threadName;
      for (const t of threads) {
        const id = integer(field(t, 'id'));
        const name = field(t, 'name');
        if (id !== undefined && typeof name === 'string') this.threadNames.set(id, name);
      }
      const first = integer(field(threads[0], 'id'));
      if (this.threadId === undefined && first !== undefined) {
        this.threadId = first;
        return true;
      }
      // the shown wave's name can arrive after its focus and lanes did (views name the wave)
      return this.threadName !== shownName;
    }
    return false;
  }

  private forgetFrames(threadId: number): void {
    for (const [frameId, owner] of this.frameThreads) if (owner === threadId) this.frameThreads.delete(frameId);
  }

  /** Result of a setFocus request or a focus event. */
  applyFocus(focus: FocusInfo): void {
    this.focus = focus;
    if (focus.threadId !== this.threadId) {
      this.threadId = focus.threadId;
      this.lanes = undefined;
    }
  }

  /** Result of a `lanes` request for `threadId`. */
  applyLanes(threadId: number, reply: LanesReply): void {
    if (threadId !== this.threadId) return; // the view moved on to another wave meanwhile
    this.lanes = reply;
    this.focus = focusFromLanes(threadId, reply.lanes, reply.focus);
  }

  clearLanes(): void {
    this.lanes = undefined;
  }

  /** The shown frame, when it belongs to the shown wave (else the server uses the top frame). */
  get frameOnThread(): number | undefined {
    if (this.frameId === undefined || this.threadId === undefined) return undefined;
    return this.frameThreads.get(this.frameId) === this.threadId ? this.frameId : undefined;
  }

  get threadName(): string | undefined {
    return this.threadId === undefined ? undefined : this.threadNames.get(this.threadId);
  }
}
