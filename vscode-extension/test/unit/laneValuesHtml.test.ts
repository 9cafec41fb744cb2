import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { escapeHtml, renderLaneValuesPage } from '../../src/laneValuesHtml';
import { summarizeLaneValues } from '../../src/majority';

describe('lane values page', () => {
  const summary = summarizeLaneValues([
    { lane: 0, active: true, value: '1', type: 'int' },
    { lane: 1, active: true, value: '<2>', type: 'int' },
    { lane: 2, active: true, value: '1', type: 'int' },
    { lane: 3, active: false, value: '1', type: 'int' },
  ]);

  it('marks differing, inactive and focused lanes', () => {
    const html = renderLaneValuesPage({ expression: 'x', summary, focusLane: 2, cspSource: 'vscode-webview:' });
    assert.match(html, /<tr class="active differs" data-lane="1">/);
    assert.match(html, /<tr class="inactive" data-lane="3">.*inactive<\/td><\/tr>/);
    assert.match(html, /<tr class="active focus" data-lane="2"><td class="lane">2 ◀/);
    assert.match(html, /2 distinct values across 3 active lanes; 1 differ/);
  });

  it('escapes values and expressions', () => {
    const html = renderLaneValuesPage({ expression: 'a<b && "c"', summary, cspSource: 'x' });
    assert.ok(html.includes('&lt;2&gt;'));
    assert.ok(!html.includes('<2>'));
    assert.ok(html.includes('a&lt;b &amp;&amp; &quot;c&quot;'));
    assert.equal(escapeHtml(`'`), '&#39;');
  });

  it('shows errors instead of a table', () => {
    const html = renderLaneValuesPage({ expression: 'y', error: 'no symbol <y>', cspSource: 'x' });
    assert.match(html, /class="error">no symbol &lt;y&gt;/);
    assert.ok(!html.includes('<table>'));
  });

  it('says when no value is more common than the others', () => {
    const tie = summarizeLaneValues([0, 1, 2, 3].map((lane) => ({ lane, active: true, value: String(lane % 2), type: 'int' })));
    const html = renderLaneValuesPage({ expression: 'tx', summary: tie, cspSource: 'x' });
    assert.match(html, /2 distinct values across 4 active lanes; no value is more common than the others \(2 lanes each at most\)/);
    assert.ok(!html.includes('differs"'), 'no lane is marked');
    const distinct = summarizeLaneValues([0, 1, 2].map((lane) => ({ lane, active: true, value: String(lane), type: 'int' })));
    const one = renderLaneValuesPage({ expression: 'tx', summary: distinct, cspSource: 'x' });
    assert.match(one, /\(1 lane each at most\)/);
  });

  it('says when all active lanes agree', () => {
    const same = summarizeLaneValues([
      { lane: 0, active: true, value: '3', type: 'int' },
      { lane: 1, active: true, value: '3', type: 'int' },
    ]);
    assert.match(renderLaneValuesPage({ expression: 'z', summary: same, cspSource: 'x' }), /All 2 active lanes agree/);
  });
});
