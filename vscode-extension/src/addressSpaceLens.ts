// Runs the address-space language server (`python -m aspace_dap lsp --stdio`)
// while `aspace.codeObjects` names code objects, or, once a kernel source is
// open, to find each source's code object in the workspace itself; stops or
// restarts it when the settings it was started with change. Budgets reach a
// running server through configuration sync; the server watches the code
// objects itself (it registers workspace/didChangeWatchedFiles dynamically,
// which the language client supports by default). A status-bar item names the
// code object the active source's hints come from.

import * as vscode from 'vscode';
import { ErrorCodes, LanguageClient, ResponseError, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import { pythonExtensionInterpreter } from './adapterFactory';
import { describe } from './controller';
import {
  CODE_OBJECTS_CHANGED,
  CODE_OBJECTS_REQUEST,
  LENS_SECTION,
  LENS_SELECTOR,
  LENS_SERVER_ARGS,
  initializationOptions,
  lensAction,
  lensStatus,
  readLensSettings,
  sendsToRunningServer,
  type LensSettings,
} from './lensSettings';
import { importProblem, serverCommand } from './serverProcess';

export class AddressSpaceLens implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private running: LensSettings | undefined;
  /** Start/stop steps run one after another, so quick setting edits cannot race. */
  private queue: Promise<void> = Promise.resolve();
  private readonly listeners: vscode.Disposable[];
  /** A kernel source was open: the lens runs without aspace.codeObjects too. */
  private sourceSeen = false;
  /** The interpreter that could not import aspace_dap when the lens was to find code objects by
   * itself (no popup for that: nobody asked for the lens); tried again when the settings change. */
  private unusable: string | undefined;
  private readonly status = vscode.window.createStatusBarItem('aspace.lens', vscode.StatusBarAlignment.Right, 90);
  private statusAsked = 0;

  constructor(private readonly log: vscode.OutputChannel) {
    this.status.name = 'aspace Address-Space Lens';
    this.status.command = { title: 'Open the setting', command: 'workbench.action.openSettings', arguments: ['aspace.codeObjects'] };
    this.listeners = [
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(LENS_SECTION)) {
          this.unusable = undefined;
          this.update();
        }
      }),
      vscode.workspace.onDidOpenTextDocument((document) => this.noteSource(document)),
      vscode.window.onDidChangeActiveTextEditor(() => void this.showStatus()),
      this.status,
    ];
    for (const document of vscode.workspace.textDocuments) this.noteSource(document);
  }

  private noteSource(document: vscode.TextDocument): void {
    if (this.sourceSeen || vscode.languages.match(LENS_SELECTOR.map((f) => ({ ...f })), document) === 0) return;
    this.sourceSeen = true;
    void this.update();
  }

  /** Which code object the active source's hints come from, as the server says. */
  private async showStatus(): Promise<void> {
    const asked = ++this.statusAsked;
    const document = vscode.window.activeTextEditor?.document;
    const client = this.client;
    if (document === undefined || client === undefined || !client.isRunning()
      || vscode.languages.match(LENS_SELECTOR.map((f) => ({ ...f })), document) === 0) {
      this.status.hide();
      return;
    }
    let shown: { text: string; tooltip: string } | undefined;
    try {
      shown = lensStatus(await client.sendRequest(CODE_OBJECTS_REQUEST, { uri: document.uri.toString() }), document.fileName);
    } catch (error) {
      this.log.appendLine(`address-space lens: ${CODE_OBJECTS_REQUEST}: ${describe(error)}`);
    }
    if (asked !== this.statusAsked) return; // another editor became active meanwhile
    if (shown === undefined) {
      this.status.hide();
      return;
    }
    this.status.text = shown.text;
    this.status.tooltip = shown.tooltip;
    this.status.show();
  }

  /** Brings the server in line with the current settings. */
  update(): Promise<void> {
    this.queue = this.queue.then(() => this.apply()).catch((error) => {
      this.log.appendLine(`address-space lens: ${describe(error)}`);
    });
    return this.queue;
  }

  private async apply(): Promise<void> {
    const { settings, problems } = readLensSettings((key) => vscode.workspace.getConfiguration(LENS_SECTION).get(key));
    for (const problem of problems) this.log.appendLine(`address-space lens: ${problem}`);
    const action = lensAction(this.running, settings, this.sourceSeen);
    if (action === 'none') return;
    if (action === 'stop' || action === 'restart') await this.stop();
    if (action === 'start' || action === 'restart') await this.start(settings);
  }

  private async start(settings: LensSettings): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const choice = await serverCommand(folder, settings.pythonPath, pythonExtensionInterpreter, LENS_SERVER_ARGS);
    const finding = settings.codeObjects.length === 0;
    if (finding) {
      // nobody asked for the lens: an interpreter without aspace-dap is noted in the log only
      if (this.unusable === choice.command) return;
      const problem = await importProblem(choice, folder?.uri.fsPath);
      if (problem !== undefined) {
        this.unusable = choice.command;
        this.log.appendLine(`address-space lens: not started, ${choice.command} (interpreter from ${choice.source}) cannot import aspace_dap:`);
        this.log.appendLine(problem);
        return;
      }
    }
    this.log.appendLine(
      `address-space lens: starting ${choice.command} ${choice.args.join(' ')} (interpreter from ${choice.source}) ` +
        (finding ? 'to find the code objects in the workspace' : `for ${settings.codeObjects.join(', ')}`),
    );
    // No transport kind: the client would append its own --stdio otherwise.
    const serverOptions: ServerOptions = {
      command: choice.command,
      args: choice.args,
      options: { cwd: folder?.uri.fsPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: LENS_SELECTOR.map((filter) => ({ ...filter })),
      initializationOptions: initializationOptions(settings),
      synchronize: { configurationSection: LENS_SECTION },
      outputChannel: this.log,
      middleware: {
        // A request the client writes after stop() began would reach the server after its
        // `shutdown` and be refused (the client shows that refusal in a popup): it is refused here
        // instead, as a connection no longer active, which the client answers quietly with no result.
        sendRequest: (type, param, token, next) => {
          if (client !== this.client) {
            const method = typeof type === 'string' ? type : type.method;
            return Promise.reject(new ResponseError(ErrorCodes.ConnectionInactive, `the address-space lens is stopping (${method})`));
          }
          return next(type, param, token);
        },
        workspace: {
          // The client sends every change of the section as it happens; a change that stops or
          // restarts the server (update() queues that) must not reach the server being stopped:
          // the notification would fail and the client would say so in a popup.
          didChangeConfiguration: (sections, next) => (this.sendsSettings(client) ? next(sections) : Promise.resolve()),
        },
      },
    };
    const client = new LanguageClient('aspace.lens', 'aspace Address-Space Lens', serverOptions, clientOptions);
    this.client = client;
    this.running = settings;
    try {
      await client.start();
      client.onNotification(CODE_OBJECTS_CHANGED, () => void this.showStatus());
      void this.showStatus();
    } catch (error) {
      // Forget the failed server, so the next settings change tries again.
      this.client = undefined;
      this.running = undefined;
      void client.dispose().catch(() => {});
      void vscode.window.showWarningMessage(
        `The address-space lens did not start (${choice.command} -m aspace_dap lsp): ${describe(error)}. ` +
          'Set aspace.pythonPath to an interpreter with aspace-dap installed.',
      );
      throw error;
    }
  }

  /** Whether a settings change goes to this running server: only budgets changed (lensAction
   * 'none'); the server started with the code objects and interpreter it now has. */
  private sendsSettings(client: LanguageClient): boolean {
    if (client !== this.client) return false;
    const { settings } = readLensSettings((key) => vscode.workspace.getConfiguration(LENS_SECTION).get(key));
    return sendsToRunningServer(this.running, settings, this.sourceSeen);
  }

  private async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.running = undefined;
    this.status.hide();
    if (client === undefined) return;
    try {
      await client.stop();
    } catch (error) {
      this.log.appendLine(`address-space lens: stopping: ${describe(error)}`);
    }
  }

  /** Stops the server; VS Code waits for this on deactivation. */
  shutdown(): Promise<void> {
    for (const listener of this.listeners) listener.dispose();
    this.queue = this.queue.then(() => this.stop());
    return this.queue;
  }

  dispose(): void {
    void this.shutdown();
  }
}
