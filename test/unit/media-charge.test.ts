import { randomBytes, randomUUID } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import { createMediaActivities } from '../../activities/media';
import { InferenceCharge, Settlement } from '../../src/db/entities';
import { settlementRecords } from '../../src/settle/records';
import { INFERENCE_ORGANIZATION_ID } from '../../src/inference/types';
import { mediaChargeId, type MediaJobInput } from '../../src/media/types';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { openTestDatabase, type TestDatabase } from '../support/db';

/**
 * docs/security.md "Forged workflows": a media job's charge is the signed authorization's payer and
 * value at the configured price, settled to the configured revenue wallet; a job started by hand with
 * an inflated price, a one-unit authorization or another payee claims no charge at all.
 */

const randomAddress = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);
const revenue = randomAddress();
const IMAGE_PRICE = 20_000n;
const network = 'base-sepolia' as const;

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await openTestDatabase('sqlite');
});
afterAll(async () => {
  await tdb?.close();
});

/** The input the API builds for an image job of `n` images, paid with an authorization of `value`. */
function jobInput(value: bigint, n = 1): MediaJobInput {
  const payer = randomAddress();
  const nonce = `0x${randomBytes(32).toString('hex')}`;
  const authorization = { from: payer, to: randomAddress(), value: value.toString(), validAfter: '0', validBefore: '9999999999', nonce };
  return {
    workflowId: `media:${payer.toLowerCase()}:k`,
    jobId: randomUUID(),
    buyer: payer.toLowerCase(),
    kind: 'image',
    model: 'm',
    prompt: 'p',
    n,
    price: (IMAGE_PRICE * BigInt(n)).toString(),
    network,
    asset: randomAddress(),
    chargeId: mediaChargeId(network, payer, nonce),
    revenueWallet: revenue,
    settle: {
      workflowId: settleWorkflowId(network, payer, nonce),
      organizationId: INFERENCE_ORGANIZATION_ID,
      apiKeyId: '',
      route: 'eip3009',
      network,
      payer,
      amount: value.toString(),
      paymentPayload: { x402Version: 1, scheme: 'exact', network, payload: { signature: '0x', authorization } },
      paymentRequirements: {} as MediaJobInput['settle']['paymentRequirements'],
      payout: revenue,
      fee: '0',
      feeRecipient: '0x0000000000000000000000000000000000000000',
    },
    pollIntervalMs: 1000,
    jobTimeoutMs: 60_000,
  };
}

describe('claimMediaCharge takes payer, amount and payee from the signed authorization and configuration', () => {
  const media = () =>
    createMediaActivities({
      config: { env: { INFERENCE_REVENUE_WALLET: revenue, MEDIA_IMAGE_PRICE: IMAGE_PRICE.toString() } },
      db: tdb.db,
    });
  const chargeOf = (id: string) => tdb.db.em.fork().findOne(InferenceCharge, { id });

  test("the API's own input: the charge is the authorization's payer and value", async () => {
    const input = jobInput(IMAGE_PRICE * 2n, 2);
    expect(await media().claimMediaCharge(input)).toEqual({ claimed: true });
    const charge = await chargeOf(input.chargeId);
    expect({ payer: charge?.payer, amount: charge?.amount, settlementId: charge?.settlementId }).toEqual({
      payer: input.settle.payer.toLowerCase(),
      amount: (IMAGE_PRICE * 2n).toString(),
      settlementId: input.settle.workflowId,
    });
  });

  test('forged: a one-unit authorization with price = amount = 10^12, or an authorization off the configured price: no charge', async () => {
    const oneUnit = jobInput(1n);
    const inflated = { ...oneUnit, price: '1000000000000', settle: { ...oneUnit.settle, amount: '1000000000000' } };
    const offPrice = { ...jobInput(IMAGE_PRICE * 2n), n: 1 };
    for (const input of [oneUnit, inflated, offPrice]) {
      expect(await media().claimMediaCharge(input)).toEqual({ claimed: false, reason: 'invalid_exact_evm_payload_authorization_value' });
      expect(await chargeOf(input.chargeId)).toBeNull();
    }
  });

  test('forged: another payee, a fee, another charge id, settlement id or organization: no charge', async () => {
    const base = jobInput(IMAGE_PRICE);
    const forged: MediaJobInput[] = [
      { ...base, settle: { ...base.settle, payout: randomAddress() } },
      { ...base, revenueWallet: randomAddress(), settle: { ...base.settle, payout: randomAddress() } },
      { ...base, settle: { ...base.settle, fee: '1' } },
      { ...base, settle: { ...base.settle, platformFee: '1', platform: randomAddress() } },
      { ...base, settle: { ...base.settle, organizationId: randomUUID() } },
      { ...base, settle: { ...base.settle, workflowId: `${base.settle.workflowId}0` } },
      { ...base, chargeId: `${base.chargeId}0` },
      { ...base, settle: { ...base.settle, payer: randomAddress() } },
    ];
    for (const input of forged) {
      expect(await media().claimMediaCharge(input)).toEqual({ claimed: false, reason: 'invalid_payment_requirements' });
      expect(await chargeOf(input.chargeId)).toBeNull();
    }
  });
});

describe('the settlement row of an EIP-3009 payment records the signed payer and value', () => {
  test('an input whose amount and payer say otherwise (10^12 for a one-unit authorization) records what was signed', async () => {
    const input = jobInput(1n).settle;
    const forged = { ...input, amount: '1000000000000', payer: randomAddress() };
    await settlementRecords(tdb.db).record(forged, 'verifying');
    const row = await tdb.db.em.fork().findOneOrFail(Settlement, { id: input.workflowId });
    expect({ payer: row.payer, amount: row.amount }).toEqual({ payer: input.payer.toLowerCase(), amount: '1' });
  });
});
