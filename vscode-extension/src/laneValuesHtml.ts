// The "Show in all lanes" page: one row per lane; lanes whose value differs
// from the active majority and inactive lanes are marked.

import type { LaneValueSummary } from './majority';

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

export interface LaneValuesPage {
  expression: string;
  waveName?: string;
  focusLane?: number;
  summary?: LaneValueSummary;
  error?: string;
  /** Content-Security-Policy source of the webview (webview.cspSource). */
  cspSource: string;
}

function headline(page: LaneValuesPage): string {
  const s = page.summary;
  if (s === undefined) return '';
  if (s.activeCount === 0) return 'No lane is active.';
  if (s.distinctActiveValues === 1) {
    return `All ${s.activeCount} active lanes agree: <code>${escapeHtml(s.majority ?? '')}</code>`;
  }
  if (s.majority === undefined) {
    return (
      `${s.distinctActiveValues} distinct values across ${s.activeCount} active lanes; ` +
      `no value is more common than the others (${s.majorityCount === 1 ? '1 lane' : `${s.majorityCount} lanes`} each at most).`
    );
  }
  const differing = s.activeCount - s.majorityCount;
  return (
    `${s.distinctActiveValues} distinct values across ${s.activeCount} active lanes; ` +
    `${differing} differ from the majority <code>${escapeHtml(s.majority ?? '')}</code> (${s.majorityCount} lanes).`
  );
}

export function renderLaneValuesPage(page: LaneValuesPage): string {
  const rows = (page.summary?.rows ?? [])
    .map((row) => {
      const classes = [row.active ? 'active' : 'inactive', row.differs ? 'differs' : '', row.lane === page.focusLane ? 'focus' : '']
        .filter((c) => c !== '')
        .join(' ');
      const mark = !row.active ? 'inactive' : row.differs ? 'differs' : '';
      return (
        `<tr class="${classes}" data-lane="${row.lane}">` +
        `<td class="lane">${row.lane}${row.lane === page.focusLane ? ' ◀' : ''}</td>` +
        `<td class="value"><code>${escapeHtml(row.value)}</code></td>` +
        `<td class="type">${escapeHtml(row.type)}</td>` +
        `<td class="mark">${mark}</td></tr>`
      );
    })
    .join('\n');
  const body =
    page.error !== undefined
      ? `<p class="error">${escapeHtml(page.error)}</p>`
      : `<p>${headline(page)}</p>
<table>
<thead><tr><th>Lane</th><th>Value</th><th>Type</th><th></th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${page.cspSource} 'unsafe-inline';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(page.expression)} in all lanes</title>
<style>
body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); }
code { font-family: var(--vscode-editor-font-family); }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 1px 12px 1px 4px; }
tr.inactive { opacity: 0.5; }
tr.differs td { background: var(--vscode-diffEditor-insertedTextBackground, rgba(255, 200, 0, 0.2)); }
tr.focus td.lane { font-weight: bold; }
td.mark { color: var(--vscode-descriptionForeground); font-style: italic; }
.error { color: var(--vscode-errorForeground); }
</style>
</head>
<body>
<h3><code>${escapeHtml(page.expression)}</code>${page.waveName ? ` — ${escapeHtml(page.waveName)}` : ''}</h3>
${body}
</body>
</html>`;
}
