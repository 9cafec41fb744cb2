// The `waveGroups` request (waves grouped by dispatch and call stack, the
// smallest groups first), its checked parser, and the rows of the "GPU Waves"
// tree built from it. No vscode import: the unit and integration tests use it
// as the view does.

import { ProtocolError } from './protocol';

export interface GroupFrame {
  name: string;
  line: number;
  source?: { name?: string; path?: string };
}

export interface WaveGroup {
  id: number;
  dispatch: number | null;
  kernel: string | null;
  frames: GroupFrame[];
  waveCount: number;
  activeLanes: number;
  lanes: number;
  /** The first few waves in a summary; every wave in `waveGroups {group}`. */
  waveIds: number[];
  threadIds: number[];
  waveRanges: string;
  hasFocus: boolean;
}

export interface WaveGroupsReply {
  groups: WaveGroup[];
  totalGroups: number;
  totalWaves: number;
}

/** The part of vscode.DebugSession the request needs. */
export interface RequestTarget {
  customRequest(command: string, args?: unknown): Thenable<unknown>;
}

function fail(what: string, expected: string, value: unknown): never {
  throw new ProtocolError(`${what}: expected ${expected}, got ${JSON.stringify(value)}`);
}

function obj(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(what, 'an object', value);
  return value as Record<string, unknown>;
}

function int(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) fail(what, 'a non-negative integer', value);
  return value as number;
}

function str(value: unknown, what: string): string {
  if (typeof value !== 'string') fail(what, 'a string', value);
  return value as string;
}

function ints(value: unknown, what: string): number[] {
  if (!Array.isArray(value)) fail(what, 'a list', value);
  return (value as unknown[]).map((v, i) => int(v, `${what}[${i}]`));
}

function parseFrame(value: unknown, what: string): GroupFrame {
  const f = obj(value, what);
  const frame: GroupFrame = { name: str(f.name, `${what}.name`), line: int(f.line, `${what}.line`) };
  if (f.source !== undefined && f.source !== null) {
    const s = obj(f.source, `${what}.source`);
    frame.source = {};
    if (s.name !== undefined) frame.source.name = str(s.name, `${what}.source.name`);
    if (s.path !== undefined) frame.source.path = str(s.path, `${what}.source.path`);
  }
  return frame;
}

function parseGroup(value: unknown, what: string): WaveGroup {
  const g = obj(value, what);
  if (!Array.isArray(g.frames)) fail(`${what}.frames`, 'a list', g.frames);
  const waveIds = ints(g.waveIds, `${what}.waveIds`);
  const threadIds = ints(g.threadIds, `${what}.threadIds`);
  if (waveIds.length !== threadIds.length) {
    throw new ProtocolError(`${what}: ${waveIds.length} wave ids but ${threadIds.length} thread ids`);
  }
  if (typeof g.hasFocus !== 'boolean') fail(`${what}.hasFocus`, 'true or false', g.hasFocus);
  return {
    id: int(g.id, `${what}.id`),
    dispatch: g.dispatch === null || g.dispatch === undefined ? null : int(g.dispatch, `${what}.dispatch`),
    kernel: g.kernel === null || g.kernel === undefined ? null : str(g.kernel, `${what}.kernel`),
    frames: (g.frames as unknown[]).map((f, i) => parseFrame(f, `${what}.frames[${i}]`)),
    waveCount: int(g.waveCount, `${what}.waveCount`),
    activeLanes: int(g.activeLanes, `${what}.activeLanes`),
    lanes: int(g.lanes, `${what}.lanes`),
    waveIds,
    threadIds,
    waveRanges: str(g.waveRanges, `${what}.waveRanges`),
    hasFocus: g.hasFocus as boolean,
  };
}

/** Body of a `waveGroups` response. */
export function parseWaveGroups(body: unknown): WaveGroupsReply {
  const b = obj(body, 'waveGroups');
  if (!Array.isArray(b.groups)) fail('waveGroups.groups', 'a list', b.groups);
  return {
    groups: (b.groups as unknown[]).map((g, i) => parseGroup(g, `waveGroups.groups[${i}]`)),
    totalGroups: int(b.totalGroups, 'waveGroups.totalGroups'),
    totalWaves: int(b.totalWaves, 'waveGroups.totalWaves'),
  };
}

export async function requestWaveGroups(session: RequestTarget, group?: number): Promise<WaveGroupsReply> {
  return parseWaveGroups(await session.customRequest('waveGroups', group === undefined ? {} : { group }));
}

/** `transpose_tiles (lds_tiles.hip:30)`, innermost frame first. */
export function frameText(frame: GroupFrame): string {
  const file = frame.source?.name;
  return file !== undefined && frame.line > 0 ? `${frame.name} (${file}:${frame.line})` : frame.name;
}

export interface GroupRow {
  group: number;
  label: string;
  description: string;
  tooltip: string;
  hasFocus: boolean;
}

export function groupRow(group: WaveGroup): GroupRow {
  const where = group.frames.length > 0 ? frameText(group.frames[0]) : 'no stack';
  const waves = `${group.waveCount} wave${group.waveCount === 1 ? '' : 's'}`;
  const dispatch = group.dispatch === null ? '' : `dispatch ${group.dispatch} · `;
  return {
    group: group.id,
    label: `${waves} · ${where}`,
    description: `${dispatch}${group.activeLanes}/${group.lanes} lanes active · waves ${group.waveRanges}`,
    tooltip: [
      `${waves} of ${group.kernel ?? 'an unknown kernel'}${group.dispatch === null ? '' : ` (dispatch ${group.dispatch})`}`,
      ...group.frames.map((f, i) => `#${i} ${frameText(f)}`),
    ].join('\n'),
    hasFocus: group.hasFocus,
  };
}

/** The most wave rows a group shows; the rest are summed up in one row of ranges. */
export const MAX_WAVE_ROWS = 200;

export interface WaveRow {
  waveId: number;
  threadId: number;
}

export interface MoreRow {
  more: number;
  ranges: string;
}

export function waveRows(group: WaveGroup): (WaveRow | MoreRow)[] {
  const rows: (WaveRow | MoreRow)[] = group.waveIds
    .slice(0, MAX_WAVE_ROWS)
    .map((waveId, i) => ({ waveId, threadId: group.threadIds[i] }));
  if (group.waveCount > rows.length) rows.push({ more: group.waveCount - rows.length, ranges: group.waveRanges });
  return rows;
}
