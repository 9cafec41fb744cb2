// Bundles the extension into dist/extension.js (vscode stays external), or
// with --tests transpiles sources and tests file by file into out/ for
// `node --test`.
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const args = new Set(process.argv.slice(2));

function tsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.name === 'node_modules') return []; // test/host's own packages (code-server, playwright-core)
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

if (args.has('--tests')) {
  await esbuild.build({
    entryPoints: [...tsFiles('src'), ...tsFiles('test')],
    outdir: 'out',
    outbase: '.',
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
} else {
  await esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true,
    outfile: 'dist/extension.js',
    external: ['vscode'],
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    minify: args.has('--production'),
    sourcemap: !args.has('--production'),
    logLevel: 'warning',
  });
}
