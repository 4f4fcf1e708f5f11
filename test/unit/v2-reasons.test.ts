import { readFileSync } from 'node:fs';
import { SETTLE_REASON_STATUS } from '../../src/schemes/reasons';
import { v2Reason, V2_REASON_NAMES } from '../../src/x402/v2-reasons';

/** Every reason string the v2 SDK's facilitator of that family can answer (read from its build). */
function sdkReasons(file: string): Set<string> {
  const text = readFileSync(require.resolve(file), 'utf8');
  return new Set([...text.matchAll(/var Err\w* = "([a-z0-9_]+)"/g)].map((m) => m[1]));
}

describe('v1 reasons in the v2 SDKs words', () => {
  test.each([
    ['evm', ['@x402/evm/exact/facilitator', '@x402/evm/upto/facilitator']],
    ['svm', ['@x402/svm/exact/facilitator']],
  ] as const)('every %s name is one our reasons have and the SDK answers', (family, files) => {
    const known = new Set(files.flatMap((f) => [...sdkReasons(f)]));
    expect(known.size).toBeGreaterThan(20);
    for (const [ours, theirs] of Object.entries(V2_REASON_NAMES[family])) {
      expect(Object.hasOwn(SETTLE_REASON_STATUS, ours)).toBe(true);
      expect([ours, known.has(theirs)]).toEqual([ours, true]);
    }
  });

  test('mapped by the network family; a reason without a v2 name passes unchanged', () => {
    expect(v2Reason('insufficient_funds', 'eip155:84532')).toBe('invalid_exact_evm_insufficient_balance');
    expect(v2Reason('insufficient_funds', 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1')).toBe('insufficient_funds');
    expect(v2Reason('invalid_network', 'solana-devnet')).toBe('invalid_exact_svm_network_mismatch');
    expect(v2Reason('amount_too_low', 'eip155:8453')).toBe('amount_too_low');
    expect(v2Reason('toString', 'eip155:8453')).toBe('toString');
  });
});
