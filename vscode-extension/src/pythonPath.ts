// Which interpreter runs the server: the configuration's pythonPath, else the
// interpreter chosen in the Python extension, else its settings, else the
// platform's usual name.

export type PythonSource =
  | 'configuration'
  | 'aspace-setting'
  | 'workspace-venv'
  | 'python-extension'
  | 'python-setting'
  | 'default';

/** How to start the server: `command args...`, and where the command came from. */
export interface PythonChoice {
  command: string;
  args: string[];
  source: PythonSource;
}

export interface PythonCandidates {
  configured?: string;
  /** The `aspace.pythonPath` setting. */
  fromAspaceSetting?: string;
  /** The workspace's own virtual environment (`.venv/bin/python`), when it exists. */
  workspaceVenv?: string;
  /** A command line prefix, e.g. ['/env/bin/python'] or ['conda', 'run', '-n', 'x', 'python']. */
  fromPythonExtension?: readonly string[];
  fromPythonSetting?: string;
  platform: string;
  /** What follows the interpreter (default: the debug adapter's SERVER_ARGS). */
  serverArgs?: readonly string[];
}

/** Arguments that start the debug adapter on stdio. */
export const SERVER_ARGS: readonly string[] = ['-m', 'aspace_dap'];

function usable(value: string | undefined): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

export function choosePython(c: PythonCandidates): PythonChoice {
  const run = (commandLine: readonly string[], source: PythonSource): PythonChoice => ({
    command: commandLine[0],
    args: [...commandLine.slice(1), ...(c.serverArgs ?? SERVER_ARGS)],
    source,
  });
  if (usable(c.configured)) return run([c.configured], 'configuration');
  if (usable(c.fromAspaceSetting)) return run([c.fromAspaceSetting], 'aspace-setting');
  if (usable(c.workspaceVenv)) return run([c.workspaceVenv], 'workspace-venv');
  const ext = c.fromPythonExtension;
  if (ext !== undefined && ext.length > 0 && usable(ext[0])) return run(ext, 'python-extension');
  // The Python extension's setting defaults to a bare "python", which says
  // nothing about the user's choice; python3 is the safer guess there.
  if (usable(c.fromPythonSetting) && c.fromPythonSetting !== 'python') {
    return run([c.fromPythonSetting], 'python-setting');
  }
  return run([c.platform === 'win32' ? 'python' : 'python3'], 'default');
}

/**
 * Interpreter command line from the Python extension's exported API: the
 * `environments` API first (its path may name an environment folder, so it is
 * resolved to the executable when possible), then the older
 * `settings.getExecutionDetails`.
 */
export async function interpreterFromPythonApi(api: unknown, resource: unknown): Promise<string[] | undefined> {
  if (typeof api !== 'object' || api === null) return undefined;
  const a = api as {
    environments?: {
      getActiveEnvironmentPath?: (r?: unknown) => { path?: unknown } | undefined;
      resolveEnvironment?: (e: unknown) => Promise<{ executable?: { uri?: { fsPath?: unknown } } } | undefined>;
    };
    settings?: { getExecutionDetails?: (r?: unknown) => { execCommand?: unknown } | undefined };
  };
  try {
    const active = a.environments?.getActiveEnvironmentPath?.(resource);
    if (active !== undefined && typeof active.path === 'string' && active.path !== '') {
      const resolved = await a.environments?.resolveEnvironment?.(active);
      const executable = resolved?.executable?.uri?.fsPath;
      return [typeof executable === 'string' && executable !== '' ? executable : active.path];
    }
    const exec = a.settings?.getExecutionDetails?.(resource)?.execCommand;
    if (Array.isArray(exec) && exec.length > 0 && exec.every((part) => typeof part === 'string' && part !== '')) {
      return exec as string[];
    }
  } catch {
    // An API that throws is treated like a missing one: fall back further.
  }
  return undefined;
}

/**
 * `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` in an interpreter path.
 * Launch configurations get these substituted by VS Code, settings do not; a path left with a
 * variable in it would fail to spawn as "ENOENT".
 */
export function expandPath(
  value: string,
  vars: { workspaceFolder?: string; home: string; env?: Record<string, string | undefined> },
): string {
  let out = value.trim();
  if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) out = vars.home + out.slice(1);
  return out.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, env?: string) => {
    if (name === 'userHome') return vars.home;
    if (env !== undefined) return vars.env?.[env] ?? '';
    return vars.workspaceFolder ?? whole;
  });
}

/** Where a workspace's virtual environment keeps its interpreter (`make setup` creates `.venv`). */
export function venvInterpreters(folder: string, platform: string): string[] {
  const sep = platform === 'win32' ? '\\' : '/';
  const bin = platform === 'win32' ? `Scripts${sep}python.exe` : `bin${sep}python`;
  return ['.venv', 'venv'].map((dir) => `${folder}${sep}${dir}${sep}${bin}`);
}
