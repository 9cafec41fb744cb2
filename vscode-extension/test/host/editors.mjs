#!/usr/bin/env node
// End-to-end checks in a real VS Code extension host (code-server driven by
// headless Chromium), with the packaged extension and the real server. `make test`
// runs them (see the Makefile's test-host):
//
//   [CLONE=<a clone of the repository after `make setup`>] [CODE_SERVER=...] [PLAYWRIGHT=...] \
//   [CHROMIUM=/usr/bin/chromium] [SHOTS=../docs] node test/host/editors.mjs
//
// CODE_SERVER and PLAYWRIGHT default to test/host's own install (`make host-deps`). Without CLONE
// the checks open a fresh folder holding the lds_tiles example and a `.venv` that is this
// repository's (linked), which is what a clone after `make setup` offers the extension.
//
// 1. F5 with no launch.json in the clone: pick the debugger, type a dump path: it stops on the dump
//    (the interpreter is the clone's .venv, found by the extension).
// 2. `wave 2` then `ty` in the Debug Console: wave 2's value; Call Stack and GPU Lanes show wave 2.
// 3. A launch whose interpreter cannot import aspace_dap: a notification with its error.
// 4. The CUDA and Intel examples copied to another folder: their sources open.
// 5. Lane 0 of CUDA divergent_call: its own (labelled) frame, not the odd lanes' call.
// 6. The built-in memory view on AMD lds_tiles' LDS (gfx90a -O0): tile and row_sums marked at the
//    offsets the ISA gives them; and on CUDA lds_tiles' shared memory.

import { cpSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chromiumPath, codeServerCommand, runHostScript, playwrightChromium, serverPort, sleep, startCodeServer,
} from '../../scripts/codeServerHost.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const extensionDir = resolve(here, '..', '..');
const repo = resolve(extensionDir, '..');
const chromium = playwrightChromium();
const shots = process.env.SHOTS ? resolve(process.env.SHOTS) : undefined;
const vsix = join(extensionDir, 'aspace-gpu.vsix');

const root = mkdtempSync(join(tmpdir(), 'aspace-host-'));
const log = join(root, 'code-server.log');

// the clone: the given one, or a folder with what the checks use of one
let clone;
if (process.env.CLONE) {
  clone = resolve(process.env.CLONE);
} else {
  clone = join(root, 'clone');
  cpSync(join(repo, 'examples', 'lds_tiles'), join(clone, 'examples', 'lds_tiles'), { recursive: true });
  if (!existsSync(join(repo, '.venv', 'bin', 'python'))) throw new Error(`no ${join(repo, '.venv')}: run make setup`);
  symlinkSync(join(repo, '.venv'), join(clone, '.venv'));
}

// a folder away from the clone with the CUDA and Intel examples, and launch configurations
const away = join(root, 'elsewhere');
for (const family of ['cuda', 'opencl']) cpSync(join(repo, 'examples', family), join(away, 'examples', family), { recursive: true });
mkdirSync(join(away, '.vscode'), { recursive: true });
const python = join(clone, '.venv', 'bin', 'python');
const launch = (name, state, extra = {}) => ({ type: 'aspace-gpu', request: 'launch', name, state, pythonPath: python, ...extra });
writeFileSync(
  join(away, '.vscode', 'launch.json'),
  JSON.stringify({
    version: '0.2.0',
    configurations: [
      launch('cuda divergent_call', '${workspaceFolder}/examples/cuda/dumps/divergent_call.sm_90.G'),
      launch('intel divergent_call', '${workspaceFolder}/examples/opencl/dumps/divergent_call.tgllp'),
      launch('cuda lds_tiles', '${workspaceFolder}/examples/cuda/dumps/lds_tiles.sm_90.G'),
      launch('no server here', '${workspaceFolder}/examples/cuda/dumps/lds_tiles.sm_90.G', { pythonPath: '/usr/bin/python3' }),
    ],
  }),
);



async function quickPick(page, text, timeout = 30000) {
  const exact = new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  await page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exact }) }).first().click({ timeout });
}

/** Palette or quick open entry; retried while the extension host is still registering contributions. */
async function pick(page, key, text, entry) {
  for (let attempt = 0; ; attempt++) {
    try {
      // the key can go nowhere while the workbench moves focus (a session starting, a picker closing)
      await page.keyboard.press(key);
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 5000 });
      await input.fill(text, { timeout: 5000 });
      await quickPick(page, entry, 10000);
      return;
    } catch (error) {
      await page.keyboard.press('Escape');
      if (attempt >= 6) throw error;
    }
  }
}

async function runCommand(page, title) {
  await pick(page, 'F1', `>${title}`, title);
}

function row(page, paneTitle, text) {
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: paneTitle }) });
  return pane.locator('.monaco-list-row', { hasText: text }).first();
}

async function repl(page, text) {
  await page.locator('.repl-input-wrapper .monaco-editor').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await sleep(1200);
}

async function replLast(page) {
  const rows = page.locator('.repl .monaco-list-row');
  return (await rows.last().textContent()).trim();
}

async function until(what, probe, tries = 60) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await probe().catch(() => undefined);
    if (last) return last;
    await sleep(500);
  }
  throw new Error(`timed out: ${what}`);
}

async function stopDebugging(page) {
  await runCommand(page, 'Debug: Stop').catch(() => {});
  await sleep(1500);
}

async function startConfig(page, name) {
  // quick open's "debug " prefix lists the launch configurations
  await pick(page, 'Control+P', `debug ${name}`, name);
}

async function showDebugConsole(page) {
  await page.keyboard.press('Control+Shift+Y');
  await page.locator('.repl-input-wrapper').waitFor({ timeout: 10000 });
}

async function shot(page, name, clip) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, name), clip });
  console.log(`wrote ${join(shots, name)}`);
}

const results = [];
let currentPage;
async function check(name, fn) {
  try {
    await fn();
    results.push(`ok   ${name}`);
  } catch (error) {
    results.push(`FAIL ${name}: ${error.message.split('\n')[0]}`);
    const where = join(root, `failed-${results.length}.png`);
    await currentPage?.screenshot({ path: where }).catch(() => {});
    results[results.length - 1] += ` (window: ${where})`;
  }
  console.log(results[results.length - 1]);
}

async function open(browser, folder) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector('.monaco-workbench');
  await sleep(4000);
  currentPage = page;
  return page;
}

let server;
let port;

async function main() {
  port = await serverPort();
  server = await startCodeServer({
    codeServer: codeServerCommand(), vsix, port, root, log,
    settings: {
      'window.commandCenter': false,
      'chat.commandCenter.enabled': false,
      'workbench.layoutControl.enabled': false,
      'files.simpleDialog.enable': true,
    },
  });
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  const laneItem = (page) => page.locator('.statusbar-item', { hasText: /Lane \d+\/\d+/ });
  try {
    // ---- 1, 2: the fresh clone, no launch.json ----
    if (existsSync(join(clone, '.vscode', 'launch.json'))) throw new Error(`${clone} has a launch.json`);
    let page = await open(browser, clone);
    await check('F5 without launch.json stops on the dump', async () => {
      // what F5 does without a launch.json: pick a debugger, then its initial configuration runs
      await runCommand(page, 'Debug: Start Debugging');
      await quickPick(page, 'GPU State Dump (aspace)');
      const input = page.locator('.quick-input-widget input');
      await page.locator('.quick-input-title', { hasText: 'GPU state dump' }).waitFor();
      await sleep(1500); // the dialog fills in its own folder first
      const dump = join(clone, 'examples', 'lds_tiles', 'dumps', 'gfx90a.O0');
      await until('the dump path is typed', async () => {
        await input.fill(dump);
        await sleep(500);
        return (await input.inputValue()) === dump;
      }, 10);
      await page.locator('.quick-input-widget .monaco-button', { hasText: 'Debug this dump' }).click();
      await laneItem(page).waitFor({ timeout: 60000 });
    });
    await check('wave 2 then ty: wave 2 everywhere', async () => {
      await showDebugConsole(page);
      await repl(page, 'wave 2');
      await repl(page, 'ty');
      const value = await replLast(page);
      // 16x16 blocks on wave64: wave 2 lane 2 has threadIdx.y = 4 * 2 + 2 / 16 = 8
      if (value !== '8') throw new Error(`ty printed "${value}"`);
      // the selected frame belongs to wave 2's thread: the nearest thread row above it
      await until('Call Stack selects a frame of wave 2', async () =>
        /Wave 0:0:0:2/.test(
          await page.evaluate(() => {
            const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
            const at = rows.findIndex((r) => r.classList.contains('selected'));
            const thread = rows.slice(0, at + 1).reverse().find((r) => r.getAttribute('aria-level') === '1');
            return thread?.textContent ?? '';
          }),
        ));
      await until('GPU Lanes names wave 2', async () =>
        /0:0:0:2/.test(await page.locator('.pane-header', { hasText: 'GPU Lanes' }).textContent()));
      await repl(page, 'info waves');
      await shot(page, 'vscode-wave-switch.png');
    });
    await check('a frame selected in another wave moves the focus there', async () => {
      const thread = page.locator('.debug-call-stack .monaco-list-row', { hasText: 'Wave 0:0:0:0' }).first();
      await thread.click();
      await page.keyboard.press('ArrowRight'); // expand: VS Code fetches wave 0's stack
      await until('wave 0 shows its frame', async () => {
        const rows = await page.evaluate(() =>
          [...document.querySelectorAll('.debug-call-stack .monaco-list-row')].map((r) => [r.getAttribute('aria-level'), r.textContent]));
        const at = rows.findIndex(([, text]) => /Wave 0:0:0:0/.test(text));
        return at >= 0 && rows[at + 1]?.[0] === '2';
      });
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter'); // select wave 0's top frame
      await sleep(1500);
      await repl(page, 'lane 7');
      await repl(page, 'ty');
      // wave 0 lane 7: threadIdx.y = 0 + 7 / 16 = 0, and info waves stars wave 0
      if ((await replLast(page)) !== '0') throw new Error(`ty printed "${await replLast(page)}"`);
      await repl(page, 'info waves');
      const text = await page.locator('.repl').textContent();
      if (!/\* focus: AMDGPU Wave 0:0:0:0/.test(text.slice(text.lastIndexOf('info waves')))) throw new Error('info waves does not name wave 0 as the focus');
    });
    await check('AMD LDS view: tile at 0x0 and row_sums at 0x440, both marked', async () => {
      await repl(page, 'lane 2'); // an active lane of wave 0
      await runCommand(page, 'GPU Debug: Open Shared Memory (LDS)');
      const frame = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
      await frame.locator('.chip', { hasText: 'tile' }).waitFor({ timeout: 30000 });
      // the last page of the workgroup's LDS: tile's tail and all of row_sums
      await frame.locator('#offset').fill('0x280');
      await frame.locator('#goto').click();
      await until('the page shows both variables', async () =>
        (await frame.locator('.chip', { hasText: 'tile' }).count()) === 1 &&
        (await frame.locator('.chip', { hasText: 'row_sums' }).count()) === 1 &&
        /^0x00000280/.test(await frame.locator('table.mem th').first().textContent()));
      // from the ISA (ds_write/ds_read offsets of the gfx90a -O0 code object): tile, float[16][17]
      // = 1088 bytes, at LDS 0x0; row_sums, float[16] = 64 bytes, right after it at 0x440
      const legend = await frame.locator('.legend').textContent();
      for (const want of [/tile float \[16\]\[17\] · 0x00000000\.\.0x00000440 \(1088 bytes\)/, /row_sums float \[16\] · 0x00000440\.\.0x00000480 \(64 bytes\)/]) {
        if (!want.test(legend)) throw new Error(`legend: ${legend}`);
      }
      // the bytes on either side of the boundary are coloured as their own variable
      const owner = async (address) => frame.locator(`td[title]`, { hasText: /./ }).evaluateAll(
        (cells, a) => cells.filter((c) => c.closest('tr').querySelector('th').textContent === a).map((c) => c.title.split(' ')[0]),
        address);
      const before = await owner('0x00000430');
      const after = await owner('0x00000440');
      if (before.length !== 16 || before.some((n) => n !== 'tile')) throw new Error(`0x430: ${before}`);
      if (after.length !== 16 || after.some((n) => n !== 'row_sums')) throw new Error(`0x440: ${after}`);
      await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
      await runCommand(page, 'View: Hide Panel');
      // the source tab closed, its empty group goes and the memory view takes the editor area
      await page.locator('.tab', { hasText: 'lds_tiles.hip' }).locator('.codicon-close').click();
      await page.mouse.move(900, 820); // no tooltip over the view
      await sleep(1500);
      await shot(page, 'vscode-lds-view.png');
      await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    });
    await stopDebugging(page);
    await page.close();

    // ---- 3-6: the examples copied elsewhere ----
    page = await open(browser, away);
    await check('an interpreter without aspace_dap shows its error', async () => {
      await startConfig(page, 'no server here');
      const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'cannot run aspace-dap' });
      await toast.waitFor({ timeout: 60000 });
      const text = await toast.textContent();
      if (!/No module named|ModuleNotFoundError/.test(text)) throw new Error(`notification: ${text}`);
      if (!(await toast.locator('.monaco-button', { hasText: 'Show Output' }).count())) throw new Error('no Show Output button');
      await shot(page, 'vscode-interpreter-error.png');
      await toast.locator('.monaco-button', { hasText: 'Show Output' }).click();
    });
    for (const [config, file] of [['cuda divergent_call', 'divergent_call.cu'], ['intel divergent_call', 'divergent_call.cl']]) {
      await check(`${config}: its source opens from another folder`, async () => {
        await startConfig(page, config);
        await laneItem(page).waitFor({ timeout: 60000 });
        await until(`${file} opens`, async () => (await page.locator('.tab.active', { hasText: file }).count()) > 0);
        await until('the editor shows the kernel', async () =>
          /settle/.test(await page.locator('.editor-instance .view-lines').first().textContent()));
        if (config.startsWith('cuda')) {
          await showDebugConsole(page);
          await repl(page, 'lane 0');
          await until('lane 0 shows its own frame', async () =>
            (await page.locator('.debug-call-stack .monaco-list-row', { hasText: 'lane 0 inactive' }).count()) > 0);
          if ((await page.locator('.debug-call-stack .monaco-list-row', { hasText: /^settle/ }).count()) > 0) {
            throw new Error('the odd lanes\' settle frame is shown for lane 0');
          }
        }
      });
      await stopDebugging(page);
    }
    await check('the built-in memory view marks tile and row_sums', async () => {
      await startConfig(page, 'cuda lds_tiles');
      await laneItem(page).waitFor({ timeout: 60000 });
      await runCommand(page, 'GPU Debug: Open Shared Memory (LDS)');
      const frame = page.frameLocator('iframe.webview').frameLocator('iframe#active-frame');
      // the view opens at the page of the frame's first variable there
      await frame.locator('.chip', { hasText: 'row_sums' }).waitFor({ timeout: 30000 });
      await frame.locator('.chip', { hasText: 'tile' }).waitFor({ timeout: 30000 });
      await frame.locator('td.v0').first().waitFor();
      await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
      await runCommand(page, 'View: Hide Panel');
      // the source tab closed, its empty group goes and the memory view takes the editor area
      await page.locator('.tab', { hasText: 'lds_tiles.cu' }).locator('.codicon-close').click();
      await page.mouse.move(900, 820); // no tooltip over the view
      await sleep(1500);
      await frame.locator('button', { hasText: 'Next' }).click();
      await until('the next page shows tile only', async () =>
        (await frame.locator('.chip', { hasText: 'tile' }).count()) === 1 &&
        (await frame.locator('.chip', { hasText: 'row_sums' }).count()) === 0);
    });
  } finally {
    await browser.close();
  }
  if (results.some((r) => r.startsWith('FAIL'))) {
    console.log(`code-server's log: ${log}`);
    process.exitCode = 1;
  }
}

runHostScript(main, () => server, root);
