// Fills in and checks aspace-gpu launch configurations.

import * as vscode from 'vscode';
import { defaultConfiguration, validateConfiguration, withDefaults } from './launchConfig';

export class AspaceConfigurationProvider implements vscode.DebugConfigurationProvider {
  provideDebugConfigurations(): vscode.DebugConfiguration[] {
    return [defaultConfiguration() as vscode.DebugConfiguration];
  }

  resolveDebugConfiguration(
    _folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration {
    return withDefaults(config) as vscode.DebugConfiguration;
  }

  resolveDebugConfigurationWithSubstitutedVariables(
    folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration,
  ): vscode.DebugConfiguration | undefined {
    const result = validateConfiguration(config, folder?.uri.fsPath);
    if (!result.ok) {
      void vscode.window.showErrorMessage(`GPU debug configuration "${config.name}": ${result.error}`);
      return undefined; // cancels the launch
    }
    return result.config as vscode.DebugConfiguration;
  }
}

/** Backs `${command:aspace.pickStateDump}`: choose a dump folder or .zip. */
export async function pickStateDump(): Promise<string | undefined> {
  const picked = await vscode.window.showOpenDialog({
    title: 'GPU state dump (a folder with manifest.json, or its .zip)',
    canSelectFiles: true,
    canSelectFolders: true,
    canSelectMany: false,
    filters: { 'GPU state dump': ['zip', 'json'] },
    openLabel: 'Debug this dump',
  });
  if (picked === undefined || picked.length === 0) return undefined;
  const chosen = picked[0].fsPath;
  // Picking the manifest itself means its folder.
  return chosen.endsWith('manifest.json') ? vscode.Uri.joinPath(picked[0], '..').fsPath : chosen;
}
