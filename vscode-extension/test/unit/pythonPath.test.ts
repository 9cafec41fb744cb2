import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { choosePython, interpreterFromPythonApi } from '../../src/pythonPath';

describe('choosePython', () => {
  it('prefers the configuration', () => {
    assert.deepEqual(choosePython({ configured: '/v/bin/python', fromPythonExtension: ['/e/python'], platform: 'linux' }), {
      command: '/v/bin/python',
      args: ['-m', 'aspace_dap'],
      source: 'configuration',
    });
  });

  it('then the Python extension, keeping its command prefix', () => {
    assert.deepEqual(choosePython({ fromPythonExtension: ['conda', 'run', '-n', 'gpu', 'python'], platform: 'linux' }), {
      command: 'conda',
      args: ['run', '-n', 'gpu', 'python', '-m', 'aspace_dap'],
      source: 'python-extension',
    });
  });

  it('then a non-default python setting', () => {
    assert.equal(choosePython({ fromPythonSetting: '/opt/py/bin/python3', platform: 'linux' }).source, 'python-setting');
    assert.equal(choosePython({ fromPythonSetting: 'python', platform: 'linux' }).command, 'python3');
  });

  it('falls back to the platform default', () => {
    assert.equal(choosePython({ configured: ' ', fromPythonExtension: [], platform: 'linux' }).command, 'python3');
    assert.equal(choosePython({ platform: 'win32' }).command, 'python');
  });
});

describe('interpreterFromPythonApi', () => {
  it('resolves the active environment to its executable', async () => {
    const api = {
      environments: {
        getActiveEnvironmentPath: () => ({ id: 'x', path: '/envs/gpu' }),
        resolveEnvironment: async () => ({ executable: { uri: { fsPath: '/envs/gpu/bin/python' } } }),
      },
    };
    assert.deepEqual(await interpreterFromPythonApi(api, undefined), ['/envs/gpu/bin/python']);
  });

  it('uses the active path when it cannot be resolved', async () => {
    const api = { environments: { getActiveEnvironmentPath: () => ({ path: '/usr/bin/python3' }) } };
    assert.deepEqual(await interpreterFromPythonApi(api, undefined), ['/usr/bin/python3']);
  });

  it('falls back to the older execution details', async () => {
    const api = { settings: { getExecutionDetails: () => ({ execCommand: ['/p/python'] }) } };
    assert.deepEqual(await interpreterFromPythonApi(api, undefined), ['/p/python']);
  });

  it('treats missing or throwing APIs as absent', async () => {
    assert.equal(await interpreterFromPythonApi(undefined, undefined), undefined);
    const throwing = {
      environments: {
        getActiveEnvironmentPath: () => {
          throw new Error('not ready');
        },
      },
    };
    assert.equal(await interpreterFromPythonApi(throwing, undefined), undefined);
    assert.equal(await interpreterFromPythonApi({ settings: { getExecutionDetails: () => ({ execCommand: undefined }) } }, undefined), undefined);
  });
});
