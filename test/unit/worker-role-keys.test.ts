import { randomBytes } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import { buildNetworkTable, type EvmNetworkId } from '../../src/chains/networks';
import type { Relayer } from '../../src/chains/evm/relayer';
import { InferenceCharge, RelayerTransaction, Settlement } from '../../src/db/entities';
import { INFERENCE_ORGANIZATION_ID } from '../../src/inference/types';
import type { TopUpInput } from '../../src/topup/types';
import type { WithdrawalInput } from '../../src/gateway/withdrawal-types';
import { createRefundActivities } from '../../activities/refund';
import { createTopUpActivities } from '../../activities/topup';
import { createWithdrawalActivities } from '../../activities/withdrawal';
import type { SignerRole } from '../../activities/signers';
import { openTestDatabase, type TestDatabase } from '../support/db';

/**
 * docs/security.md "Roles and keys": the worker signs as the wallet an activity names (a refund as the
 * revenue wallet, a deposit as the top-up relayer, a withdrawal as the depositor). Without that
 * wallet's key the activity is retried or refused, and never falls back to another key: here every
 * other signer the worker holds is a relayer that records any use, and none may be touched.
 */

const randomAddress = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);

/** A stand-in Relayer: any property read (send, account, find, client, ...) but its `address` is recorded and throws. */
function recordingRelayer(name: string, touched: string[], address?: Address): Relayer {
  return new Proxy({} as Relayer, {
    get(_target, key) {
      if (key === 'address' && address) return address;
      touched.push(`${name}.${String(key)}`);
      throw new Error(`${name}.${String(key)} used`);
    },
  });
}

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await openTestDatabase('sqlite');
});
afterAll(async () => {
  await tdb?.close();
});

describe('a worker without a role key never signs that role with another key', () => {
  const networks = buildNetworkTable({});
  const network: EvmNetworkId = 'base-sepolia';

  test('refund: no revenue-wallet key -> retryable RefundSignerMismatch; the relayer is never touched, nothing recorded or signed', async () => {
    const revenueWallet = randomAddress();
    const payer = randomAddress();
    const chargeId = `chat:${network}:${payer}:${randomBytes(8).toString('hex')}`;
    const settlementId = `settle:${network}:${payer.toLowerCase()}:0x${randomBytes(32).toString('hex')}`;
    const em = tdb.db.em.fork();
    em.create(Settlement, {
      id: settlementId,
      organizationId: INFERENCE_ORGANIZATION_ID,
      apiKeyId: '',
      route: 'eip3009',
      network,
      payer,
      recipient: revenueWallet,
      amount: '1000',
      transaction: `0x${'ab'.repeat(32)}`,
      state: 'settled',
    });
    em.create(InferenceCharge, { id: chargeId, settlementId, network, payer, amount: '1000', model: 'm', state: 'refund_pending' });
    await em.flush();

    const touched: string[] = [];
    const asked: string[] = [];
    const deps = (signer: Relayer | undefined) =>
      ({
        config: { RECEIPT_WAIT_MS: 1000, TOPUP_DEPOSITOR_CONTRACT: randomAddress() },
        db: tdb.db,
        networks,
        relayerFor: () => recordingRelayer('relayer', touched),
        signerFor: (role: SignerRole, id: EvmNetworkId) => {
          asked.push(`${role}:${id}`);
          return signer;
        },
      }) as unknown as Parameters<typeof createRefundActivities>[0];
    const input = { chargeId, network, reason: 'provider failed' } as Parameters<
      ReturnType<typeof createRefundActivities>['sendRefund']
    >[0];

    // Precondition: with the revenue wallet's key, this very refund goes to that wallet's signer.
    const withKey: string[] = [];
    await expect(createRefundActivities(deps(recordingRelayer('revenue', withKey))).sendRefund(input)).rejects.toThrow(/^revenue\./);
    expect(withKey.length).toBeGreaterThan(0);
    expect(asked).toEqual([`revenue:${network}`]);

    // Without it: refused with a retryable failure, and no other key is used.
    asked.length = 0;
    await expect(createRefundActivities(deps(undefined)).sendRefund(input)).rejects.toMatchObject({
      type: 'RefundSignerMismatch',
      nonRetryable: false,
      message: `this worker holds no key for the revenue wallet on ${network}`,
    });
    expect(asked).toEqual([`revenue:${network}`]);
    expect(touched).toEqual([]);
    expect(await tdb.db.em.fork().count(RelayerTransaction, {})).toBe(0);
    const charge = await tdb.db.em.fork().findOneOrFail(InferenceCharge, { id: chargeId });
    expect({ state: charge.state, refundTx: charge.refundTx ?? null }).toEqual({ state: 'refund_pending', refundTx: null });
  });

  test('top-up deposit: no key for the top-up relayer -> retryable WrongRelayer; the relayer is never touched', async () => {
    const topUpRelayer = randomAddress();
    const touched: string[] = [];
    const withKey: string[] = [];
    const activitiesWith = (signer: Relayer | undefined) =>
      createTopUpActivities({
        config: { RECEIPT_WAIT_MS: 1000, TOPUP_DEPOSITOR_CONTRACT: randomAddress() },
        db: tdb.db,
        networks,
        relayerFor: () => recordingRelayer('relayer', touched),
        signerFor: (role, id) => (role === 'topupRelayer' && id === 'base' ? signer : undefined),
      });
    const activities = activitiesWith(undefined);
    const input = {
      workflowId: 'topup:m:x:y',
      relayer: topUpRelayer,
      buyer: randomAddress(),
      merchantContract: randomAddress(),
      netAmount: '1000000',
    } as unknown as TopUpInput;
    // Precondition: with the top-up relayer's key, the deposit goes to that wallet's signer.
    await expect(activitiesWith(recordingRelayer('topup', withKey, topUpRelayer)).submitDeposit(input)).rejects.toThrow('topup.find used');
    // A top-up that names another wallet as its relayer (a workflow started by hand) is refused, not retried.
    const elsewhere = { ...input, relayer: randomAddress() };
    await expect(activitiesWith(recordingRelayer('topup', withKey, topUpRelayer)).submitDeposit(elsewhere)).rejects.toMatchObject({
      type: 'WrongRelayer',
      nonRetryable: true,
    });
    expect(withKey).toEqual(['topup.find']);
    for (const step of [activities.ensureMerchantAllowance, activities.submitDeposit]) {
      await expect(step(input)).rejects.toMatchObject({
        type: 'WrongRelayer',
        nonRetryable: false,
        message: 'this worker holds no key for the top-up relayer',
      });
    }
    expect(touched).toEqual([]);
  });

  test('withdrawal: signs only as the configured depositor, only to the configured gateway wallet and token; nothing else is touched', async () => {
    const depositor = randomAddress();
    const touched: string[] = [];
    const activitiesWith = (signer: Relayer | undefined) =>
      createWithdrawalActivities({
        config: { RECEIPT_WAIT_MS: 1000, MAINNETS_ENABLED: false, env: {} },
        networks,
        relayerFor: () => recordingRelayer('relayer', touched),
        signerFor: (role, id) => (role === 'depositor' && id === network ? signer : undefined),
      });
    const activities = activitiesWith(undefined);
    const input: WithdrawalInput = {
      workflowId: 'withdrawal:x',
      organizationId: 'o',
      apiKeyId: 'k',
      network,
      gatewayWallet: networks.get(network)!.gatewayWallet,
      token: networks.get(network)!.usdc!,
      depositor,
      amount: '1',
      pollMs: 1000,
    };
    // Precondition: with the depositor's key, the withdrawal goes to that wallet's signer.
    const depositorUsed: string[] = [];
    const withKey = activitiesWith(recordingRelayer('depositor', depositorUsed, depositor));
    await expect(withKey.initiateGatewayWithdrawal(input)).rejects.toThrow('depositor.send used');
    expect(depositorUsed).toEqual(['depositor.send']);
    const refused = { submitted: false, reason: 'refused', detail: `this worker holds no key for the depositor on ${network}` };
    expect(await activities.initiateGatewayWithdrawal(input)).toEqual(refused);
    expect(await activities.withdrawFromGateway(input)).toEqual(refused);
    // A withdrawal started by hand pointing the depositor's key at another contract, token or depositor: refused, unsigned.
    const foreign = {
      submitted: false,
      reason: 'refused',
      detail: 'the withdrawal names a gateway wallet, token or depositor other than the configured ones',
    };
    for (const forged of [{ gatewayWallet: randomAddress() }, { token: randomAddress() }, { depositor: randomAddress() }]) {
      expect(await withKey.initiateGatewayWithdrawal({ ...input, ...forged })).toEqual(foreign);
      expect(await withKey.withdrawFromGateway({ ...input, ...forged })).toEqual(foreign);
    }
    expect(depositorUsed).toEqual(['depositor.send']);
    expect(touched).toEqual([]);
  });
});
