// Starts the real aspace-dap server under DebugClient and walks it through the
// start-up sequence VS Code uses, so the tests see what the extension sees.

import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';

/** What VS Code announces about itself in `initialize`. */
export const VSCODE_CLIENT: DebugProtocol.InitializeRequestArguments = {
  adapterID: 'aspace-gpu',
  clientID: 'vscode',
  linesStartAt1: true,
  columnsStartAt1: true,
  pathFormat: 'path',
  supportsInvalidatedEvent: true,
  supportsMemoryReferences: true,
  supportsVariableType: true,
  supportsRunInTerminalRequest: false,
};

/**
 * DebugClient spawns `runtime executable` with exactly one argument; Python
 * takes the module name glued to `-m`, so `-maspace_dap` starts the server on
 * stdio. The server's stderr is echoed so a crash shows up in the test log.
 */
export async function startAdapter(python: string): Promise<DebugClient> {
  const dc = new DebugClient(python, '-maspace_dap', 'aspace-gpu', { stdio: 'pipe' }, true);
  dc.defaultTimeout = 20000;
  await dc.start();
  return dc;
}

export interface Launched {
  capabilities: DebugProtocol.Capabilities;
  stopped: DebugProtocol.StoppedEvent;
}

/**
 * initialize, launch, then configurationDone once `initialized` arrives, as
 * VS Code orders them; resolves with the `stopped` event the dump reports.
 */
export async function launchLikeVsCode(
  dc: DebugClient,
  launchArgs: Record<string, unknown>,
): Promise<Launched> {
  // The server may send `initialized` right behind the initialize response.
  const initialized = dc.waitForEvent('initialized');
  const stopped = dc.waitForEvent('stopped');
  // Whichever step fails first is reported; keep the other timeouts quiet.
  initialized.catch(() => {});
  stopped.catch(() => {});
  const init = await dc.initializeRequest(VSCODE_CLIENT);
  const launched = dc.launchRequest(launchArgs as DebugProtocol.LaunchRequestArguments);
  launched.catch(() => {});
  await initialized;
  await dc.configurationDoneRequest();
  await launched;
  return { capabilities: init.body ?? {}, stopped: (await stopped) as DebugProtocol.StoppedEvent };
}
