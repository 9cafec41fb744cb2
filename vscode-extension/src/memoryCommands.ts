// "Open LDS" / "Open scratch of this lane": find the memory space with the
// server's memorySpaces request and open VS Code's hex editor on it through
// the same vscode-debug-memory URIs that "View Binary Data" uses.

import * as vscode from 'vscode';
import { describe, type GpuDebugController, type GpuSession } from './controller';
import { debugMemoryUriParts, memorySpaceDisplayName } from './memoryUri';
import type { MemorySpace } from './protocol';
import { requestMemorySpaces } from './serverRequests';

const HEX_EDITOR_EXTENSION = 'ms-vscode.hexeditor';
const HEX_EDITOR_VIEW_TYPE = 'hexEditor.hexedit';

export const LDS_SPACE = 'local';
export const LANE_SCRATCH_SPACE = 'private_lane';

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

async function openNamedSpace(controller: GpuDebugController, name: string, what: string): Promise<void> {
  const entry = activeOrWarn(controller);
  if (entry === undefined) return;
  const spaces = await spacesOf(entry);
  if (spaces === undefined) return;
  const space = spaces.find((s) => s.name === name);
  if (space === undefined) {
    const known = spaces.map((s) => s.name).join(', ') || 'none';
    void vscode.window.showWarningMessage(`This wave has no ${what} (memory spaces: ${known}).`);
    return;
  }
  await openMemorySpace(entry.session, space);
}

export function registerMemoryCommands(controller: GpuDebugController): vscode.Disposable {
  return vscode.Disposable.from(
    vscode.commands.registerCommand('aspace.openLds', () => openNamedSpace(controller, LDS_SPACE, 'LDS')),
    vscode.commands.registerCommand('aspace.openScratch', () =>
      openNamedSpace(controller, LANE_SCRATCH_SPACE, 'scratch for the focused lane'),
    ),
    vscode.commands.registerCommand('aspace.openMemorySpace', async () => {
      const entry = activeOrWarn(controller);
      if (entry === undefined) return;
      const spaces = await spacesOf(entry);
      if (spaces === undefined) return;
      const picked = await vscode.window.showQuickPick(
        spaces.map((space) => ({ label: space.name, description: `${space.size} bytes`, detail: space.memoryReference, space })),
        { placeHolder: 'GPU memory space to open' },
      );
      if (picked !== undefined) await openMemorySpace(entry.session, picked.space);
    }),
  );
}
