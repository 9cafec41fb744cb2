// The "GPU Lanes" view: the shown wave's lanes; clicking one focuses it.

import * as vscode from 'vscode';
import type { GpuDebugController } from './controller';
import { laneDescription, laneStateIcon, sourcePositionText, workItemText } from './lanes';
import type { LaneInfo } from './protocol';

const STATE_COLORS: Record<string, string | undefined> = {
  active: 'charts.green',
  exited: 'disabledForeground',
  invalid: 'errorForeground',
};

export class LanesTreeProvider implements vscode.TreeDataProvider<LaneInfo> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly controller: GpuDebugController) {}

  refresh(): void {
    this.changed.fire();
  }

  getParent(): undefined {
    return undefined; // lanes are the view's roots
  }

  getChildren(element?: LaneInfo): LaneInfo[] {
    if (element !== undefined) return [];
    return this.controller.active?.model.lanes?.lanes ?? [];
  }

  getTreeItem(lane: LaneInfo): vscode.TreeItem {
    const focused = this.controller.active?.model.focus?.lane === lane.lane;
    const label = `Lane ${lane.lane}`;
    const item = new vscode.TreeItem(focused ? { label, highlights: [[0, label.length]] } : label);
    item.description = `${focused ? '◀ focus · ' : ''}${laneDescription(lane)}`;
    const color = STATE_COLORS[lane.state];
    item.iconPath = new vscode.ThemeIcon(
      focused ? 'debug-stackframe-focused' : laneStateIcon(lane.state),
      color === undefined ? undefined : new vscode.ThemeColor(color),
    );
    item.contextValue = `lane.${lane.state}`;
    item.id = `lane-${lane.lane}`;
    const where = sourcePositionText(lane);
    item.tooltip = new vscode.MarkdownString(
      [
        `**Lane ${lane.lane}** — ${lane.state}`,
        `work-item ${workItemText(lane)}`,
        `pc \`${lane.pc}\``,
        where !== undefined ? `at ${lane.source?.path ?? where}${lane.line !== undefined ? `:${lane.line}` : ''}` : '',
      ]
        .filter((line) => line !== '')
        .join('\n\n'),
    );
    item.command = { command: 'aspace.focusLane', title: 'Focus Lane', arguments: [lane.lane] };
    return item;
  }
}

export function createLanesView(controller: GpuDebugController): vscode.Disposable {
  const provider = new LanesTreeProvider(controller);
  const view = vscode.window.createTreeView('aspace.lanes', { treeDataProvider: provider });
  const update = (): void => {
    const entry = controller.active;
    view.description = entry?.model.threadName;
    view.message =
      entry === undefined
        ? 'No GPU debug session is active.'
        : entry.model.lanes === undefined
          ? 'Lanes appear once the server reports a stopped wave.'
          : undefined;
    provider.refresh();
    // The selected row follows the focus, wherever the focus moved from (a row clicked earlier
    // would otherwise stay highlighted beside the newly focused lane).
    // A session's first lanes open the view (VS Code keeps a contributed view collapsed otherwise).
    const focused = entry?.model.lanes?.lanes.find((lane) => lane.lane === entry.model.focus?.lane);
    const first = entry !== undefined && !shown.has(entry.session.id);
    if (focused !== undefined && entry !== undefined && (view.visible || first)) {
      shown.add(entry.session.id);
      void Promise.resolve(view.reveal(focused, { select: true, focus: false })).catch(() => undefined);
    }
  };
  const shown = new Set<string>();
  const listener = controller.onDidChange(update);
  update();
  return vscode.Disposable.from(listener, view);
}
