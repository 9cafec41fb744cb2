#!/usr/bin/env node
// The GPU Waves view in a real VS Code (code-server) driven by headless
// Chromium, on a 4,000-wave dump whose last 3 waves stand at the first
// instruction llvm-objdump attributes to lds_tiles.hip:30: the view must list
// those 3 as the first group, and choosing one of them must move the Call
// Stack to line 30. Writes docs/vscode-waves.png. Not part of `make test`: it
// needs code-server, Chromium and playwright-core, like capture-screenshots.mjs.
//
//   CODE_SERVER=/tmp/cs/node_modules/.bin/code-server PLAYWRIGHT=/tmp/cs \
//   CHROMIUM=/usr/bin/chromium PYTHON=/abs/.venv/bin/python \
//   node scripts/check-waves-view.mjs [OUT_DIR]

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { need as needIn, runCommand, setPaneExpanded, sleep, startCodeServer } from './codeServerHost.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const extensionDir = resolve(here, '..');
const repo = resolve(extensionDir, '..');

const need = (name) => needIn(name, 'scripts/check-waves-view.mjs');
const codeServer = need('CODE_SERVER');
const python = need('PYTHON');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const { chromium } = createRequire(join(resolve(need('PLAYWRIGHT')), 'noop.js'))('playwright-core');
const outDir = resolve(process.argv[2] ?? join(repo, 'docs'));
const vsix = join(extensionDir, 'aspace-gpu.vsix');
const port = Number(process.env.PORT ?? 8766);

/** The address of the first instruction llvm-objdump -l lists under lds_tiles.hip:LINE. */
function firstPcOfLine(line) {
  let current;
  for (const text of readFileSync(join(repo, 'examples/lds_tiles/lds_tiles.gfx90a.O0.co.s.txt'), 'utf8').split('\n')) {
    const at = /^; .*lds_tiles\.hip:(\d+)$/.exec(text);
    if (at !== null) {
      current = Number(at[1]);
      continue;
    }
    if (text.startsWith('; ')) current = undefined;
    const pc = /\/\/ ([0-9A-F]{12}):/.exec(text);
    if (pc !== null && current === line) return parseInt(pc[1], 16);
  }
  throw new Error(`no instruction for line ${line}`);
}

// ---- a throw-away workspace with the dump and a launch configuration ----

const root = mkdtempSync(join(tmpdir(), 'aspace-waves-'));
const workspace = join(root, 'aspace-dap');
const dump = join(workspace, 'waves-dump');
mkdirSync(workspace, { recursive: true });
// the source, where the DWARF's relative path finds it
cpSync(join(repo, 'examples', 'lds_tiles', 'lds_tiles.hip'), join(workspace, 'examples', 'lds_tiles', 'lds_tiles.hip'));
execFileSync(python, [join(repo, 'benchmarks', 'gen_waves.py'), dump, '--workgroups', '1000', '--odd', '3',
  '--odd-pc', `0x${firstPcOfLine(30).toString(16)}`], { cwd: repo, stdio: 'inherit' });
mkdirSync(join(workspace, '.vscode'), { recursive: true });
writeFileSync(
  join(workspace, '.vscode', 'launch.json'),
  JSON.stringify({
    version: '0.2.0',
    configurations: [{ type: 'aspace-gpu', request: 'launch', name: '4,000 waves', state: dump, pythonPath: python }],
  }),
);




function pane(page, title) {
  return page.locator('.pane', { has: page.locator('.pane-header', { hasText: title }) });
}


let server;

async function main() {
  mkdirSync(outDir, { recursive: true });
  server = await startCodeServer({
    codeServer, vsix, port, root, folder: workspace,
    settings: { 'extensions.ignoreRecommendations': true },
  });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench');
    await sleep(3000);
    await runCommand(page, 'View: Show Run and Debug');
    await sleep(1000);
    // the Run and Debug view's start button runs the selected configuration (the only one)
    await page.locator('.start-debug-action-item .codicon-debug-start, .debug-start-action').first().click();
    await page.locator('.statusbar-item', { hasText: /Lane \d+\/\d+/ }).waitFor({ timeout: 90000 });
    for (const title of ['Watch', 'Breakpoints', 'Loaded Scripts', 'GPU Lanes', 'Variables']) {
      await setPaneExpanded(page, title, false).catch(() => {});
    }
    await setPaneExpanded(page, 'GPU Waves', true);
    const waves = pane(page, 'GPU Waves');
    const first = waves.locator('.monaco-list-row').first();
    await first.waitFor({ timeout: 60000 });
    const firstText = (await first.textContent()).trim();
    if (!firstText.startsWith('3 waves · transpose_tiles (lds_tiles.hip:30)')) {
      throw new Error(`the first GPU Waves row is "${firstText}"`);
    }
    await first.click(); // unfold the group
    const chosen = waves.locator('.monaco-list-row', { hasText: /^Wave 3998/ }).first();
    await chosen.waitFor({ timeout: 30000 });
    await chosen.click();
    // VS Code shows the chosen wave's top frame: the editor's cursor goes to its line, and the
    // Variables view shows the locals in scope there (row_sum and k live in the row-sum loop)
    const cursor = page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+$/ }).first();
    let where = '';
    for (let i = 0; i < 60 && !/^Ln 30,/.test(where); i++) {
      await sleep(500);
      where = ((await cursor.textContent().catch(() => '')) ?? '').trim();
    }
    const frameText = (await pane(page, 'Call Stack').locator('.monaco-list-row.focused, .monaco-list-row.selected')
      .allTextContents()).join(' | ');
    if (!/^Ln 30,/.test(where)) throw new Error(`the editor is at "${where}" after choosing wave 3998 (Call Stack: ${frameText})`);
    await setPaneExpanded(page, 'Variables', true);
    const locals = pane(page, 'Variables').locator('.monaco-list-row', { hasText: /^Locals/ }).first();
    await locals.waitFor({ timeout: 30000 });
    if ((await locals.getAttribute('aria-expanded')) === 'false') await locals.click();
    await pane(page, 'Variables').locator('.monaco-list-row', { hasText: /^row_sum/ }).first().waitFor({ timeout: 30000 });
    const marked = (await waves.locator('.monaco-list-row', { hasText: '◀ focus' }).first().textContent()).trim();
    if (!marked.startsWith('Wave 3998')) throw new Error(`GPU Waves marks "${marked}" as the focus`);
    console.log(`GPU Waves: first row "${firstText}"; after choosing wave 3998 the Call Stack shows "${frameText}"`);
    await sleep(1000);
    await page.screenshot({ path: join(outDir, 'vscode-waves.png') });
    console.log(`wrote ${join(outDir, 'vscode-waves.png')}`);
  } catch (error) {
    await page.screenshot({ path: join(outDir, 'failed-step.png') }).catch(() => {});
    throw error;
  } finally {
    await browser.close();
  }
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => server?.kill());
