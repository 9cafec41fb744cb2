#!/usr/bin/env node
// VS Code's exception widget on GPU faults, in a real VS Code extension host (code-server driven by
// headless Chromium) with the packaged extension and the real server. For each vendor's fault example
// (examples/fault: a store through a bad pointer), written as that vendor's core with the same code as
// tests/test_exceptions.py, the debug session must stop on an exception and the widget under the
// stopped line must show the exception in the vendor's debugger's words and the details:
//
//   CUDA core   Exception has occurred: CUDA_EXCEPTION_14   CUDA Exception: Warp Illegal Address ...
//               triggered at PC 0x2b0 in scatter (fault.cu:9); Faulting instruction: 0x2b0 ...;
//               each lane's address: 32 lanes: 0x7f1000000000 + 0x400000·lane, lanes 1-31 outside the core
//   CUDA production lightweight core (examples/production, -lineinfo -O3): the Call Stack shows the
//               inline chain where the lanes stand (copy_row <- copy_tile <- scatter_rows), the widget
//               the faulting STG.E and its lanes' addresses, not checked: the core skipped global memory
//   ROCm core   Exception has occurred: SIGSEGV   Memory violation (MEMORY_VIOLATION) ...
//               Raised by 128 lanes in 2 waves (waves 0-1)
//
// The ROCm core's two waves both raised it, so both carry the "Exception" badge, and the badge of the
// wave without the focus must take nothing from the focus: with the Variables view collapsed (VS Code
// then asks nothing of the selected frame), the Call Stack selects the focused wave's top frame and
// GPU Lanes names that wave, after the stop and after `wave 1`; a lane chosen in GPU Lanes stays in
// the focused wave; both waves keep "Exception".
//
//   PYTHON=/abs/.venv/bin/python [CODE_SERVER=...] [PLAYWRIGHT=...] [CHROMIUM=/usr/bin/chromium] \
//   [SHOTS=../docs] node test/host/exceptions.mjs
//
// CODE_SERVER and PLAYWRIGHT default to test/host's own install (`make host-deps`). With SHOTS it
// writes SHOTS/vscode-exception.png (the CUDA core) and SHOTS/vscode-production-crash.png (the production
// lightweight core), the README's screenshots.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chromiumPath, codeServerCommand, need as needIn, playwrightChromium, runCommand, runHostScript, serverPort,
  setPaneExpanded, sleep, startCodeServer,
} from '../../scripts/codeServerHost.mjs';
import { pane, untilValue } from './workbench.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const extensionDir = resolve(here, '..', '..');
const repo = resolve(extensionDir, '..');

const python = needIn('PYTHON', 'test/host/exceptions.mjs');
const chromium = playwrightChromium();
const shots = process.env.SHOTS ? resolve(process.env.SHOTS) : undefined;
const vsix = join(extensionDir, 'aspace-gpu.vsix');

// what each configuration's widget must show (tests/test_exceptions.py checks the same over DAP)
const CASES = [
  {
    name: 'CUDA fault core',
    core: 'fault.cudacore',
    title: 'Exception has occurred: CUDA_EXCEPTION_14',
    texts: ['CUDA Exception: Warp Illegal Address', 'triggered at PC 0x2b0 in scatter (fault.cu:9)',
      'Faulting instruction: 0x2b0', 'Raised by 1 lane in 1 warp (warp 0)',
      // each lane's address at the faulting ST.E, from the core's R2:R3 (tests/test_lane_addresses.py)
      'Addresses of desc[UR4][R2.64] (generic, 4 bytes a lane), 32 lanes (0-31):',
      '32 lanes: 0x7f1000000000 + 0x400000·lane', 'Outside every region the core holds: 31 lanes (1-31)'],
    line: 10,
    shot: 'vscode-exception.png',
  },
  {
    // a production build's lightweight core (examples/production: -lineinfo -O3, six inline levels;
    // CUDA_COREDUMP_GENERATION_FLAGS as the vLLM posts set it): no global memory, no variables
    name: 'CUDA production lightweight core',
    core: 'scatter_rows.sm_90.light.cudacore',
    title: 'Exception has occurred: CUDA_EXCEPTION_14',
    texts: ['Faulting instruction: 0x1f0', 'STG.E desc[UR6][R6.64], R3 (store.cuh:11)',
      // the faulting instruction's six inline levels, as nvdisasm -gi lists them above it
      'Inlined there, innermost first:', 'prod::epilogue::store_value<float> (store.cuh:11)',
      'prod::epilogue::store_scaled<float> (store.cuh:17)', 'prod::scatter_one<float, 64> (scatter_rows.cu:15)',
      'prod::copy_row<float, 64> (scatter_rows.cu:23)', 'prod::scatter_rows<float, 64> (scatter_rows.cu:36)',
      'The lanes stand at 0x200, past the faulting instruction',
      'Addresses of desc[UR6][R6.64] (global, 4 bytes a lane), 32 lanes (0-31):',
      '32 lanes: 0x7f2100000000 + 4·lane',
      'Not checked against memory: the core skipped global memory (skip_global_memory)'],
    line: 22,
    // where the lanes stand (0x200), the whole inline chain: nvdisasm -gi's rows there
    stack: [/prod::copy_row<float, 64>.*scatter_rows\.cu.*22/, /prod::copy_tile<float, 64>.*scatter_rows\.cu.*30/,
      /prod::scatter_rows<float, 64>.*scatter_rows\.cu.*36/],
    shot: 'vscode-production-crash.png',
    hidePanel: true,
  },
  {
    name: 'ROCm fault core',
    core: 'gpucore.4242',
    title: 'Exception has occurred: SIGSEGV',
    texts: ['Memory violation (MEMORY_VIOLATION)', 'Raised by 128 lanes in 2 waves (waves 0-1)',
      '64 lanes: 0x7f0000100000 + 0x400000·lane'],
    line: 10,
    raisedBy: [0, 1], // its waves that raised the exception: the focus starts on wave 0
  },
];

// ---- a throw-away workspace: the cores, the sources beside them, a launch configuration each ----

const root = mkdtempSync(join(tmpdir(), 'aspace-exceptions-'));
const workspace = join(root, 'aspace-dap');
mkdirSync(workspace, { recursive: true });
for (const source of ['fault.cu', 'fault.hip']) {
  cpSync(join(repo, 'examples', 'fault', source), join(workspace, source));
}
// the production cubin's line table names ./scatter_rows.cu, ./layout.cuh, ./store.cuh
for (const source of ['scatter_rows.cu', 'layout.cuh', 'store.cuh']) {
  cpSync(join(repo, 'examples', 'production', source), join(workspace, source));
}
cpSync(join(repo, 'examples', 'production', 'cores', 'scatter_rows.sm_90.light.cudacore'),
  join(workspace, 'scatter_rows.sm_90.light.cudacore'));
// the HIP code object's DWARF names examples/fault/fault.hip: found by its trailing components
cpSync(join(repo, 'examples', 'fault', 'fault.hip'), join(workspace, 'examples', 'fault', 'fault.hip'));
const BUILD_CORES = `
import sys
from pathlib import Path
sys.path[:0] = ["tests"]
import test_exceptions as t
out = Path(sys.argv[1])
t._cuda_core(out)
t._rocm_core(out)
`;
execFileSync(python, ['-c', BUILD_CORES, workspace], { cwd: repo, stdio: 'inherit' });
mkdirSync(join(workspace, '.vscode'), { recursive: true });
writeFileSync(
  join(workspace, '.vscode', 'launch.json'),
  JSON.stringify({
    version: '0.2.0',
    configurations: CASES.map((c) => ({
      type: 'aspace-gpu', request: 'launch', name: c.name, state: join(workspace, c.core), pythonPath: python,
    })),
  }),
);


let server;
const log = join(root, 'code-server.log');

/** The Call Stack as VS Code shows it: each thread's badge, and the selected frame with its thread. */
async function callStack(page) {
  return page.evaluate(() => {
    const rows = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')]
      .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index));
    const badges = {};
    let thread = '';
    let selected;
    for (const row of rows) {
      const text = row.textContent.replace(/\s+/g, ' ').trim();
      if (row.getAttribute('aria-level') === '1') {
        thread = text;
        const wave = / Wave [\d?]+:[\d?]+:[\d?]+:(\d+) /.exec(` ${text} `)?.[1];  // agent:queue:dispatch:wave
        if (wave !== undefined) badges[wave] = (row.querySelector('.state')?.textContent ?? '').trim().toLowerCase();
      } else if (row.classList.contains('selected')) {
        selected = { thread, frame: text };
      }
    }
    return { badges, selected };
  });
}

/** The focus is wave `wave`'s top frame, in the Call Stack and in GPU Lanes; `raised` keep "Exception". */
async function assertFocus(page, what, wave, raised, lane) {
  let seen;
  let tries = 0;
  await untilValue(what, async () => {
    tries += 1;
    const stack = await callStack(page);
    const lanes = ((await pane(page, 'GPU Lanes').locator('.pane-header').textContent()) ?? '').replace(/\s+/g, ' ');
    const focusLane = ((await pane(page, 'GPU Lanes').locator('.monaco-list-row', { hasText: '◀ focus' }).first()
      .textContent({ timeout: 1000 }).catch(() => '')) ?? '').replace(/\s+/g, ' ');
    seen = { ...stack, lanes, focusLane };
    const named = (text) => new RegExp(` Wave [\\d?]+:[\\d?]+:[\\d?]+:${wave} `).test(` ${text} `);
    // a selected row must be the wave's top frame; none, after 10 s, is VS Code's doing (its Call Stack
    // drops the selection when the focus lands during a refresh of the tree)
    const ok = (stack.selected === undefined ? tries > 20 : named(stack.selected.thread) && /^scatter/.test(stack.selected.frame))
      && named(lanes)
      && (lane === undefined || new RegExp(`^Lane ${lane}(?!\\d)`).test(focusLane.trim()))
      && raised.every((w) => stack.badges[w] === 'exception');
    return { ok, value: JSON.stringify(seen) };
  }, 40);
  if (seen.selected === undefined) console.log(`note ${what}: the Call Stack lost its selection (GPU Lanes: ${seen.lanes})`);
}

/** Click Lane `lane` in GPU Lanes until it is the focus lane: a click that lands while the list redraws
 * for a new wave is lost, as a user's would be, and the user clicks again. */
async function chooseLane(page, c, lane) {
  const row = () => pane(page, 'GPU Lanes').locator('.monaco-list-row', { hasText: new RegExp(`^Lane ${lane}(?!\\d)`) }).first();
  const focusLane = async () => ((await pane(page, 'GPU Lanes').locator('.monaco-list-row', { hasText: '◀ focus' })
    .first().textContent({ timeout: 1000 }).catch(() => '')) ?? '').replace(/\s+/g, ' ').trim();
  // a lane row's hover (its work-item), opened where the last click left the mouse, can lie over the next
  // row and stays open while the mouse is on it: the mouse leaves the list before each click
  const click = async () => {
    await page.mouse.move(0, 0);
    await sleep(300);
    await row().click({ timeout: 5000 }).catch(() => {});
  };
  await click();
  await untilValue(`${c.name}: Lane ${lane} chosen in GPU Lanes is not the focus lane`, async () => {
    const now = await focusLane();
    const ok = new RegExp(`^Lane ${lane}(?!\\d)`).test(now);
    if (!ok) await click();
    return { ok, value: now || '(no focus lane)' };
  }, 20);
}

/** The stop's badge on a wave without the focus takes nothing from the focus (see the header). */
async function checkFocusStays(page, c) {
  const [first, other] = c.raisedBy;
  await assertFocus(page, `${c.name}: after the stop, wave ${first}'s top frame is not the focus`, first, c.raisedBy);
  await setPaneExpanded(page, 'GPU Lanes', true);
  await chooseLane(page, c, 3);
  await assertFocus(page, `${c.name}: Lane 3 chosen in GPU Lanes leaves wave ${first}`, first, c.raisedBy, 3);
  await page.keyboard.press('Control+Shift+Y');
  await page.locator('.repl-input-wrapper').waitFor({ timeout: 10000 });
  await page.locator('.repl-input-wrapper .monaco-editor').click();
  await page.keyboard.type(`wave ${other}`);
  await page.keyboard.press('Enter');
  await assertFocus(page, `${c.name}: after \`wave ${other}\`, wave ${other}'s top frame is not the focus`, other, c.raisedBy);
  await chooseLane(page, c, 5);
  await assertFocus(page, `${c.name}: Lane 5 chosen in GPU Lanes leaves wave ${other}`, other, c.raisedBy, 5);
  console.log(`ok   ${c.name}: the focus stays on the focused wave's frame (waves ${c.raisedBy.join(', ')} keep Exception)`);
}

async function check(page, c) {
  await runCommand(page, 'View: Show Run and Debug');
  await sleep(1000);
  // VS Code asks for the selected frame's scopes only while Variables is open
  if (c.raisedBy) {
    // (the start button's hover can stand over the header: the click goes to the header itself)
    const header = page.locator('.pane-header', { hasText: 'Variables' }).first();
    if ((await header.getAttribute('aria-expanded')) === 'true') await header.dispatchEvent('click');
  }
  // pick the configuration in the Run and Debug view's drop-down, then start it
  const select = page.locator('.debug-configuration select, .start-debug-action-item select').first();
  await select.selectOption({ label: c.name });
  await page.locator('.start-debug-action-item .codicon-debug-start, .debug-start-action').first().click();
  const widget = page.locator('.exception-widget').first();
  const text = await untilValue(`${c.name}: no exception widget with "${c.title}"`, async () => {
    const shown = ((await widget.textContent({ timeout: 1000 })) ?? '').replace(/\s+/g, ' ');
    return { ok: shown.includes(c.title) && c.texts.every((t) => shown.includes(t)), value: shown || '(none)' };
  }, 120);
  // the editor stands on the stopped line
  const cursor = page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+$/ }).first();
  await untilValue(`${c.name}: the editor is not at line ${c.line}`, async () => {
    const where = ((await cursor.textContent()) ?? '').trim();
    return { ok: where.startsWith(`Ln ${c.line},`), value: where };
  });
  if (c.stack) {
    // the stopped thread's frames, in order, each row its function, file and line
    const rows = page.locator('.debug-call-stack .monaco-list-row');
    await untilValue(`${c.name}: the Call Stack does not show ${c.stack.join(', ')}`, async () => {
      const shown = (await rows.allTextContents()).map((t) => t.replace(/\s+/g, ' '));
      let at = 0;
      for (const want of c.stack) {
        at = shown.findIndex((row, i) => i >= at && want.test(row));
        if (at < 0) return { ok: false, value: shown.join(' | ') };
        at += 1;
      }
      return { ok: true, value: shown.join(' | ') };
    });
  }
  console.log(`ok   ${c.name}: ${text.slice(0, 160)}…`);
  if (c.raisedBy) await checkFocusStays(page, c);
  if (shots && c.shot) {
    mkdirSync(shots, { recursive: true });
    if (c.hidePanel) await runCommand(page, 'View: Hide Panel'); // the whole widget in the picture
    await page.mouse.move(900, 700); // no hover over the toolbar in the picture
    await sleep(1000);
    await page.screenshot({ path: join(shots, c.shot) });
    console.log(`wrote ${join(shots, c.shot)}`);
  }
  await page.keyboard.press('Shift+F5'); // stop the session
  await untilValue(`${c.name}: the session does not end`, async () => {
    const widgets = await page.locator('.exception-widget').count();
    return { ok: widgets === 0, value: `${widgets} widgets` };
  });
}

async function main() {
  const port = await serverPort();
  server = await startCodeServer({ codeServer: codeServerCommand(), vsix, port, root, folder: workspace, log });
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench');
    await sleep(3000);
    for (const c of CASES) await check(page, c);
  } catch (error) {
    const where = join(root, 'failed.png');
    await page.screenshot({ path: where }).catch(() => {});
    console.error(`FAIL exception widget (window: ${where}; code-server's log: ${log})`);
    throw error;
  } finally {
    await browser.close();
  }
}

runHostScript(main, () => server, root);
