// The `findLanes` request (the lanes of every wave where an expression is true,
// each evaluated at its own pc), its checked parser, and the rows the "GPU
// Waves" view shows for a search. No vscode import: the unit tests use it as
// the view does.

import { int, list, obj, str } from './checked';
import { groupRow, parseGroupList, type RequestTarget, type WaveGroup } from './waveGroups';

export interface FoundLane {
  threadId: number;
  waveId: number;
  lane: number;
  value: string;
}

export interface FoundGroup {
  group: WaveGroup;
  matchedLanes: number;
  matchedWaveCount: number;
  matchedWaveRanges: string;
}

export interface LanesFound {
  expression: string;
  matched: number;
  unevaluated: number;
  searched: number;
  waves: number;
  matchedWaves: number;
  reasons: { reason: string; count: number }[];
  lanes: FoundLane[];
  groups: FoundGroup[];
  /** What the vendor's debugger calls a wave (warp, thread). */
  waveWord: string;
}

/** Body of a `findLanes` response. */
export function parseLanesFound(body: unknown): LanesFound {
  const b = obj(body, 'findLanes');
  const { groups, waveWord } = parseGroupList(b, 'findLanes');
  const raw = list(b.groups, 'findLanes.groups');
  return {
    expression: str(b.expression, 'findLanes.expression'),
    matched: int(b.matched, 'findLanes.matched'),
    unevaluated: int(b.unevaluated, 'findLanes.unevaluated'),
    searched: int(b.searched, 'findLanes.searched'),
    waves: int(b.waves, 'findLanes.waves'),
    matchedWaves: int(b.matchedWaves, 'findLanes.matchedWaves'),
    reasons: list(b.reasons, 'findLanes.reasons').map((r, i) => {
      const o = obj(r, `findLanes.reasons[${i}]`);
      return { reason: str(o.reason, `findLanes.reasons[${i}].reason`), count: int(o.count, `findLanes.reasons[${i}].count`) };
    }),
    lanes: list(b.lanes, 'findLanes.lanes').map((l, i) => {
      const o = obj(l, `findLanes.lanes[${i}]`);
      return {
        threadId: int(o.threadId, `findLanes.lanes[${i}].threadId`), waveId: int(o.waveId, `findLanes.lanes[${i}].waveId`),
        lane: int(o.lane, `findLanes.lanes[${i}].lane`), value: str(o.value, `findLanes.lanes[${i}].value`),
      };
    }),
    groups: groups.map((group, i) => {
      const o = obj(raw[i], `findLanes.groups[${i}]`);
      return {
        group,
        matchedLanes: int(o.matchedLanes, `findLanes.groups[${i}].matchedLanes`),
        matchedWaveCount: int(o.matchedWaveCount, `findLanes.groups[${i}].matchedWaveCount`),
        matchedWaveRanges: str(o.matchedWaveRanges, `findLanes.groups[${i}].matchedWaveRanges`),
      };
    }),
    waveWord,
  };
}

/** The most lanes a search lists (the server's answer is cut there; the counts are whole). */
export const FIND_LIMIT = 200;

export async function requestFindLanes(session: RequestTarget, expression: string, limit = FIND_LIMIT): Promise<LanesFound> {
  return parseLanesFound(await session.customRequest('findLanes', { expression, limit }));
}

function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

export interface Row {
  label: string;
  description?: string;
  tooltip?: string;
}

/** The search's own row: what was searched and how many lanes matched. */
export function headerRow(found: LanesFound): Row {
  const unevaluated = found.unevaluated > 0 ? ` · ${plural(found.unevaluated, 'lane')} not evaluated` : '';
  return {
    label: `Lanes where ${found.expression}`,
    description: `${plural(found.matched, 'lane')} in ${plural(found.matchedWaves, found.waveWord)}${unevaluated}`,
    tooltip: `${plural(found.matched, 'lane')} of ${plural(found.searched, 'active lane')} in ${plural(found.waves, found.waveWord)} ` +
      `match ${found.expression}` + (found.unevaluated > 0 ? `; ${plural(found.unevaluated, 'lane')} could not be evaluated` : ''),
  };
}

/** A matching lane: choosing it focuses its wave and lane. */
export function laneRow(lane: FoundLane, word = 'wave'): Row {
  return { label: `${word[0].toUpperCase()}${word.slice(1)} ${lane.waveId} · lane ${lane.lane}`, description: `= ${lane.value}` };
}

/** Where the matching lanes stand: a wave group with its matching lanes. */
export function foundGroupRow(found: FoundGroup, word = 'wave'): Row {
  const row = groupRow(found.group, word);
  return {
    label: `${plural(found.matchedLanes, 'lane')} · ${row.label.replace(/^[\d,]+ \w+ · /, '')}`,
    description: `${plural(found.matchedWaveCount, word)}: ${found.matchedWaveRanges}`,
    tooltip: row.tooltip,
  };
}

/** Why lanes have no value, most first. */
export function reasonRow(reason: { reason: string; count: number }): Row {
  return { label: plural(reason.count, 'lane'), description: reason.reason };
}
