import { ensureTemporalCli } from './cli';

/**
 * `npm run temporal:cli`: finds the Temporal CLI, or builds it from its Go module once (temporal/build-cli.sh).
 * `npm test` runs it first, so a fresh machine's build is a step of its own, not a test's `beforeAll`.
 */
ensureTemporalCli().then(
  (path) => console.log(`Temporal CLI: ${path}`),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
