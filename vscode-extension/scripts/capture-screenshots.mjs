#!/usr/bin/env node
// Screenshots of the packaged extension in a real VS Code (code-server) driven
// by headless Chromium, debugging examples/lds_tiles with the real server.
// It uses test/host's code-server and playwright-core (`make host-deps`) and
// Debian's Chromium, as the host tests do (see the "Screenshots" section of
// ../README.md):
//
//   PYTHON=/abs/.venv/bin/python [CODE_SERVER=...] [PLAYWRIGHT=...] [CHROMIUM=/usr/bin/chromium] \
//   node scripts/capture-screenshots.mjs [OUT_DIR]
//
// OUT_DIR defaults to ../docs. The workspace, user data and extensions go to
// a fresh temporary folder, so an existing code-server setup is not touched.

import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chromiumPath as chromiumCommand, codeServerCommand, need as needIn, playwrightChromium, runCommand, setPaneExpanded, sleep,
  runHostScript, startCodeServer,
} from './codeServerHost.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const extensionDir = resolve(here, '..');
const repo = resolve(extensionDir, '..');

const need = (name) => needIn(name, 'scripts/capture-screenshots.mjs');
const codeServer = codeServerCommand();
const python = need('PYTHON');
const chromiumPath = chromiumCommand();
const chromium = playwrightChromium();
const outDir = resolve(process.argv[2] ?? join(repo, 'docs'));
const vsix = join(extensionDir, 'aspace-gpu.vsix');
const port = Number(process.env.PORT ?? 8765);

// ---- a throw-away workspace with the example and a launch configuration ----

const root = mkdtempSync(join(tmpdir(), 'aspace-shots-'));
const workspace = join(root, 'aspace-dap');
cpSync(join(repo, 'examples', 'lds_tiles'), join(workspace, 'examples', 'lds_tiles'), { recursive: true });
mkdirSync(join(workspace, '.vscode'), { recursive: true });
writeFileSync(
  join(workspace, '.vscode', 'launch.json'),
  JSON.stringify(
    {
      version: '0.2.0',
      configurations: [
        {
          type: 'aspace-gpu',
          request: 'launch',
          name: 'lds_tiles (gfx90a -O0)',
          state: '${workspaceFolder}/examples/lds_tiles/dumps/gfx90a.O0',
          pythonPath: python,
        },
      ],
    },
    null,
    2,
  ),
);


// ---- driving the workbench ----



/** The row of a debug tree (Variables, Call Stack, GPU Lanes) whose text matches. */
function row(page, paneTitle, text) {
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: paneTitle }) });
  return pane.locator('.monaco-list-row', { hasText: text }).first();
}


/** Drags the side bar's right edge so thread names and values fit. */
async function widenSideBar(page, width) {
  const box = await page.locator('.part.sidebar').boundingBox();
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width + 1, y);
  await page.mouse.down();
  await page.mouse.move(box.x + width, y, { steps: 10 });
  await page.mouse.up();
}

/** Right-click a Variables or Watch row and pick Show in All Lanes. */
async function showInAllLanes(page, target, panelTitle) {
  await target.click({ button: 'right' });
  // Menu items act on keyboard selection; hovering selects the entry.
  await page.locator('.context-view .action-label', { hasText: 'Show in All Lanes' }).hover();
  await page.keyboard.press('Enter');
  await page.locator('.tab', { hasText: panelTitle }).waitFor({ timeout: 30000 });
}

async function shot(page, name, clip) {
  // the pointer rests on the empty Debug Console, so no hover covers a view
  await page.mouse.move(1000, 720);
  await sleep(1500);
  const path = join(outDir, name);
  await page.screenshot({ path, clip });
  console.log(`wrote ${path}`);
}

let server;

async function main() {
  mkdirSync(outDir, { recursive: true });
  server = await startCodeServer({
    codeServer, vsix, port, root, folder: workspace, echoStdout: true,
    settings: {
      'extensions.ignoreRecommendations': true,
      'window.commandCenter': false,
      'chat.commandCenter.enabled': false,
      'workbench.layoutControl.enabled': false,
    },
  });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench');
    await sleep(3000);

    // Start the session from launch.json and wait for the lane status bar item.
    await runCommand(page, 'View: Show Run and Debug');
    await sleep(1000);
    await widenSideBar(page, 560);
    for (const pane of ['Watch', 'Breakpoints']) await setPaneExpanded(page, pane, false);
    await runCommand(page, 'Debug: Start Debugging');
    const laneItem = page.locator('.statusbar-item', { hasText: /Lane \d+\/\d+/ });
    await laneItem.waitFor({ timeout: 60000 });
    await setPaneExpanded(page, 'Loaded Scripts', false);
    await setPaneExpanded(page, 'GPU Lanes', true);
    // the view scrolls to the focused lane, so its first rows may be out of view
    await row(page, 'GPU Lanes', '◀ focus').waitFor({ timeout: 30000 });
    // Locals comes first, so VS Code expands it itself.
    await row(page, 'Variables', /^tx/).waitFor();
    await sleep(1500);
    await shot(page, 'vscode-session.png');

    // Switch the lane focus: the status bar, the GPU Lanes view's focus mark
    // and the Variables view (same frame id, new lane) must all follow.
    // By id: the "GPU focus: …" status message that follows also says "Lane n/64".
    const focusItem = page.locator('[id="aspace.aspace-gpu.aspace.laneFocus"]');
    const before = (await focusItem.textContent()).trim();
    const valueBefore = (await row(page, 'Variables', /^tx/).textContent()).trim();
    await runCommand(page, 'GPU Debug: Next Active Lane');
    let after = before;
    for (let i = 0; i < 60 && after === before; i++) {
      await sleep(500);
      after = (await focusItem.textContent()).trim();
    }
    const lane = /Lane (\d+)\//.exec(after)?.[1];
    if (after === before || lane === undefined) throw new Error(`the status bar stayed at "${before}"`);
    const marked = row(page, 'GPU Lanes', '◀ focus');
    let markedText = '';
    for (let i = 0; i < 60 && !new RegExp(`^Lane ${lane}\\b`).test(markedText); i++) {
      await sleep(500);
      markedText = (await marked.textContent()).trim();
    }
    if (!new RegExp(`^Lane ${lane}\\b`).test(markedText)) {
      throw new Error(`GPU Lanes marks "${markedText}" as the focus after switching to lane ${lane}`);
    }
    let valueAfter = valueBefore;
    for (let i = 0; i < 60 && valueAfter === valueBefore; i++) {
      await sleep(500);
      valueAfter = (await row(page, 'Variables', /^tx/).textContent()).trim();
    }
    if (valueAfter === valueBefore) throw new Error(`Variables still shows "${valueBefore}" after switching to lane ${lane}`);
    console.log(`lane switch: ${before} -> ${after}; ${valueBefore} -> ${valueAfter}`);
    await sleep(1000);
    await shot(page, 'vscode-lane-switch.png');

    // Show in All Lanes from the Variables view's context menu (tx is a
    // four-way tie across the active lanes, so nothing is marked), then from
    // the palette for `tx == 0`: the lanes that summed a tile row stand out.
    await showInAllLanes(page, row(page, 'Variables', /^tx/), 'tx · all lanes');
    await runCommand(page, 'GPU Debug: Show in All Lanes');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor();
    await input.fill('tx == 0');
    await page.keyboard.press('Enter');
    await page.locator('.tab', { hasText: 'tx == 0 · all lanes' }).waitFor({ timeout: 30000 });
    await sleep(2000);
    await shot(page, 'vscode-all-lanes.png');

  } catch (error) {
    // What the window showed when a step failed is the quickest diagnosis.
    await page.screenshot({ path: join(outDir, 'failed-step.png') }).catch(() => {});
    throw error;
  } finally {
    await browser.close();
  }
}

runHostScript(main, () => server);
