import { ApplicationFailure } from '@temporalio/common';
import { settlementStepActivities } from '../../activities/settlement';
import type { SettlementInput } from '../../src/settle/types';
import type { SettleResponse } from '../../src/x402/schemas';

/**
 * A settlement and mocked steps for workflow tests (test/workflows/settlement*.test.ts) and for
 * recording the pre-patch settlement history (test/support/record-pre-patch-history.ts). The steps are
 * stand-ins; the activities over them are the real ones (`settlementStepActivities`), so the fast
 * path's own rules (verification's attempt budget, the fallback past its wait) run as in the worker.
 */
export const PAYER = '0x1111111111111111111111111111111111111111';
export const HASH = `0x${'ab'.repeat(32)}`;
export const input = (n: number, network = 'base-sepolia') =>
  ({
    workflowId: `settle:${network}:${PAYER}:0x${n.toString(16).padStart(64, '0')}`,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    route: 'eip3009',
    network,
    payer: PAYER,
    amount: '1000',
    payout: PAYER,
    fee: '0',
    feeRecipient: PAYER,
  }) as unknown as SettlementInput;
export const rejected = (reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: 'base-sepolia',
  payer: PAYER,
});
export const settled: SettleResponse = { success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER };

export const transient = () => {
  throw ApplicationFailure.retryable('rpc down', 'RpcError');
};
/** What a scheme's confirm throws when its wait ends before the receipt (src/chains/evm/calls.ts). */
export const notMinedYet = () => {
  throw ApplicationFailure.retryable(`no receipt for ${HASH} yet`, 'ReceiptTimeout');
};

type Answers = (() => unknown)[];

/**
 * Mock steps that count their calls, and the activities that count theirs; each behaviour is a list
 * of answers, the last one repeating.
 */
export function mocks(script: { verify?: Answers; submit?: Answers; confirm?: Answers } = {}) {
  const calls = { settlePayment: 0, verifyPayment: 0, submitPayment: 0, confirmPayment: 0, verify: 0, submit: 0, confirm: 0 };
  const play =
    <T>(name: 'verify' | 'submit' | 'confirm', answers: Answers | undefined, fallback: () => unknown) =>
    async () => {
      const answer = answers?.[Math.min(calls[name], answers.length - 1)] ?? fallback;
      calls[name]++;
      return answer() as T;
    };
  const activities = settlementStepActivities(
    {
      verify: play('verify', script.verify, () => ({ isValid: true })),
      submit: play('submit', script.submit, () => ({ submitted: true, transaction: HASH })),
      confirm: play('confirm', script.confirm, () => settled),
    },
    30_000,
  );
  const counted = Object.fromEntries(
    Object.entries(activities).map(([name, f]) => [
      name,
      (i: SettlementInput) => {
        calls[name as keyof typeof activities]++;
        return f(i);
      },
    ]),
  );
  return { calls, activities: { ...counted, recordSettlement: async () => undefined } };
}
