// The address-space lens (`aspace-dap lsp`): which documents it serves, how
// the `aspace.*` settings are read and passed to it, and what a settings
// change means for a running server. No VS Code imports, so it is unit-tested.

/** Settings section the server reads (initializationOptions and didChangeConfiguration). */
export const LENS_SECTION = 'aspace';

/** Arguments after the interpreter that start the language server on stdio. */
export const LENS_SERVER_ARGS: readonly string[] = ['-m', 'aspace_dap', 'lsp', '--stdio'];

/** Same shape as vscode's DocumentFilter, kept here so tests can read it. */
export interface LensDocumentFilter {
  scheme: string;
  language?: string;
  pattern?: string;
}

/** Kernel sources by language id, plus GPU file extensions that may lack a language. */
export const LENS_LANGUAGES: readonly string[] = ['c', 'cpp', 'cuda-cpp', 'hip', 'opencl'];
export const LENS_FILE_PATTERN = '**/*.{hip,cu,cl}';

/** The server maps URIs to files on disk, so only `file` documents are offered to it. */
export const LENS_SELECTOR: readonly LensDocumentFilter[] = [
  ...LENS_LANGUAGES.map((language) => ({ scheme: 'file', language })),
  { scheme: 'file', pattern: LENS_FILE_PATTERN },
];

export interface LensSettings {
  /** Code object paths or globs, relative to the workspace. */
  codeObjects: string[];
  /** LDS bytes per kernel above which the server reports a diagnostic. */
  ldsBudget?: number;
  /** Scratch bytes per lane above which the server reports a diagnostic. */
  scratchBudget?: number;
  /** Interpreter with aspace-dap installed, when not the Python extension's. */
  pythonPath?: string;
}

export interface ReadSettings {
  settings: LensSettings;
  /** Readable messages for values that were ignored. */
  problems: string[];
}

function budget(value: unknown, key: string, problems: string[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  problems.push(`aspace.${key} must be a non-negative whole number of bytes, not ${JSON.stringify(value)}; ignored.`);
  return undefined;
}

/** Reads the settings through `get(key)` (e.g. a WorkspaceConfiguration's get), checking each value. */
export function readLensSettings(get: (key: string) => unknown): ReadSettings {
  const problems: string[] = [];
  const raw = get('codeObjects');
  let codeObjects: string[] = [];
  if (typeof raw === 'string') {
    codeObjects = raw.trim() === '' ? [] : [raw.trim()];
  } else if (Array.isArray(raw)) {
    for (const entry of raw) {
      if (typeof entry === 'string') {
        if (entry.trim() !== '') codeObjects.push(entry.trim());
      } else {
        problems.push(`aspace.codeObjects entries must be paths or globs; ignored ${JSON.stringify(entry)}.`);
      }
    }
  } else if (raw !== undefined && raw !== null) {
    problems.push(`aspace.codeObjects must be a list of paths or globs, not ${JSON.stringify(raw)}.`);
  }
  const settings: LensSettings = { codeObjects: [...new Set(codeObjects)] };
  const lds = budget(get('ldsBudget'), 'ldsBudget', problems);
  if (lds !== undefined) settings.ldsBudget = lds;
  const scratch = budget(get('scratchBudget'), 'scratchBudget', problems);
  if (scratch !== undefined) settings.scratchBudget = scratch;
  const python = get('pythonPath');
  if (typeof python === 'string' && python.trim() !== '') settings.pythonPath = python.trim();
  return { settings, problems };
}

/** `initializationOptions` for the server: `{aspace: {codeObjects, ldsBudget?, scratchBudget?}}`. */
export function initializationOptions(settings: LensSettings): { aspace: Record<string, unknown> } {
  const aspace: Record<string, unknown> = { codeObjects: [...settings.codeObjects] };
  if (settings.ldsBudget !== undefined) aspace.ldsBudget = settings.ldsBudget;
  if (settings.scratchBudget !== undefined) aspace.scratchBudget = settings.scratchBudget;
  return { [LENS_SECTION]: aspace };
}

/** The lens runs for workspaces that name code objects, and, once a kernel source has been opened,
 * for any other: the server then finds each source's code object in the workspace. */
export function lensWanted(settings: LensSettings, sourceSeen = false): boolean {
  return settings.codeObjects.length > 0 || sourceSeen;
}

/**
 * What a settings change means for the server: start or stop it, restart it
 * (its code objects or interpreter changed, which it was started with), or
 * nothing, because budgets reach a running server through configuration sync.
 */
export type LensAction = 'start' | 'stop' | 'restart' | 'none';

export function lensAction(running: LensSettings | undefined, next: LensSettings, sourceSeen = false): LensAction {
  if (!lensWanted(next, sourceSeen)) return running === undefined ? 'none' : 'stop';
  if (running === undefined) return 'start';
  const same =
    running.pythonPath === next.pythonPath &&
    running.codeObjects.length === next.codeObjects.length &&
    running.codeObjects.every((entry, i) => entry === next.codeObjects[i]);
  return same ? 'none' : 'restart';
}

/**
 * Whether a settings change is sent to the running server as workspace/didChangeConfiguration:
 * only when it leaves the server running as it is (budgets). A change that stops or restarts it
 * is not: the server is going away, and a notification sent to it then fails.
 */
export function sendsToRunningServer(running: LensSettings | undefined, next: LensSettings, sourceSeen = false): boolean {
  return running !== undefined && lensAction(running, next, sourceSeen) === 'none';
}

/** The server's `aspace/codeObjects` request: which code objects a source's hints come from. */
export const CODE_OBJECTS_REQUEST = 'aspace/codeObjects';
/** The server's notification that what it uses changed (a build, a setting): ask again. */
export const CODE_OBJECTS_CHANGED = 'aspace/codeObjectsChanged';

export interface LensSource {
  codeObjects: string[];
  from: 'setting' | 'workspace';
  searched: number;
  note: string | null;
}

/** GPU kernel sources by name: a lens without a code object for one of these says so. */
const KERNEL_FILE = /\.(hip|cu|cuh|cl)$/i;

function basename(p: string): string {
  return p.replace(/[\\/]+$/, '').split(/[\\/]/).pop() ?? p;
}

/** The status-bar item for a source: which code object the lens uses, or that none names a kernel
 * source; undefined (no item) for other files without one, and for an answer it cannot read. */
export function lensStatus(answer: unknown, fileName: string): { text: string; tooltip: string } | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const a = answer as Partial<LensSource>;
  if (!Array.isArray(a.codeObjects) || !a.codeObjects.every((p) => typeof p === 'string')) return undefined;
  const note = typeof a.note === 'string' && a.note !== '' ? `\n${a.note}` : '';
  if (a.codeObjects.length > 0) {
    const more = a.codeObjects.length > 1 ? ` +${a.codeObjects.length - 1}` : '';
    const why = a.from === 'workspace'
      ? 'found in the workspace: its line table names this file (aspace.codeObjects chooses others)'
      : 'named by aspace.codeObjects';
    return {
      text: `$(symbol-structure) ${basename(a.codeObjects[0])}${more}`,
      tooltip: `Address-space lens: hints from ${a.codeObjects.join(', ')}, ${why}.${note}`,
    };
  }
  if (!KERNEL_FILE.test(fileName)) return undefined;
  const where = a.from === 'workspace'
    ? `No code object in the workspace names this file in its line table (${a.searched ?? 0} looked into): build it with -g, or name one in aspace.codeObjects.`
    : 'None of the code objects aspace.codeObjects names has this file in its line table.';
  return { text: '$(symbol-structure) no code object', tooltip: `Address-space lens: ${where}${note}` };
}
