// The built-in GPU memory view's page: hex, ASCII and typed columns, and the
// variables of the focused frame coloured over the bytes they occupy.

import { escapeHtml } from './laneValuesHtml';
import type { MemoryPage, PlacedVariable } from './memoryLayout';

export const BYTES_PER_ROW = 16;
/** Bytes per row the view may use, widest first: it takes the widest whose hex, ASCII and typed
 * columns fit the width it has (an editor group beside the source gets ~540 px). */
export const ROW_BYTES_CHOICES: readonly number[] = [16, 8, 4];
export const PAGE_BYTES = 512;

export type TypedFormat = 'auto' | 'i8' | 'u8' | 'i16' | 'u16' | 'i32' | 'u32' | 'x32' | 'f32' | 'i64' | 'u64' | 'x64' | 'f64';
export const TYPED_FORMATS: readonly TypedFormat[] = ['auto', 'i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'x32', 'f32', 'i64', 'u64', 'x64', 'f64'];
type FixedFormat = Exclude<TypedFormat, 'auto'>;
const WIDTH: Record<FixedFormat, number> = { i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4, x32: 4, f32: 4, i64: 8, u64: 8, x64: 8, f64: 8 };

/** The format of a scalar element the server typed from DWARF (kind and size); undefined: shown as bytes. */
export function elementKindFormat(kind: string, size: number): FixedFormat | undefined {
  const by: Record<string, Partial<Record<number, FixedFormat>>> = {
    float: { 4: 'f32', 8: 'f64' },
    signed: { 1: 'i8', 2: 'i16', 4: 'i32', 8: 'i64' },
    unsigned: { 1: 'u8', 2: 'u16', 4: 'u32', 8: 'u64' },
    bool: { 1: 'u8', 2: 'u16', 4: 'u32', 8: 'u64' },
    pointer: { 4: 'x32', 8: 'x64' },
  };
  return by[kind]?.[size];
}

/** Per byte of the page: the typed element starting there (its format and size), or `inside` one
 * that started before, from the elements of the variable owning the byte. */
export type ElementCell = { start: true; format: FixedFormat | undefined; size: number } | { start: false };

export function elementCells(page: MemoryPage, owners: readonly number[], variables: readonly PlacedVariable[]): (ElementCell | undefined)[] {
  const cells = new Array<ElementCell | undefined>(page.bytes.length).fill(undefined);
  variables.forEach((v, i) => {
    for (const e of v.elements ?? []) {
      const from = Number(e.address - page.address);
      for (let k = Math.max(0, from); k < Math.min(page.bytes.length, from + e.size); k++) {
        if (owners[k] !== i) continue;
        cells[k] = k === from ? { start: true, format: elementKindFormat(e.kind, e.size), size: e.size } : { start: false };
      }
    }
  });
  return cells;
}

export interface MemoryViewState {
  title: string;
  memoryReference: string;
  /** Offset of this page from the reference, and the space's size when known. */
  offset: number;
  size?: number;
  page?: MemoryPage;
  variables: PlacedVariable[];
  format: TypedFormat;
  /** Bytes per row (ROW_BYTES_CHOICES; default BYTES_PER_ROW); the page asks for another when its
   * columns do not fit, or twice as many would (message `rowBytes`). */
  rowBytes?: number;
  frameName?: string;
  error?: string;
  hexEditorAvailable: boolean;
  cspSource: string;
  nonce: string;
}

/** The variable (index into `variables`) occupying each byte of the page; the innermost (smallest) wins. */
export function byteOwners(page: MemoryPage, variables: readonly PlacedVariable[]): number[] {
  const owners = new Array<number>(page.bytes.length).fill(-1);
  const order = variables.map((_, i) => i).sort((a, b) => variables[b].size - variables[a].size);
  for (const i of order) {
    const v = variables[i];
    const from = Number(v.address - page.address);
    for (let k = Math.max(0, from); k < Math.min(page.bytes.length, from + v.size); k++) owners[k] = i;
  }
  return owners;
}

/** The element type a variable holds: `float[16][17]` → float. */
function elementFormat(type: string | undefined): FixedFormat {
  const base = (type ?? '').replace(/\[.*$/, '').replace(/\b(const|volatile)\b/g, '').trim();
  if (base.endsWith('*')) return 'x32';
  switch (base) {
    case 'float':
      return 'f32';
    case 'double':
      return 'f64';
    case 'long':
    case 'long long':
    case 'int64_t':
      return 'i64';
    case 'unsigned':
    case 'unsigned int':
    case 'uint32_t':
      return 'u32';
    case 'short':
      return 'i16';
    case 'char':
    case 'signed char':
      return 'i8';
    case 'unsigned char':
    case 'bool':
      return 'u8';
    default:
      return 'i32';
  }
}

function formatTyped(view: DataView, at: number, fmt: FixedFormat): string {
  switch (fmt) {
    case 'i8':
      return String(view.getInt8(at));
    case 'u8':
      return String(view.getUint8(at));
    case 'i16':
      return String(view.getInt16(at, true));
    case 'u16':
      return String(view.getUint16(at, true));
    case 'i32':
      return String(view.getInt32(at, true));
    case 'u32':
      return String(view.getUint32(at, true));
    case 'x32':
      return '0x' + view.getUint32(at, true).toString(16).padStart(8, '0');
    case 'f32':
      return String(Number(view.getFloat32(at, true).toPrecision(7)));
    case 'i64':
      return view.getBigInt64(at, true).toString();
    case 'u64':
      return view.getBigUint64(at, true).toString();
    case 'x64':
      return '0x' + view.getBigUint64(at, true).toString(16).padStart(16, '0');
    case 'f64':
      return String(view.getFloat64(at, true));
  }
}

/** Typed cells of one row: [text, owner] per element; unknown bytes make the element unknown.
 * `auto` shows each element of a variable in its own type when the server listed its elements
 * (`cells`, from elementCells): an element that goes on past the row ends it with `??` and the
 * next row shows `…` for its rest; bytes of a variable that belong to no element (padding, bit
 * fields) are `··`. Without elements the variable's type name decides, as for its array elements. */
export function typedCells(
  page: MemoryPage,
  owners: readonly number[],
  variables: readonly PlacedVariable[],
  rowStart: number,
  format: TypedFormat,
  cells?: readonly (ElementCell | undefined)[],
  rowBytes: number = BYTES_PER_ROW,
): { text: string; owner: number; width: number }[] {
  const view = new DataView(page.bytes.buffer, page.bytes.byteOffset, page.bytes.byteLength);
  const end = Math.min(page.bytes.length, rowStart + rowBytes);
  const out: { text: string; owner: number; width: number }[] = [];
  const whole = (at: number, width: number) => page.valid.slice(at, at + width).every(Boolean);
  let at = rowStart;
  while (at < end) {
    const owner = owners[at];
    const typed = format === 'auto' && owner >= 0 && cells !== undefined && variables[owner].elements !== undefined;
    if (typed) {
      const cell = cells[at];
      if (cell?.start) {
        const width = Math.min(cell.size, end - at);
        const ok = width === cell.size && cell.format !== undefined && whole(at, width);
        out.push({ text: ok ? formatTyped(view, at, cell.format!) : '??', owner, width });
        at += width;
        continue;
      }
      let n = 1;
      while (at + n < end && owners[at + n] === owner && (cell === undefined ? cells[at + n] === undefined : cells[at + n]?.start === false)) n++;
      out.push({ text: cell === undefined ? '··' : '…', owner, width: n });
      at += n;
      continue;
    }
    const fmt = format === 'auto' ? elementFormat(owner >= 0 ? variables[owner].type : undefined) : format;
    const width = Math.min(WIDTH[fmt], end - at);
    out.push({ text: width === WIDTH[fmt] && whole(at, width) ? formatTyped(view, at, fmt) : '??', owner, width });
    at += width;
  }
  return out;
}

function hexAddress(a: bigint): string {
  return '0x' + a.toString(16).padStart(8, '0');
}

function ascii(b: number): string {
  return b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.';
}

/** A page's request for another number of bytes per row: granted unless it grows back into one
 * that overflowed at this width or more. */
export function nextRowBytes(current: number, wanted: unknown, width: unknown, overflowed: Map<number, number>): number {
  if (typeof wanted !== 'number' || !ROW_BYTES_CHOICES.includes(wanted) || typeof width !== 'number') return current;
  if (wanted < current) {
    overflowed.set(current, Math.max(overflowed.get(current) ?? 0, width));
    return wanted;
  }
  const over = overflowed.get(wanted);
  return over !== undefined && width <= over ? current : wanted;
}

/** Where each variable's name goes over the hex columns: at its first byte on the page (`name`),
 * or, for one that began on an earlier page, at its first byte here (`name +offset`). */
export function nameLabels(page: MemoryPage, owners: readonly number[], variables: readonly PlacedVariable[]): Map<number, { owner: number; text: string }> {
  const labels = new Map<number, { owner: number; text: string }>();
  const seen = new Set<number>();
  owners.forEach((o, k) => {
    if (o < 0 || seen.has(o)) return;
    seen.add(o);
    const into = page.address + BigInt(k) - variables[o].address;
    labels.set(k, { owner: o, text: into === 0n ? variables[o].name : `${variables[o].name} +0x${into.toString(16)}` });
  });
  return labels;
}

/** A row of names over the row of bytes below it: each from its variable's byte up to the next name. */
function labelRow(labels: Map<number, { owner: number; text: string }>, variables: readonly PlacedVariable[], row: number, end: number): string | undefined {
  const starts = [...labels.keys()].filter((k) => k >= row && k < end).sort((a, b) => a - b);
  if (starts.length === 0) return undefined;
  const cells: string[] = [];
  if (starts[0] > row) cells.push(`<td colspan="${starts[0] - row}"></td>`);
  starts.forEach((k, i) => {
    const { owner, text } = labels.get(k)!;
    const span = (starts[i + 1] ?? end) - k;
    const v = variables[owner];
    cells.push(`<td class="name t${owner % 8}" colspan="${span}" title="${escapeHtml(`${v.name}: ${v.type}`)}">${escapeHtml(text)}</td>`);
  });
  return `<tr class="names"><th></th>${cells.join('')}<td></td><td></td></tr>`;
}

export function renderMemoryView(s: MemoryViewState): string {
  const rowBytes = s.rowBytes !== undefined && ROW_BYTES_CHOICES.includes(s.rowBytes) ? s.rowBytes : BYTES_PER_ROW;
  const csp =
    `default-src 'none'; style-src ${s.cspSource} 'unsafe-inline'; script-src 'nonce-${s.nonce}';`;
  const parts: string[] = [];
  const nav = [
    `<button data-go="${s.offset - PAGE_BYTES}"${s.offset <= 0 && s.size !== undefined ? ' disabled' : ''}>◀ Previous</button>`,
    `<button data-go="${s.offset + PAGE_BYTES}"${s.size !== undefined && s.offset + PAGE_BYTES >= s.size ? ' disabled' : ''}>Next ▶</button>`,
    `<label>offset <input id="offset" value="0x${Math.max(0, s.offset).toString(16)}" size="10"></label><button id="goto">Go</button>`,
    `<label>typed <select id="format">${TYPED_FORMATS.map((f) => `<option${f === s.format ? ' selected' : ''}>${f}</option>`).join('')}</select></label>`,
    s.hexEditorAvailable ? '<button id="hex">Open in Hex Editor</button>' : '',
  ].join(' ');
  parts.push(`<div class="nav">${nav}</div>`);
  if (s.error !== undefined) {
    parts.push(`<p class="error">${escapeHtml(s.error)}</p>`);
  }
  const page = s.page;
  if (page !== undefined) {
    const owners = byteOwners(page, s.variables);
    const cells = elementCells(page, owners, s.variables);
    const shown = s.variables.filter((_, i) => owners.includes(i));
    parts.push(
      `<p class="legend">${
        shown.length === 0
          ? `No variable of ${escapeHtml(s.frameName ?? 'the focused frame')} with a known place lies in these bytes.`
          : shown
              .map((v) => {
                const i = s.variables.indexOf(v);
                return `<span class="chip v${i % 8}">${escapeHtml(v.name)}</span> <span class="dim">${escapeHtml(v.type)} · ${hexAddress(v.address)}..${hexAddress(v.address + BigInt(v.size))} (${v.size} bytes)</span>`;
              })
              .join('<br>')
      }</p>`,
    );
    const rows: string[] = [];
    const labels = nameLabels(page, owners, s.variables);
    for (let row = 0; row < page.bytes.length; row += rowBytes) {
      const names = labelRow(labels, s.variables, row, Math.min(page.bytes.length, row + rowBytes));
      if (names !== undefined) rows.push(names);
      const hex: string[] = [];
      const text: string[] = [];
      for (let k = row; k < Math.min(page.bytes.length, row + rowBytes); k++) {
        const o = owners[k];
        const cls = `${o >= 0 ? `v${o % 8}` : ''}${page.valid[k] ? '' : ' na'}`.trim();
        const title = o >= 0 ? ` title="${escapeHtml(s.variables[o].name)} +${Number(page.address + BigInt(k) - s.variables[o].address)}"` : page.valid[k] ? '' : ' title="not in the dump"';
        hex.push(`<td class="${cls}"${title}>${page.valid[k] ? page.bytes[k].toString(16).padStart(2, '0') : '??'}</td>`);
        text.push(page.valid[k] ? escapeHtml(ascii(page.bytes[k])) : '·');
      }
      const typed = typedCells(page, owners, s.variables, row, s.format, cells, rowBytes)
        .map((c) => `<span class="${c.owner >= 0 ? `t${c.owner % 8}` : ''}">${escapeHtml(c.text)}</span>`)
        .join(' ');
      rows.push(
        `<tr><th>${hexAddress(page.address + BigInt(row))}</th>${hex.join('')}<td class="ascii">${text.join('')}</td><td class="typed">${typed}</td></tr>`,
      );
    }
    parts.push(`<table class="mem" data-row-bytes="${rowBytes}">${rows.join('\n')}</table>`);
  }
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); }
table.mem { border-collapse: collapse; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
table.mem th { text-align: left; padding-right: 1em; color: var(--vscode-descriptionForeground); font-weight: normal; }
table.mem td { padding: 0 3px; }
td.ascii { padding-left: 1.5em; white-space: pre; }
td.typed { padding-left: 1.5em; white-space: pre; }
tr.names td { max-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: 0.85em; padding-top: 0.3em; }
.na { color: var(--vscode-disabledForeground); }
.dim { color: var(--vscode-descriptionForeground); }
.chip { padding: 0 6px; border-radius: 3px; font-family: var(--vscode-editor-font-family); }
.nav { margin-bottom: 0.6em; }
.error { color: var(--vscode-errorForeground); }
${[0, 1, 2, 3, 4, 5, 6, 7]
  .map((i) => {
    const hue = (i * 137 + 200) % 360;
    return `.v${i} { background: hsla(${hue}, 70%, 45%, 0.35); } .t${i} { color: hsl(${hue}, 70%, 65%); }`;
  })
  .join('\n')}
</style></head><body>
<h3>${escapeHtml(s.title)} <span class="dim">${escapeHtml(s.memoryReference)}${s.size !== undefined ? ` · ${s.size} bytes` : ''}${s.frameName ? ` · variables of ${escapeHtml(s.frameName)}` : ''}</span></h3>
${parts.join('\n')}
<script nonce="${s.nonce}">
const vscode = acquireVsCodeApi();
for (const b of document.querySelectorAll('button[data-go]')) b.addEventListener('click', () => vscode.postMessage({ command: 'page', offset: Number(b.dataset.go) }));
document.getElementById('goto').addEventListener('click', () => vscode.postMessage({ command: 'page', offset: Number(document.getElementById('offset').value) }));
document.getElementById('format').addEventListener('change', (e) => vscode.postMessage({ command: 'format', format: e.target.value }));
const hex = document.getElementById('hex'); if (hex) hex.addEventListener('click', () => vscode.postMessage({ command: 'hexEditor' }));
// Rows as wide as the view has room for: half as many bytes when the columns overflow, twice as
// many when that would still fit (the hex, ASCII and typed columns grow with the bytes of a row).
const table = document.querySelector('table.mem');
function fit() {
  if (!table) return;
  const rowBytes = Number(table.dataset.rowBytes);
  const room = document.documentElement.clientWidth;
  const box = table.getBoundingClientRect();
  const address = table.querySelector('th').getBoundingClientRect().width;
  let want = rowBytes;
  if (box.right > room && rowBytes > ${ROW_BYTES_CHOICES[ROW_BYTES_CHOICES.length - 1]}) want = rowBytes / 2;
  else if (rowBytes < ${ROW_BYTES_CHOICES[0]} && box.left + address + 2 * (box.width - address) < room - 8) want = rowBytes * 2;
  if (want !== rowBytes) vscode.postMessage({ command: 'rowBytes', rowBytes: want, width: room });
}
let resized;
window.addEventListener('resize', () => { clearTimeout(resized); resized = setTimeout(fit, 150); });
requestAnimationFrame(fit);
</script>
</body></html>`;
}
