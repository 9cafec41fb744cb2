// Starts the aspace-dap server for a session: a Unix-domain socket when the
// configuration names one (`aspace-dap --socket PATH`, only its user can connect),
// a TCP connection when it names a port (the server's secret travels as the launch
// argument `secret`, see configurationProvider), otherwise `python -m aspace_dap`
// on stdio, run by the extension itself (ServerProcessAdapter) so its stderr can be shown.

import * as vscode from 'vscode';
import { serverConnection } from './launchConfig';
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
    const connection = serverConnection(config);
    if (connection.kind === 'socket') {
      this.log.appendLine(`[${session.name}] connecting to aspace-dap on the socket ${connection.path}`);
      return new vscode.DebugAdapterNamedPipeServer(connection.path);
    }
    if (connection.kind === 'tcp') {
      this.log.appendLine(`[${session.name}] connecting to aspace-dap at 127.0.0.1:${connection.port}`);
      return new vscode.DebugAdapterServer(connection.port, '127.0.0.1');
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
