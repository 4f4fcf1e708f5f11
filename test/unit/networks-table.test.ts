import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVM_NETWORK_IDS, SOLANA_NETWORK_IDS } from '../../src/chains/networks';
import { DEVNET_TESTED, networkRows, README_PATH, readmeWithTable } from '../../tools/networks-table';

/**
 * The README's network table is the one tools/networks-table.ts generates from the code (issue 40):
 * a rule changed in the code without `npm run docs:networks` fails here, so no rule is written twice.
 */
describe('the README network table', () => {
  test('is the generated one (run `npm run docs:networks` after changing a network rule)', () => {
    const readme = readFileSync(README_PATH, 'utf8');
    expect(readme).toBe(readmeWithTable(readme));
  });

  test('has one row for every network id of the spec', () => {
    expect(networkRows().map((r) => r.id)).toEqual([...EVM_NETWORK_IDS, ...SOLANA_NETWORK_IDS]);
  });

  test('every "tested on the devnet" names an integration test that uses the network', () => {
    const claims = Object.entries(DEVNET_TESTED).flatMap(([id, caps]) => Object.values(caps!).map((file) => [id, file] as const));
    expect(claims.length).toBeGreaterThan(5);
    for (const [id, file] of claims) {
      const path = join(__dirname, '..', 'integration', file);
      expect([id, file, existsSync(path)]).toEqual([id, file, true]);
      expect([id, file, readFileSync(path, 'utf8').includes(`'${id}'`)]).toEqual([id, file, true]);
    }
  });
});
