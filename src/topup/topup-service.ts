import { WorkflowFailedError } from '@temporalio/client';
import { runsOrCompleted } from '../temporal/run-status';
import { ApplicationFailure } from '@temporalio/common';
import { getAddress, isAddressEqual, type Address, type Hex } from 'viem';
import { z } from 'zod';
import type { EvmNetwork } from '../chains/networks';
import { tokenReads } from '../schemes/eip3009/reads';
import { TopUp } from '../db/entities';
import type { Eip3009SettleInput } from '../schemes/eip3009/types';
import type { CrossChainSettleInput } from '../schemes/eip3009-crosschain/types';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { topUpWorkflow } from '../../workflows/topup';
import { settleWorkflowId, topupWorkflowId } from '../temporal/workflow-ids';
import { addressSchema, bytes32Schema, exactEvmPayloadSchema, uintStringSchema, type ExactEvmPayload } from '../x402/schemas';
import { x402SearchAttributes } from '../temporal/search-attributes';
import { facilitatorFee, netOf } from './amounts';
import type { TopupDeps } from './context';
import { PAYER_COMMITMENT_VERSION, verifyPayerCommitment } from './payer-commitment';
import { bridgeRouteOf, destinationOf, quoteAll, requirementFor, sourceOf, verdictFor } from './quote';
import { topupRecordJson } from './record';
import { amountMessage, challenge, replyFor, topupError, type TopupReply } from './replies';
import { topupStatusFor } from './reasons';
import { tokenDomain } from './merchant-reads';
import { isSignedByPayer } from '../schemes/eip3009/verify';
import { chainSignatureReads } from '../chains/evm/buyer-signature';
import { FINAL_TOPUP_STATES, TOPUP_DESTINATION_NETWORK, type TopUpInput } from './types';
import { WINDOW_ALLOWANCE_SECONDS, windowTooLong } from '../x402/window';

export const topupBodySchema = z.object({
  buyer: addressSchema.optional(),
  amount: uintStringSchema.optional(),
  /** payer-commitment-v1 binding when the payer is not the buyer (src/topup/payer-commitment.ts). */
  payerCommitment: z.object({ version: z.literal(PAYER_COMMITMENT_VERSION), salt: bytes32Schema }).optional(),
});
export type TopupBody = z.infer<typeof topupBodySchema>;

/** Decodes X-PAYMENT (base64 of the JSON payment payload). */
export function decodePaymentHeader(header: string): ExactEvmPayload | undefined {
  try {
    const json = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
    const parsed = exactEvmPayloadSchema.safeParse(json);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** POST /v1/{merchant}/topups after the merchant and body were accepted. */
export async function postTopup(deps: TopupDeps, req: { body: TopupBody; payment?: string; requestId: string }): Promise<TopupReply> {
  const { body } = req;
  if (req.payment === undefined) {
    const { quotes } = await quoteAll(deps, body.buyer);
    const first = quotes[0];
    if (body.amount !== undefined) {
      const verdict = verdictFor(first, BigInt(body.amount));
      if (!verdict.ok) return topupError(verdict.reason, amountMessage(verdict.reason));
    } else if (!first.bounds.open) return topupError('credit_limit_reached', amountMessage('credit_limit_reached'));
    return challenge(deps, body, quotes, 'X-PAYMENT header is required');
  }

  const payload = decodePaymentHeader(req.payment);
  if (!payload) {
    const { quotes } = await quoteAll(deps, body.buyer);
    return challenge(deps, body, quotes, 'X-PAYMENT is not a base64 x402 v1 exact EVM payment payload');
  }
  const a = payload.payload.authorization;
  const payer = getAddress(a.from.toLowerCase());
  const workflowId = topupWorkflowId(deps.topup.TOPUP_MERCHANT_ID, payer, a.nonce);

  // Idempotency first: the same X-PAYMENT always answers with its own top-up, also before its
  // workflow wrote its first row (a repeat while the worker or the gateway restarts): its checks,
  // the credit limit above all, are never judged again against what its own top-up consumes.
  const em = deps.db.em.fork();
  const known = await em.findOne(TopUp, { id: workflowId });
  if (known && FINAL_TOPUP_STATES.has(known.state)) return replyFor(deps, known);
  if (known && known.state !== 'deferred') return waitAndReply(deps, workflowId, body);
  if (!known && (await runsOrCompleted(deps.temporal, workflowId))) return waitAndReply(deps, workflowId, body);

  const found = sourceOf(deps, payload.network);
  if ('refusal' in found) return topupError('wrong_network', found.refusal);
  const source = found.network;

  const buyer = body.buyer ? getAddress(body.buyer.toLowerCase()) : payer;
  const destination = destinationOf(deps);
  if (!isAddressEqual(buyer, payer)) {
    const bound =
      body.payerCommitment &&
      verifyPayerCommitment(a.nonce, {
        merchantId: deps.topup.TOPUP_MERCHANT_ID,
        sourceChainId: source.chainId!,
        destinationChainId: destination.chainId!,
        creditedRecipient: deps.topup.TOPUP_MERCHANT_CONTRACT as Address,
        payer,
        buyer,
        salt: body.payerCommitment.salt as Hex,
      });
    if (!bound)
      return topupError('buyer_mismatch', 'buyer must equal authorization.from unless the nonce is a valid payer-commitment-v1 binding');
  }
  if (!isAddressEqual(a.to as Address, source.facilitator!)) {
    return topupError('wrong_recipient', `authorization.to must be the facilitator contract ${source.facilitator}`);
  }
  if (!(await signatureValid(source, payload)))
    return topupError('invalid_signature', 'the EIP-3009 signature does not recover to authorization.from');
  const now = Math.floor(Date.now() / 1000);
  if (BigInt(a.validBefore) < BigInt(now + deps.config.MIN_VALIDITY_SECONDS))
    return topupError('authorization_expired', 'authorization.validBefore has passed');
  if (BigInt(a.validAfter) > BigInt(now)) return topupError('authorization_not_yet_valid', 'authorization.validAfter is in the future');
  if (windowTooLong(BigInt(a.validBefore), now, deps.topup.TOPUP_MAX_TIMEOUT_SECONDS))
    return topupError(
      'authorization_window_too_long',
      `authorization.validBefore may be at most ${deps.topup.TOPUP_MAX_TIMEOUT_SECONDS + WINDOW_ALLOWANCE_SECONDS} s from now (maxTimeoutSeconds)`,
    );
  const gross = BigInt(a.value);
  if (body.amount !== undefined && BigInt(body.amount) !== gross) {
    return topupError('amount_mismatch', `amount ${body.amount} differs from authorization.value ${a.value}`);
  }
  const { quotes } = await quoteAll(deps, buyer);
  const quote = quotes.find((q) => q.network.id === source.id)!;
  const verdict = verdictFor(quote, gross);
  if (!verdict.ok)
    return topupError(verdict.reason, amountMessage(verdict.reason), {
      minAmount: quote.bounds.minAmount.toString(),
      maxAmount: quote.bounds.maxAmount.toString(),
    });
  if (await tokenReads(source).authorizationState(source.usdc!, payer, a.nonce as Hex)) {
    // A replay of this very payment that raced its first request: the nonce was spent by our own
    // top-up (whose row exists from before its settlement), so answer with that top-up, not a 409.
    const ours = await deps.db.em.fork().findOne(TopUp, { id: workflowId });
    if (ours) return FINAL_TOPUP_STATES.has(ours.state) ? replyFor(deps, ours) : waitAndReply(deps, workflowId, body);
    return topupError('authorization_reused', 'this authorization was already used');
  }

  const fee = facilitatorFee(gross, quote.fees);
  const input: TopUpInput = {
    workflowId,
    requestId: req.requestId,
    merchant: deps.topup.TOPUP_MERCHANT_ID,
    merchantContract: deps.topup.TOPUP_MERCHANT_CONTRACT,
    buyer,
    payer,
    network: source.id,
    nonce: a.nonce.toLowerCase(),
    grossAmount: gross.toString(),
    fee: fee.toString(),
    bridgeFee: quote.fees.bridgeFee.toString(),
    netAmount: netOf(gross, quote.fees).toString(),
    relayer: deps.topup.TOPUP_RELAYER_ADDRESS,
    settle: await settleInputFor(deps, source, payload, gross, fee, quote.fees.bridgeFee, req.requestId),
    createdAt: Date.now(),
  };
  await startOrAttach(deps.temporal, topUpWorkflow, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: x402SearchAttributes({
      kind: 'topup',
      network: source.id,
      payer: payer,
      state: 'settling',
      organization: deps.topup.TOPUP_ORGANIZATION_ID,
    }),
    memo: { requestId: req.requestId },
  });
  return waitAndReply(deps, workflowId, body);
}

/**
 * The settlement the gateway runs for a top-up: the service's own EIP-3009 settlement workflow,
 * started as a child by the TopUpWorkflow (no HTTP hop), paying out to the gateway relayer wallet
 * with the facilitator fee to its recipient, recorded under the gateway's internal organization.
 * A cross-chain source uses the cross-chain settlement (burn on the source, mint and payout on Base)
 * with the buffered bridge fee quote as the most the bridge may keep.
 */
async function settleInputFor(
  deps: TopupDeps,
  source: EvmNetwork,
  payload: ExactEvmPayload,
  gross: bigint,
  fee: bigint,
  bridgeFee: bigint,
  requestId: string,
): Promise<Eip3009SettleInput | CrossChainSettleInput> {
  const a = payload.payload.authorization;
  const common = {
    workflowId: settleWorkflowId(source.id, a.from, a.nonce),
    requestId,
    organizationId: deps.topup.TOPUP_ORGANIZATION_ID,
    apiKeyId: '',
    network: source.id,
    payer: a.from,
    amount: a.value,
    paymentPayload: payload,
    paymentRequirements: await requirementFor(deps, source, gross),
    payout: deps.topup.TOPUP_RELAYER_ADDRESS,
    fee: fee.toString(),
    feeRecipient: deps.topup.TOPUP_FEE_RECIPIENT ?? '0x0000000000000000000000000000000000000000',
  };
  const route = source.id === TOPUP_DESTINATION_NETWORK ? undefined : bridgeRouteOf(deps, source);
  if (!route) return { ...common, route: 'eip3009' };
  return {
    ...common,
    route: 'eip3009-crosschain',
    destinationNetwork: route.destination.id,
    sourceDomain: route.sourceDomain,
    destinationDomain: route.destination.cctpDomain,
    maxBridgeFee: bridgeFee.toString(),
    attestationBudgetMs: deps.topup.TOPUP_BRIDGE_TIMEOUT_MS,
  };
}

/** Waits (bounded by TOPUP_WAIT_MS) for the workflow, then answers from the record. */
async function waitAndReply(deps: TopupDeps, workflowId: string, _body: TopupBody): Promise<TopupReply> {
  const handle = deps.temporal.workflow.getHandle(workflowId);
  try {
    await resultBefore(deps.temporal, handle, Date.now() + deps.topup.TOPUP_WAIT_MS);
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    const gas = err.cause instanceof ApplicationFailure && err.cause.type === 'GasProtection';
    if (!gas) {
      // The workflow itself failed (not a payment outcome): the money may have moved, so an operator
      // must look; never a silent retry.
      deps.logger.error({ workflowId, err: String(err.cause ?? err) }, 'top-up workflow failed');
      const row = await deps.db.em.fork().findOne(TopUp, { id: workflowId });
      return {
        status: topupStatusFor('needs_review'),
        body: {
          ...(row ? topupRecordJson(row) : { success: false, topupId: workflowId }),
          state: 'needs_review',
          errorReason: 'needs_review',
          error: 'the top-up needs operator review',
        },
      };
    }
  }
  const row = await deps.db.em.fork().findOne(TopUp, { id: workflowId });
  if (!row) {
    // Started but not recorded yet: the outcome is unknown.
    return {
      status: 503,
      body: {
        success: false,
        topupId: workflowId,
        state: 'settling',
        errorReason: 'settlement_pending',
        error: 'the top-up is being processed',
      },
      headers: { 'Retry-After': String(deps.topup.TOPUP_RETRY_AFTER_SECONDS) },
    };
  }
  return replyFor(deps, row);
}

/** The EIP-3009 signature rule itself (src/schemes/eip3009/verify.ts), under the source token's own domain. */
async function signatureValid(source: EvmNetwork, payload: ExactEvmPayload): Promise<boolean> {
  const domain = await tokenDomain(source);
  return isSignedByPayer(
    payload,
    { ...domain, chainId: source.chainId!, verifyingContract: source.usdc! },
    source,
    chainSignatureReads(source),
  );
}
