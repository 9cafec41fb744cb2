// The "GPU Waves" view: every wave of the dump grouped by dispatch and call
// stack, the odd ones out first; choosing a wave focuses it through setFocus,
// so the Call Stack and Variables follow.

import * as vscode from 'vscode';
import type { GpuDebugController, GpuSession } from './controller';
import { describe } from './controller';
import {
  groupRow,
  requestWaveGroups,
  waveRows,
  type MoreRow,
  type WaveGroup,
  type WaveGroupsReply,
  type WaveRow,
} from './waveGroups';

type Node = { kind: 'group'; group: WaveGroup } | { kind: 'wave'; row: WaveRow } | { kind: 'more'; row: MoreRow };

export const FOCUS_WAVE_COMMAND = 'aspace.focusWave';

export class WavesTreeProvider implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private groups: { sessionId: string; reply: Promise<WaveGroupsReply> } | undefined;
  private readonly full = new Map<number, Promise<WaveGroup>>();

  constructor(private readonly controller: GpuDebugController, private readonly log: (line: string) => void) {}

  /** Re-render (focus marks); with `reload`, ask the server again. */
  refresh(reload = false): void {
    if (reload) {
      this.groups = undefined;
      this.full.clear();
    }
    this.changed.fire();
  }

  private reply(entry: GpuSession): Promise<WaveGroupsReply> {
    if (this.groups === undefined || this.groups.sessionId !== entry.session.id) {
      this.full.clear();
      this.groups = { sessionId: entry.session.id, reply: requestWaveGroups(entry.session) };
    }
    return this.groups.reply;
  }

  async getChildren(node?: Node): Promise<Node[]> {
    const entry = this.controller.active;
    if (entry === undefined || entry.model.threadId === undefined) return [];
    try {
      if (node === undefined) {
        return (await this.reply(entry)).groups.map((group) => ({ kind: 'group', group }));
      }
      if (node.kind !== 'group') return [];
      let full = this.full.get(node.group.id);
      if (full === undefined) {
        full = requestWaveGroups(entry.session, node.group.id).then((r) => r.groups[0]);
        this.full.set(node.group.id, full);
      }
      return waveRows(await full).map((row) => ('more' in row ? { kind: 'more', row } : { kind: 'wave', row }));
    } catch (error) {
      this.log(`waveGroups: ${describe(error)}`);
      return [];
    }
  }

  getTreeItem(node: Node): vscode.TreeItem {
    const focusThread = this.controller.active?.model.threadId;
    if (node.kind === 'group') {
      const row = groupRow(node.group);
      const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.Collapsed);
      item.description = row.description;
      item.tooltip = row.tooltip;
      item.iconPath = new vscode.ThemeIcon(row.hasFocus ? 'debug-stackframe-focused' : 'layers');
      item.id = `group-${node.group.id}-${node.group.waveRanges}`;
      item.contextValue = 'waveGroup';
      return item;
    }
    if (node.kind === 'more') {
      const item = new vscode.TreeItem(`${node.row.more} more waves`);
      item.description = `waves ${node.row.ranges}`;
      return item;
    }
    const focused = node.row.threadId === focusThread;
    const label = `Wave ${node.row.waveId}`;
    const item = new vscode.TreeItem(focused ? { label, highlights: [[0, label.length]] } : label);
    item.description = focused ? '◀ focus' : undefined;
    item.iconPath = new vscode.ThemeIcon(focused ? 'debug-stackframe-focused' : 'pulse');
    item.id = `wave-${node.row.waveId}`;
    item.contextValue = 'wave';
    item.command = { command: FOCUS_WAVE_COMMAND, title: 'Focus Wave', arguments: [node.row.threadId] };
    return item;
  }
}

export function createWavesView(controller: GpuDebugController, log: vscode.OutputChannel): vscode.Disposable {
  const provider = new WavesTreeProvider(controller, (line) => log.appendLine(line));
  const view = vscode.window.createTreeView('aspace.waves', { treeDataProvider: provider });
  let shown: string | undefined;
  const update = (): void => {
    const entry = controller.active;
    view.message = entry === undefined ? 'No GPU debug session is active.' : undefined;
    // ask again when the session or its focused wave changed (the focus mark moves between groups)
    const now = entry === undefined ? undefined : `${entry.session.id}/${entry.model.threadId}`;
    provider.refresh(now !== shown);
    shown = now;
  };
  const focusWave = vscode.commands.registerCommand('aspace.focusWave', async (threadId: unknown) => {
    const entry = controller.active;
    if (entry === undefined || typeof threadId !== 'number') return;
    try {
      await controller.focus(entry, { threadId });
    } catch (error) {
      void vscode.window.showErrorMessage(`Focus wave: ${describe(error)}`);
    }
  });
  const reload = vscode.commands.registerCommand('aspace.refreshWaves', () => provider.refresh(true));
  const listener = controller.onDidChange(update);
  update();
  return vscode.Disposable.from(listener, focusWave, reload, view);
}
