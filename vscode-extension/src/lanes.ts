// How lanes are named, ordered and described in the status bar, the quick
// pick and the GPU Lanes view. Pure functions over the server's replies.

import type { FocusInfo, LaneInfo, LaneState } from './protocol';

/** Status bar text, e.g. `Lane 5/64 · active`. */
export function focusStatusText(focus: FocusInfo): string {
  return `Lane ${focus.lane}/${focus.lanes} · ${focus.active ? 'active' : 'inactive'}`;
}

/** `(67,1,0)`, or `(?)` where the dump does not hold the lane's work-item id. */
export function workItemText(lane: LaneInfo): string {
  return lane.workItem === undefined ? '(?)' : `(${lane.workItem.join(',')})`;
}

/** `kernel.hip:12`, or undefined when the lane has no source position. */
export function sourcePositionText(lane: LaneInfo): string | undefined {
  const name = lane.source?.name ?? baseName(lane.source?.path);
  if (name === undefined) {
    return lane.line === undefined ? undefined : `line ${lane.line}`;
  }
  return lane.line === undefined ? name : `${name}:${lane.line}`;
}

function baseName(path: string | undefined): string | undefined {
  if (path === undefined || path === '') return undefined;
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] || path;
}

/** Codicon id shown for each lane state. */
export function laneStateIcon(state: LaneState): string {
  switch (state) {
    case 'active':
      return 'circle-filled';
    case 'inactive':
      return 'circle-outline';
    case 'exited':
      return 'circle-slash';
    case 'invalid':
      return 'error';
  }
}

/** One-line description of a lane: state, work-item id and source line. */
export function laneDescription(lane: LaneInfo): string {
  const parts: string[] = [lane.state, workItemText(lane)];
  const where = sourcePositionText(lane);
  if (where !== undefined) parts.push(where);
  return parts.join(' · ');
}

export interface LanePickItem {
  lane: number;
  label: string;
  description: string;
  detail: string;
  picked: boolean;
}

/** Quick pick entries for "Go to lane…", focused lane first marked. */
export function lanePickItems(lanes: readonly LaneInfo[], focusLane: number | undefined): LanePickItem[] {
  return lanes.map((lane) => ({
    lane: lane.lane,
    label: `$(${laneStateIcon(lane.state)}) Lane ${lane.lane}${lane.lane === focusLane ? ' (focus)' : ''}`,
    description: laneDescription(lane),
    detail: `pc ${lane.pc}${lane.source?.path ? ` · ${lane.source.path}` : ''}`,
    picked: lane.lane === focusLane,
  }));
}

/**
 * The next active lane after `current` in `direction` (+1 or -1), wrapping
 * around the wave; undefined when no other lane is active.
 */
export function adjacentActiveLane(
  lanes: readonly LaneInfo[],
  current: number,
  direction: 1 | -1,
): number | undefined {
  const active = lanes
    .filter((l) => l.state === 'active' && l.lane !== current)
    .map((l) => l.lane)
    .sort((a, b) => a - b);
  if (active.length === 0) return undefined;
  if (direction === 1) {
    return active.find((l) => l > current) ?? active[0];
  }
  for (let i = active.length - 1; i >= 0; i--) {
    if (active[i] < current) return active[i];
  }
  return active[active.length - 1];
}

/** Focus info implied by a `lanes` reply, for when no setFocus was sent yet. */
export function focusFromLanes(threadId: number, lanes: readonly LaneInfo[], focusLane: number): FocusInfo {
  const lane = lanes.find((l) => l.lane === focusLane);
  return { threadId, lane: focusLane, active: lane?.state === 'active', lanes: lanes.length };
}
