// Launch/attach configuration: defaults for an empty launch.json and checks
// that turn a mistyped attribute into a readable message before the server
// is even started.

import * as path from 'path';

export const DEBUG_TYPE = 'aspace-gpu';
export const PICK_STATE_COMMAND = 'aspace.pickStateDump';

export interface AspaceConfiguration {
  type: string;
  request: 'launch' | 'attach';
  name: string;
  state: string;
  codeObject?: string;
  wave?: number;
  lane?: number;
  sourceMap?: Record<string, string>;
  workspaceFolder?: string;
  pythonPath?: string;
  port?: number;
  socket?: string;
  secret?: string;
  secretFile?: string;
  [key: string]: unknown;
}

/** How a session reaches its server: a Unix-domain socket, TCP (with the server's secret), or a
 * server the extension starts itself on stdio. */
export type ServerConnection =
  | { kind: 'socket'; path: string }
  | { kind: 'tcp'; port: number }
  | { kind: 'process' };

export function serverConnection(config: Record<string, unknown>): ServerConnection {
  if (typeof config.socket === 'string') return { kind: 'socket', path: config.socket };
  if (typeof config.port === 'number') return { kind: 'tcp', port: config.port };
  return { kind: 'process' };
}

export type Resolution = { ok: true; config: AspaceConfiguration } | { ok: false; error: string };

/** Used when the user presses F5 without a launch.json. */
export function defaultConfiguration(): Record<string, unknown> {
  return {
    type: DEBUG_TYPE,
    request: 'launch',
    name: 'Open GPU state dump',
    state: `\${command:${PICK_STATE_COMMAND}}`,
  };
}

/** Fills in a configuration before variable substitution. */
export function withDefaults(config: Record<string, unknown>): Record<string, unknown> {
  const empty = config.type === undefined && config.request === undefined && config.name === undefined;
  return empty ? defaultConfiguration() : config;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function absolute(p: string, baseDir: string | undefined): string {
  return path.isAbsolute(p) || baseDir === undefined ? p : path.resolve(baseDir, p);
}

/**
 * Checks a configuration after VS Code substituted its variables. Relative
 * `state` and `codeObject` paths are taken from `baseDir` (the workspace
 * folder) because the server's working directory is not the user's. The
 * server is told `baseDir` as `workspaceFolder` (unless the configuration
 * names one): it looks for the sources the debug info names there too, also
 * when it was started elsewhere (`socket`, `port`).
 */
export function validateConfiguration(config: Record<string, unknown>, baseDir?: string): Resolution {
  const fail = (error: string): Resolution => ({ ok: false, error });
  if (config.request !== 'launch' && config.request !== 'attach') {
    return fail(`"request" must be "launch" or "attach", not ${JSON.stringify(config.request)}.`);
  }
  if (typeof config.state !== 'string' || config.state.trim() === '') {
    return fail('"state" must name a GPU state dump (a folder with manifest.json, or its .zip) or a GPU core file.');
  }
  const resolved: AspaceConfiguration = {
    ...config,
    type: typeof config.type === 'string' ? config.type : DEBUG_TYPE,
    request: config.request,
    name: typeof config.name === 'string' ? config.name : 'GPU state dump',
    state: absolute(config.state, baseDir),
  };
  if (config.codeObject !== undefined) {
    if (typeof config.codeObject !== 'string' || config.codeObject === '') {
      return fail('"codeObject" must be a path to a code object file.');
    }
    resolved.codeObject = absolute(config.codeObject, baseDir);
  }
  for (const key of ['wave', 'lane'] as const) {
    const v = config[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) {
      return fail(`"${key}" must be a non-negative integer, not ${JSON.stringify(v)}.`);
    }
  }
  if (config.port !== undefined) {
    const p = config.port;
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 65535) {
      return fail(`"port" must be a TCP port number (1-65535), not ${JSON.stringify(p)}.`);
    }
  }
  if (config.socket !== undefined) {
    if (typeof config.socket !== 'string' || config.socket === '') {
      return fail('"socket" must be the path of the Unix-domain socket an aspace-dap server listens on (aspace-dap --socket PATH).');
    }
    if (config.port !== undefined) {
      return fail('"socket" and "port" are two ways to reach a server: give one.');
    }
    resolved.socket = absolute(config.socket, baseDir);
  }
  for (const key of ['secret', 'secretFile'] as const) {
    const v = config[key];
    if (v !== undefined && (typeof v !== 'string' || v === '')) {
      return fail(`"${key}" must be a non-empty string.`);
    }
    if (v !== undefined && config.port === undefined) {
      return fail(`"${key}" goes with "port": a TCP server's secret (a socket needs none).`);
    }
  }
  if (typeof config.secretFile === 'string') resolved.secretFile = absolute(config.secretFile, baseDir);
  if (config.pythonPath !== undefined && (typeof config.pythonPath !== 'string' || config.pythonPath === '')) {
    return fail('"pythonPath" must be the path of a Python interpreter.');
  }
  if (config.workspaceFolder !== undefined) {
    if (typeof config.workspaceFolder !== 'string' || config.workspaceFolder === '') {
      return fail('"workspaceFolder" must be the folder where the sources are looked for (default: the workspace folder).');
    }
    resolved.workspaceFolder = absolute(config.workspaceFolder, baseDir);
  } else if (baseDir !== undefined) {
    resolved.workspaceFolder = baseDir;
  }
  if (config.sourceMap !== undefined) {
    if (!isRecord(config.sourceMap)) {
      return fail('"sourceMap" must map build paths to local paths, e.g. {"/build/src": "${workspaceFolder}/src"}.');
    }
    for (const [from, to] of Object.entries(config.sourceMap)) {
      if (typeof to !== 'string') {
        return fail(`"sourceMap" entry ${JSON.stringify(from)} must map to a path string.`);
      }
    }
  }
  return { ok: true, config: resolved };
}
