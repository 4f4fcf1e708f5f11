#!/usr/bin/env node
/**
 * Transpiles the service's TypeScript (the folders a spawned process loads) into `outDir` with swc, the
 * transformer Jest already uses (.swcrc): about a second for the whole tree. Integration tests start
 * workers, APIs and the ops CLI from there (devnet/process.ts entryArgs, SERVICE_DIST_DIR) instead of
 * through tsx, which compiles every module again in every process. Types are checked by `npm run lint`
 * and `npm run typecheck`, not here. `node scripts/compile-service.js <outDir>` by hand.
 */
const { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } = require('node:fs');
const { dirname, join, relative } = require('node:path');
const { transformSync } = require('@swc/core');

const ROOT = join(__dirname, '..');
const FOLDERS = ['src', 'workflows', 'activities', 'workers', 'ops', 'devnet', 'temporal'];
const SWC = JSON.parse(readFileSync(join(ROOT, '.swcrc'), 'utf8'));

function* typescriptFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typescriptFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Writes `<outDir>/<folder>/…/<file>.js` for every TypeScript file, and links node_modules beside them. */
function compileService(outDir) {
  let files = 0;
  for (const folder of FOLDERS) {
    for (const file of typescriptFiles(join(ROOT, folder))) {
      const { code } = transformSync(readFileSync(file, 'utf8'), { ...SWC, filename: file, sourceMaps: 'inline', swcrc: false });
      const out = join(outDir, relative(ROOT, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(out, code);
      files++;
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(outDir, 'node_modules')); // imports resolve as from the repo
  return files;
}

module.exports = { compileService };

if (require.main === module) {
  const outDir = process.argv[2];
  if (!outDir) throw new Error('usage: node scripts/compile-service.js <outDir>');
  const started = Date.now();
  console.log(`compiled ${compileService(outDir)} files into ${outDir} in ${Date.now() - started} ms`);
}
