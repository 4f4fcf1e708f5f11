const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Integration shards of about equal length (`npm run test:integration` runs them side by side, each
 * with its own stack): the files go, longest first, to the shard with the least so far. Lengths are
 * seconds measured on the two-core CI machine (CI's log lists them: test/support/durations-reporter.js);
 * a file not listed counts as DEFAULT_SECONDS. Only the split depends on them, never a result.
 */
const SECONDS = {
  'inference-chat': 129,
  'settle-crosschain-fast': 75,
  'settle-crosschain-smart-wallet': 67,
  'settle-crosschain-operator': 55,
  'media-durability': 47,
  'relayer-hygiene': 38,
  'topup-durability': 38,
  'settle-operator': 34,
  'topup-crosschain': 34,
  'settle-crosschain': 31,
  'settle-durability': 30,
  'settle-batched': 27,
  'settle-spec-paths': 26,
  permit: 26,
  'no-secrets': 25,
  'topup-operator': 23,
  media: 21,
  withdrawal: 21,
  'hostile-input': 20,
  'worker-rpc-errors': 19,
  'forged-workflows': 18,
  'settle-solana': 17,
  'stuck-payments': 16,
  'settle-permit2': 14,
  'relayer-unknown-outcomes': 12,
  'settle-marketplace-fee': 12,
  'temporal-restart': 10,
  'x402-settlement-pending': 10,
  'settle-smart-wallet': 9,
  tracing: 9,
  topup: 9,
};
const DEFAULT_SECONDS = 5;

class ShardSequencer extends Sequencer {
  shard(tests, { shardIndex, shardCount }) {
    const seconds = (t) => SECONDS[basename(t.path, '.test.ts')] ?? DEFAULT_SECONDS;
    const sorted = [...tests].sort((a, b) => seconds(b) - seconds(a) || a.path.localeCompare(b.path));
    const load = Array(shardCount).fill(0);
    const picked = [];
    for (const t of sorted) {
      const i = load.indexOf(Math.min(...load));
      load[i] += seconds(t);
      if (i === shardIndex - 1) picked.push(t);
    }
    return picked;
  }

  /** Longest first within a shard too, so a slow file never starts last. */
  sort(tests) {
    const seconds = (t) => SECONDS[basename(t.path, '.test.ts')] ?? DEFAULT_SECONDS;
    return [...tests].sort((a, b) => seconds(b) - seconds(a) || a.path.localeCompare(b.path));
  }
}

module.exports = ShardSequencer;
