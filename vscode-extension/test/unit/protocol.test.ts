import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { parseFocus, parseLaneValues, parseLanes, parseMemorySpaces, ProtocolError } from '../../src/protocol';

describe('parseFocus', () => {
  it('reads a setFocus body', () => {
    assert.deepEqual(parseFocus({ threadId: 3, lane: 5, active: true, lanes: 64, extra: 'ignored' }), {
      threadId: 3,
      lane: 5,
      active: true,
      lanes: 64,
    });
  });

  it('names the bad field', () => {
    assert.throws(() => parseFocus({ threadId: 3, lane: -1, active: true, lanes: 64 }), /focus\.lane/);
    assert.throws(() => parseFocus({ threadId: 3, lane: 1, active: 'yes', lanes: 64 }), ProtocolError);
    assert.throws(() => parseFocus(undefined), /expected an object/);
  });
});

describe('parseLanes', () => {
  it('keeps optional source and line', () => {
    const reply = parseLanes({
      focus: 1,
      lanes: [
        { lane: 0, state: 'active', workItem: [64, 0, 0], pc: '0x1000', source: { path: '/s/k.hip', name: 'k.hip' }, line: 12 },
        { lane: 1, state: 'exited', workItem: [65, 0, 0], pc: '0x1000' },
        { lane: 2, state: 'active', pc: '0x1000' },
      ],
    });
    assert.equal(reply.lanes[2].workItem, undefined);
    assert.equal(reply.focus, 1);
    assert.deepEqual(reply.lanes[0].source, { path: '/s/k.hip', name: 'k.hip' });
    assert.equal(reply.lanes[0].line, 12);
    assert.equal(reply.lanes[1].source, undefined);
    assert.equal(reply.lanes[1].line, undefined);
  });

  it('rejects unknown states and malformed work-items', () => {
    assert.throws(
      () => parseLanes({ focus: 0, lanes: [{ lane: 0, state: 'sleeping', workItem: [0, 0, 0], pc: '0x0' }] }),
      /lanes\.lanes\[0\]\.state: unknown lane state/,
    );
    assert.throws(
      () => parseLanes({ focus: 0, lanes: [{ lane: 0, state: 'active', workItem: [0, 0], pc: '0x0' }] }),
      /workItem/,
    );
    assert.throws(() => parseLanes({ lanes: [] }), /lanes\.focus/);
  });
});

describe('parseLaneValues and parseMemorySpaces', () => {
  it('read well-formed bodies', () => {
    assert.deepEqual(parseLaneValues({ lanes: [{ lane: 2, active: false, value: '7', type: 'int' }] }), [
      { lane: 2, active: false, value: '7', type: 'int' },
    ]);
    assert.deepEqual(
      parseMemorySpaces({ spaces: [{ name: 'local', kind: 'workgroup', memoryReference: 'local@wg(1,0,0)#0x0', size: 256 }] }),
      [{ name: 'local', kind: 'workgroup', memoryReference: 'local@wg(1,0,0)#0x0', size: 256 }],
    );
    // a scope this client does not know is kept, without a kind
    assert.equal(parseMemorySpaces({ spaces: [{ name: 'gds', kind: 'device-wide', memoryReference: 'gds#0x0', size: 4 }] })[0].kind, undefined);
  });

  it('reject missing fields', () => {
    assert.throws(() => parseLaneValues({ lanes: [{ lane: 2, active: false, type: 'int' }] }), /value/);
    assert.throws(() => parseMemorySpaces({ spaces: {} }), /expected a list/);
    assert.throws(() => parseMemorySpaces({ spaces: [{ name: 'local', kind: 'workgroup', size: 1 }] }), /memoryReference/);
    assert.throws(() => parseMemorySpaces({ spaces: [{ name: 'local', memoryReference: 'local#0x0', size: 1 }] }), /kind/);
  });
});
