import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { ServiceDeps } from '../deps';
import { checkWithoutChain } from '../schemes/eip3009';
import type { EvmNetwork } from '../chains/networks';
import { InferenceCharge } from '../db/entities';
import { insertRow } from '../db/rows';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { settlementRejection, type SettleOutcome } from '../settle/types';
import type { Eip3009SettleInput } from '../schemes/eip3009/types';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { refundWorkflow } from '../../workflows/refund';
import { fastSettlementWorkflow } from '../../workflows/settlement';
import { settleWorkflowId } from '../temporal/workflow-ids';
import { exactEvmPayloadSchema, type PaymentRequirements, type SettleResponse } from '../x402/schemas';
import { x402SearchAttributes } from '../temporal/search-attributes';
import type { InferenceConfig } from './config';
import { chargeGuardWorkflowId, chatChargeId, INFERENCE_ORGANIZATION_ID, refundWorkflowId, type RefundInput } from './types';

/**
 * Paying for one chat request with the buyer's X-PAYMENT: decode, claim the charge in the ledger
 * (one charge per authorization), settle through the service's own settlement workflow (start or
 * attach, keyed by (network, payer, nonce)), and record the outcome. The revenue goes to the revenue
 * wallet; the settlement belongs to the internal organization INFERENCE_ORGANIZATION_ID.
 */

export interface PaidCharge {
  chargeId: string;
  settlementId: string;
  payer: string;
  amount: string;
  settleResponse: SettleResponse;
  /**
   * The charge recorded `charged`, still being written: the route opens the provider's reply
   * meanwhile and awaits this before serving a byte or moving the charge on.
   */
  charged: Promise<void>;
}

export type ChatPayment = { ok: true; charge: PaidCharge } | { ok: false; status: number; error: string; retryAfter?: number };

const ZERO = '0x0000000000000000000000000000000000000000';

/** Decodes X-PAYMENT (base64 of the JSON payment payload); a string error says what is wrong. */
export function decodePaymentHeader(header: string) {
  const text = header.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return { error: 'X-PAYMENT is not base64' } as const;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(text, 'base64').toString('utf8'));
  } catch {
    return { error: 'X-PAYMENT is not base64-encoded JSON' } as const;
  }
  const parsed = exactEvmPayloadSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      error: `X-PAYMENT is not an x402 v1 exact EVM payment payload (${issue?.path.join('.') || 'payload'}: ${issue?.message})`,
    } as const;
  }
  return { payload: parsed.data } as const;
}

export async function payForChat(
  deps: ServiceDeps,
  c: InferenceConfig,
  network: EvmNetwork,
  requirements: PaymentRequirements,
  req: { header: string; model: string; requestId: string },
): Promise<ChatPayment> {
  const decoded = decodePaymentHeader(req.header);
  if ('error' in decoded) return { ok: false, status: 402, error: decoded.error! };
  const payload = decoded.payload;
  if (payload.network !== network.id)
    return { ok: false, status: 402, error: `network ${payload.network} is not accepted; pay on ${network.id}` };
  // Signature, recipients, window and amount before any row or workflow: a forged payment costs nothing.
  const offChain = await checkWithoutChain({ network: network.id, paymentPayload: payload, paymentRequirements: requirements }, deps);
  if (!offChain.isValid) return { ok: false, status: 402, error: offChain.invalidReason };
  const a = payload.payload.authorization;
  const payer = a.from.toLowerCase();
  const chargeId = chatChargeId(network.id, payer, a.nonce);
  const settlementId = settleWorkflowId(network.id, payer, a.nonce);
  const em = deps.db.em.fork();

  // The ledger row is the claim: one chat per authorization, even under concurrent replays.
  const now = new Date();
  try {
    // Before the settlement on every paid chat: a compiled statement (src/db/rows.ts).
    await insertRow(em, InferenceCharge, {
      id: chargeId,
      settlementId,
      network: network.id,
      payer,
      amount: requirements.maxAmountRequired,
      model: req.model,
      state: 'settling',
      requestId: req.requestId,
      createdAt: now,
      updatedAt: now,
    });
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
    // A payment refused before any transfer may be tried again (e.g. after funding the wallet).
    const reclaimed = await em.nativeUpdate(
      InferenceCharge,
      { id: chargeId, state: 'rejected' },
      { state: 'settling', model: req.model, error: null, updatedAt: now },
    );
    if (reclaimed !== 1) return { ok: false, status: 402, error: 'authorization already used' };
  }
  const setCharge = (fields: Partial<InferenceCharge>) =>
    em.nativeUpdate(InferenceCharge, { id: chargeId }, { ...fields, updatedAt: new Date() });

  const input: Eip3009SettleInput = {
    workflowId: settlementId,
    requestId: req.requestId,
    organizationId: INFERENCE_ORGANIZATION_ID,
    apiKeyId: '',
    route: 'eip3009',
    network: network.id,
    payer: a.from,
    amount: a.value,
    paymentPayload: payload,
    paymentRequirements: requirements,
    payout: c.revenueWallet,
    fee: '0',
    feeRecipient: ZERO,
  };
  // The guard refunds this charge later if no API process finishes it (this one may die). Started
  // beside the settlement so it adds no latency; a failure to start it is logged, not fatal.
  const guard = startChargeGuard(deps, c, {
    chargeId,
    settlementId,
    network,
    payer,
    amount: requirements.maxAmountRequired,
    requestId: req.requestId,
  }).catch((err) => deps.logger.warn({ err: String(err), chargeId }, 'could not start the charge guard'));
  let attached = false;
  const handle = await startOrAttach(deps.temporal, fastSettlementWorkflow, {
    workflowId: settlementId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: x402SearchAttributes({
      kind: 'settle',
      network: network.id,
      payer: payer,
      state: 'verifying',
      organization: INFERENCE_ORGANIZATION_ID,
    }),
    memo: { requestId: req.requestId },
    onStart: (result) => {
      attached = result === 'attached';
      observeWorkflowStart(deps, fastSettlementWorkflow.name, req.requestId, settlementId)(result);
    },
  });

  await guard;
  if (attached) {
    // A settlement this chat did not start (a seller's /v1/settle, a media job, an earlier run that
    // ended) pays for something else, or for nothing we serve: it never backs this chat.
    await setCharge({ state: 'rejected', error: 'authorization settled by another request' });
    return { ok: false, status: 402, error: 'authorization already used' };
  }
  let result;
  try {
    result = await resultBefore<SettleOutcome>(deps.temporal, handle, Date.now() + deps.config.SETTLE_WAIT_MS);
  } catch (err) {
    const rejected = settlementRejection(err)?.response;
    if (!rejected) throw err;
    await setCharge({ state: 'rejected', error: rejected.errorReason ?? 'rejected' });
    return { ok: false, status: 402, error: rejected.errorReason ?? 'payment rejected' };
  }
  if (!result.done) {
    // The payment may still move money: the refund workflow waits for it and pays it back. The
    // charge records why first (`unserved`: the proof the refund activity asks for).
    await em.nativeUpdate(
      InferenceCharge,
      { id: chargeId, state: 'settling' },
      { state: 'unserved', error: 'settlement still pending; the chat was not served', updatedAt: new Date() },
    );
    await startRefund(
      deps,
      c,
      { chargeId, settlementId, network, payer, amount: requirements.maxAmountRequired, requestId: req.requestId },
      'settlement still pending; the chat was not served',
    );
    return {
      ok: false,
      status: 503,
      error: 'settlement_pending: the chat was not served; if the payment settles it is refunded',
      retryAfter: 5,
    };
  }
  const { response, organizationId } = result.value;
  if (organizationId !== INFERENCE_ORGANIZATION_ID) {
    // The authorization was settled for a seller through POST /v1/settle: not a payment to us.
    await setCharge({ state: 'rejected', error: 'authorization settled for another payee' });
    return { ok: false, status: 402, error: 'authorization already used' };
  }
  if (!response.success) {
    await setCharge({ state: 'rejected', error: response.errorReason ?? 'settlement failed' });
    return { ok: false, status: 402, error: response.errorReason ?? 'settlement failed' };
  }
  const charged = setCharge({ state: 'charged', settlementTx: response.transaction }).then(() => undefined);
  charged.catch(() => undefined); // the route awaits it (a failure reaches it there)
  return { ok: true, charge: { chargeId, settlementId, payer, amount: requirements.maxAmountRequired, settleResponse: response, charged } };
}

type ChargeRef = { chargeId: string; settlementId: string; network: EvmNetwork; payer: string; amount: string; requestId: string };

const refundInput = (c: InferenceConfig, charge: ChargeRef, reason: string): RefundInput => ({
  workflowId: refundWorkflowId(charge.chargeId),
  chargeId: charge.chargeId,
  settlementId: charge.settlementId,
  network: charge.network.id,
  payer: charge.payer,
  amount: charge.amount,
  asset: charge.network.usdc!,
  revenueWallet: c.revenueWallet,
  reason,
  requestId: charge.requestId,
});

/**
 * The charge guard: the refund workflow with `onlyIfStale`, starting INFERENCE_GUARD_DELAY_MS from
 * now (after every bound of the request: settle wait, first byte, max stream).
 */
export async function startChargeGuard(deps: ServiceDeps, c: InferenceConfig, charge: ChargeRef): Promise<void> {
  const workflowId = chargeGuardWorkflowId(charge.chargeId);
  await deps.temporal.workflow.start(refundWorkflow, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [{ ...refundInput(c, charge, 'the API did not finish this paid chat (process stopped)'), onlyIfStale: true }],
    startDelay: c.guardDelayMs,
    // A retried claim (a rejected charge tried again) restarts the wait from now. Safe: a guard can
    // only be mid-refund while the charge is refund_pending, never while it can be claimed again.
    workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: x402SearchAttributes({
      kind: 'refund',
      network: charge.network.id,
      payer: charge.payer,
      state: 'guard',
      organization: INFERENCE_ORGANIZATION_ID,
    }),
    memo: { requestId: charge.requestId },
  });
}

/** Starts (or attaches to) the one refund workflow of a charge. */
export async function startRefund(deps: ServiceDeps, c: InferenceConfig, charge: ChargeRef, reason: string): Promise<void> {
  const input = refundInput(c, charge, reason);
  const workflowId = input.workflowId;
  await startOrAttach(deps.temporal, refundWorkflow, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: x402SearchAttributes({
      kind: 'refund',
      network: charge.network.id,
      payer: charge.payer,
      state: 'refund_pending',
      organization: INFERENCE_ORGANIZATION_ID,
    }),
    memo: { requestId: charge.requestId },
    onStart: observeWorkflowStart(deps, refundWorkflow.name, charge.requestId, workflowId),
  });
}
