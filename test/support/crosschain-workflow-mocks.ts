import type { CrossChainSettleInput } from '../../src/schemes/eip3009-crosschain/types';
import type { BurnTerms } from '../../src/chains/evm/bridge';

/**
 * A plain cross-chain settlement (base-sepolia to optimism-sepolia) on mocked activities that deliver:
 * the workflow tests of its burn terms and the pre-patch history recorder share them. Every call's
 * arguments are kept, by activity name.
 */
export const PAYER = '0x1111111111111111111111111111111111111111';
export const HASH = `0x${'ab'.repeat(32)}`;
export const MINT = `0x${'cd'.repeat(32)}`;
export const FAST_TERMS: BurnTerms = { finality: 'fast', minFinalityThreshold: 1000, maxFee: '2200' };

/** The settlement numbered `n`; `suffix` keeps ids apart across runs of one test server. */
export const input = (n: number, suffix = '') =>
  ({
    workflowId: `settle:base-sepolia:${PAYER}:0x${n.toString(16).padStart(64, '0')}${suffix}`,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    route: 'eip3009-crosschain',
    network: 'base-sepolia',
    destinationNetwork: 'optimism-sepolia',
    sourceDomain: 6,
    destinationDomain: 2,
    paymentPayload: { payload: { authorization: { from: PAYER, value: '2000000' } } },
    paymentRequirements: {},
    payout: PAYER,
    fee: '20000',
    feeRecipient: PAYER,
    maxBridgeFee: '20000',
  }) as unknown as CrossChainSettleInput;

export const response = { success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER };
/** What the mocked mint's receipt reports: the fast fee (2,200) kept, the platform fee paid. */
export const minted = {
  mintTx: MINT,
  received: '1997800',
  bridgeFee: '2200',
  fee: '20000',
  payoutAmount: '1977800',
};

export function mocks(opts: { terms?: () => Promise<BurnTerms> | BurnTerms } = {}) {
  const calls: Record<string, unknown[][]> = {};
  const count =
    <T>(name: string, f: (...a: any[]) => Promise<T> | T) =>
    async (...a: any[]) => {
      (calls[name] ??= []).push(a);
      return f(...a);
    };
  const activities = {
    verifyCrossChainPayment: count('verifyCrossChainPayment', () => ({ isValid: true, payer: PAYER })),
    readBridgeBurnTerms: count('readBridgeBurnTerms', opts.terms ?? (() => FAST_TERMS)),
    submitBridgeBurn: count('submitBridgeBurn', () => ({ submitted: true, hash: HASH })),
    awaitBridgeBurn: count('awaitBridgeBurn', () => ({ response, message: '0x01' })),
    recordCrossChainOutcome: count('recordCrossChainOutcome', () => undefined),
    recordBridgeTransfer: count('recordBridgeTransfer', () => undefined),
    fetchBridgeAttestation: count('fetchBridgeAttestation', () => ({
      status: 'complete',
      message: '0x01',
      attestation: '0x02',
      nonce: '0x07',
    })),
    submitBridgeMint: count('submitBridgeMint', () => ({ submitted: true, hash: MINT })),
    awaitBridgeMint: count('awaitBridgeMint', () => ({ ok: true, ...minted })),
  };
  return { calls, activities };
}

/** The outcome of a run on these mocks. */
export const outcome = { response, organizationId: 'org-1', bridge: { state: 'delivered', ...minted } };
