import { rmSync } from 'node:fs';

/** Stops what the global setup started (Temporal dev server and anvil chains) and removes its files. */
export default async function globalTeardown(): Promise<void> {
  const stack: { stop(): Promise<unknown> }[] = (globalThis as any).__X402_STACK__ ?? [];
  await Promise.all(stack.map((s) => s.stop()));
  for (const f of (globalThis as any).__X402_STACK_FILES__ ?? []) rmSync(f, { force: true });
}
