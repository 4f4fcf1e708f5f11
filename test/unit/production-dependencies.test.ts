import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// What `npm ci --omit=dev` installs, read from the committed lockfile: packages we must never ship.
const lock = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean }>;
};
const production = Object.entries(lock.packages)
  .filter(([path, p]) => path !== '' && !p.dev)
  .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));

describe('production dependency tree', () => {
  it.each([
    ['bigint-buffer', 'CVE-2025-3194; came in through @solana/spl-token'],
    ['ethers', 'viem is our only EVM library'],
    ['siwe', 'sign-in uses viem/siwe'],
    ['@solana/spl-token', 'pulls bigint-buffer'],
  ])('has no %s (%s)', (name) => {
    expect(production).not.toContain(name);
  });
});
