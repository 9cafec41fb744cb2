// Lane focus commands: next/previous active lane, "Go to lane…", focusing a
// lane from the GPU Lanes view, and "Show in all lanes".

import * as vscode from 'vscode';
import { describe, type GpuDebugController, type GpuSession } from './controller';
import { adjacentActiveLane, focusStatusText, lanePickItems } from './lanes';
import type { LaneValuesPanels } from './laneValuesPanel';
import { expressionFromMenuArgument } from './menuArgument';

function activeOrWarn(controller: GpuDebugController): GpuSession | undefined {
  const entry = controller.active;
  if (entry === undefined) void vscode.window.showWarningMessage('No GPU debug session is active.');
  return entry;
}

async function lanesOf(controller: GpuDebugController, entry: GpuSession) {
  if (entry.model.lanes === undefined) await controller.refresh(entry);
  const lanes = entry.model.lanes;
  if (lanes === undefined) void vscode.window.showWarningMessage('The server has not reported the lanes of this wave.');
  return lanes;
}

async function focusLane(controller: GpuDebugController, entry: GpuSession, lane: number): Promise<void> {
  try {
    const focus = await controller.focus(entry, { threadId: entry.model.threadId, lane });
    vscode.window.setStatusBarMessage(`GPU focus: ${focusStatusText(focus)}`, 3000);
  } catch (error) {
    void vscode.window.showErrorMessage(`Cannot focus lane ${lane}: ${describe(error)}`);
  }
}

async function stepActiveLane(controller: GpuDebugController, direction: 1 | -1): Promise<void> {
  const entry = activeOrWarn(controller);
  if (entry === undefined) return;
  const lanes = await lanesOf(controller, entry);
  if (lanes === undefined) return;
  const current = entry.model.focus?.lane ?? lanes.focus;
  const next = adjacentActiveLane(lanes.lanes, current, direction);
  if (next === undefined) {
    void vscode.window.showInformationMessage('No other lane of this wave is active.');
    return;
  }
  await focusLane(controller, entry, next);
}

export function registerLaneCommands(controller: GpuDebugController, panels: LaneValuesPanels): vscode.Disposable {
  return vscode.Disposable.from(
    vscode.commands.registerCommand('aspace.nextActiveLane', () => stepActiveLane(controller, 1)),
    vscode.commands.registerCommand('aspace.previousActiveLane', () => stepActiveLane(controller, -1)),
    vscode.commands.registerCommand('aspace.goToLane', async () => {
      const entry = activeOrWarn(controller);
      if (entry === undefined) return;
      const lanes = await lanesOf(controller, entry);
      if (lanes === undefined) return;
      const focus = entry.model.focus?.lane ?? lanes.focus;
      const items = lanePickItems(lanes.lanes, focus);
      const picked = await vscode.window.showQuickPick(items, {
        placeHolder: `Lane to focus in ${entry.model.threadName ?? 'this wave'} (type a number to filter)`,
        matchOnDescription: true,
      });
      if (picked !== undefined) await focusLane(controller, entry, picked.lane);
    }),
    vscode.commands.registerCommand('aspace.focusLane', async (lane: unknown) => {
      const entry = activeOrWarn(controller);
      if (entry === undefined || typeof lane !== 'number') return;
      await focusLane(controller, entry, lane);
    }),
    vscode.commands.registerCommand('aspace.refreshLanes', async () => {
      const entry = activeOrWarn(controller);
      if (entry !== undefined) await controller.refresh(entry);
    }),
    vscode.commands.registerCommand('aspace.showInAllLanes', async (arg: unknown) => {
      const target = expressionFromMenuArgument(arg);
      const entry = controller.byId(target?.sessionId);
      if (entry === undefined) {
        void vscode.window.showWarningMessage('No GPU debug session is active.');
        return;
      }
      const editor = vscode.window.activeTextEditor;
      const selected = editor !== undefined && !editor.selection.isEmpty ? editor.document.getText(editor.selection).trim() : '';
      // The editor's context menu passes the document's URI: the selection is the expression.
      // From the palette, the selection is offered for editing.
      const fromEditorMenu = arg instanceof vscode.Uri && selected !== '';
      const expression =
        target?.expression ??
        (fromEditorMenu
          ? selected
          : await vscode.window.showInputBox({ prompt: 'Expression to show in every lane of the wave', value: selected }));
      if (expression === undefined || expression.trim() === '') return;
      await panels.show(entry, expression.trim());
    }),
  );
}
