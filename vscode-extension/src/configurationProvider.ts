// Fills in and checks aspace-gpu launch configurations.

import * as path from 'path';
import * as vscode from 'vscode';
import { CHECKED_SERVER, pythonExtensionInterpreter } from './adapterFactory';
import { defaultConfiguration, serverConnection, validateConfiguration, withDefaults } from './launchConfig';
import { readServerSecret } from './serverSecret';
import { importProblem, serverCommand, showStartFailure } from './serverProcess';

export class AspaceConfigurationProvider implements vscode.DebugConfigurationProvider {
  constructor(private readonly log?: vscode.OutputChannel) {}

  provideDebugConfigurations(): vscode.DebugConfiguration[] {
    return [defaultConfiguration() as vscode.DebugConfiguration];
  }

  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration {
    return withDefaults(config) as vscode.DebugConfiguration;
  }

  async resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): Promise<vscode.DebugConfiguration | undefined> {
    const result = validateConfiguration(config, folder?.uri.fsPath);
    if (!result.ok) {
      void vscode.window.showErrorMessage(`GPU debug configuration "${config.name}": ${result.error}`);
      return undefined; // cancels the launch
    }
    const resolved = result.config as vscode.DebugConfiguration;
    const connection = serverConnection(resolved);
    if (connection.kind === 'tcp' && typeof resolved.secret !== 'string') {
      // A TCP server serves only clients that present its secret: read it where the server wrote it.
      const found = readServerSecret(connection.port, resolved.secretFile as string | undefined);
      if (!found.ok) {
        void vscode.window.showErrorMessage(`GPU debug configuration "${config.name}": ${found.error}`);
        return undefined;
      }
      this.log?.appendLine(`[${resolved.name}] presenting the secret from ${found.file}`);
      resolved.secret = found.secret;
    }
    delete resolved.secretFile;
    if (connection.kind !== 'process' || this.log === undefined) return resolved;
    // Before starting: can this interpreter import the server? Its own error text is the answer.
    const choice = await serverCommand(folder, resolved.pythonPath as string | undefined, pythonExtensionInterpreter);
    const problem = await importProblem(choice, folder?.uri.fsPath);
    if (problem !== undefined) {
      this.log.appendLine(`[${resolved.name}] ${choice.command} (interpreter from ${choice.source}) cannot import aspace_dap:`);
      this.log.appendLine(problem);
      void showStartFailure(
        this.log,
        `${choice.command} (from ${choice.source}) cannot run aspace-dap. Set "pythonPath" or aspace.pythonPath to an interpreter with aspace-dap installed (make setup creates .venv).`,
        problem,
      );
      return undefined;
    }
    return { ...resolved, [CHECKED_SERVER]: choice };
  }
}

/** What the F5 picker offers, in its title: GPU cores have no fixed name or extension
 * (`cuda_coredump_host.PID.TIME` has none at all), so every file can be picked. */
export const PICK_STATE_TITLE =
  'GPU state dump or core: a dump folder (manifest.json), its .zip, or a GPU core file (*.cudacore, gpucore.N, cuda_coredump_*, any name)';

/** Backs `${command:aspace.pickStateDump}`: choose a dump folder, a .zip or a core file. No file
 * filter: a filter would hide the cores, and a typed path it does not match is refused. */
export async function pickStateDump(): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title: PICK_STATE_TITLE,
    canSelectFiles: true,
    canSelectFolders: true,
    canSelectMany: false,
    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    openLabel: 'Debug this dump',
  });
  if (picked === undefined || picked.length === 0) return undefined;
  const chosen = picked[0].fsPath;
  // Picking the manifest itself means its folder.
  return path.basename(chosen) === 'manifest.json' ? path.dirname(chosen) : chosen;
}
