// The `waveGroups` request (waves grouped by dispatch and where they stand: pc,
// inline chain and callers; the smallest groups first), its checked parser, and
// the rows of the "GPU Waves" tree built from it. No vscode import: the unit and
// integration tests use it as the view does.

import { fail, int, list, obj, str } from './checked';
import { ProtocolError } from './protocol';

export interface GroupFrame {
  name: string;
  line: number;
  source?: { name?: string; path?: string };
  /** Inlined into the next frame (at the same pc): frames up to the first one not inlined are one chain. */
  inlined?: boolean;
  instructionPointerReference?: string;
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
  /** Where the group stands, as `info waves` says it: each pc with its inline chain, then the callers. */
  where?: string;
}

export interface WaveGroupsReply {
  groups: WaveGroup[];
  totalGroups: number;
  totalWaves: number;
  /** What the vendor's debugger calls a wave: `wave`, `warp` (cuda-gdb), `thread` (gdb-oneapi). */
  waveWord: string;
}

/** The part of vscode.DebugSession the request needs. */
export interface RequestTarget {
  customRequest(command: string, args?: unknown): Thenable<unknown>;
}

function ints(value: unknown, what: string): number[] {
  return list(value, what).map((v, i) => int(v, `${what}[${i}]`));
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
  if (f.inlined !== undefined) {
    if (typeof f.inlined !== 'boolean') fail(`${what}.inlined`, 'true or false', f.inlined);
    frame.inlined = f.inlined;
  }
  if (f.instructionPointerReference !== undefined) {
    frame.instructionPointerReference = str(f.instructionPointerReference, `${what}.instructionPointerReference`);
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
    ...(g.where === undefined ? {} : { where: str(g.where, `${what}.where`) }),
  };
}

/** Body of a `waveGroups` response. */
export function parseWaveGroups(body: unknown): WaveGroupsReply {
  return parseGroupList(body, 'waveGroups');
}

/** A `groups` list of a reply (waveGroups, findLanes) with its totals. */
export function parseGroupList(body: unknown, what: string): WaveGroupsReply {
  const b = obj(body, what);
  if (!Array.isArray(b.groups)) fail(`${what}.groups`, 'a list', b.groups);
  return {
    groups: (b.groups as unknown[]).map((g, i) => parseGroup(g, `${what}.groups[${i}]`)),
    totalGroups: b.totalGroups === undefined && what !== 'waveGroups' ? b.groups.length : int(b.totalGroups, `${what}.totalGroups`),
    totalWaves: b.totalWaves === undefined && what !== 'waveGroups' ? 0 : int(b.totalWaves, `${what}.totalWaves`),
    waveWord: b.waveWord === undefined ? 'wave' : str(b.waveWord, `${what}.waveWord`),
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

/** The innermost place's inline chain: `wait_for (hang.hip:11) ← hang (hang.hip:22)` (inlined calls). */
export function chainText(frames: GroupFrame[]): string {
  const chain: string[] = [];
  for (const frame of frames) {
    chain.push(frameText(frame));
    if (frame.inlined !== true) break;
  }
  return chain.join(' ← ');
}

export function groupRow(group: WaveGroup, word = 'wave'): GroupRow {
  const where = group.frames.length > 0 ? chainText(group.frames) : 'no stack';
  const pc = group.frames[0]?.instructionPointerReference;
  const waves = `${group.waveCount} ${word}${group.waveCount === 1 ? '' : 's'}`;
  const dispatch = group.dispatch === null ? '' : `dispatch ${group.dispatch} · `;
  return {
    group: group.id,
    label: `${waves} · ${where}`,
    description: `${pc === undefined ? '' : `${pc} · `}${dispatch}${group.activeLanes}/${group.lanes} lanes active · ${word}s ${group.waveRanges}`,
    tooltip: [
      `${waves} of ${group.kernel ?? 'an unknown kernel'}${group.dispatch === null ? '' : ` (dispatch ${group.dispatch})`}`,
      ...(group.where === undefined ? [] : [group.where]),
      ...group.frames.map((f, i) => {
        const at = f.instructionPointerReference === undefined ? '' : `${f.instructionPointerReference} in `;
        return `#${i} ${at}${frameText(f)}${f.inlined === true ? ' (inlined)' : ''}`;
      }),
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
