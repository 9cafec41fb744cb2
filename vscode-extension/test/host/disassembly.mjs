#!/usr/bin/env node
// VS Code's Disassembly View in a real extension host (code-server driven by headless Chromium), with
// the packaged extension and the real server, on two examples that stop inside a device function:
// AMD divergent_call (clang-19, gfx90a -O0) and CUDA divergent_call (sm_90 -G). For each, "Open
// Disassembly View" from the Call Stack's top frame must open the view with the stopped instruction
// marked (VS Code's current-instruction icon on the row at the frame's instructionPointerReference,
// whose text is the vendor's decoding: llvm-objdump, nvdisasm), the source lines interleaved, and
// choosing the caller frame must move the view to its return address.
//
// In the same session, a CUDA fault core whose source (fault.cu, which nvcc's line table names bare) is
// nowhere the server looks: the stop must still show. The exception widget stands under the frame's
// line of the document the server gives for the missing file, with the exception in cuda-gdb's words;
// the Debug Console names every place looked at and the sourceMap entry that would find the file; the
// Disassembly View opened from that frame marks the frame's instruction. `make test` runs it:
//
//   PYTHON=/abs/.venv/bin/python [CHROMIUM=/usr/bin/chromium] [SHOTS=../docs] node test/host/disassembly.mjs
//
// With SHOTS it writes SHOTS/vscode-disassembly.png (the AMD example), the README's screenshot.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  casesWithTools, chromiumPath, codeServerCommand, runHostScript, need as needIn, playwrightChromium, runCommand,
  serverPort, sleep, setPaneExpanded, startCodeServer,
} from '../../scripts/codeServerHost.mjs';
import { untilValue } from './workbench.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const extensionDir = resolve(here, '..', '..');
const repo = resolve(extensionDir, '..');

const python = needIn('PYTHON', 'test/host/disassembly.mjs');
const shots = process.env.SHOTS ? resolve(process.env.SHOTS) : undefined;
const vsix = join(extensionDir, 'aspace-gpu.vsix');

// The stops (tests/test_disassembly.py checks the same rows against the tools): the PC, its instruction
// as the vendor's tool prints it, the caller's return address and the call before it. A case whose
// vendor's tool is missing here is skipped, saying what provides it (casesWithTools).
const CASES = casesWithTools([
  {
    name: 'AMD divergent_call', vendor: 'amd', dump: 'examples/divergent_call/dumps/clang19.gfx90a.O0', pc: '0x3bfc',
    text: 'v_accvgpr_read_b32 v0, a7', source: 'acc = acc * 0.5f + (float)(lane + i)', ret: '0x4a18',
    shot: 'vscode-disassembly.png',
  },
  {
    name: 'CUDA divergent_call', vendor: 'nvidia', dump: 'examples/cuda/dumps/divergent_call.sm_90.G', pc: '0x270',
    text: 'MOV R4, R6', source: 'return acc;', ret: '0xe20',
  },
], python, 'test/host/disassembly.mjs');

// A core whose source is not on this machine (tests/test_exceptions.py writes the same core): what must show.
const MISSING = {
  name: 'CUDA fault core without its source', core: 'fault.cudacore', pc: '0x2c0', line: 10,
  title: 'Exception has occurred: CUDA_EXCEPTION_14', texts: ['CUDA Exception: Warp Illegal Address'],
  said: ['source fault.cu not found; looked for it at:', '"sourceMap": {".": "<the folder that holds fault.cu>"}'],
};

const root = mkdtempSync(join(tmpdir(), 'aspace-disasm-'));
const workspace = join(root, 'workspace');
mkdirSync(join(workspace, '.vscode'), { recursive: true });
// the workspace holds the examples' sources, as a user's project holds theirs; the server also looks beside
// the dump and in the folders above it, and where a sourceMap says
for (const folder of ['examples/divergent_call', 'examples/cuda']) {
  cpSync(join(repo, folder), join(workspace, folder), {
    recursive: true, filter: (from) => !/[\\/](dumps|real)$/.test(from) && !/\.(co|o|cubin|bin)$/.test(from),
  });
}
// nvcc's line table names divergent_call.cu bare: it is looked for in the folder the server runs in
cpSync(join(repo, 'examples/cuda/divergent_call.cu'), join(workspace, 'divergent_call.cu'));
// the fault core in a folder of its own, beside no fault.cu (nor is one in the workspace or above the core)
const cores = join(root, 'cores');
const BUILD_CORE = `
import sys
from pathlib import Path
sys.path[:0] = ["tests"]
import test_exceptions as t
t._cuda_core(Path(sys.argv[1]))
`;
mkdirSync(cores, { recursive: true });
execFileSync(python, ['-c', BUILD_CORE, cores], { cwd: repo, stdio: 'inherit' });
writeFileSync(
  join(workspace, '.vscode', 'launch.json'),
  JSON.stringify({
    version: '0.2.0',
    configurations: [
      ...CASES.map((c) => ({
        type: 'aspace-gpu', request: 'launch', name: c.name, state: join(repo, c.dump), pythonPath: python,
      })),
      { type: 'aspace-gpu', request: 'launch', name: MISSING.name, state: join(cores, MISSING.core), pythonPath: python },
    ],
  }),
);


/** The Disassembly View's rows as [{text, current, focused}] (current: VS Code's current-instruction icon). */
async function disassemblyRows(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.disassembly-view .monaco-list-row')].map((row) => ({
      text: row.textContent.replace(/\s+/g, ' ').trim(),
      current: !!row.querySelector('.codicon-debug-stackframe'),
      focused: !!row.querySelector('.codicon-debug-stackframe-focused'),
      icons: [...row.querySelectorAll('[class*="codicon"]')].map((e) => e.className).join(' '),
    })),
  );
}

/** Whether a row is the instruction at `address` (a row may begin with its source line). */
const at = (row, address) => new RegExp(`(^|[^\\w])${address} `).test(row.text);

async function startSession(page, name) {
  await runCommand(page, 'Debug: Select and Start Debugging');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().click({ timeout: 10000 });
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: /divergent/ }).first().waitFor({ timeout: 90000 });
}

/** Right-click a Call Stack frame and choose "Open Disassembly View". VS Code enables it for the frame
 * it has focused; right after a stop the Call Stack can show the top frame selected while no frame is
 * focused yet (the menu item is disabled, or enabled but opening nothing), and a user then clicks the
 * frame: so does this check, and says so. */
async function openFromCallStack(page, frameName) {
  const frame = page.locator('.debug-call-stack .monaco-list-row', { hasText: new RegExp(`^${frameName}`) }).first();
  await frame.waitFor({ timeout: 30000 });
  // on a loaded machine the menu's click can land while the Call Stack redraws: the menu stays open
  for (let attempt = 0; ; attempt++) {
    await frame.click({ button: 'right' });
    const item = page.locator('.context-view .action-item', { hasText: 'Open Disassembly View' }).first();
    const disabled = ((await item.getAttribute('class', { timeout: 10000 }).catch(() => '')) ?? '').includes('disabled');
    if (disabled) {
      await page.keyboard.press('Escape');
      console.log(`note ${frameName}: "Open Disassembly View" disabled (no focused frame yet): the frame is clicked first`);
      await frame.click();
      await sleep(500);
      if (attempt >= 3) throw new Error(`"Open Disassembly View" stays disabled on ${frameName} after it was clicked`);
      continue;
    }
    await item.locator('.action-label').click({ timeout: 10000 });
    try {
      await page.locator('.disassembly-view').first().waitFor({ timeout: 10000 });
      return;
    } catch (error) {
      await page.keyboard.press('Escape');
      if (attempt >= 3) throw error;
      // nothing opened: VS Code's focused frame is not the one shown selected. A user chooses another
      // thread, then the frame again, and runs the command from the palette.
      console.log(`note ${frameName}: "Open Disassembly View" opened nothing: another thread, then the frame, chosen first`);
      await page.locator('.debug-call-stack .monaco-list-row[aria-level="1"]').last().click().catch(() => {});
      await frame.click();
      await sleep(1000);
      await runCommand(page, 'Open Disassembly View').catch(() => {});
      if (await page.locator('.disassembly-view').first().waitFor({ timeout: 10000 }).then(() => true, () => false)) return;
    }
  }
}

async function check(page, c) {
  await startSession(page, c.name);
  await setPaneExpanded(page, 'Call Stack', true).catch(() => {});
  await openFromCallStack(page, 'settle');
  // the stopped instruction: its row carries the current-instruction icon and the vendor's text
  const marked = await untilValue(`${c.name}: no row at ${c.pc} marked as the current instruction`, async () => {
    const rows = await disassemblyRows(page);
    const row = rows.find((r) => at(r, c.pc));
    return { ok: !!row && (row.current || row.focused) && row.text.includes(c.text), value: JSON.stringify(row ?? rows.slice(0, 3)) };
  });
  // the source interleaved: the stop's line is shown above its instructions
  await untilValue(`${c.name}: the source line "${c.source}" is not interleaved`, async () => {
    const rows = await disassemblyRows(page);
    return { ok: rows.some((r) => r.text.includes(c.source)), value: `${rows.length} rows` };
  });
  if (shots && c.shot) {
    mkdirSync(shots, { recursive: true });
    await runCommand(page, 'Notifications: Clear All Notifications').catch(() => {});
    await runCommand(page, 'View: Close Panel').catch(() => {});
    await sleep(1500);
    await page.screenshot({ path: join(shots, c.shot) });
    console.log(`wrote ${join(shots, c.shot)}`);
  }
  // the caller frame: choosing it moves the view to its return address
  await page.locator('.debug-call-stack .monaco-list-row', { hasText: /^divergent/ }).first().click();
  const caller = await untilValue(`${c.name}: choosing the caller frame does not mark ${c.ret}`, async () => {
    const rows = await disassemblyRows(page);
    const row = rows.find((r) => at(r, c.ret));
    return { ok: !!row && (row.focused || row.current), value: JSON.stringify(row ?? rows.slice(0, 2)) };
  });
  console.log(`ok   ${c.name}: Disassembly View marks ${marked}; caller ${caller}`);
  await runCommand(page, 'Debug: Stop');
  await page.locator('.debug-call-stack .monaco-list-row').first().waitFor({ state: 'detached', timeout: 30000 }).catch(() => {});
  await runCommand(page, 'View: Close All Editors').catch(() => {});
  await sleep(1000);
}

/** The missing source: the exception widget, the Debug Console's words, the Disassembly View. */
async function checkMissingSource(page) {
  const c = MISSING;
  await runCommand(page, 'Debug: Select and Start Debugging');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: c.name }).first().click({ timeout: 10000 });
  const widget = page.locator('.exception-widget').first();
  const shown = await untilValue(`${c.name}: no exception widget with "${c.title}"`, async () => {
    const text = ((await widget.textContent({ timeout: 1000 })) ?? '').replace(/\s+/g, ' ');
    return { ok: text.includes(c.title) && c.texts.every((t) => text.includes(t)), value: text || '(none)' };
  }, 120);
  // the widget stands under the frame's own line of the document that says the file is missing
  const cursor = page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+$/ }).first();
  await untilValue(`${c.name}: the editor is not at line ${c.line}`, async () => {
    const where = ((await cursor.textContent()) ?? '').trim();
    return { ok: where.startsWith(`Ln ${c.line},`), value: where };
  });
  const tab = ((await page.locator('.tab.active').first().textContent()) ?? '').trim();
  if (!tab.includes('fault.cu (not found)')) throw new Error(`${c.name}: the editor shows "${tab}", not the missing file's document`);
  // the Debug Console: where the server looked, and the sourceMap entry to add
  await page.keyboard.press('Control+Shift+Y');
  await page.locator('.repl-input-wrapper').waitFor({ timeout: 10000 });
  await runCommand(page, 'View: Toggle Maximized Panel').catch(() => {});
  const places = [join(cores, 'fault.cu'), join(workspace, 'fault.cu')];
  await untilValue(`${c.name}: the Debug Console does not name the places looked at and the sourceMap entry`, async () => {
    const text = ((await page.locator('.repl').first().textContent()) ?? '');
    return { ok: [...c.said, ...places].every((t) => text.includes(t)), value: text.slice(-600) || '(empty)' };
  });
  await runCommand(page, 'View: Toggle Maximized Panel').catch(() => {});
  // the Disassembly View of the frame, once chosen: its instruction marked. VS Code enables "Open
  // Disassembly View" for the focused frame; the other warp's stop (its badge) can take the focus
  // while the Call Stack still shows this frame selected, so the frame is chosen again until it opens.
  for (let attempt = 0; ; attempt++) {
    await page.locator('.debug-call-stack .monaco-list-row', { hasText: /^CUDA kernel .* warp 1 / }).first().click().catch(() => {});
    await page.locator('.debug-call-stack .monaco-list-row', { hasText: /^scatter/ }).first().click();
    await sleep(1000);
    await runCommand(page, 'Open Disassembly View').catch(() => {});
    try {
      await page.locator('.disassembly-view').first().waitFor({ timeout: 5000 });
      break;
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
  await untilValue(`${c.name}: no row at ${c.pc} marked as the current instruction`, async () => {
    const rows = await disassemblyRows(page);
    const row = rows.find((r) => at(r, c.pc));
    return { ok: !!row && (row.current || row.focused), value: JSON.stringify(row ?? rows.slice(0, 3)) };
  });
  console.log(`ok   ${c.name}: ${shown.slice(0, 120)}…; the Debug Console: ${c.said[1]}; ${c.pc} marked`);
  await runCommand(page, 'Debug: Stop');
  await runCommand(page, 'View: Close All Editors').catch(() => {});
}

let server;
const log = join(root, 'code-server.log');

async function main() {
  if (!CASES.length) return; // every case skipped: nothing to start
  const port = await serverPort();
  server = await startCodeServer({ codeServer: codeServerCommand(), vsix, port, root, folder: workspace, log });
  const browser = await playwrightChromium().launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 });
  try {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.waitForSelector('.monaco-workbench');
    await sleep(3000);
    await runCommand(page, 'View: Show Run and Debug');
    for (const c of CASES) await check(page, c);
    await checkMissingSource(page);
  } catch (error) {
    const where = join(root, 'failed.png');
    await page.screenshot({ path: where }).catch(() => {});
    console.error(`FAIL Disassembly View (window: ${where}; code-server's log: ${log})`);
    throw error;
  } finally {
    await browser.close();
  }
}

runHostScript(main, () => server, root);
