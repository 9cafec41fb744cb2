// "Show in all lanes": which lanes disagree with the rest of the wave.

import type { LaneValue } from './protocol';

export interface LaneValueRow extends LaneValue {
  /** Active lane whose value differs from the active lanes' majority. */
  differs: boolean;
}

export interface LaneValueSummary {
  rows: LaneValueRow[];
  /** Most common value among active lanes; undefined when none is active or the top count is tied. */
  majority: string | undefined;
  /** How many active lanes hold the most common value(s). */
  majorityCount: number;
  activeCount: number;
  distinctActiveValues: number;
}

/**
 * Inactive lanes hold stale values, so only active lanes vote. When several
 * values share the top count there is no majority and no lane is marked:
 * picking one of them would flag most of the wave for no reason (tx over four
 * tile columns is a four-way tie).
 */
export function summarizeLaneValues(values: readonly LaneValue[]): LaneValueSummary {
  const ordered = [...values].sort((a, b) => a.lane - b.lane);
  const counts = new Map<string, number>();
  for (const v of ordered) {
    if (v.active) counts.set(v.value, (counts.get(v.value) ?? 0) + 1);
  }
  let majority: string | undefined;
  let majorityCount = 0;
  let tied = false;
  for (const [value, n] of counts) {
    if (n > majorityCount) {
      majority = value;
      majorityCount = n;
      tied = false;
    } else if (n === majorityCount) {
      tied = true;
    }
  }
  if (tied) majority = undefined;
  const rows = ordered.map((v) => ({ ...v, differs: majority !== undefined && v.active && v.value !== majority }));
  const activeCount = ordered.filter((v) => v.active).length;
  return { rows, majority, majorityCount, activeCount, distinctActiveValues: counts.size };
}
