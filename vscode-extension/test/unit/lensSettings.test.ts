import { strict as assert } from 'node:assert';
import { matchesGlob } from 'node:path';
import { describe, it } from 'node:test';
import {
  LENS_FILE_PATTERN,
  LENS_SELECTOR,
  LENS_SERVER_ARGS,
  initializationOptions,
  lensAction,
  lensStatus,
  lensWanted,
  readLensSettings,
  sendsToRunningServer,
  type LensSettings,
} from '../../src/lensSettings';
import { choosePython } from '../../src/pythonPath';

const fromObject = (values: Record<string, unknown>) => (key: string) => values[key];

describe('address-space lens selector', () => {
  it('names the kernel languages and the GPU file extensions, on disk only', () => {
    const languages = LENS_SELECTOR.filter((f) => f.language !== undefined).map((f) => f.language);
    assert.deepEqual(languages, ['c', 'cpp', 'cuda-cpp', 'hip', 'opencl']);
    assert.deepEqual(LENS_SELECTOR.filter((f) => f.pattern !== undefined).map((f) => f.pattern), ['**/*.{hip,cu,cl}']);
    assert.ok(LENS_SELECTOR.every((f) => f.scheme === 'file'));
  });

  it('its pattern catches .hip, .cu and .cl files a language extension may not know', () => {
    // node's glob matcher stands in for VS Code's: both read ** and {a,b} the same way.
    for (const file of ['/w/examples/lds_tiles/lds_tiles.hip', '/w/k.cu', '/w/src/kernels/k.cl']) {
      assert.ok(matchesGlob(file, LENS_FILE_PATTERN), file);
    }
    for (const file of ['/w/k.cpp', '/w/k.hip.txt', '/w/k.cuh', '/w/k.clj']) {
      assert.ok(!matchesGlob(file, LENS_FILE_PATTERN), file);
    }
  });
});

describe('readLensSettings', () => {
  it('reads paths, budgets and the interpreter', () => {
    const read = readLensSettings(
      fromObject({ codeObjects: ['build/*.co', ' a.co '], ldsBudget: 4096, scratchBudget: 0, pythonPath: '/v/bin/python' }),
    );
    assert.deepEqual(read, {
      settings: { codeObjects: ['build/*.co', 'a.co'], ldsBudget: 4096, scratchBudget: 0, pythonPath: '/v/bin/python' },
      problems: [],
    });
  });

  it('treats unset and empty values as off', () => {
    assert.deepEqual(readLensSettings(fromObject({ ldsBudget: null, pythonPath: '' })), {
      settings: { codeObjects: [] },
      problems: [],
    });
    assert.deepEqual(readLensSettings(fromObject({ codeObjects: ['', '  '] })).settings.codeObjects, []);
  });

  it('takes a single string as one path and drops duplicates', () => {
    assert.deepEqual(readLensSettings(fromObject({ codeObjects: 'k.co' })).settings.codeObjects, ['k.co']);
    assert.deepEqual(readLensSettings(fromObject({ codeObjects: ['k.co', 'k.co'] })).settings.codeObjects, ['k.co']);
  });

  it('reports values it ignores', () => {
    const read = readLensSettings(fromObject({ codeObjects: ['k.co', 7], ldsBudget: -1, scratchBudget: 1.5 }));
    assert.deepEqual(read.settings, { codeObjects: ['k.co'] });
    assert.equal(read.problems.length, 3);
    assert.match(read.problems[0], /codeObjects/);
    assert.match(read.problems[1], /ldsBudget.*-1/);
    assert.match(read.problems[2], /scratchBudget.*1\.5/);
    assert.equal(readLensSettings(fromObject({ codeObjects: { a: 1 } })).problems.length, 1);
  });
});

describe('initializationOptions', () => {
  it('nests the settings under aspace and leaves unset budgets out', () => {
    assert.deepEqual(initializationOptions({ codeObjects: ['a.co'], scratchBudget: 64, pythonPath: '/p' }), {
      aspace: { codeObjects: ['a.co'], scratchBudget: 64 },
    });
  });
});

describe('lensAction', () => {
  const a: LensSettings = { codeObjects: ['a.co'] };

  it('runs the server while code objects are named, or once a kernel source was open', () => {
    assert.equal(lensWanted(a), true);
    assert.equal(lensWanted({ codeObjects: [] }), false);
    assert.equal(lensWanted({ codeObjects: [] }, true), true);
    assert.equal(lensAction(undefined, { codeObjects: [] }), 'none');
    assert.equal(lensAction(undefined, { codeObjects: [] }, true), 'start');
    assert.equal(lensAction(undefined, a), 'start');
    assert.equal(lensAction(a, { codeObjects: [] }), 'stop');
    // the setting cleared with a source open: the server goes on finding code objects itself
    assert.equal(lensAction(a, { codeObjects: [] }, true), 'restart');
    assert.equal(lensAction({ codeObjects: [] }, { codeObjects: [], ldsBudget: 8 }, true), 'none');
  });

  it('restarts when the code objects or the interpreter change', () => {
    assert.equal(lensAction(a, { codeObjects: ['a.co', 'b.co'] }), 'restart');
    assert.equal(lensAction(a, { codeObjects: ['b.co'] }), 'restart');
    assert.equal(lensAction(a, { codeObjects: ['a.co'], pythonPath: '/v/bin/python' }), 'restart');
  });

  it('leaves budget changes to configuration sync', () => {
    assert.equal(lensAction(a, { codeObjects: ['a.co'], ldsBudget: 1024 }), 'none');
    assert.equal(sendsToRunningServer(a, { codeObjects: ['a.co'], ldsBudget: 1024 }), true);
  });

  it('sends no settings to a server that the change stops or restarts', () => {
    // clearing aspace.codeObjects: the server is stopped, a didChangeConfiguration to it would fail
    assert.equal(sendsToRunningServer(a, { codeObjects: [] }), false);
    assert.equal(sendsToRunningServer(a, { codeObjects: ['b.co'] }), false);
    assert.equal(sendsToRunningServer(undefined, a), false);
  });
});

describe('lens status', () => {
  it('names the code object the hints come from, and where it was found', () => {
    const found = lensStatus({ codeObjects: ['/w/build/k.co'], from: 'workspace', searched: 3, note: null }, '/w/k.hip');
    assert.equal(found?.text, '$(symbol-structure) k.co');
    assert.match(found?.tooltip ?? '', /hints from \/w\/build\/k.co, found in the workspace: its line table names this file/);
    const named = lensStatus({ codeObjects: ['/w/a.co', '/w/b.co'], from: 'setting', searched: 2, note: null }, '/w/k.cu');
    assert.equal(named?.text, '$(symbol-structure) a.co +1');
    assert.match(named?.tooltip ?? '', /named by aspace.codeObjects/);
  });

  it('says when no code object names a kernel source, and shows nothing for other files', () => {
    const none = lensStatus({ codeObjects: [], from: 'workspace', searched: 12, note: 'stopped after 3 s' }, '/w/k.cu');
    assert.equal(none?.text, '$(symbol-structure) no code object');
    assert.match(none?.tooltip ?? '', /\(12 looked into\).*\nstopped after 3 s$/s);
    assert.equal(lensStatus({ codeObjects: [], from: 'workspace', searched: 12, note: null }, '/w/main.cpp'), undefined);
    assert.equal(lensStatus({ codeObjects: 'x' }, '/w/k.cu'), undefined);
    assert.equal(lensStatus(null, '/w/k.cu'), undefined);
  });
});

describe('lens interpreter', () => {
  it('starts `-m aspace_dap lsp --stdio` with the debug adapter\'s interpreter choice', () => {
    assert.deepEqual(
      choosePython({ configured: '/v/bin/python', platform: 'linux', serverArgs: LENS_SERVER_ARGS }),
      { command: '/v/bin/python', args: ['-m', 'aspace_dap', 'lsp', '--stdio'], source: 'configuration' },
    );
    assert.deepEqual(
      choosePython({ fromPythonExtension: ['conda', 'run', 'python'], platform: 'linux', serverArgs: LENS_SERVER_ARGS }).args,
      ['run', 'python', '-m', 'aspace_dap', 'lsp', '--stdio'],
    );
  });
});
