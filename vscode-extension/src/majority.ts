// "Show in all lanes": which lanes disagree with the rest of the wave.

import type { LaneValue } from './protocol';

export interface LaneValueRow extends LaneValue {
  /** Active lane whose value differs from the active lanes' majority. */
  differs: boolean;
}

export interface LaneValueSummary {
  rows: LaneValueRow[];
  /** Most common value among active lanes; undefined when none is active. */
  majority: string | undefined;
  majorityCount: number;
  activeCount: number;
  distinctActiveValues: number;
}

/**
 * Inactive lanes hold stale values, so only active lanes vote. Ties go to the
 * value seen first in lane order, which keeps the choice stable between
 * refreshes.
 */
export function summarizeLaneValues(values: readonly LaneValue[]): LaneValueSummary {
  const ordered = [...values].sort((a, b) => a.lane - b.lane);
  const counts = new Map<string, number>();
  for (const v of ordered) {
    if (v.active) counts.set(v.value, (counts.get(v.value) ?? 0) + 1);
  }
  let majority: string | undefined;
  let majorityCount = 0;
  for (const [value, n] of counts) {
    if (n > majorityCount) {
      majority = value;
      majorityCount = n;
    }
  }
  const rows = ordered.map((v) => ({ ...v, differs: v.active && v.value !== majority }));
  const activeCount = ordered.filter((v) => v.active).length;
  return { rows, majority, majorityCount, activeCount, distinctActiveValues: counts.size };
}
