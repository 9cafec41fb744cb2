import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultSecretFile, readServerSecret } from '../../src/serverSecret';

describe('readServerSecret', () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'aspace-secret-'));
  after(() => fs.rmSync(home, { recursive: true, force: true }));

  function write(port: number, text: string, mode: number): string {
    const file = defaultSecretFile(port, home);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, text);
    fs.chmodSync(file, mode);
    return file;
  }

  it('reads the file the server wrote for its port', () => {
    assert.equal(defaultSecretFile(4711, home), path.join(home, '.aspace-dap', 'port-4711.secret'));
    write(4711, 'c0ffee\n', 0o600);
    assert.deepEqual(readServerSecret(4711, undefined, home), {
      ok: true, secret: 'c0ffee', file: defaultSecretFile(4711, home),
    });
  });

  it('reads a --secret-file the configuration names', () => {
    const file = path.join(home, 'elsewhere.secret');
    fs.writeFileSync(file, 'beef\n', { mode: 0o600 });
    const r = readServerSecret(1, file, home);
    assert.ok(r.ok && r.secret === 'beef');
  });

  it('says how to start the server when there is no file', () => {
    const r = readServerSecret(4712, undefined, home);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /aspace-dap --port 4712/);
  });

  it('refuses a file others can read, an empty one, and one of another user', () => {
    write(4713, 'c0ffee\n', 0o644);
    const r = readServerSecret(4713, undefined, home);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /other users \(mode 644\)/);
    write(4714, '\n', 0o600);
    const e = readServerSecret(4714, undefined, home);
    assert.equal(e.ok, false);
    if (!e.ok) assert.match(e.error, /empty/);
    const o = readServerSecret(4711, undefined, home, 12345);
    assert.equal(o.ok, false);
    if (!o.ok) assert.match(o.error, /another user/);
  });
});
