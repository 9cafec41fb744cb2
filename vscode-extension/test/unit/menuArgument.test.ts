import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { expressionFromMenuArgument } from '../../src/menuArgument';

describe('expressionFromMenuArgument', () => {
  it('reads the Variables view context, preferring evaluateName', () => {
    assert.deepEqual(
      expressionFromMenuArgument({ sessionId: 's1', container: {}, variable: { name: 'x', evaluateName: 'p->x', value: '1' } }),
      { expression: 'p->x', sessionId: 's1' },
    );
    assert.deepEqual(expressionFromMenuArgument({ sessionId: 's1', variable: { name: 'i' } }), { expression: 'i', sessionId: 's1' });
  });

  it('reads Watch view elements', () => {
    assert.deepEqual(expressionFromMenuArgument({ name: 'a[i] * 2', value: '4' }), { expression: 'a[i] * 2', sessionId: undefined });
    assert.deepEqual(expressionFromMenuArgument({ name: '[0]', evaluateName: 'a[0]' }), { expression: 'a[0]', sessionId: undefined });
  });

  it('gives nothing for palette invocations or nameless items', () => {
    assert.equal(expressionFromMenuArgument(undefined), undefined);
    assert.equal(expressionFromMenuArgument('x'), undefined);
    assert.equal(expressionFromMenuArgument({ variable: { name: '' } }), undefined);
  });
});
