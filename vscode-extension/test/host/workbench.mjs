// The workbench gestures and view readers editors.mjs uses: pickers and commands, the Debug Console,
// the Call Stack, Variables and Watch as VS Code draws them, the memory view's bytes. Each gesture is
// retried where a busy workbench can lose it, and each reader polls (`until`).

import { sleep } from '../../scripts/codeServerHost.mjs';

export async function quickPick(page, text, timeout = 30000) {
  const exact = new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  await page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exact }) }).first().click({ timeout });
}

/** Palette or quick open entry; retried while the extension host is still registering contributions. */
export async function pick(page, key, text, entry) {
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

export async function runCommand(page, title) {
  await pick(page, 'F1', `>${title}`, title);
}

/**
 * Evaluates `text` in the Debug Console, from a cleared console, and waits for its answer: the text's own
 * row, then a row after it. Typed again when no answer comes: a busy workbench can lose a keystroke, or
 * switch the console to a session just starting, whose history is empty. (Every command the checks send
 * is one that can run twice.)
 */
export async function repl(page, text) {
  const rows = page.locator('.repl .monaco-list-row');
  for (let attempt = 0; ; attempt++) {
    await page.locator('.part.panel > .title .action-label[aria-label="Clear Console"]').click({ timeout: 5000 });
    await page.locator('.repl-input-wrapper .monaco-editor').click();
    await page.keyboard.type(text);
    await page.keyboard.press('Enter');
    const answered = await until(`the Debug Console answers ${text}`, async () => {
      const shown = (await rows.allTextContents()).map((t) => t.trim());
      const at = shown.lastIndexOf(text);
      return at >= 0 && at < shown.length - 1;
    }, 16).catch(() => false);
    if (answered) break;
    if (attempt >= 2) throw new Error(`the Debug Console did not answer ${text}: ${JSON.stringify(await rows.allTextContents())}`);
  }
  await sleep(300); // what the answer changed (the focus) reaches the views
}

export async function replLast(page) {
  const rows = page.locator('.repl .monaco-list-row');
  return (await rows.last().textContent()).trim();
}

/** Polls `probe` until it returns {ok: true, value}, and answers the value; the error names `what` and the
 *  last value seen (a probe that throws is seen as its error's text). */
export async function untilValue(what, probe, tries = 60) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await probe().catch((e) => ({ ok: false, value: String(e) }));
    if (last?.ok) return last.value;
    await sleep(500);
  }
  throw new Error(`${what}: ${last?.value ?? 'nothing'}`);
}

export async function until(what, probe, tries = 60) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await probe().catch(() => undefined);
    if (last) return last;
    await sleep(500);
  }
  throw new Error(`timed out: ${what}`);
}

export async function stopDebugging(page) {
  await runCommand(page, 'Debug: Stop').catch(() => {});
  // ended once the lane's status bar item goes: on a busy machine a stop can take longer than a moment,
  // and a session still stopping can reopen its frame's editor after the next check closed them all
  await until('the debug session ends', async () => (await page.locator('.statusbar-item', { hasText: /Lane \d+\/\d+/ }).count()) === 0, 40)
    .catch(() => {});
  await sleep(500);
}

export async function startConfig(page, name) {
  // quick open's "debug " prefix lists the launch configurations
  await pick(page, 'Control+P', `debug ${name}`, name);
}

export async function showDebugConsole(page) {
  await page.keyboard.press('Control+Shift+Y');
  await page.locator('.repl-input-wrapper').waitFor({ timeout: 10000 });
}

export function pane(page, title) {
  return page.locator('.pane', { has: page.locator('.pane-header', { hasText: title }) });
}

/** The Call Stack's rendered rows, in order, as [aria-level, text, selected, data-index, aria-expanded]. */
export async function callStackRows(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('.debug-call-stack .monaco-list-row')]
      .map((r) => [r.getAttribute('aria-level'), r.textContent, r.classList.contains('selected'), Number(r.dataset.index), r.getAttribute('aria-expanded')])
      .sort((a, b) => a[3] - b[3]));
}

/** Expands wave `wave`'s thread in the Call Stack and clicks its top frame. */
export async function selectTopFrame(page, wave) {
  const name = `Wave 0:?:0:${wave} `;
  const stack = page.locator('.debug-call-stack .monaco-list-row');
  // again from the thread's row when the tree redraws meanwhile (a refresh can collapse the thread or
  // scroll its frame away between finding the row and clicking it)
  for (let attempt = 0; ; attempt++) {
    try {
      await stack.filter({ hasText: name }).first().click({ timeout: 10000 });
      if ((await stack.filter({ hasText: name }).first().getAttribute('aria-expanded')) !== 'true') await page.keyboard.press('ArrowRight');
      let index;
      await until(`wave ${wave} shows its frame`, async () => {
        const rows = await callStackRows(page);
        const at = rows.findIndex(([, text]) => text.includes(name));
        index = rows[at + 1]?.[3];
        return at >= 0 && rows[at + 1]?.[0] === '2';
      });
      await page.locator(`.debug-call-stack .monaco-list-row[data-index="${index}"]`).click({ timeout: 5000 });
      break;
    } catch (error) {
      if (attempt >= 2) throw error;
      // the thread's row may be scrolled out of the Call Stack (its rows are drawn only where seen):
      // back to the top, by the wheel (a click would move the focus)
      const box = await page.locator('.debug-call-stack').first().boundingBox();
      if (box) {
        await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
        await page.mouse.wheel(0, -5000);
        await sleep(500);
      }
    }
  }
  await sleep(1000);
}

/** The `name = value` rows a pane shows (Variables, Watch), by name. */
export async function paneValues(page, title) {
  return pane(page, title).locator('.monaco-list-row').evaluateAll((list) => Object.fromEntries(
    list.map((r) => [r.querySelector('.name')?.textContent.replace(/[:=]\s*$/, '').trim(), r.querySelector('.value')?.textContent.trim()])
      .filter(([name]) => name)));
}

/** tx and ty, as Variables show them, of lane `lane` of the `waveInGroup`-th wave of a workgroup in the
 * lds_tiles examples (16x16 workgroups of 64-lane waves: that lane is work-item 64 * waveInGroup + lane). */
export function ldsTilesItem(waveInGroup, lane) {
  const item = 64 * waveInGroup + lane;
  return { tx: String(item % 16), ty: String(Math.floor(item / 16)) };
}

/** What the debug views show of the stop. */
export async function debugViews(page) {
  const rows = await callStackRows(page);
  const at = rows.findIndex(([, , selected]) => selected);
  const thread = at < 0 ? '' : rows.slice(0, at + 1).reverse().find(([level]) => level === '1')?.[1] ?? '';
  const toolbar = await page.evaluate(() => {
    const shown = (icon) => [...document.querySelectorAll(`.debug-toolbar .codicon-${icon}, .part.sidebar > .title .codicon-${icon}`)]
      .filter((e) => e.offsetParent !== null).length;
    return { continue: shown('debug-continue'), pause: shown('debug-pause') };
  });
  // "Running" shows on a thread's row, or in the Call Stack's header for the focused thread (a
  // hidden state message keeps its last text)
  const header = (await pane(page, 'Call Stack').locator('.pane-header .call-stack-state-message:not([hidden])').allTextContents()).join(' ');
  return {
    thread, frame: at < 0 ? '' : rows[at][1],
    running: [header, ...rows.map(([, text]) => text)].filter((text) => /Running/.test(text)),
    toolbar, variables: await paneValues(page, 'Variables'), watch: await paneValues(page, 'Watch'),
  };
}

/** The Call Stack's selected row is a frame of wave `wave` ('selected'), or no row is selected
 * ('none': VS Code's CallStackView drops the selection when the focus lands while a refresh of the
 * tree is still under way, which a loaded machine makes likely after a stop), or neither (false). */
export function callStackSelection(seen, wave, frame = /./) {
  if (seen.thread.includes(`Wave 0:?:0:${wave} `) && frame.test(seen.frame)) return 'selected';
  return seen.thread === '' && seen.frame === '' ? 'none' : false;
}

/** VS Code shows wave `wave` stopped at lane `lane` (lds_tiles): Call Stack, toolbar, Variables, Watch. */
export async function assertStopped(page, what, wave, lane) {
  const { tx, ty } = ldsTilesItem(wave, lane); // (the dump's waves 0-3 are one workgroup's)
  let seen;
  try {
    await until(what, async () => {
      seen = await debugViews(page);
      // tx and ty name the wave and the lane: Variables and Watch read VS Code's focused frame,
      // whether or not the Call Stack kept its selection; a row of another wave is a failure
      return callStackSelection(seen, wave, /transpose_tiles/) && seen.running.length === 0
        && seen.toolbar.continue > 0 && seen.toolbar.pause === 0
        && seen.variables.tx === tx && seen.variables.ty === ty && seen.watch.ty === ty;
    }, 30);
  } catch {
    throw new Error(`${what}: VS Code does not show wave ${wave} lane ${lane} stopped (tx = ${tx}, ty = ${ty}): ${JSON.stringify(seen)}`);
  }
  if (seen.thread === '') console.log(`note ${what}: the Call Stack lost its selection (VS Code's focus is right: tx = ${tx}, ty = ${ty})`);
}

/** Who owns each of the 16 bytes from `address` in the memory view (`frame`), whatever its row width. */
export async function bytesOwners(frame, address) {
  return frame.locator('table.mem').evaluate((table, a) => {
    const out = [];
    for (const tr of table.querySelectorAll('tr:not(.names)')) {
      const start = Number(tr.querySelector('th').textContent);
      tr.querySelectorAll('td:not(.ascii):not(.typed)').forEach((td, i) => {
        if (start + i >= a && start + i < a + 16 && td.title) out.push(td.title.split(' ')[0]);
      });
    }
    return out;
  }, address);
}

/** The Call Stack's badge beside wave `wave`'s thread ("Breakpoint", "Exception", "Paused"). */
export async function threadBadge(page, wave, name = 'Wave 0:?:0:') {
  const row = page.locator('.debug-call-stack .monaco-list-row[aria-level="1"]', { hasText: `${name}${wave} ` }).first();
  return ((await row.locator('.state').textContent()) ?? '').trim();
}

/** Quick Open a file of the workspace by name. */
export async function openFile(page, name) {
  await pick(page, 'Control+P', name, name);
}

/** Resizes the window so that the memory view's editor group (the one without the `source` tab,
 * beside it) is `width` px wide (VS Code keeps the groups' proportions). */
export async function memoryGroupWidth(page, width, source) {
  const group = page.locator('.editor-group-container', { hasNot: page.locator('.tab', { hasText: source }) }).first();
  for (let i = 0; i < 3; i++) {
    const now = (await group.boundingBox()).width;
    if (Math.abs(now - width) < 8) return now;
    const viewport = page.viewportSize();
    const groups = await page.locator('.editor-group-container').count();
    await page.setViewportSize({ width: Math.round(viewport.width - groups * (now - width)), height: viewport.height });
    await sleep(1000);
  }
  return (await group.boundingBox()).width;
}

export async function laneInStatusBar(page) {
  const text = await page.locator('.statusbar-item', { hasText: /Lane \d+\/\d+/ }).first().textContent();
  return Number(/Lane (\d+)\//.exec(text)[1]);
}
