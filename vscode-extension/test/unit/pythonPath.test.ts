import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { choosePython, expandPath, interpreterFromPythonApi, venvInterpreters } from '../../src/pythonPath';

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

describe('expandPath', () => {
  const vars = { workspaceFolder: '/w/proj', home: '/home/u', env: { VENV: '/envs/gpu' } };
  it('expands the variables settings do not get substituted', () => {
    assert.equal(expandPath('${workspaceFolder}/.venv/bin/python', vars), '/w/proj/.venv/bin/python');
    assert.equal(expandPath('~/py/bin/python', vars), '/home/u/py/bin/python');
    assert.equal(expandPath('${userHome}/py', vars), '/home/u/py');
    assert.equal(expandPath('${env:VENV}/bin/python', vars), '/envs/gpu/bin/python');
    assert.equal(expandPath('/abs/~x', vars), '/abs/~x');
  });
  it('leaves ${workspaceFolder} when there is no folder (the spawn error then names it)', () => {
    assert.equal(expandPath('${workspaceFolder}/x', { home: '/h' }), '${workspaceFolder}/x');
  });
});

describe('choosePython order', () => {
  it('configuration, aspace.pythonPath, the workspace .venv, then the Python extension', () => {
    const all = { configured: '/c', fromAspaceSetting: '/a', workspaceVenv: '/w/.venv/bin/python', fromPythonExtension: ['/e'], platform: 'linux' };
    assert.equal(choosePython(all).source, 'configuration');
    assert.equal(choosePython({ ...all, configured: undefined }).command, '/a');
    assert.equal(choosePython({ ...all, configured: undefined, fromAspaceSetting: '' }).source, 'workspace-venv');
    assert.deepEqual(venvInterpreters('/w', 'linux'), ['/w/.venv/bin/python', '/w/venv/bin/python']);
  });
});
