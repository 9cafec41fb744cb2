import { strict as assert } from 'node:assert';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { defaultConfiguration, serverConnection, validateConfiguration, withDefaults } from '../../src/launchConfig';

describe('withDefaults', () => {
  it('fills an empty configuration with a dump picker', () => {
    const c = withDefaults({});
    assert.equal(c.type, 'aspace-gpu');
    assert.equal(c.request, 'launch');
    assert.equal(c.state, '${command:aspace.pickStateDump}');
  });

  it('leaves a written configuration alone', () => {
    const written = { type: 'aspace-gpu', request: 'attach', name: 'x', state: '/d', port: 4711 };
    assert.equal(withDefaults(written), written);
  });
});

describe('validateConfiguration', () => {
  const base = { type: 'aspace-gpu', request: 'launch', name: 'n', state: '/dumps/run1' };

  it('accepts a full configuration', () => {
    const r = validateConfiguration({
      ...base,
      codeObject: '/k.co',
      wave: 2,
      lane: 5,
      sourceMap: { '/build': '/src' },
      pythonPath: '/venv/bin/python',
      port: 4711,
    });
    assert.ok(r.ok);
    if (r.ok) {
      assert.equal(r.config.wave, 2);
      assert.deepEqual(r.config.sourceMap, { '/build': '/src' });
    }
  });

  it('resolves relative dump and code object paths against the folder', () => {
    const r = validateConfiguration({ ...base, state: 'dumps/run1.zip', codeObject: 'k.co' }, '/work/proj');
    assert.ok(r.ok);
    if (r.ok) {
      assert.equal(r.config.state, path.resolve('/work/proj', 'dumps/run1.zip'));
      assert.equal(r.config.codeObject, path.resolve('/work/proj', 'k.co'));
    }
  });

  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['missing state', { ...base, state: undefined }, /"state"/],
    ['blank state', { ...base, state: '  ' }, /"state"/],
    ['bad request', { ...base, request: 'run' }, /"request"/],
    ['negative lane', { ...base, lane: -1 }, /"lane"/],
    ['fractional wave', { ...base, wave: 1.5 }, /"wave"/],
    ['string wave', { ...base, wave: '1' }, /"wave"/],
    ['port out of range', { ...base, port: 70000 }, /"port"/],
    ['sourceMap list', { ...base, sourceMap: ['/a'] }, /"sourceMap"/],
    ['sourceMap number target', { ...base, sourceMap: { '/a': 1 } }, /"\/a"/],
    ['empty pythonPath', { ...base, pythonPath: '' }, /"pythonPath"/],
    ['empty codeObject', { ...base, codeObject: '' }, /"codeObject"/],
    ['empty socket', { ...base, socket: '' }, /"socket"/],
    ['socket and port', { ...base, socket: '/run/a.sock', port: 4711 }, /"socket" and "port"/],
    ['empty secret', { ...base, port: 4711, secret: '' }, /"secret"/],
    ['secret without port', { ...base, secret: 'x' }, /"secret" goes with "port"/],
    ['secretFile on a socket', { ...base, socket: '/run/a.sock', secretFile: '/s' }, /"secretFile" goes with "port"/],
  ];
  for (const [what, config, message] of bad) {
    it(`rejects ${what}`, () => {
      const r = validateConfiguration(config);
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, message);
    });
  }

  it('tells the server the workspace folder, where it looks for sources too', () => {
    const r = validateConfiguration(base, '/work/proj');
    assert.ok(r.ok);
    if (r.ok) assert.equal(r.config.workspaceFolder, '/work/proj');
    const named = validateConfiguration({ ...base, workspaceFolder: 'src' }, '/work/proj');
    assert.ok(named.ok);
    if (named.ok) assert.equal(named.config.workspaceFolder, path.resolve('/work/proj', 'src'));
    const none = validateConfiguration(base);
    assert.ok(none.ok);
    if (none.ok) assert.equal(none.config.workspaceFolder, undefined);
    const bad = validateConfiguration({ ...base, workspaceFolder: 3 });
    assert.equal(bad.ok, false);
    if (!bad.ok) assert.match(bad.error, /"workspaceFolder"/);
  });

  it('resolves a relative socket and secret file against the folder', () => {
    const r = validateConfiguration({ ...base, socket: 'run/aspace.sock' }, '/work/proj');
    assert.ok(r.ok);
    if (r.ok) assert.equal(r.config.socket, path.resolve('/work/proj', 'run/aspace.sock'));
    const t = validateConfiguration({ ...base, port: 4711, secretFile: 's/port.secret' }, '/work/proj');
    assert.ok(t.ok);
    if (t.ok) assert.equal(t.config.secretFile, path.resolve('/work/proj', 's/port.secret'));
  });

  it('default configuration passes once its state is substituted', () => {
    const r = validateConfiguration({ ...defaultConfiguration(), state: '/picked' });
    assert.ok(r.ok);
  });
});

describe('serverConnection', () => {
  it('is a socket, TCP or a server the extension starts', () => {
    assert.deepEqual(serverConnection({ socket: '/run/a.sock' }), { kind: 'socket', path: '/run/a.sock' });
    assert.deepEqual(serverConnection({ port: 4711, secret: 'x' }), { kind: 'tcp', port: 4711 });
    assert.deepEqual(serverConnection({ state: '/d' }), { kind: 'process' });
  });
});
