// Keeps one SessionModel per aspace-gpu debug session up to date from the
// DAP traffic, re-reads the focused wave's lanes when the server says things
// changed, and tells the views.

import * as vscode from 'vscode';
import { Coalescer } from './coalesce';
import { DEBUG_TYPE } from './launchConfig';
import type { FocusInfo } from './protocol';
import { requestLanes, setFocus } from './serverRequests';
import { SessionModel, type DapMessage } from './sessionModel';

export interface GpuSession {
  readonly session: vscode.DebugSession;
  readonly model: SessionModel;
  readonly refresher: Coalescer;
}

export class GpuDebugController implements vscode.DebugAdapterTrackerFactory, vscode.Disposable {
  private readonly sessions = new Map<string, GpuSession>();
  private readonly changed = new vscode.EventEmitter<GpuSession | undefined>();
  private readonly ended = new vscode.EventEmitter<string>();
  private readonly disposables: vscode.Disposable[] = [];

  /** Fires after a session's focus or lanes changed (undefined: the active session changed). */
  readonly onDidChange = this.changed.event;
  /** Fires with the id of a session that ended. */
  readonly onDidEndSession = this.ended.event;

  constructor(private readonly log: vscode.OutputChannel) {
    this.disposables.push(
      vscode.debug.onDidTerminateDebugSession((s) => {
        if (this.sessions.delete(s.id)) {
          this.ended.fire(s.id);
          this.changed.fire(undefined);
        }
      }),
      vscode.debug.onDidChangeActiveDebugSession(() => this.changed.fire(undefined)),
      this.changed,
      this.ended,
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  createDebugAdapterTracker(session: vscode.DebugSession): vscode.DebugAdapterTracker {
    const entry = this.entryFor(session);
    return {
      onWillReceiveMessage: (msg: DapMessage) => {
        if (entry.model.observeRequest(msg)) void this.refresh(entry);
      },
      onDidSendMessage: (msg: DapMessage) => {
        if (entry.model.observeMessage(msg)) void this.refresh(entry);
      },
      onError: (error: Error) => this.log.appendLine(`[${session.name}] adapter error: ${error.message}`),
      onExit: (code: number | undefined, signal: string | undefined) => {
        if (code) this.log.appendLine(`[${session.name}] aspace-dap exited with code ${code}${signal ? ` (${signal})` : ''}`);
      },
    };
  }

  private entryFor(session: vscode.DebugSession): GpuSession {
    let entry = this.sessions.get(session.id);
    if (entry === undefined) {
      const model = new SessionModel();
      const created: GpuSession = { session, model, refresher: new Coalescer(() => this.reloadLanes(created)) };
      entry = created;
      this.sessions.set(session.id, entry);
    }
    return entry;
  }

  /** The active debug session, when it is an aspace-gpu session. */
  get active(): GpuSession | undefined {
    const s = vscode.debug.activeDebugSession;
    return s !== undefined && s.type === DEBUG_TYPE ? this.sessions.get(s.id) : undefined;
  }

  byId(sessionId: string | undefined): GpuSession | undefined {
    return sessionId === undefined ? this.active : this.sessions.get(sessionId) ?? this.active;
  }

  refresh(entry: GpuSession): Promise<void> {
    return entry.refresher.request();
  }

  private async reloadLanes(entry: GpuSession): Promise<void> {
    const threadId = entry.model.threadId;
    if (threadId !== undefined && this.sessions.has(entry.session.id)) {
      try {
        entry.model.applyLanes(threadId, await requestLanes(entry.session, threadId));
      } catch (error) {
        entry.model.clearLanes();
        this.log.appendLine(`[${entry.session.name}] lanes of thread ${threadId}: ${describe(error)}`);
      }
    }
    this.changed.fire(entry);
  }

  /** Moves the server's focus; the views follow from the reply and the server's invalidated event. */
  async focus(entry: GpuSession, target: { threadId?: number; lane?: number }): Promise<FocusInfo> {
    const focus = await setFocus(entry.session, target);
    entry.model.applyFocus(focus);
    this.changed.fire(entry);
    void this.refresh(entry);
    return focus;
  }
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
