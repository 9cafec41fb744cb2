// `Lane 5/64 · active` in the status bar while an aspace-gpu session is active.

import * as vscode from 'vscode';
import type { GpuDebugController } from './controller';
import { focusStatusText } from './lanes';

export function createLaneStatusBar(controller: GpuDebugController): vscode.Disposable {
  const item = vscode.window.createStatusBarItem('aspace.laneFocus', vscode.StatusBarAlignment.Left, 50);
  item.name = 'GPU Lane Focus';
  item.command = 'aspace.goToLane';
  const update = (): void => {
    const entry = controller.active;
    const focus = entry?.model.focus;
    if (entry === undefined || focus === undefined) {
      item.hide();
      return;
    }
    item.text = `$(pulse) ${focusStatusText(focus)}`;
    const wave = entry.model.threadName ?? `thread ${focus.threadId}`;
    item.tooltip = `${wave}\nClick to focus another lane`;
    item.show();
  };
  const listener = controller.onDidChange(update);
  update();
  return vscode.Disposable.from(listener, item);
}
