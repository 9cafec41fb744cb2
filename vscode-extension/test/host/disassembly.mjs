#!/usr/bin/env node
// VS Code's Disassembly View in a real extension host (code-server driven by headless Chromium), with
// the packaged extension and the real server, on two examples that stop inside a device function:
// AMD divergent_call (clang-19, gfx90a -O0) and CUDA divergent_call (sm_90 -G). For each, "Open
// Disassembly View" from the Call Stack's top frame must open the view with the stopped instruction
// marked (VS Code's current-instruction icon on the row at the frame's instructionPointerReference,
// whose text is the vendor's decoding: llvm-objdump, nvdisasm), the source lines interleaved, and
// choosing the caller frame must move the view to its return address. `make test` runs it:
//
//   PYTHON=/abs/.venv/bin/python [CHROMIUM=/usr/bin/chromium] [SHOTS=../docs] node test/host/disassembly.mjs
//
// With SHOTS it writes SHOTS/vscode-disassembly.png (the AMD example), the README's screenshot.

import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  casesWithTools, chromiumPath, codeServerCommand, runHostScript, need as needIn, playwrightChromium, runCommand,
  serverPort, sleep, setPaneExpanded, startCodeServer,
} from '../../scripts/codeServerHost.mjs';

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

const root = mkdtempSync(join(tmpdir(), 'aspace-disasm-'));
const workspace = join(root, 'workspace');
mkdirSync(join(workspace, '.vscode'), { recursive: true });
// the workspace holds the examples' sources, as a user's project holds theirs: the server reads sources only
// where the user opened something (the workspace it runs in, the dump's folder)
for (const folder of ['examples/divergent_call', 'examples/cuda']) {
  cpSync(join(repo, folder), join(workspace, folder), {
    recursive: true, filter: (from) => !/[\\/](dumps|real)$/.test(from) && !/\.(co|o|cubin|bin)$/.test(from),
  });
}
// nvcc's line table names divergent_call.cu bare: it is looked for in the folder the server runs in
cpSync(join(repo, 'examples/cuda/divergent_call.cu'), join(workspace, 'divergent_call.cu'));
writeFileSync(
  join(workspace, '.vscode', 'launch.json'),
  JSON.stringify({
    version: '0.2.0',
    configurations: CASES.map((c) => ({
      type: 'aspace-gpu', request: 'launch', name: c.name, state: join(repo, c.dump), pythonPath: python,
    })),
  }),
);

/** Polls `probe` until it returns {ok: true}; the error names `what` and the last value seen. */
async function until(what, probe, tries = 60) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await probe().catch((e) => ({ ok: false, value: String(e) }));
    if (last?.ok) return last.value;
    await sleep(500);
  }
  throw new Error(`${what}: ${last?.value ?? 'nothing'}`);
}

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

/** Right-click a Call Stack frame and choose "Open Disassembly View". */
async function openFromCallStack(page, frameName) {
  const frame = page.locator('.debug-call-stack .monaco-list-row', { hasText: new RegExp(`^${frameName}`) }).first();
  await frame.waitFor({ timeout: 30000 });
  // on a loaded machine the menu's click can land while the Call Stack redraws: the menu stays open
  for (let attempt = 0; ; attempt++) {
    await frame.click({ button: 'right' });
    await page.locator('.context-view .action-label', { hasText: 'Open Disassembly View' }).first().click({ timeout: 10000 });
    try {
      await page.locator('.disassembly-view').first().waitFor({ timeout: 10000 });
      return;
    } catch (error) {
      await page.keyboard.press('Escape');
      if (attempt >= 2) throw error;
    }
  }
}

async function check(page, c) {
  await startSession(page, c.name);
  await setPaneExpanded(page, 'Call Stack', true).catch(() => {});
  await openFromCallStack(page, 'settle');
  // the stopped instruction: its row carries the current-instruction icon and the vendor's text
  const marked = await until(`${c.name}: no row at ${c.pc} marked as the current instruction`, async () => {
    const rows = await disassemblyRows(page);
    const row = rows.find((r) => at(r, c.pc));
    return { ok: !!row && (row.current || row.focused) && row.text.includes(c.text), value: JSON.stringify(row ?? rows.slice(0, 3)) };
  });
  // the source interleaved: the stop's line is shown above its instructions
  await until(`${c.name}: the source line "${c.source}" is not interleaved`, async () => {
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
  const caller = await until(`${c.name}: choosing the caller frame does not mark ${c.ret}`, async () => {
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
