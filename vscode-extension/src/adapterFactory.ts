// Starts the aspace-dap server for a session: a TCP connection when the
// configuration names a port, otherwise `python -m aspace_dap` on stdio, run
// by the extension itself (ServerProcessAdapter) so its stderr can be shown.

import * as vscode from 'vscode';
import { interpreterFromPythonApi, type PythonChoice } from './pythonPath';
import { serverCommand, ServerProcessAdapter } from './serverProcess';

const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The interpreter selected in the Python extension for `folder`, if it is installed. */
export async function pythonExtensionInterpreter(folder: vscode.WorkspaceFolder | undefined): Promise<string[] | undefined> {
  const ext = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (ext === undefined) return undefined;
  try {
    const api: unknown = ext.isActive ? ext.exports : await ext.activate();
    return await interpreterFromPythonApi(api, folder?.uri);
  } catch {
    return undefined;
  }
}

/** Set by the configuration provider once the interpreter passed its import check. */
export const CHECKED_SERVER = '__aspaceServer';

export class AspaceAdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  constructor(private readonly log: vscode.OutputChannel) {}

  async createDebugAdapterDescriptor(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    const config = session.configuration;
    if (typeof config.port === 'number') {
      this.log.appendLine(`[${session.name}] connecting to aspace-dap at 127.0.0.1:${config.port}`);
      return new vscode.DebugAdapterServer(config.port, '127.0.0.1');
    }
    const folder = session.workspaceFolder;
    const checked = config[CHECKED_SERVER] as PythonChoice | undefined;
    const choice =
      checked ?? (await serverCommand(folder, typeof config.pythonPath === 'string' ? config.pythonPath : undefined, pythonExtensionInterpreter));
    this.log.appendLine(`[${session.name}] starting ${choice.command} ${choice.args.join(' ')} (interpreter from ${choice.source})`);
    return new vscode.DebugAdapterInlineImplementation(
      new ServerProcessAdapter(choice, folder?.uri.fsPath, this.log, session.name),
    );
  }
}
