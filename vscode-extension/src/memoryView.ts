// The built-in GPU memory view: a webview per memory space that pages through
// it with readMemory and colours the focused frame's variables over their
// bytes (the server's memoryLayout). Needs no other extension; the Hex Editor
// is offered as well when it is installed.

import { randomBytes } from 'crypto';
import * as vscode from 'vscode';
import { describe, type GpuDebugController, type GpuSession } from './controller';
import { parseMemoryLayout, readPage } from './memoryLayout';
import { BYTES_PER_ROW, nextRowBytes, PAGE_BYTES, renderMemoryView, TYPED_FORMATS, type MemoryViewState, type TypedFormat } from './memoryViewHtml';

export const HEX_EDITOR_EXTENSION = 'ms-vscode.hexeditor';

export interface MemoryTarget {
  title: string;
  memoryReference: string;
  size?: number;
  /** Where the first page starts, from the reference (negative: before it). */
  offset?: number;
}

interface OpenView {
  panel: vscode.WebviewPanel;
  sessionId: string;
  target: MemoryTarget;
  offset: number;
  format: TypedFormat;
  rowBytes: number;
  /** Renders started: an older one finishing late does not replace a newer page. */
  renders: number;
  /** Per bytes-per-row: the widest view its columns overflowed, so the page does not grow back
   * into a layout that did not fit (widths vary a little with the values shown). */
  overflowed: Map<number, number>;
}

export class MemoryViews implements vscode.Disposable {
  private readonly views = new Map<string, OpenView>();
  /** The layout the last view settled on: a new view starts there (they share one editor group). */
  private rowBytes = BYTES_PER_ROW;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly controller: GpuDebugController,
    private readonly openHexEditor: (session: vscode.DebugSession, target: MemoryTarget) => Promise<void>,
  ) {
    this.disposables.push(
      controller.onDidChange((entry) => {
        if (entry !== undefined) void this.refreshSession(entry);
      }),
      controller.onDidEndSession((sessionId) => {
        for (const view of this.views.values()) {
          if (view.sessionId === sessionId) view.panel.title = `${view.target.title} (ended)`;
        }
      }),
    );
  }

  dispose(): void {
    for (const view of this.views.values()) view.panel.dispose();
    for (const d of this.disposables) d.dispose();
  }

  async show(entry: GpuSession, target: MemoryTarget): Promise<void> {
    const key = `${entry.session.id}\u0000${target.memoryReference}`;
    let view = this.views.get(key);
    if (view === undefined && target.offset === undefined && target.size !== undefined) {
      target = { ...target, offset: await firstVariablePage(entry, target) };
    }
    if (view === undefined) {
      const panel = vscode.window.createWebviewPanel(
        'aspace.memory',
        target.title,
        { viewColumn: this.column(), preserveFocus: true },
        { enableScripts: true, retainContextWhenHidden: false },
      );
      const created: OpenView = {
        panel,
        sessionId: entry.session.id,
        target,
        offset: target.offset ?? 0,
        format: 'auto',
        rowBytes: this.rowBytes,
        renders: 0,
        overflowed: new Map(),
      };
      view = created;
      this.views.set(key, created);
      panel.onDidDispose(() => this.views.delete(key));
      panel.webview.onDidReceiveMessage((msg: { command?: string; offset?: unknown; format?: unknown; rowBytes?: unknown; width?: unknown }) => {
        const current = this.controller.byId(created.sessionId);
        if (current === undefined) return;
        if (msg.command === 'page' && typeof msg.offset === 'number' && Number.isFinite(msg.offset)) {
          created.offset = Math.trunc(msg.offset);
          void this.render(created, current);
        } else if (msg.command === 'format' && TYPED_FORMATS.includes(msg.format as TypedFormat)) {
          created.format = msg.format as TypedFormat;
          void this.render(created, current);
        } else if (msg.command === 'rowBytes') {
          const next = nextRowBytes(created.rowBytes, msg.rowBytes, msg.width, created.overflowed);
          if (next === created.rowBytes) return;
          created.rowBytes = this.rowBytes = next;
          void this.render(created, current);
        } else if (msg.command === 'hexEditor') {
          void this.openHexEditor(current.session, created.target);
        }
      });
    } else {
      view.panel.reveal(undefined, true);
    }
    await this.render(view, entry);
  }

  /** The editor group of the memory views already open (one group for all of them, so each keeps
   * the width its hex, ASCII and typed columns need), else a new group beside the editor. */
  private column(): vscode.ViewColumn {
    for (const view of this.views.values()) {
      if (view.panel.viewColumn !== undefined) return view.panel.viewColumn;
    }
    return vscode.ViewColumn.Beside;
  }

  private async refreshSession(entry: GpuSession): Promise<void> {
    await Promise.all(
      [...this.views.values()].filter((v) => v.sessionId === entry.session.id).map((v) => this.render(v, entry)),
    );
  }

  private async render(view: OpenView, entry: GpuSession): Promise<void> {
    const render = ++view.renders;
    const size = view.target.size;
    if (size !== undefined && view.offset >= size) view.offset = Math.max(0, size - PAGE_BYTES);
    const count = size !== undefined && view.offset >= 0 ? Math.min(PAGE_BYTES, size - view.offset) : PAGE_BYTES;
    const state: MemoryViewState = {
      title: view.target.title,
      memoryReference: view.target.memoryReference,
      offset: view.offset,
      size,
      variables: [],
      format: view.format,
      rowBytes: view.rowBytes,
      frameName: entry.model.threadName,
      hexEditorAvailable: vscode.extensions.getExtension(HEX_EDITOR_EXTENSION) !== undefined,
      cspSource: view.panel.webview.cspSource,
      nonce: randomBytes(16).toString('base64'),
    };
    try {
      state.page = await readPage(entry.session, view.target.memoryReference, view.offset, Math.max(0, count));
      const args: Record<string, unknown> = { memoryReference: view.target.memoryReference, offset: view.offset, count };
      if (entry.model.threadId !== undefined) args.threadId = entry.model.threadId;
      const frameId = entry.model.frameOnThread;
      if (frameId !== undefined) args.frameId = frameId;
      try {
        state.variables = parseMemoryLayout(await entry.session.customRequest('memoryLayout', args));
      } catch (error) {
        state.error = `Variables not shown: ${describe(error)}`;
      }
    } catch (error) {
      state.error = describe(error);
    }
    if (render === view.renders) view.panel.webview.html = renderMemoryView(state);
  }
}

/** A whole space opens at the page of the focused frame's first variable in it (else at its start). */
async function firstVariablePage(entry: GpuSession, target: MemoryTarget): Promise<number> {
  const base = /#(0x[0-9a-fA-F]+|\d+)$/.exec(target.memoryReference);
  if (base === null || target.size === undefined) return 0;
  try {
    const args: Record<string, unknown> = { memoryReference: target.memoryReference, offset: 0, count: target.size };
    if (entry.model.threadId !== undefined) args.threadId = entry.model.threadId;
    const found = parseMemoryLayout(await entry.session.customRequest('memoryLayout', args));
    if (found.length === 0) return 0;
    const from = Number(found[0].address - BigInt(base[1]));
    return Math.max(0, Math.floor(from / PAGE_BYTES) * PAGE_BYTES);
  } catch {
    return 0;
  }
}
