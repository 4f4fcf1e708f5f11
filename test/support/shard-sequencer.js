const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Integration shards of about equal length (`npm run test:integration` runs them side by side, each
 * with its own stack): the files go, longest first, to the shard with the least so far. Lengths are
 * seconds measured on the two-core CI machine (CI's log lists them: test/support/durations-reporter.js);
 * a file not listed counts as DEFAULT_SECONDS. Only the split depends on them, never a result.
 */
const SECONDS = {
  'settle-durability': 61,
  'inference-chat': 59,
  'relayer-hygiene': 54,
  'media-durability': 53,
  'settle-smart-wallet': 45,
  'settle-crosschain-operator': 43,
  'settle-crosschain': 41,
  'settle-operator': 39,
  'topup-durability': 38,
  'hostile-input': 38,
  'topup-crosschain': 36,
  'no-secrets': 30,
  'settle-spec-paths': 28,
  'settle-batched': 28,
  permit: 28,
  'topup-operator': 26,
  withdrawal: 25,
  media: 25,
  'worker-rpc-errors': 24,
  tracing: 20,
  'stuck-payments': 19,
  'settle-solana': 19,
  topup: 18,
  'settle-marketplace-fee': 18,
  'settle-permit2': 17,
  'relayer-unknown-outcomes': 17,
  'temporal-restart': 15,
  'forged-workflows': 15,
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
