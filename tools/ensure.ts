import { GO_TOOLS, TEST_TOOLS, ensureGoTool } from './go-tools';

/**
 * `npm run tools [-- <name> ...]`: finds or builds the named Go tools (tools/go-tools.ts), by default
 * the ones `npm test` needs. `npm test` runs it first, so a fresh machine's builds are a step of their
 * own, not a test's `beforeAll`. One at a time: a build takes both cores.
 */
async function main(names: string[]): Promise<void> {
  const unknown = names.filter((n) => !GO_TOOLS[n]);
  if (unknown.length) throw new Error(`unknown tool ${unknown.join(', ')}; known: ${Object.keys(GO_TOOLS).join(', ')}`);
  for (const name of names) console.log(`${name}: ${await ensureGoTool(GO_TOOLS[name]!)}`);
}

main(process.argv.length > 2 ? process.argv.slice(2) : TEST_TOOLS).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
