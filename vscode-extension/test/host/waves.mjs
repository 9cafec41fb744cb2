#!/usr/bin/env node
// The GPU Waves view in a real VS Code extension host (code-server driven by
// headless Chromium), with the packaged extension and the real server, on a
// 4,000-wave dump whose last 3 waves stand at the first instruction
// llvm-objdump attributes to lds_tiles.hip:30 (the dump of
// tests/test_wave_groups.py, built by the same code). The view must list those
// 3 as the first group, and choosing one of them must focus it: the Call Stack
// selects its frame at line 30, the editor goes there, Variables shows the
// locals of the row-sum loop, the lane status-bar item names the wave and GPU
// Waves marks it. Then "Find Lanes Where…" with `k == k`: GPU Waves shows the
// search on top, the 48 active lanes of those 3 waves (k lives only in the loop)
// and the 63,952 others not evaluated (no k where they stand); choosing a lane
// focuses its wave and lane. `make test` runs it (see the Makefile's test-host):
//
//   PYTHON=/abs/.venv/bin/python [CODE_SERVER=...] [PLAYWRIGHT=...] [CHROMIUM=/usr/bin/chromium] \
//   [SHOTS=../docs] node test/host/waves.mjs
//
// CODE_SERVER and PLAYWRIGHT default to test/host's own install (`make host-deps`). With SHOTS
// it writes SHOTS/vscode-waves.png, the README's screenshot.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chromiumPath, codeServerCommand, runHostScript, need as needIn, playwrightChromium, runCommand, serverPort, setPaneExpanded, sleep,
  startCodeServer,
} from '../../scripts/codeServerHost.mjs';
import { ldsTilesItem, pane, paneValues, untilValue } from './workbench.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const extensionDir = resolve(here, '..', '..');
const repo = resolve(extensionDir, '..');

const python = needIn('PYTHON', 'test/host/waves.mjs');
const chromium = playwrightChromium();
const shots = process.env.SHOTS ? resolve(process.env.SHOTS) : undefined;
const vsix = join(extensionDir, 'aspace-gpu.vsix');

// What the dump holds (tests/test_wave_groups.py: 1,000 lds_tiles workgroups of 4 waves, the
// last 3 waves moved to line 30): the first group, and the wave chosen in it.
const ODD_GROUP = '3 waves · transpose_tiles (lds_tiles.hip:30)';
const ODD_RANGE = 'waves 3997-3999';
const CHOSEN = 3998;
// the search: `k` exists only in the row-sum loop, so only the odd waves' 48 active lanes (exec
// 0x000f000f000f000f in the example's waves) have a value; choosing one of them focuses it
const SEARCH = 'k == k';
const FOUND = `Lanes where ${SEARCH}`;
const FOUND_COUNTS = '48 lanes in 3 waves · 63,952 lanes not evaluated';
const FOUND_LANE = 'Wave 3997 · lane 1'; // (the second row: another wave and lane than the focus)

// ---- a throw-away workspace with the dump and a launch configuration ----

const root = mkdtempSync(join(tmpdir(), 'aspace-waves-'));
const workspace = join(root, 'aspace-dap');
const dump = join(workspace, 'waves-dump');
mkdirSync(workspace, { recursive: true });
// the source, where the DWARF's relative path finds it
cpSync(join(repo, 'examples', 'lds_tiles', 'lds_tiles.hip'), join(workspace, 'examples', 'lds_tiles', 'lds_tiles.hip'));
const BUILD_DUMP = `
import sys
from pathlib import Path
sys.path[:0] = ["tests", "benchmarks"]
from gen_waves import write_waves_dump
from test_wave_groups import ODD, WORKGROUPS, first_pc_of_line
write_waves_dump(Path(sys.argv[1]), WORKGROUPS, odd=ODD, odd_pc=first_pc_of_line(30))
`;
execFileSync(python, ['-c', BUILD_DUMP, dump], { cwd: repo, stdio: 'inherit' });
mkdirSync(join(workspace, '.vscode'), { recursive: true });
writeFileSync(
  join(workspace, '.vscode', 'launch.json'),
  JSON.stringify({
    version: '0.2.0',
    configurations: [{ type: 'aspace-gpu', request: 'launch', name: '4,000 waves', state: dump, pythonPath: python }],
  }),
);


let server;
const log = join(root, 'code-server.log');

async function main() {
  const port = await serverPort();
  server = await startCodeServer({ codeServer: codeServerCommand(), vsix, port, root, folder: workspace, log });
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench');
    await sleep(3000);
    await runCommand(page, 'View: Show Run and Debug');
    await sleep(1000);
    // the Run and Debug view's start button runs the selected configuration (the only one)
    await page.locator('.start-debug-action-item .codicon-debug-start, .debug-start-action').first().click();
    const laneItem = page.locator('.statusbar-item', { hasText: /Lane \d+\/\d+/ }).first();
    await laneItem.waitFor({ timeout: 90000 });
    for (const title of ['Watch', 'Breakpoints', 'Loaded Scripts', 'GPU Lanes', 'Variables']) {
      await setPaneExpanded(page, title, false).catch(() => {});
    }

    // the first group: the 3 waves stopped at line 30, before the 3,997 others
    await setPaneExpanded(page, 'GPU Waves', true);
    const waves = pane(page, 'GPU Waves');
    const first = waves.locator('.monaco-list-row').first();
    await first.waitFor({ timeout: 60000 });
    const firstText = (await first.textContent()).trim();
    if (!firstText.startsWith(ODD_GROUP) || !firstText.includes(ODD_RANGE)) {
      throw new Error(`the first GPU Waves row is "${firstText}", not "${ODD_GROUP} … ${ODD_RANGE}"`);
    }

    // choosing one of them
    await first.click(); // unfold the group
    const chosen = waves.locator('.monaco-list-row', { hasText: new RegExp(`^Wave ${CHOSEN}\\b`) }).first();
    await chosen.waitFor({ timeout: 30000 });
    await chosen.click();

    // the Call Stack selects a frame at line 30 of the chosen wave's thread (the nearest thread row above it);
    // or, where VS Code's Call Stack lost its selection (its race when the focus moves while it redraws, see
    // editors.mjs), no row, and Variables below prove VS Code's focus
    const selection = () => page.evaluate(() => {
      const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')];
      const at = rows.findIndex((r) => r.classList.contains('selected') || r.classList.contains('focused'));
      const owner = rows.slice(0, at + 1).reverse().find((r) => r.getAttribute('aria-level') === '1');
      return [owner?.textContent ?? '', at >= 0 ? rows[at].textContent : ''];
    });
    const selectedWhat = 'the Call Stack does not select the chosen wave\'s frame at line 30';
    let unselected = false;
    const callStack = await untilValue(selectedWhat, async () => {
      const [thread, frame] = await selection();
      const value = `thread "${thread}", frame "${frame}"`;
      return { ok: thread.includes(`Wave 0:?:0:${CHOSEN} `) && /lds_tiles\.hip\s*30:/.test(frame), value };
    }, 30).catch(async (error) => {
      const [thread, frame] = await selection();
      if (thread !== '' || frame !== '') throw error;
      unselected = true;
      return 'without a selected row';
    });
    // the editor follows: its cursor is on line 30
    const cursor = page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+$/ }).first();
    await untilValue('the editor is not at line 30', async () => {
      const where = ((await cursor.textContent()) ?? '').trim();
      return { ok: /^Ln 30,/.test(where), value: where };
    });
    // Variables: the locals in scope at line 30 (row_sum and k live only in the row-sum loop;
    // the other waves' line has neither)
    await setPaneExpanded(page, 'Variables', true);
    const variables = pane(page, 'Variables');
    const locals = variables.locator('.monaco-list-row', { hasText: /^Locals/ }).first();
    await locals.waitFor({ timeout: 30000 });
    if ((await locals.getAttribute('aria-expanded')) === 'false') await locals.click();
    await untilValue('Variables shows no row_sum and k', async () => {
      const names = (await variables.locator('.monaco-list-row .name').allTextContents()).map((n) => n.replace(/\s*=$/, ''));
      return { ok: names.includes('row_sum') && names.includes('k'), value: names.join(', ') };
    });
    if (unselected) {
      // wave 3998 is the third of its workgroup (4 waves each, in order)
      const lane = Number(/Lane (\d+)\//.exec((await laneItem.textContent()) ?? '')?.[1]);
      const expected = ldsTilesItem(CHOSEN % 4, lane);
      const shown = await untilValue(`Variables do not show wave ${CHOSEN} lane ${lane}`, async () => {
        const values = await paneValues(page, 'Variables');
        const value = `lane ${lane}: tx = ${values.tx}, ty = ${values.ty}`;
        return { ok: values.tx === expected.tx && values.ty === expected.ty, value };
      });
      console.log(`note choosing wave ${CHOSEN}: the Call Stack lost its selection (Variables show ${shown})`);
    }
    // the lane status-bar item's hover names the focused wave
    await laneItem.hover();
    const hover = await untilValue('the lane status-bar item does not name the wave', async () => {
      const text = (await page.locator('.workbench-hover, .monaco-hover').allTextContents()).join(' ');
      return { ok: text.includes(`AMDGPU Wave 0:?:0:${CHOSEN} `), value: text || '(no hover)' };
    });
    await page.mouse.move(700, 450);
    // GPU Waves marks the chosen wave as the focus
    const marked = ((await waves.locator('.monaco-list-row', { hasText: '◀ focus' }).first().textContent()) ?? '').trim();
    if (!marked.startsWith(`Wave ${CHOSEN}`)) throw new Error(`GPU Waves marks "${marked}" as the focus`);

    // Find Lanes Where…: the search on top of GPU Waves; choosing a lane focuses its wave and lane
    await runCommand(page, 'GPU Debug: Find Lanes Where…');
    const question = page.locator('.quick-input-widget input');
    await question.waitFor({ timeout: 10000 });
    await question.fill(SEARCH);
    await page.keyboard.press('Enter');
    const header = await untilValue(`GPU Waves shows no "${FOUND}" row`, async () => {
      const text = ((await waves.locator('.monaco-list-row').first().textContent()) ?? '').trim();
      return { ok: text.startsWith(FOUND) && text.includes(FOUND_COUNTS), value: text };
    });
    const foundLane = waves.locator('.monaco-list-row', { hasText: FOUND_LANE }).first();
    await foundLane.waitFor({ timeout: 30000 });
    await foundLane.click();
    const laneNow = await untilValue(`choosing "${FOUND_LANE}" does not focus lane 1 of wave 3997`, async () => {
      const lane = ((await laneItem.textContent()) ?? '').trim();
      const [thread, frame] = await selection();
      const marked = ((await waves.locator('.monaco-list-row', { hasText: FOUND_LANE }).first().textContent()) ?? '');
      const shown = await paneValues(page, 'Variables');
      const value = `status bar "${lane}", thread "${thread}", frame "${frame}", row "${marked.trim()}", tx = ${shown.tx}, ty = ${shown.ty}`;
      const selected = thread.includes('Wave 0:?:0:3997 ') && /lds_tiles\.hip\s*30:/.test(frame);
      // VS Code's Call Stack can lose its selection when the focus moves while it redraws (its own race, see
      // editors.mjs); VS Code's focus is then proven by Variables: wave 3997 is the second of its
      // workgroup, so its lane 1 is work-item 65, (1, 4)
      const noRow = thread === '' && frame === '' && shown.tx === '1' && shown.ty === '4';
      return { ok: /Lane 1\//.test(lane) && (selected || noRow) && marked.includes('◀ focus'), value };
    });
    if (!laneNow.includes('thread "AMDGPU')) console.log(`note choosing "${FOUND_LANE}": the Call Stack lost its selection (${laneNow})`);

    console.log(`ok   GPU Waves: first row "${firstText}"`);
    console.log(`ok   Find Lanes Where ${SEARCH}: "${header}"; choosing "${FOUND_LANE}": ${laneNow}`);
    console.log(`ok   choosing wave ${CHOSEN} focuses it: Call Stack ${callStack}; Ln 30; row_sum and k in Locals; status bar "${hover.replace(/\s+/g, ' ').trim()}"`);
    if (shots) {
      mkdirSync(shots, { recursive: true });
      await sleep(1000);
      await page.screenshot({ path: join(shots, 'vscode-waves.png') });
      console.log(`wrote ${join(shots, 'vscode-waves.png')}`);
    }
  } catch (error) {
    const where = join(root, 'failed.png');
    await page.screenshot({ path: where }).catch(() => {});
    console.error(`FAIL GPU Waves (window: ${where}; code-server's log: ${log})`);
    throw error;
  } finally {
    await browser.close();
  }
}

runHostScript(main, () => server, root);
