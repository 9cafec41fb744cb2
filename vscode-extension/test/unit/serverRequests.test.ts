import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ProtocolError } from '../../src/protocol';
import { requestLaneValues, requestLanes, requestMemorySpaces, setFocus, type RequestTarget } from '../../src/serverRequests';

class FakeSession implements RequestTarget {
  readonly sent: Array<{ command: string; args: unknown }> = [];
  constructor(private readonly replies: Record<string, unknown>) {}
  async customRequest(command: string, args?: unknown): Promise<unknown> {
    this.sent.push({ command, args });
    if (!(command in this.replies)) throw new Error(`unknown request ${command}`);
    return this.replies[command];
  }
}

describe('server requests', () => {
  it('send the contract arguments and parse the replies', async () => {
    const s = new FakeSession({
      setFocus: { threadId: 2, lane: 5, active: true, lanes: 64 },
      lanes: { focus: 5, lanes: [] },
      laneValues: { lanes: [{ lane: 0, active: true, value: '1', type: 'int' }] },
      memorySpaces: { spaces: [{ name: 'local', kind: 'workgroup', memoryReference: 'local@wg(0,0,0)#0x0', size: 64 }] },
    });
    assert.equal((await setFocus(s, { threadId: 2, lane: 5 })).lane, 5);
    assert.equal((await requestLanes(s, 2)).focus, 5);
    assert.equal((await requestLaneValues(s, { threadId: 2, frameId: 7, expression: 'x' })).length, 1);
    assert.equal((await requestMemorySpaces(s, { threadId: 2, lane: 5 }))[0].size, 64);
    assert.deepEqual(s.sent, [
      { command: 'setFocus', args: { threadId: 2, lane: 5 } },
      { command: 'lanes', args: { threadId: 2 } },
      { command: 'laneValues', args: { threadId: 2, frameId: 7, expression: 'x' } },
      { command: 'memorySpaces', args: { threadId: 2, lane: 5 } },
    ]);
  });

  it('turn malformed replies into protocol errors', async () => {
    const s = new FakeSession({ setFocus: { threadId: 2 }, lanes: null });
    await assert.rejects(setFocus(s, {}), ProtocolError);
    await assert.rejects(requestLanes(s, 1), /lanes: expected an object/);
  });
});
