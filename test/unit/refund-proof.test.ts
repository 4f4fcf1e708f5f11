import { randomBytes } from 'node:crypto';
import {
  encodeAbiParameters,
  encodeEventTopics,
  getAddress,
  TransactionReceiptNotFoundError,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import { buildNetworkTable, type EvmNetworkId } from '../../src/chains/networks';
import type { Relayer } from '../../src/chains/evm/relayer';
import { InferenceCharge, RelayerTransaction, Settlement } from '../../src/db/entities';
import { INFERENCE_ORGANIZATION_ID } from '../../src/inference/types';
import { createRefundActivities } from '../../activities/refund';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * docs/security.md "Forged workflows": a refund pays back only what the settlement transaction's
 * receipt proves the payer paid into the revenue wallet, however the ledger rows came to say more.
 * The receipts here are built log by log, as the token emits them.
 */

const randomAddress = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);
const networks = buildNetworkTable({});
const network: EvmNetworkId = 'base-sepolia';
const usdc = networks.get(network)!.usdc! as Address;
const facilitator = networks.get(network)!.facilitator! as Address;

const log = (address: Address, eventName: 'Transfer' | 'AuthorizationUsed', args: Record<string, unknown>, data: Hex = '0x') => ({
  address,
  topics: encodeEventTopics({ abi: tokenAbi, eventName, args } as never),
  data,
  blockHash: `0x${'11'.repeat(32)}`,
  blockNumber: 1n,
  logIndex: 0,
  transactionHash: `0x${'ab'.repeat(32)}`,
  transactionIndex: 0,
  removed: false,
});
const transfer = (from: Address, to: Address, value: bigint, token = usdc) =>
  log(token, 'Transfer', { from, to }, encodeAbiParameters([{ type: 'uint256' }], [value]));
const receiptOf = (logs: ReturnType<typeof log>[], status: 'success' | 'reverted' = 'success') =>
  ({ status, logs }) as unknown as TransactionReceipt;

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await openTestDatabase('sqlite');
});
afterAll(async () => {
  await tdb?.close();
});

describe('sendRefund moves money only on the proof of the settlement receipt', () => {
  const revenue = randomAddress();
  const CHARGED = 10n ** 12n;

  /** A charge and its settled settlement whose rows say CHARGED (as a forged media job recorded them). */
  async function chargeOf(): Promise<{ chargeId: string; payer: Address; nonce: Hex }> {
    const payer = randomAddress();
    const nonce = `0x${randomBytes(32).toString('hex')}` as Hex;
    const chargeId = `media:${network}:${payer.toLowerCase()}:${nonce}`;
    const settlementId = `settle:${network}:${payer.toLowerCase()}:${nonce}`;
    const em = tdb.db.em.fork();
    em.create(Settlement, {
      id: settlementId,
      organizationId: INFERENCE_ORGANIZATION_ID,
      apiKeyId: '',
      route: 'eip3009',
      network,
      payer: payer.toLowerCase(),
      recipient: revenue.toLowerCase(),
      amount: CHARGED.toString(),
      transaction: `0x${'ab'.repeat(32)}`,
      state: 'settled',
    });
    em.create(InferenceCharge, {
      id: chargeId,
      settlementId,
      network,
      payer: payer.toLowerCase(),
      amount: CHARGED.toString(),
      model: 'image:m',
      state: 'refund_pending',
    });
    await em.flush();
    return { chargeId, payer, nonce };
  }

  /** The revenue wallet's signer over a chain whose receipt read answers `receipt`; signing stops at the signature. */
  const activitiesWith = (receipt: () => Promise<TransactionReceipt>, used: string[]) => {
    const signer = {
      address: revenue,
      network: networks.get(network)!,
      find: async () => null,
      account: {
        signTypedData: async () => {
          used.push('sign');
          throw new Error('reached signing');
        },
      },
      client: { getTransactionReceipt: receipt, readContract: async () => 'USDC' },
      send: async () => {
        used.push('send');
        throw new Error('sent');
      },
    } as unknown as Relayer;
    return createRefundActivities({
      config: { RECEIPT_WAIT_MS: 1000 },
      db: tdb.db,
      networks,
      relayerFor: () => signer,
      signerFor: (role: string) => (role === 'revenue' ? signer : undefined),
    } as unknown as Parameters<typeof createRefundActivities>[0]);
  };
  const refund = (chargeId: string) =>
    ({ chargeId, network, reason: 'provider failed' }) as Parameters<ReturnType<typeof createRefundActivities>['sendRefund']>[0];

  test('the receipt shows one unit paid for a charge recorded as 10^12: not owed, nothing signed', async () => {
    const { chargeId, payer, nonce } = await chargeOf();
    const used: string[] = [];
    const oneUnit = receiptOf([
      log(usdc, 'AuthorizationUsed', { authorizer: payer, nonce }),
      transfer(payer, facilitator, 1n),
      transfer(facilitator, revenue, 1n),
    ]);
    await expect(activitiesWith(async () => oneUnit, used).sendRefund(refund(chargeId))).rejects.toMatchObject({
      type: 'RefundNotOwed',
      nonRetryable: true,
      message: expect.stringContaining('moved 1 from the payer and 1 to the revenue wallet'),
    });
    expect(used).toEqual([]);
    expect(await tdb.db.em.fork().count(RelayerTransaction, {})).toBe(0);
  });

  test('a reverted receipt, another authorization, another token, or a payment to another wallet: not owed, nothing signed', async () => {
    const { chargeId, payer, nonce } = await chargeOf();
    const other = `0x${'cd'.repeat(32)}` as Hex;
    const fake = randomAddress();
    const paidWith = (o: { nonce?: Hex; token?: Address; to?: Address }) => [
      log(o.token ?? usdc, 'AuthorizationUsed', { authorizer: payer, nonce: o.nonce ?? nonce }),
      transfer(payer, facilitator, CHARGED, o.token),
      transfer(facilitator, o.to ?? revenue, CHARGED, o.token),
    ];
    const answers: (() => Promise<TransactionReceipt>)[] = [
      async () => receiptOf(paidWith({}), 'reverted'),
      async () => receiptOf(paidWith({ nonce: other })),
      async () => receiptOf(paidWith({ token: fake })),
      async () => receiptOf(paidWith({ to: randomAddress() })),
    ];
    const used: string[] = [];
    for (const answer of answers) {
      await expect(activitiesWith(answer, used).sendRefund(refund(chargeId))).rejects.toMatchObject({
        type: 'RefundNotOwed',
        nonRetryable: true,
      });
    }
    expect(used).toEqual([]);
  });

  test('an RPC call without an answer, or without a receipt, is retried, not taken as "not owed"; the proven payment goes on to signing', async () => {
    const { chargeId, payer, nonce } = await chargeOf();
    const used: string[] = [];
    const down = activitiesWith(async () => {
      throw new Error('fetch failed');
    }, used);
    await expect(down.sendRefund(refund(chargeId))).rejects.toThrow('fetch failed');
    // No receipt is unknown too (a lagging replica): asked again, never "not owed".
    const lagging = activitiesWith(async () => {
      throw new TransactionReceiptNotFoundError({ hash: `0x${'ab'.repeat(32)}` });
    }, used);
    await expect(lagging.sendRefund(refund(chargeId))).rejects.toBeInstanceOf(TransactionReceiptNotFoundError);
    expect(used).toEqual([]);
    const paid = receiptOf([
      log(usdc, 'AuthorizationUsed', { authorizer: payer, nonce }),
      transfer(payer, facilitator, CHARGED),
      transfer(facilitator, revenue, CHARGED),
    ]);
    await expect(activitiesWith(async () => paid, used).sendRefund(refund(chargeId))).rejects.toThrow('reached signing');
    expect(used).toEqual(['sign']);
  });
});
