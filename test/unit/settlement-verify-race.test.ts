import { createSettlementActivities, type SettlementActivityDeps } from '../../activities/settlement';
import { buildNetworkTable } from '../../src/chains/networks';
import { Settlement } from '../../src/db/entities';
import { solana } from '../../src/schemes/solana';
import type { SettlementInput } from '../../src/settle/types';
import { openTestDatabase, type TestDatabase } from '../support/db';

/**
 * Two attempts of one settlement's local activity can overlap: a workflow task that timed out is
 * given to a worker again, which runs the activity again while the first attempt still runs. The
 * second attempt reads the write-ahead record beside verification; the first may write it and
 * broadcast in between, and the chain then shows the buyer's nonce used by our own transaction.
 */

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await openTestDatabase('sqlite');
});
afterAll(async () => {
  await tdb?.close();
});
afterEach(() => jest.restoreAllMocks());

const payout = '0x00000000000000000000000000000000000000aa';
const inputOf = (workflowId: string) =>
  ({
    route: 'solana',
    workflowId,
    organizationId: 'org',
    apiKeyId: 'key',
    network: 'solana-devnet',
    payer: 'payer',
    amount: '1000',
    payout,
    fee: '0',
    feeRecipient: payout,
  }) as unknown as SettlementInput;
const refusal = { isValid: false, invalidReason: 'invalid_exact_svm_payload_transaction_simulation_failed', payer: 'payer' } as const;
const activities = () =>
  createSettlementActivities({
    config: { MAINNETS_ENABLED: false, env: 'development' },
    db: tdb.db,
    networks: buildNetworkTable({}),
    // The gate lets a payment to the top-up relayer through whatever the network: it keeps the
    // network table out of this test.
    topUpRelayer: payout,
  } as unknown as SettlementActivityDeps);

test('a verdict of "nonce used" is not recorded when the record of our own transaction appeared meanwhile', async () => {
  const input = inputOf('settle:solana-devnet:payer:sig-race');
  const scheme = solana;
  // First read (beside verification): no record yet. Second read: the concurrent attempt wrote it.
  const sent = jest.spyOn(scheme, 'sent').mockResolvedValueOnce(false).mockResolvedValueOnce(true);
  jest.spyOn(scheme, 'verify').mockResolvedValue(refusal);

  await expect(activities().verifyPayment(input)).resolves.toEqual({ isValid: true });
  expect(sent).toHaveBeenCalledTimes(2);
  expect(await tdb.db.em.fork().count(Settlement, { id: input.workflowId })).toBe(0);
});

test('with no record after the verdict, the rejection is recorded', async () => {
  const input = inputOf('settle:solana-devnet:payer:sig-rejected');
  const scheme = solana;
  jest.spyOn(scheme, 'sent').mockResolvedValue(false);
  jest.spyOn(scheme, 'verify').mockResolvedValue(refusal);

  const outcome = await activities().verifyPayment(input);
  expect(outcome).toMatchObject({ isValid: false, response: { success: false, errorReason: refusal.invalidReason } });
  expect(await tdb.db.em.fork().count(Settlement, { id: input.workflowId })).toBe(1);
});
