// Runs `python -m aspace_dap` for a debug session as an inline debug adapter,
// so that the extension owns the process: its stderr goes to the output
// channel, and a server that fails to start is reported with that stderr.

import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as vscode from 'vscode';
import { DapFrameReader, encodeDapMessage, stderrTail } from './dapFraming';
import { choosePython, expandPath, venvInterpreters, type PythonChoice } from './pythonPath';

const IMPORT_CHECK_SECONDS = 30;

/** Shows a start-up failure with the server's own words and a way to the full log. */
export async function showStartFailure(log: vscode.OutputChannel, what: string, stderr: string): Promise<void> {
  const tail = stderrTail(stderr);
  const choice = await vscode.window.showErrorMessage(
    tail === '' ? what : `${what}\n${tail}`,
    'Show Output',
  );
  if (choice === 'Show Output') log.show(true);
}

/** The interpreter for a session: launch `pythonPath`, `aspace.pythonPath`, the workspace's .venv, ... */
export async function serverCommand(
  folder: vscode.WorkspaceFolder | undefined,
  configured: string | undefined,
  pythonExtension: (folder: vscode.WorkspaceFolder | undefined) => Promise<string[] | undefined>,
  serverArgs?: readonly string[],
): Promise<PythonChoice> {
  const vars = { workspaceFolder: folder?.uri.fsPath, home: os.homedir(), env: process.env };
  const expand = (p: string | undefined): string | undefined => (p === undefined ? undefined : expandPath(p, vars));
  const setting = vscode.workspace.getConfiguration('aspace', folder?.uri).get<string>('pythonPath');
  const venv =
    folder === undefined ? undefined : venvInterpreters(folder.uri.fsPath, process.platform).find((p) => fs.existsSync(p));
  return choosePython({
    configured: expand(configured),
    fromAspaceSetting: expand(setting),
    workspaceVenv: venv,
    fromPythonExtension: await pythonExtension(folder),
    fromPythonSetting: expand(vscode.workspace.getConfiguration('python', folder?.uri).get<string>('defaultInterpreterPath')),
    platform: process.platform,
    serverArgs,
  });
}

/** Runs `python -c "import aspace_dap"`; resolves with the error text, or undefined when it imports. */
export function importProblem(choice: PythonChoice, cwd: string | undefined): Promise<string | undefined> {
  const prefix = choice.args.slice(0, choice.args.indexOf('-m')); // the interpreter's own prefix (conda run ...)
  return new Promise((resolve) => {
    let stderr = '';
    let child: ChildProcess;
    try {
      child = spawn(choice.command, [...prefix, '-c', 'import aspace_dap.dap.handlers'], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      resolve(error instanceof Error ? error.message : String(error));
      return;
    }
    const timer = setTimeout(() => {
      child.kill();
      resolve(`${choice.command} did not finish importing aspace_dap within ${IMPORT_CHECK_SECONDS} s`);
    }, IMPORT_CHECK_SECONDS * 1000);
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve(`cannot run ${choice.command}: ${error.message}`);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code === 0 ? undefined : stderr.trim() || `${choice.command} exited with code ${code}`);
    });
  });
}

export class ServerProcessAdapter implements vscode.DebugAdapter {
  private readonly sent = new vscode.EventEmitter<vscode.DebugProtocolMessage>();
  readonly onDidSendMessage = this.sent.event;
  private readonly child: ChildProcess;
  private readonly reader = new DapFrameReader();
  private stderr = '';
  private answered = false;
  private disposed = false;

  constructor(
    choice: PythonChoice,
    cwd: string | undefined,
    private readonly log: vscode.OutputChannel,
    private readonly sessionName: string,
  ) {
    this.child = spawn(choice.command, choice.args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (chunk: Buffer) => {
      for (const message of this.reader.push(chunk)) {
        this.answered = true;
        this.sent.fire(message as vscode.DebugProtocolMessage);
      }
    });
    this.child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.stderr = (this.stderr + text).slice(-20000);
      this.log.append(text);
    });
    this.child.on('error', (error) => this.ended(undefined, `cannot run ${choice.command}: ${error.message}`));
    this.child.on('exit', (code, signal) => this.ended(code, signal ? `signal ${signal}` : undefined));
  }

  handleMessage(message: vscode.DebugProtocolMessage): void {
    if (this.child.stdin?.writable) this.child.stdin.write(encodeDapMessage(message));
  }

  private ended(code: number | null | undefined, why: string | undefined): void {
    if (this.disposed) return;
    this.disposed = true;
    const failed = (code !== 0 && code !== null) || why !== undefined;
    if (failed) {
      const what = `aspace-dap ${code !== undefined && code !== null ? `exited with code ${code}` : 'stopped'}${why ? ` (${why})` : ''}`;
      this.log.appendLine(`[${this.sessionName}] ${what}`);
      void showStartFailure(
        this.log,
        this.answered ? `${what}.` : `The GPU debug server did not start: ${what}.`,
        why !== undefined && code === undefined ? why : this.stderr,
      );
    }
    // the session ends with its server
    this.sent.fire({ type: 'event', event: 'terminated', seq: 0 } as vscode.DebugProtocolMessage);
  }

  dispose(): void {
    this.disposed = true;
    this.sent.dispose();
    if (this.child.exitCode === null) this.child.kill();
  }
}
