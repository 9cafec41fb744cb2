// "Show in all lanes": a webview per expression listing its value in every
// lane of the shown wave, re-read whenever the focus or the wave changes.

import * as vscode from 'vscode';
import { describe, type GpuDebugController, type GpuSession } from './controller';
import { renderLaneValuesPage } from './laneValuesHtml';
import { summarizeLaneValues } from './majority';
import { requestLaneValues } from './serverRequests';

interface OpenPanel {
  panel: vscode.WebviewPanel;
  sessionId: string;
  expression: string;
}

export class LaneValuesPanels implements vscode.Disposable {
  private readonly panels = new Map<string, OpenPanel>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(controller: GpuDebugController) {
    this.disposables.push(
      controller.onDidChange((entry) => {
        if (entry !== undefined) void this.refreshSession(entry);
      }),
      controller.onDidEndSession((sessionId) => this.markEnded(sessionId)),
    );
  }

  dispose(): void {
    for (const open of this.panels.values()) open.panel.dispose();
    for (const d of this.disposables) d.dispose();
  }

  async show(entry: GpuSession, expression: string): Promise<void> {
    const key = `${entry.session.id}\u0000${expression}`;
    let open = this.panels.get(key);
    if (open === undefined) {
      const panel = vscode.window.createWebviewPanel(
        'aspace.laneValues',
        `${expression} · all lanes`,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, retainContextWhenHidden: false },
      );
      const created: OpenPanel = { panel, sessionId: entry.session.id, expression };
      open = created;
      this.panels.set(key, created);
      panel.onDidDispose(() => this.panels.delete(key));
    } else {
      open.panel.reveal(undefined, true);
    }
    await this.render(open, entry);
  }

  private async refreshSession(entry: GpuSession): Promise<void> {
    const renders = [...this.panels.values()]
      .filter((open) => open.sessionId === entry.session.id)
      .map((open) => this.render(open, entry));
    await Promise.all(renders);
  }

  private async render(open: OpenPanel, entry: GpuSession): Promise<void> {
    const model = entry.model;
    const base = {
      expression: open.expression,
      waveName: model.threadName,
      focusLane: model.focus?.lane,
      cspSource: open.panel.webview.cspSource,
    };
    if (model.threadId === undefined) {
      open.panel.webview.html = renderLaneValuesPage({ ...base, error: 'No wave is stopped yet.' });
      return;
    }
    try {
      const values = await requestLaneValues(entry.session, {
        threadId: model.threadId,
        frameId: model.frameOnThread,
        expression: open.expression,
      });
      open.panel.webview.html = renderLaneValuesPage({ ...base, summary: summarizeLaneValues(values) });
    } catch (error) {
      open.panel.webview.html = renderLaneValuesPage({ ...base, error: describe(error) });
    }
  }

  private markEnded(sessionId: string): void {
    for (const open of this.panels.values()) {
      if (open.sessionId === sessionId) {
        open.panel.webview.html = renderLaneValuesPage({
          expression: open.expression,
          error: 'The debug session has ended.',
          cspSource: open.panel.webview.cspSource,
        });
      }
    }
  }
}
