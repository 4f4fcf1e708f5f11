import type { TopUpInput } from '../../src/topup/types';

/**
 * A cross-chain top-up and mocked activities for workflow tests (test/workflows/topup-operator.test.ts)
 * and for recording the pre-patch history fixture (test/support/record-pre-patch-history.ts).
 */
export const PAYER = '0x1111111111111111111111111111111111111111';
export const RELAYER = '0x2222222222222222222222222222222222222222';
const HASH = `0x${'ab'.repeat(32)}`;
const MINT = `0x${'cd'.repeat(32)}`;
const DEPOSIT = `0x${'ef'.repeat(32)}`;
export const REFUND = `0x${'12'.repeat(32)}`;
export const who = { operator: 'alice@ops', reason: 'attester fixed (INC-42)' };

export const input = (n: number): TopUpInput => {
  const nonce = `0x${n.toString(16).padStart(64, '0')}`;
  return {
    workflowId: `topup:demo-merchant:${PAYER}:${nonce}:${Date.now()}`,
    merchant: 'demo-merchant',
    merchantContract: '0x3333333333333333333333333333333333333333',
    buyer: PAYER,
    payer: PAYER,
    network: 'optimism',
    nonce,
    grossAmount: '2000000',
    fee: '16000',
    bridgeFee: '60000',
    netAmount: '1924000',
    relayer: RELAYER,
    createdAt: 0,
    settle: {
      workflowId: `settle:optimism:${PAYER}:${nonce}:${Date.now()}`,
      organizationId: 'org-topup',
      apiKeyId: '',
      route: 'eip3009-crosschain',
      network: 'optimism',
      destinationNetwork: 'base',
      sourceDomain: 2,
      destinationDomain: 6,
      paymentPayload: { payload: { authorization: { from: PAYER, value: '2000000' } } },
      paymentRequirements: {},
      payout: RELAYER,
      fee: '16000',
      feeRecipient: RELAYER,
      maxBridgeFee: '60000',
    } as unknown as TopUpInput['settle'],
  };
};

/** Mocked activities: the first mint would revert (needs_review), later ones deliver; calls are counted. */
export function mocks(opts: { refund?: () => Promise<{ hash: string }>; attestation?: () => Promise<unknown> } = {}) {
  const calls: Record<string, number> = {};
  const states: { state: string; operator?: string | null; operatorReason?: string | null }[] = [];
  const count =
    <T>(name: string, f: (...a: any[]) => Promise<T> | T) =>
    async (...a: any[]) => {
      calls[name] = (calls[name] ?? 0) + 1;
      return f(...a);
    };
  const activities = {
    recordTopUp: count('recordTopUp', (_i: TopUpInput, state: string, extra: any = {}) => {
      states.push({ state, operator: extra.operator, operatorReason: extra.operatorReason });
    }),
    checkSettlementGas: count('checkSettlementGas', () => ({ broadcast: true, costUsdc: '0' })),
    verifyCrossChainPayment: count('verifyCrossChainPayment', () => ({ isValid: true, payer: PAYER })),
    readBridgeBurnTerms: count('readBridgeBurnTerms', () => ({ finality: 'standard', minFinalityThreshold: 2000, maxFee: '20000' })),
    submitBridgeBurn: count('submitBridgeBurn', () => ({ submitted: true, hash: HASH })),
    awaitBridgeBurn: count('awaitBridgeBurn', () => ({
      response: { success: true, transaction: HASH, network: 'optimism', payer: PAYER },
      message: '0x01',
      bridgeNonce: '7',
    })),
    recordCrossChainOutcome: count('recordCrossChainOutcome', () => undefined),
    recordBridgeTransfer: count('recordBridgeTransfer', () => undefined),
    fetchBridgeAttestation: count('fetchBridgeAttestation', opts.attestation ?? (() => ({ status: 'complete', attestation: '0x02' }))),
    submitBridgeMint: count('submitBridgeMint', () =>
      calls.submitBridgeMint === 1 ? { submitted: false, error: 'mint would revert: bad attestation' } : { submitted: true, hash: MINT },
    ),
    awaitBridgeMint: count('awaitBridgeMint', () => ({
      ok: true,
      mintTx: MINT,
      received: '1998000',
      bridgeFee: '2000',
      fee: '16000',
      payoutAmount: '1982000',
    })),
    ensureMerchantAllowance: count('ensureMerchantAllowance', () => undefined),
    submitDeposit: count('submitDeposit', () => ({ submitted: true, hash: DEPOSIT })),
    awaitDepositReceipt: count('awaitDepositReceipt', () => ({ status: 'success', hash: DEPOSIT })),
    refundPayer: count('refundPayer', opts.refund ?? (async () => ({ hash: REFUND }))),
  };
  return { calls, states, activities };
}
