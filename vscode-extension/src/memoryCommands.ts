// "Open Shared Memory (LDS)" / "Open Private Memory of This Lane": find the
// memory space by kind with the server's memorySpaces request and open it in
// the built-in memory view; from there (and only when the Hex Editor extension
// is installed) in VS Code's hex editor, through the same vscode-debug-memory
// URIs that "View Binary Data" uses.

import * as vscode from 'vscode';
import { describe, type GpuDebugController, type GpuSession } from './controller';
import { memorySpacePicks, missingSpaceMessage, spaceOfKind } from './memorySpaces';
import { debugMemoryUriParts, memorySpaceDisplayName } from './memoryUri';
import type { MemorySpace, MemorySpaceKind } from './protocol';
import { HEX_EDITOR_EXTENSION, MemoryViews, type MemoryTarget } from './memoryView';
import { requestMemorySpaces } from './serverRequests';

const HEX_EDITOR_VIEW_TYPE = 'hexEditor.hexedit';

/** The Hex Editor, when it is installed (never an install prompt: offline machines cannot). */
export async function openInHexEditor(session: vscode.DebugSession, target: MemoryTarget): Promise<void> {
  if (vscode.extensions.getExtension(HEX_EDITOR_EXTENSION) === undefined) {
    void vscode.window.showInformationMessage('The Hex Editor extension is not installed; the GPU memory view shows the same bytes.');
    return;
  }
  const uri = vscode.Uri.from(
    debugMemoryUriParts({
      sessionId: session.id,
      memoryReference: target.memoryReference,
      displayName: memorySpaceDisplayName(target.title, target.memoryReference),
      size: target.size,
    }),
  );
  await vscode.commands.executeCommand('vscode.openWith', uri, HEX_EDITOR_VIEW_TYPE);
}

function spaceTarget(space: MemorySpace): MemoryTarget {
  return { title: memorySpaceDisplayName(space.name, space.memoryReference), memoryReference: space.memoryReference, size: space.size };
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

async function openSpaceOfKind(controller: GpuDebugController, views: MemoryViews, kind: MemorySpaceKind): Promise<void> {
  const entry = activeOrWarn(controller);
  if (entry === undefined) return;
  const spaces = await spacesOf(entry);
  if (spaces === undefined) return;
  const space = spaceOfKind(spaces, kind);
  if (space === undefined) {
    void vscode.window.showWarningMessage(missingSpaceMessage(spaces, kind));
    return;
  }
  await views.show(entry, spaceTarget(space));
}

/** A variable's memory: its pointee for a pointer (global around a pointer), else its own bytes. */
async function variableTarget(entry: GpuSession, arg: unknown): Promise<MemoryTarget | undefined> {
  const variable = (arg as { variable?: { name?: unknown; evaluateName?: unknown; memoryReference?: unknown; type?: unknown } })?.variable;
  if (variable === undefined) return undefined;
  const name = typeof variable.evaluateName === 'string' ? variable.evaluateName : String(variable.name ?? '');
  let reference = typeof variable.memoryReference === 'string' ? variable.memoryReference : undefined;
  if (typeof variable.type === 'string' && variable.type.trim().endsWith('*') && name !== '') {
    try {
      const pointee = (await entry.session.customRequest('evaluate', {
        expression: `*(${name})`,
        context: 'watch',
        frameId: entry.model.frameOnThread,
      })) as { memoryReference?: unknown };
      if (typeof pointee.memoryReference === 'string') reference = pointee.memoryReference;
    } catch {
      // not dereferenceable: fall back to the pointer's own bytes
    }
  }
  if (reference === undefined) return undefined;
  // a page that starts a little before the object shows its neighbourhood
  return { title: `${name} · memory`, memoryReference: reference, offset: -64 };
}

export function registerMemoryCommands(controller: GpuDebugController): vscode.Disposable {
  const views = new MemoryViews(controller, openInHexEditor);
  return vscode.Disposable.from(
    views,
    vscode.commands.registerCommand('aspace.openLds', () => openSpaceOfKind(controller, views, 'workgroup')),
    vscode.commands.registerCommand('aspace.openScratch', () => openSpaceOfKind(controller, views, 'lane')),
    vscode.commands.registerCommand('aspace.openVariableMemory', async (arg: unknown) => {
      const entry = activeOrWarn(controller);
      if (entry === undefined) return;
      const target = await variableTarget(entry, arg);
      if (target === undefined) {
        void vscode.window.showWarningMessage('This variable has no place in GPU memory.');
        return;
      }
      await views.show(entry, target);
    }),
    vscode.commands.registerCommand('aspace.openMemorySpace', async () => {
      const entry = activeOrWarn(controller);
      if (entry === undefined) return;
      const spaces = await spacesOf(entry);
      if (spaces === undefined) return;
      const picked = await vscode.window.showQuickPick(memorySpacePicks(spaces), {
        placeHolder: 'GPU memory space to open',
        matchOnDescription: true,
      });
      if (picked !== undefined) await views.show(entry, spaceTarget(picked.space));
    }),
  );
}
