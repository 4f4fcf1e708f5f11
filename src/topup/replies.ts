import { getAddress } from 'viem';
import type { TopUp } from '../db/entities';
import type { TopupDeps } from './context';
import { destinationOf, quoteAll, requirementFor, sourceEntry, type SourceQuote } from './quote';
import { topupRecordJson } from './record';
import { topupStatusFor } from './reasons';

/** How the gateway answers: the challenge, errors and recorded top-ups (spec status table). */

export interface TopupReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** The gateway's request body (see topup-service.ts). */
export interface ChallengeBody {
  buyer?: string;
  amount?: string;
}

export const topupError = (errorReason: string, error: string, extra: Record<string, unknown> = {}): TopupReply => ({
  status: topupStatusFor(errorReason),
  body: { success: false, errorReason, error, ...extra },
});

/** The 402 challenge: one requirement per eligible source plus the `topup` object. */
export async function challenge(deps: TopupDeps, body: ChallengeBody, quotes: SourceQuote[], error: string): Promise<TopupReply> {
  const amountFor = (q: SourceQuote) => (body.amount !== undefined ? BigInt(body.amount) : q.bounds.maxAmount);
  // A source whose chain does not answer is left out (the buyer pays on another); none left: 503.
  const built = await Promise.allSettled(quotes.map((q) => requirementFor(deps, q.network, amountFor(q))));
  const offered = quotes.map((q, i) => ({ q, r: built[i]! })).filter((x) => x.r.status === 'fulfilled');
  const down = built.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (down) deps.logger.warn({ err: String(down.reason?.message ?? down.reason) }, 'a top-up source is left out of the challenge');
  if (offered.length === 0) throw down!.reason;
  const accepts = offered.map((x) => (x.r as PromiseFulfilledResult<Awaited<ReturnType<typeof requirementFor>>>).value);
  quotes = offered.map((x) => x.q);
  const first = quotes[0];
  const destination = destinationOf(deps);
  return {
    status: 402,
    body: {
      x402Version: 1,
      error,
      accepts,
      topup: {
        buyer: body.buyer ? getAddress(body.buyer.toLowerCase()) : null,
        amount: amountFor(first).toString(),
        minAmount: first.bounds.minAmount.toString(),
        maxAmount: first.bounds.maxAmount.toString(),
        note:
          'Sign one entry of accepts (EIP-3009, the source chain id and the token domain in extra) and repeat this request with X-PAYMENT. ' +
          'buyer defaults to the signer; to credit another buyer, derive the nonce with payer-commitment-v1 and send payerCommitment {version, salt}.',
        merchant: deps.topup.TOPUP_MERCHANT_ID,
        creditedRecipient: getAddress(deps.topup.TOPUP_MERCHANT_CONTRACT.toLowerCase()),
        destinationChainId: destination.chainId,
        sources: quotes.map(sourceEntry),
      },
    },
  };
}

/** The reply for a recorded top-up, by its state (spec status table). */
export async function replyFor(deps: TopupDeps, row: TopUp): Promise<TopupReply> {
  const record = topupRecordJson(row);
  const retryAfter = { 'Retry-After': String(deps.topup.TOPUP_RETRY_AFTER_SECONDS) };
  switch (row.state) {
    case 'deposited': {
      const settlement = { success: true, transaction: row.settlementTx, network: row.network, payer: record.payer };
      return { status: 200, body: record, headers: { 'X-PAYMENT-RESPONSE': Buffer.from(JSON.stringify(settlement)).toString('base64') } };
    }
    case 'refunded':
    case 'needs_review':
      return { status: topupStatusFor(row.errorReason ?? row.state), body: record };
    case 'failed': {
      const status = topupStatusFor(row.errorReason ?? 'settlement_failed');
      if (status !== 402) return { status, body: record };
      // A failed settlement: a fresh challenge; the buyer signs a new payment.
      const { quotes } = await quoteAll(deps, row.buyer);
      const reply = await challenge(deps, { buyer: row.buyer }, quotes, row.error ?? 'settlement failed');
      return { ...reply, body: { ...(reply.body as object), topupId: row.id, errorReason: row.errorReason } };
    }
    default:
      // settling / depositing / refunding / bridging / deferred: outcome not known yet.
      return {
        status: 503,
        body: { ...record, errorReason: row.state === 'bridging' ? 'bridging' : (row.errorReason ?? 'settlement_pending') },
        headers: retryAfter,
      };
  }
}

export function amountMessage(reason: 'amount_too_low' | 'amount_too_high' | 'credit_limit_reached'): string {
  switch (reason) {
    case 'amount_too_low':
      return 'amount is below the minimum of this source';
    case 'amount_too_high':
      return 'amount is above the maximum of a top-up';
    default:
      return "the amount would exceed the buyer's credit limit on the merchant contract";
  }
}
