// What the scripts that drive the packaged extension in a real VS Code share:
// required environment variables, where code-server and playwright-core are,
// a throw-away code-server profile with the .vsix installed, the server
// process, and a few workbench gestures.

import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** test/host's own packages (code-server, playwright-core): `make -C vscode-extension host-deps` installs them. */
const hostPackages = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'test', 'host');

/** code-server's command: $CODE_SERVER, else test/host's install. */
export const codeServerCommand = () => process.env.CODE_SERVER || join(hostPackages, 'node_modules', '.bin', 'code-server');

/** playwright-core's `chromium`, from the folder $PLAYWRIGHT (else test/host) whose node_modules holds it. */
export function playwrightChromium() {
  const from = resolve(process.env.PLAYWRIGHT || hostPackages);
  return createRequire(join(from, 'noop.js'))('playwright-core').chromium;
}

/** The browser playwright drives: $CHROMIUM, else Debian's chromium. */
export const chromiumPath = () => process.env.CHROMIUM || '/usr/bin/chromium';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** $PORT, else a port nobody listens on now (test runs may overlap with other servers). */
export async function serverPort() {
  if (process.env.PORT) return Number(process.env.PORT);
  const probe = createServer();
  await new Promise((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address();
  await new Promise((done) => probe.close(done));
  return port;
}

/** An environment variable the script cannot run without; `script` names where it is documented. */
export function need(name, script) {
  const value = process.env[name];
  if (!value) {
    console.error(`set ${name} (see the header of ${script})`);
    process.exit(2);
  }
  return value;
}

/**
 * The cases a host check can run here: those whose `vendor`'s disassembler (llvm-objdump, nvdisasm, iga64)
 * the project's Python finds. Each other case is SKIPPED with the reason the server would give (what
 * provides the tool), as pytest skips the tests that need it; with REQUIRE_HOST_TESTS it fails instead.
 */
export function casesWithTools(cases, python, script) {
  const probe = [
    'import sys',
    'from aspace_dap.adapters import adapter_for',
    'from aspace_dap.adapters.base import DisassemblerMissing',
    'd = adapter_for(sys.argv[1]).make_disassembler()',
    'try:',
    '    d.locate()',
    'except DisassemblerMissing as e:',
    '    print(f"{d.tool} missing: {e}")',
  ].join('\n');
  const missing = new Map();
  for (const vendor of new Set(cases.map((c) => c.vendor))) {
    const why = execFileSync(python, ['-c', probe, vendor], { encoding: 'utf8' }).trim();
    if (why) missing.set(vendor, why);
  }
  const skipped = cases.filter((c) => missing.has(c.vendor));
  for (const c of skipped) {
    const line = `${script}: ${c.name} did not run: ${missing.get(c.vendor)}`;
    if (process.env.REQUIRE_HOST_TESTS) {
      console.error(`FAILED: REQUIRE_HOST_TESTS is set but ${line}`);
      process.exit(1);
    }
    console.log(`SKIPPED: ${line}`);
  }
  return cases.filter((c) => !missing.has(c.vendor));
}

/** Settings every run uses: no trust dialog, no tips or telemetry, the dark theme, a docked debug toolbar,
 * and less to draw and poll on a machine the tests keep busy. */
const BASE_SETTINGS = {
  'security.workspace.trust.enabled': false,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'editor.minimap.enabled': false,
  'debug.toolBarLocation': 'docked',
  // no extension gallery: the runs are offline and have nothing to recommend or update
  'extensions.ignoreRecommendations': true,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  // nothing drawn that the checks do not look at: no animations, no blinking cursor, no git status
  'workbench.reduceMotion': 'on',
  'editor.cursorBlinking': 'solid',
  'editor.smoothScrolling': false,
  'workbench.list.smoothScrolling': false,
  'git.enabled': false,
  'git.autoRepositoryDetection': false,
  'workbench.enableExperiments': false,
  // no sticky headers over a tree's rows: a thread row held at the top of the Call Stack covers the row under it
  'workbench.tree.enableStickyScroll': false,
};

/**
 * Starts code-server on 127.0.0.1:`port` with a fresh profile under `root` (user data and
 * extensions), `settings` added to the base ones and the .vsix installed; `folder` is opened
 * when given. Resolves once the server answers its health check. code-server's output goes to the
 * console, or to the file `log` when given (a test prints its path when it fails).
 */
export async function startCodeServer({ codeServer, vsix, port, root, settings = {}, folder, echoStdout = false, log }) {
  const userData = join(root, 'user');
  const extensions = join(root, 'extensions');
  mkdirSync(join(userData, 'User'), { recursive: true });
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify({ ...BASE_SETTINGS, ...settings }));
  const logFile = log ? openSync(log, 'a') : undefined;
  execFileSync(codeServer, ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix], {
    stdio: logFile === undefined ? 'inherit' : ['ignore', logFile, logFile],
  });
  const server = spawn(
    codeServer,
    ['--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check',
      '--disable-workspace-trust', '--user-data-dir', userData, '--extensions-dir', extensions, ...(folder ? [folder] : [])],
    { stdio: ['ignore', logFile ?? 'pipe', logFile ?? 'pipe'] },
  );
  if (logFile === undefined) {
    if (echoStdout) server.stdout.on('data', (d) => process.stdout.write(`[code-server] ${d}`));
    server.stderr.on('data', (d) => process.stderr.write(`[code-server] ${d}`));
  }
  for (let i = 0; i < 120; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return server;
    } catch {
      // not listening yet
    }
    await sleep(500);
  }
  server.kill();
  throw new Error('code-server did not start');
}

/** Stops code-server and waits until it has exited (its profile can then be removed). */
export async function stopCodeServer(server) {
  if (server === undefined || server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((done) => server.once('exit', done));
  server.kill();
  await exited;
}

/**
 * Runs a script's `main()`: an error fails the process; then code-server is stopped (`server()`
 * gives it: main starts it) and, after a pass, the scratch folder `root` is removed (kept after a
 * failure: its windows and code-server's log are the diagnosis).
 */
export function runHostScript(main, server, root) {
  return main()
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    })
    .finally(async () => {
      await stopCodeServer(server());
      if (root && !process.exitCode) rmSync(root, { recursive: true, force: true, maxRetries: 5 });
    });
}

/**
 * Runs a command palette entry by its exact title: Enter could pick a near match before the list
 * settles. Retried: F1 can go nowhere while the workbench moves focus (a session starting).
 */
export async function runCommand(page, title) {
  const exact = new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  for (let attempt = 0; ; attempt++) {
    try {
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 5000 });
      await input.fill(`>${title}`, { timeout: 5000 });
      await page
        .locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exact }) })
        .first()
        .click({ timeout: 10000 });
      return;
    } catch (error) {
      await page.keyboard.press('Escape');
      if (attempt >= 6) throw error;
    }
  }
}

export async function setPaneExpanded(page, title, expanded) {
  const header = page.locator('.pane-header', { hasText: title }).first();
  await header.waitFor();
  if (((await header.getAttribute('aria-expanded')) === 'true') !== expanded) await header.click();
}
