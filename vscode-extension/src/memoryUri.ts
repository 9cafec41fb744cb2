// URIs for VS Code's built-in debug memory file system, the one "View Binary
// Data" opens in the hex editor: vscode-debug-memory://<session id>/
// <encoded memoryReference>/<name>.bin, with an optional `range=from:to`
// query that bounds the region (VS Code reads it with /range=(\d+):(\d+)/).

export const DEBUG_MEMORY_SCHEME = 'vscode-debug-memory';

export interface UriParts {
  scheme: string;
  authority: string;
  path: string;
  query: string;
}

export interface MemoryView {
  sessionId: string;
  memoryReference: string;
  /** Shown as the editor tab's file name. */
  displayName?: string;
  /** Bytes from the reference's start that the view covers. */
  size?: number;
}

export function debugMemoryUriParts(view: MemoryView): UriParts {
  const name = view.displayName ?? 'memory';
  const query =
    view.size !== undefined && Number.isInteger(view.size) && view.size > 0 ? `range=0:${view.size}` : '';
  return {
    scheme: DEBUG_MEMORY_SCHEME,
    authority: view.sessionId,
    path: `/${encodeURIComponent(view.memoryReference)}/${encodeURIComponent(name)}.bin`,
    query,
  };
}

/** The memoryReference a debug memory URI path points at. */
export function memoryReferenceOfPath(path: string): string {
  const segment = path.split('/')[1] ?? '';
  return decodeURIComponent(segment);
}

/** File name for a memory space's editor tab, e.g. `local-wg(1,0,0)`. */
export function memorySpaceDisplayName(spaceName: string, memoryReference: string): string {
  const at = memoryReference.indexOf('@');
  const hash = memoryReference.lastIndexOf('#');
  const where = at >= 0 ? memoryReference.slice(at + 1, hash > at ? hash : undefined) : '';
  const raw = where ? `${spaceName}-${where}` : spaceName;
  // Tab titles come from the path, so keep separators out of them.
  return raw.replace(/[\\/]/g, '_');
}
