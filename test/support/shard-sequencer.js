const Sequencer = require('@jest/test-sequencer').default;
const { basename } = require('node:path');

/**
 * Integration shards of about equal length (`npm run test:integration` runs them side by side, each
 * with its own stack): the files go, longest first, to the shard with the least so far. Lengths are
 * seconds measured on the two-core CI machine (CI's log lists them: test/support/durations-reporter.js);
 * a file not listed counts as DEFAULT_SECONDS. Only the split depends on them, never a result.
 */
const SECONDS = {
  'settle-crosschain-operator': 70,
  'settle-operator': 90,
  'settle-durability': 110,
  'stuck-payments': 50,
  'relayer-hygiene': 55,
  'topup-operator': 60,
  'settle-batched': 55,
  'inference-chat': 45,
  'settle-crosschain': 45,
  'topup-crosschain': 45,
  permit: 40,
  'settle-solana': 40,
  tracing: 40,
  'topup-durability': 38,
  'settle-spec-paths': 35,
  'settle-permit2': 35,
  media: 35,
  withdrawal: 30,
  'settle-marketplace-fee': 30,
  settle: 31,
  'media-durability': 35,
  'hostile-input': 26,
  'worker-rpc-errors': 25,
  'relayer-unknown-outcomes': 20,
};
const DEFAULT_SECONDS = 12;

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
