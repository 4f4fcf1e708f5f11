const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Integration shards of about equal length (`npm run test:integration` runs them side by side, each
 * with its own stack): the files go, longest first, to the shard with the least so far. Lengths are
 * seconds measured on the two-core CI machine (CI's log lists them: test/support/durations-reporter.js);
 * a file not listed counts as DEFAULT_SECONDS. Only the split depends on them, never a result.
 */
const SECONDS = {
  'inference-chat': 71,
  'settle-durability': 60,
  'media-durability': 49,
  'settle-crosschain-operator': 44,
  'hostile-input': 44,
  'topup-durability': 42,
  'relayer-hygiene': 41,
  'settle-crosschain': 41,
  'settle-operator': 41,
  'topup-crosschain': 40,
  media: 38,
  'settle-batched': 35,
  permit: 33,
  'settle-spec-paths': 32,
  'no-secrets': 29,
  'topup-operator': 27,
  withdrawal: 26,
  'worker-rpc-errors': 25,
  'settle-permit2': 24,
  'stuck-payments': 24,
  'settle-solana': 22,
  'settle-marketplace-fee': 22,
  'forged-workflows': 20,
  tracing: 19,
  'temporal-restart': 19,
  topup: 18,
  'x402-settlement-pending': 15,
  'settle-smart-wallet': 13,
  'relayer-unknown-outcomes': 12,
  'usdc-behaviour': 11,
  settle: 11,
  'x402-v2-permit2': 11,
  'settle-rejections': 10,
  'settle-lanes': 8,
};
const DEFAULT_SECONDS = 10;

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
