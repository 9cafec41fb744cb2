// "Open Shared Memory (LDS)" / "Open Private Memory of This Lane": find the
// memory space by kind with the server's memorySpaces request and open VS
// Code's hex editor on it through the same vscode-debug-memory URIs that
// "View Binary Data" uses.

import * as vscode from 'vscode';
import { describe, type GpuDebugController, type GpuSession } from './controller';
import { memorySpacePicks, missingSpaceMessage, spaceOfKind } from './memorySpaces';
import { debugMemoryUriParts, memorySpaceDisplayName } from './memoryUri';
import type { MemorySpace, MemorySpaceKind } from './protocol';
import { requestMemorySpaces } from './serverRequests';

const HEX_EDITOR_EXTENSION = 'ms-vscode.hexeditor';
const HEX_EDITOR_VIEW_TYPE = 'hexEditor.hexedit';

async function ensureHexEditor(): Promise<boolean> {
  if (vscode.extensions.getExtension(HEX_EDITOR_EXTENSION) !== undefined) return true;
  const install = 'Install Hex Editor';
  const answer = await vscode.window.showInformationMessage(
    'GPU memory opens in the Hex Editor extension, which is not installed.',
    install,
  );
  if (answer !== install) return false;
  await vscode.commands.executeCommand('workbench.extensions.installExtension', HEX_EDITOR_EXTENSION);
  return true;
}

export async function openMemorySpace(session: vscode.DebugSession, space: MemorySpace): Promise<void> {
  if (!(await ensureHexEditor())) return;
  const uri = vscode.Uri.from(
    debugMemoryUriParts({
      sessionId: session.id,
      memoryReference: space.memoryReference,
      displayName: memorySpaceDisplayName(space.name, space.memoryReference),
      size: space.size,
    }),
  );
  await vscode.commands.executeCommand('vscode.openWith', uri, HEX_EDITOR_VIEW_TYPE);
}

async function spacesOf(entry: GpuSession): Promise<MemorySpace[] | undefined> {
  const threadId = entry.model.threadId;
  if (threadId === undefined) {
    void vscode.window.showWarningMessage('No wave is stopped yet.');
    return undefined;
  }
  try {
    return await requestMemorySpaces(entry.session, { threadId, lane: entry.model.focus?.lane });
  } catch (error) {
    void vscode.window.showErrorMessage(`Cannot list GPU memory spaces: ${describe(error)}`);
    return undefined;
  }
}

function activeOrWarn(controller: GpuDebugController): GpuSession | undefined {
  const entry = controller.active;
  if (entry === undefined) void vscode.window.showWarningMessage('No GPU debug session is active.');
  return entry;
}

async function openSpaceOfKind(controller: GpuDebugController, kind: MemorySpaceKind): Promise<void> {
  const entry = activeOrWarn(controller);
  if (entry === undefined) return;
  const spaces = await spacesOf(entry);
  if (spaces === undefined) return;
  const space = spaceOfKind(spaces, kind);
  if (space === undefined) {
    void vscode.window.showWarningMessage(missingSpaceMessage(spaces, kind));
    return;
  }
  await openMemorySpace(entry.session, space);
}

export function registerMemoryCommands(controller: GpuDebugController): vscode.Disposable {
  return vscode.Disposable.from(
    vscode.commands.registerCommand('aspace.openLds', () => openSpaceOfKind(controller, 'workgroup')),
    vscode.commands.registerCommand('aspace.openScratch', () => openSpaceOfKind(controller, 'lane')),
    vscode.commands.registerCommand('aspace.openMemorySpace', async () => {
      const entry = activeOrWarn(controller);
      if (entry === undefined) return;
      const spaces = await spacesOf(entry);
      if (spaces === undefined) return;
      const picked = await vscode.window.showQuickPick(memorySpacePicks(spaces), {
        placeHolder: 'GPU memory space to open',
        matchOnDescription: true,
      });
      if (picked !== undefined) await openMemorySpace(entry.session, picked.space);
    }),
  );
}
