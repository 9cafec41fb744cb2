// Shapes of aspace-dap's custom requests and events, and checked parsers for
// them: the server is a separate program, so its replies are validated once
// here instead of trusted all over the UI code.

export type LaneState = 'active' | 'inactive' | 'exited' | 'invalid';

export interface FocusInfo {
  threadId: number;
  lane: number;
  active: boolean;
  lanes: number;
}

export interface LaneInfo {
  lane: number;
  state: LaneState;
  /** The lane's work-item id in the grid; absent where the dump does not hold it. */
  workItem?: [number, number, number];
  source?: { path?: string; name?: string };
  line?: number;
  pc: string;
}

export interface LanesReply {
  lanes: LaneInfo[];
  focus: number;
}

export interface LaneValue {
  lane: number;
  active: boolean;
  value: string;
  type: string;
}

/**
 * Scope of a memory space, named the same for every vendor: "workgroup" (AMD
 * LDS, NVIDIA shared, Intel SLM), "lane" (AMD scratch, NVIDIA local, Intel
 * private), "wave" (a wave's raw private memory), "device" (global).
 */
export type MemorySpaceKind = 'workgroup' | 'lane' | 'wave' | 'device';

export interface MemorySpace {
  name: string;
  /** Undefined when the server names a scope this client does not know. */
  kind: MemorySpaceKind | undefined;
  memoryReference: string;
  size: number;
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

const LANE_STATES: readonly string[] = ['active', 'inactive', 'exited', 'invalid'];
const MEMORY_SPACE_KINDS: readonly string[] = ['workgroup', 'lane', 'wave', 'device'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (!isRecord(value)) {
    throw new ProtocolError(`${what}: expected an object`);
  }
  return value;
}

function count(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new ProtocolError(`${what}: expected a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function text(value: unknown, what: string): string {
  if (typeof value !== 'string') {
    throw new ProtocolError(`${what}: expected a string, got ${JSON.stringify(value)}`);
  }
  return value;
}

function flag(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') {
    throw new ProtocolError(`${what}: expected true or false, got ${JSON.stringify(value)}`);
  }
  return value;
}

function list(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) {
    throw new ProtocolError(`${what}: expected a list`);
  }
  return value;
}

/** Body of a `setFocus` response or of a `focus` event. */
export function parseFocus(body: unknown, what = 'focus'): FocusInfo {
  const b = record(body, what);
  return {
    threadId: count(b.threadId, `${what}.threadId`),
    lane: count(b.lane, `${what}.lane`),
    active: flag(b.active, `${what}.active`),
    lanes: count(b.lanes, `${what}.lanes`),
  };
}

function parseLane(item: unknown, what: string): LaneInfo {
  const l = record(item, what);
  const state = text(l.state, `${what}.state`);
  if (!LANE_STATES.includes(state)) {
    throw new ProtocolError(`${what}.state: unknown lane state ${JSON.stringify(state)}`);
  }
  const lane: LaneInfo = {
    lane: count(l.lane, `${what}.lane`),
    state: state as LaneState,
    pc: text(l.pc, `${what}.pc`),
  };
  if (l.workItem !== undefined && l.workItem !== null) {
    const workItem = list(l.workItem, `${what}.workItem`);
    if (workItem.length !== 3) {
      throw new ProtocolError(`${what}.workItem: expected [x, y, z]`);
    }
    lane.workItem = [
      count(workItem[0], `${what}.workItem[0]`),
      count(workItem[1], `${what}.workItem[1]`),
      count(workItem[2], `${what}.workItem[2]`),
    ];
  }
  if (l.source !== undefined && l.source !== null) {
    const s = record(l.source, `${what}.source`);
    lane.source = {};
    if (s.path !== undefined) lane.source.path = text(s.path, `${what}.source.path`);
    if (s.name !== undefined) lane.source.name = text(s.name, `${what}.source.name`);
  }
  if (l.line !== undefined && l.line !== null) {
    lane.line = count(l.line, `${what}.line`);
  }
  return lane;
}

/** Body of a `lanes` response. */
export function parseLanes(body: unknown): LanesReply {
  const b = record(body, 'lanes');
  const lanes = list(b.lanes, 'lanes.lanes').map((item, i) => parseLane(item, `lanes.lanes[${i}]`));
  return { lanes, focus: count(b.focus, 'lanes.focus') };
}

/** Body of a `laneValues` response. */
export function parseLaneValues(body: unknown): LaneValue[] {
  const b = record(body, 'laneValues');
  return list(b.lanes, 'laneValues.lanes').map((item, i) => {
    const what = `laneValues.lanes[${i}]`;
    const v = record(item, what);
    return {
      lane: count(v.lane, `${what}.lane`),
      active: flag(v.active, `${what}.active`),
      value: text(v.value, `${what}.value`),
      type: text(v.type, `${what}.type`),
    };
  });
}

/** Body of a `memorySpaces` response. */
export function parseMemorySpaces(body: unknown): MemorySpace[] {
  const b = record(body, 'memorySpaces');
  return list(b.spaces, 'memorySpaces.spaces').map((item, i) => {
    const what = `memorySpaces.spaces[${i}]`;
    const s = record(item, what);
    const kind = text(s.kind, `${what}.kind`);
    return {
      name: text(s.name, `${what}.name`),
      kind: MEMORY_SPACE_KINDS.includes(kind) ? (kind as MemorySpaceKind) : undefined,
      memoryReference: text(s.memoryReference, `${what}.memoryReference`),
      size: count(s.size, `${what}.size`),
    };
  });
}
