// The manifest and the code must name the same commands and debug type.
import { strict as assert } from 'node:assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LENS_LANGUAGES } from '../../src/lensSettings';

const root = join(__dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const sources = readdirSync(join(root, 'src'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => readFileSync(join(root, 'src', f), 'utf8'))
  .join('\n');

describe('package.json', () => {
  it('declares exactly the commands the code registers', () => {
    const declared = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
    const registered = new Set<string>();
    for (const m of sources.matchAll(/registerCommand\(\s*'([\w.]+)'/g)) registered.add(m[1]);
    registered.add('aspace.pickStateDump'); // registered through PICK_STATE_COMMAND
    assert.deepEqual([...declared].sort(), [...registered].sort());
  });

  it('activates on the debugger and every palette command', () => {
    const events: string[] = manifest.activationEvents;
    assert.ok(events.includes('onDebugResolve:aspace-gpu'));
    assert.ok(events.includes('onDebugDynamicConfigurations:aspace-gpu'));
    for (const c of ['aspace.nextActiveLane', 'aspace.previousActiveLane', 'aspace.goToLane']) {
      assert.ok(events.includes(`onCommand:${c}`), c);
    }
  });

  it('describes every launch attribute the validator knows', () => {
    const props = manifest.contributes.debuggers[0].configurationAttributes.launch.properties;
    assert.deepEqual(Object.keys(props).sort(), ['codeObject', 'lane', 'port', 'pythonPath', 'secret', 'secretFile', 'socket', 'sourceMap', 'state', 'wave', 'workspaceFolder']);
    assert.equal(manifest.contributes.debuggers[0].type, 'aspace-gpu');
  });

  it('puts Show in All Lanes on the Variables and editor context menus', () => {
    for (const menu of ['debug/variables/context', 'editor/context']) {
      assert.ok(manifest.contributes.menus[menu].some((m: { command: string }) => m.command === 'aspace.showInAllLanes'), menu);
    }
  });

  it('contributes the settings the address-space lens reads, and activates for its languages', () => {
    const props = manifest.contributes.configuration.properties;
    assert.deepEqual(Object.keys(props).sort(), ['aspace.codeObjects', 'aspace.ldsBudget', 'aspace.pythonPath', 'aspace.scratchBudget']);
    assert.equal(props['aspace.codeObjects'].type, 'array');
    assert.equal(props['aspace.codeObjects'].items.type, 'string');
    for (const budget of ['aspace.ldsBudget', 'aspace.scratchBudget']) assert.ok(props[budget].type.includes('integer'), budget);
    for (const language of LENS_LANGUAGES) {
      assert.ok(manifest.activationEvents.includes(`onLanguage:${language}`), language);
    }
    for (const key of ['codeObjects', 'ldsBudget', 'scratchBudget', 'pythonPath']) {
      assert.match(sources, new RegExp(`get\\('${key}'\\)`), key);
    }
  });

  it('contributes only to menus VS Code offers extensions', () => {
    // The Watch view's context menu is not one of them; VS Code drops such entries silently.
    assert.equal(manifest.contributes.menus['debug/watch/context'], undefined);
  });
});
