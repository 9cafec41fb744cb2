// The "GPU Waves" view: every wave of the dump grouped by dispatch and where it
// stands (pc, inline chain, callers), the odd ones out first; choosing a wave
// focuses it through setFocus, so the Call Stack and Variables follow. "Find
// Lanes Where…" puts a search on top: the lanes where an expression is true,
// where they stand, and why lanes could not be evaluated; choosing a lane
// focuses its wave and lane.

import * as vscode from 'vscode';
import type { GpuDebugController, GpuSession } from './controller';
import { describe } from './controller';
import {
  foundGroupRow,
  headerRow,
  laneRow,
  reasonRow,
  requestFindLanes,
  type FoundGroup,
  type FoundLane,
  type LanesFound,
  type Row,
} from './findLanes';
import {
  groupRow,
  requestWaveGroups,
  waveRows,
  type MoreRow,
  type WaveGroup,
  type WaveGroupsReply,
  type WaveRow,
} from './waveGroups';

type Node =
  | { kind: 'group'; group: WaveGroup }
  | { kind: 'wave'; row: WaveRow }
  | { kind: 'more'; row: MoreRow }
  | { kind: 'found'; found: LanesFound }
  | { kind: 'foundLane'; lane: FoundLane }
  | { kind: 'foundGroups'; found: LanesFound }
  | { kind: 'foundGroup'; group: FoundGroup }
  | { kind: 'unevaluated'; found: LanesFound }
  | { kind: 'reason'; reason: { reason: string; count: number } };

export const FOCUS_WAVE_COMMAND = 'aspace.focusWave';
export const FOCUS_FOUND_LANE_COMMAND = 'aspace.focusFoundLane';

export class WavesTreeProvider implements vscode.TreeDataProvider<Node> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private groups: { sessionId: string; reply: Promise<WaveGroupsReply> } | undefined;
  private readonly full = new Map<number, Promise<WaveGroup>>();
  /** What the vendor's debugger calls a wave (the last reply's word). */
  private word = 'wave';
  /** The last search of the session, shown above the groups. */
  private found: { sessionId: string; found: LanesFound } | undefined;

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

  /** Show a search's result (the session's last one) on top of the groups. */
  showFound(sessionId: string, found: LanesFound): void {
    this.found = { sessionId, found };
    this.changed.fire();
  }

  clearFound(): void {
    this.found = undefined;
    this.changed.fire();
  }

  async getChildren(node?: Node): Promise<Node[]> {
    const entry = this.controller.active;
    if (entry === undefined || entry.model.threadId === undefined) return [];
    try {
      if (node === undefined) {
        const reply = await this.reply(entry);
        this.word = reply.waveWord;
        const groups: Node[] = reply.groups.map((group) => ({ kind: 'group', group }));
        const found = this.found?.sessionId === entry.session.id ? this.found.found : undefined;
        return found === undefined ? groups : [{ kind: 'found', found }, ...groups];
      }
      if (node.kind === 'found') {
        const rows: Node[] = node.found.lanes.map((lane) => ({ kind: 'foundLane', lane }));
        if (node.found.groups.length > 0) rows.push({ kind: 'foundGroups', found: node.found });
        if (node.found.unevaluated > 0) rows.push({ kind: 'unevaluated', found: node.found });
        return rows;
      }
      if (node.kind === 'foundGroups') return node.found.groups.map((group) => ({ kind: 'foundGroup', group }));
      if (node.kind === 'unevaluated') return node.found.reasons.map((reason) => ({ kind: 'reason', reason }));
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
    const found = this.foundItem(node);
    if (found !== undefined) return found;
    if (node.kind === 'group') {
      const row = groupRow(node.group, this.word);
      const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.Collapsed);
      item.description = row.description;
      item.tooltip = row.tooltip;
      item.iconPath = new vscode.ThemeIcon(row.hasFocus ? 'debug-stackframe-focused' : 'layers');
      item.id = `group-${node.group.id}-${node.group.waveRanges}`;
      item.contextValue = 'waveGroup';
      return item;
    }
    if (node.kind === 'more') {
      const item = new vscode.TreeItem(`${node.row.more} more ${this.word}s`);
      item.description = `${this.word}s ${node.row.ranges}`;
      return item;
    }
    if (node.kind !== 'wave') return new vscode.TreeItem('');
    const focused = node.row.threadId === focusThread;
    const label = `${this.word[0].toUpperCase()}${this.word.slice(1)} ${node.row.waveId}`;
    const item = new vscode.TreeItem(focused ? { label, highlights: [[0, label.length]] } : label);
    item.description = focused ? '◀ focus' : undefined;
    item.iconPath = new vscode.ThemeIcon(focused ? 'debug-stackframe-focused' : 'pulse');
    item.id = `wave-${node.row.waveId}`;
    item.contextValue = 'wave';
    item.command = { command: FOCUS_WAVE_COMMAND, title: 'Focus Wave', arguments: [node.row.threadId] };
    return item;
  }

  private foundItem(node: Node): vscode.TreeItem | undefined {
    const item = (row: Row, state: vscode.TreeItemCollapsibleState, icon: string): vscode.TreeItem => {
      const out = new vscode.TreeItem(row.label, state);
      out.description = row.description;
      out.tooltip = row.tooltip;
      out.iconPath = new vscode.ThemeIcon(icon);
      return out;
    };
    const { Collapsed, Expanded, None } = vscode.TreeItemCollapsibleState;
    switch (node.kind) {
      case 'found': {
        const out = item(headerRow(node.found), Expanded, 'search');
        out.id = `found-${node.found.expression}-${node.found.matched}-${node.found.unevaluated}`;
        out.contextValue = 'foundLanes';
        return out;
      }
      case 'foundLane': {
        const model = this.controller.active?.model;
        const focused = node.lane.threadId === model?.focus?.threadId && node.lane.lane === model?.focus?.lane;
        const out = item(laneRow(node.lane, this.word), None, focused ? 'debug-stackframe-focused' : 'circle-filled');
        if (focused) out.description = `${out.description} ◀ focus`;
        out.command = { command: FOCUS_FOUND_LANE_COMMAND, title: 'Focus Lane', arguments: [node.lane.threadId, node.lane.lane] };
        return out;
      }
      case 'foundGroups':
        return item({ label: 'Where they stand', description: `${node.found.groups.length} groups` }, Expanded, 'layers');
      case 'foundGroup':
        return item(foundGroupRow(node.group, this.word), None, 'layers');
      case 'unevaluated':
        return item({ label: 'Not evaluated', description: `${node.found.unevaluated.toLocaleString('en-US')} lanes` }, Collapsed, 'warning');
      case 'reason':
        return item(reasonRow(node.reason), None, 'circle-slash');
      default:
        return undefined;
    }
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
  let lastExpression = '';
  const find = vscode.commands.registerCommand('aspace.findLanes', async (given?: unknown) => {
    const entry = controller.active;
    if (entry === undefined) {
      void vscode.window.showInformationMessage('Find Lanes: no GPU debug session is active.');
      return;
    }
    const expression = typeof given === 'string' ? given : await vscode.window.showInputBox({
      title: 'Find Lanes Where…',
      prompt: 'A C expression, evaluated in every active lane of every wave at its own pc',
      placeHolder: 'idx >= n   ·   isnan(acc)   ·   threadIdx.x == 0 && flag == 0',
      value: lastExpression,
    });
    if (expression === undefined || expression.trim() === '') return;
    lastExpression = expression;
    try {
      const found = await requestFindLanes(entry.session, expression.trim());
      provider.showFound(entry.session.id, found);
      await vscode.commands.executeCommand('aspace.waves.focus');
    } catch (error) {
      void vscode.window.showErrorMessage(`Find Lanes: ${describe(error)}`);
    }
  });
  const clear = vscode.commands.registerCommand('aspace.clearFoundLanes', () => provider.clearFound());
  const focusLane = vscode.commands.registerCommand('aspace.focusFoundLane', async (threadId: unknown, lane: unknown) => {
    const entry = controller.active;
    if (entry === undefined || typeof threadId !== 'number' || typeof lane !== 'number') return;
    try {
      await controller.focus(entry, { threadId, lane });
    } catch (error) {
      void vscode.window.showErrorMessage(`Focus lane: ${describe(error)}`);
    }
  });
  const listener = controller.onDidChange(update);
  update();
  return vscode.Disposable.from(listener, focusWave, reload, find, clear, focusLane, view);
}
