// aspace-dap's custom requests, with their replies checked by protocol.ts.

import {
  parseFocus,
  parseLaneValues,
  parseLanes,
  parseMemorySpaces,
  type FocusInfo,
  type LaneValue,
  type LanesReply,
  type MemorySpace,
} from './protocol';

/** The part of vscode.DebugSession these requests need. */
export interface RequestTarget {
  customRequest(command: string, args?: unknown): Thenable<unknown>;
}

export async function setFocus(
  session: RequestTarget,
  target: { threadId?: number; lane?: number },
): Promise<FocusInfo> {
  return parseFocus(await session.customRequest('setFocus', target), 'setFocus response');
}

export async function requestLanes(session: RequestTarget, threadId: number): Promise<LanesReply> {
  return parseLanes(await session.customRequest('lanes', { threadId }));
}

export async function requestLaneValues(
  session: RequestTarget,
  args: { threadId: number; frameId?: number; expression: string },
): Promise<LaneValue[]> {
  return parseLaneValues(await session.customRequest('laneValues', args));
}

export async function requestMemorySpaces(
  session: RequestTarget,
  args: { threadId: number; lane?: number },
): Promise<MemorySpace[]> {
  return parseMemorySpaces(await session.customRequest('memorySpaces', args));
}
