import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { SessionModel } from '../../src/sessionModel';
import type { LanesReply } from '../../src/protocol';

const lanesReply: LanesReply = {
  focus: 1,
  lanes: [
    { lane: 0, state: 'inactive', workItem: [0, 0, 0], pc: '0x0' },
    { lane: 1, state: 'active', workItem: [1, 0, 0], pc: '0x0' },
  ],
};

describe('SessionModel', () => {
  it('follows the stopped thread and names it from the threads reply', () => {
    const m = new SessionModel();
    assert.equal(m.observeMessage({ type: 'event', event: 'stopped', body: { reason: 'exception', threadId: 4 } }), true);
    assert.equal(m.threadId, 4);
    m.observeMessage({ type: 'response', command: 'threads', success: true, body: { threads: [{ id: 4, name: 'AMDGPU Wave 0:0:1:3' }] } });
    assert.equal(m.threadName, 'AMDGPU Wave 0:0:1:3');
  });

  it('asks the views to refresh when the shown wave\'s name arrives after its focus, and only then', () => {
    const m = new SessionModel();
    m.applyFocus({ threadId: 2, lane: 0, active: true, lanes: 64 });
    assert.equal(m.threadName, undefined);
    const threads = { type: 'response', command: 'threads', success: true, body: { threads: [{ id: 1, name: 'w0' }, { id: 2, name: 'w1' }] } } as const;
    assert.equal(m.observeMessage(threads), true);
    assert.equal(m.threadName, 'w1');
    // the same names again change nothing the views show
    assert.equal(m.observeMessage(threads), false);
  });

  it('takes the first thread when the stop names none', () => {
    const m = new SessionModel();
    m.observeMessage({ type: 'event', event: 'stopped', body: { reason: 'exception', allThreadsStopped: true } });
    assert.equal(m.threadId, undefined);
    const refresh = m.observeMessage({ type: 'response', command: 'threads', success: true, body: { threads: [{ id: 7, name: 'w' }, { id: 8, name: 'v' }] } });
    assert.equal(refresh, true);
    assert.equal(m.threadId, 7);
  });

  it('switches wave when a frame of another thread is selected', () => {
    const m = new SessionModel();
    m.observeMessage({ type: 'event', event: 'stopped', body: { threadId: 1 } });
    m.observeRequest({ type: 'request', seq: 10, command: 'stackTrace', arguments: { threadId: 2 } });
    m.observeMessage({ type: 'response', request_seq: 10, command: 'stackTrace', success: true, body: { stackFrames: [{ id: 200 }, { id: 201 }] } });
    assert.equal(m.observeRequest({ type: 'request', seq: 11, command: 'scopes', arguments: { frameId: 201 } }), true);
    assert.equal(m.threadId, 2);
    assert.equal(m.frameOnThread, 201);
    // Selecting again within the same wave needs no refresh.
    assert.equal(m.observeRequest({ type: 'request', seq: 12, command: 'scopes', arguments: { frameId: 200 } }), false);
  });

  it('forgets frames when the server invalidates them', () => {
    const m = new SessionModel();
    m.observeMessage({ type: 'event', event: 'stopped', body: { threadId: 1 } });
    m.observeRequest({ type: 'request', seq: 1, command: 'stackTrace', arguments: { threadId: 1 } });
    m.observeMessage({ type: 'response', request_seq: 1, command: 'stackTrace', success: true, body: { stackFrames: [{ id: 5 }] } });
    m.observeRequest({ type: 'request', seq: 2, command: 'scopes', arguments: { frameId: 5 } });
    assert.equal(m.frameOnThread, 5);
    assert.equal(m.observeMessage({ type: 'event', event: 'invalidated', body: { areas: ['variables'] } }), true);
    assert.equal(m.frameOnThread, undefined);
  });

  it('keeps the shown wave when a stop leaves the focus where it is (the stop\'s badge on another wave)', () => {
    const m = new SessionModel();
    // the first stop of a core whose waves 0 and 1 both raised the exception: the focus on wave 0
    m.observeMessage({ type: 'event', event: 'stopped', body: { reason: 'exception', threadId: 1, allThreadsStopped: true } });
    m.observeRequest({ type: 'request', seq: 1, command: 'stackTrace', arguments: { threadId: 1 } });
    m.observeMessage({ type: 'response', request_seq: 1, command: 'stackTrace', success: true, body: { stackFrames: [{ id: 10 }] } });
    m.observeRequest({ type: 'request', seq: 2, command: 'stackTrace', arguments: { threadId: 2 } });
    m.observeMessage({ type: 'response', request_seq: 2, command: 'stackTrace', success: true, body: { stackFrames: [{ id: 20 }] } });
    m.observeRequest({ type: 'request', seq: 3, command: 'scopes', arguments: { frameId: 10 } });
    const badge = { reason: 'exception', threadId: 2, description: 'Exception', preserveFocusHint: true, allThreadsStopped: false };
    assert.equal(m.observeMessage({ type: 'event', event: 'stopped', body: badge }), false, 'the lanes shown stay');
    assert.equal(m.threadId, 1);
    assert.equal(m.frameOnThread, 10, 'the focused wave\'s frames are still known');
    // wave 1's own frames are new: selecting its new top frame shows it
    m.observeRequest({ type: 'request', seq: 4, command: 'scopes', arguments: { frameId: 20 } });
    assert.equal(m.threadId, 1, 'a frame of the old call stack names no wave');
    // `wave 1`: the focus event and the stop move the shown wave; wave 0's badge put back does not
    m.observeMessage({ type: 'event', event: 'focus', body: { threadId: 2, lane: 0, active: true, lanes: 64 } });
    m.observeMessage({ type: 'event', event: 'stopped', body: { reason: 'exception', threadId: 2, allThreadsStopped: true } });
    m.observeMessage({ type: 'event', event: 'stopped', body: { ...badge, threadId: 1 } });
    assert.equal(m.threadId, 2);
    assert.equal(m.focus?.threadId, 2);
  });

  it('applies focus events and setFocus replies', () => {
    const m = new SessionModel();
    m.observeMessage({ type: 'event', event: 'stopped', body: { threadId: 1 } });
    m.applyLanes(1, lanesReply);
    assert.deepEqual(m.focus, { threadId: 1, lane: 1, active: true, lanes: 2 });
    assert.equal(m.observeMessage({ type: 'event', event: 'focus', body: { threadId: 3, lane: 9, active: false, lanes: 64 } }), true);
    assert.equal(m.threadId, 3);
    assert.equal(m.lanes, undefined, 'lanes of the old wave are dropped');
    assert.deepEqual(m.focus, { threadId: 3, lane: 9, active: false, lanes: 64 });
  });

  it('ignores lanes replies for a wave no longer shown', () => {
    const m = new SessionModel();
    m.observeMessage({ type: 'event', event: 'stopped', body: { threadId: 2 } });
    m.applyLanes(1, lanesReply);
    assert.equal(m.lanes, undefined);
    m.applyLanes(2, lanesReply);
    assert.equal(m.lanes, lanesReply);
  });

  it('still refreshes on a malformed focus event, and ignores unrelated traffic', () => {
    const m = new SessionModel();
    assert.equal(m.observeMessage({ type: 'event', event: 'focus', body: { lane: 'x' } }), true);
    assert.equal(m.focus, undefined);
    assert.equal(m.observeMessage({ type: 'event', event: 'output', body: { output: 'hi' } }), false);
    assert.equal(m.observeRequest({ type: 'request', seq: 3, command: 'variables', arguments: { variablesReference: 1 } }), false);
  });
});
