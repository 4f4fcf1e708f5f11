import { RateLimits, type RateLimitConfig } from '../../src/http/rate-limit';
import { ApiError } from '../../src/errors';
import { Metrics } from '../../src/observability/metrics';
import { ROUTE_GAS, underGasBudget } from '../../src/settle/gas-budget';
import { GAS_CEILINGS } from '../../src/chains/evm/gas-ceilings';

/**
 * The per-organization gas budget (issue 39): a free key cannot make the relayer sign more than
 * GAS_BUDGET_PER_ORG per window, and a seller repeating one payment is charged once.
 */
const config = (budget: number): RateLimitConfig => ({
  RATE_LIMIT_WINDOW_SECONDS: 60,
  RATE_LIMIT_IP: 1000,
  RATE_LIMIT_AUTH_IP: 1000,
  RATE_LIMIT_KEY: 1000,
  RATE_LIMIT_PREFIX: `gas-budget-test-${Math.random()}`,
  GAS_BUDGET_PER_ORG: budget,
  GAS_BUDGET_WINDOW_SECONDS: 3600,
});
const logger = { warn: jest.fn() } as never;

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
};

test('settlements charge the route gas; past the budget 429 with Retry-After, counted and logged; other organizations unaffected', async () => {
  const rateLimits = new RateLimits(config(Number(ROUTE_GAS.eip3009! * 2n)));
  const metrics = new Metrics();
  const deps = { rateLimits, metrics, logger };
  const started = () => underGasBudget(deps, 'org-a', 'eip3009', async (onStart) => onStart('started'));
  await started();
  await started();
  const err = await refusal(started());
  expect(err.status).toBe(429);
  expect(Number(err.headers['Retry-After'])).toBeGreaterThan(0);
  expect(err.message).toMatch(/gas budget/);
  expect(await metrics.registry.getSingleMetricAsString('x402_gas_budget_exhausted_total')).toMatch(/route="eip3009"} 1/);
  // Another organization has its own budget; a route the relayer pays no gas for is not charged.
  await underGasBudget(deps, 'org-b', 'eip3009', async (onStart) => onStart('started'));
  await underGasBudget(deps, 'org-a', 'solana', async (onStart) => onStart('started'));
  await rateLimits.close();
});

test('a repeat that attaches to the running workflow, or a start that fails, is given back', async () => {
  const rateLimits = new RateLimits(config(Number(GAS_CEILINGS.settlePermit2Exact * 2n)));
  const deps = { rateLimits, metrics: new Metrics(), logger };
  const permit2 = (start: (onStart: (r: 'started' | 'attached') => void) => Promise<void>) => underGasBudget(deps, 'org', 'permit2', start);
  await permit2(async (onStart) => onStart('started'));
  // The seller repeats the same payment (attached) and a start fails: none of it is charged...
  for (let i = 0; i < 3; i++) await permit2(async (onStart) => onStart('attached'));
  await expect(
    permit2(async () => {
      throw new Error('temporal unavailable');
    }),
  ).rejects.toThrow('temporal unavailable');
  // ...so the budget still holds exactly one more new payment.
  await permit2(async (onStart) => onStart('started'));
  expect((await refusal(permit2(async (onStart) => onStart('started')))).status).toBe(429);
  await rateLimits.close();
});
