import type { AuthContext } from '../auth/key-mode';
import type { ServiceDeps } from '../deps';
import { Settlement } from '../db/entities';
import { findRow } from '../db/rows';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { x402SearchAttributes } from '../temporal/search-attributes';
import { settleStatusFor, type SettleReason } from '../schemes/reasons';
import type { SettleResponse } from '../x402/schemas';
import type { Scheme, SettleReply, SettleRequest, SettleRoute, VerifyReply } from '../schemes/scheme';
import { fastSettlementWorkflow } from '../../workflows/settlement';
import { settlementRejection, type SettleOutcome, type SettlementInput } from './types';
import { underGasBudget } from './gas-budget';

/**
 * The API side of the single settlement skeleton: a scheme's request checks, the short-circuit for
 * settled payments, start-or-attach of the settlement workflow, the bounded wait and the 202 pending
 * answer. Every skeleton scheme is served by `skeletonRoute`; no scheme repeats any of it.
 */

const FINAL_STATES = new Set(['settled', 'failed']);

export const settleFailure = (reason: SettleReason | string, network = '', payer?: string, message?: string): SettleReply => ({
  status: settleStatusFor(reason),
  body: {
    success: false,
    errorReason: reason,
    ...(message ? { errorMessage: message } : {}),
    transaction: '',
    network,
    ...(payer ? { payer } : {}),
  },
});

/** POST /v1/settle and /v1/verify for a scheme that runs on the settlement skeleton. */
export function skeletonRoute<P, I extends SettlementInput & P>(scheme: Scheme<P, I>): SettleRoute {
  return {
    route: scheme.route,
    claims: (body) => scheme.claims(body),
    async settle(deps, req) {
      const parsed = scheme.parse(deps, req.auth, req.body);
      if (!parsed.ok) return settleFailure(parsed.refused, parsed.network, parsed.payer, parsed.message);
      // A repeat of a settled payment is answered from its record, whatever the input would say now.
      const recorded = await recordedSettlement(req, scheme.businessKey(parsed.payment), parsed.network);
      if (recorded) return recorded;
      const input = await scheme.input(deps, req, parsed.payment);
      if ('refused' in input) return settleFailure(input.refused, input.network, input.payer, input.message);
      return runSettlement(deps, req, input);
    },
    async verify(deps, auth, body) {
      const parsed = scheme.parse(deps, auth, body);
      if (!parsed.ok) return verifyRefusal(auth, parsed.refused, parsed.payer);
      const v = await scheme.verify(parsed.payment, deps);
      const verdict = v.isValid ? { isValid: true } : { isValid: false, invalidReason: v.invalidReason };
      return { status: 200, body: { ...verdict, payer: v.payer, authContext: verifyAuthContext(auth) } };
    },
  };
}

/** Request errors answer `{errorReason}` with 400; any other refusal is a 200 verify response with `isValid: false`. */
export function verifyRefusal(auth: AuthContext, reason: string, payer?: string): VerifyReply {
  if (reason === 'invalid_payload' || reason === 'invalid_payment_requirements') return { status: 400, body: { errorReason: reason } };
  return { status: 200, body: { isValid: false, invalidReason: reason, payer: payer ?? '', authContext: verifyAuthContext(auth) } };
}

export const verifyAuthContext = (auth: AuthContext) => ({
  organizationId: auth.organizationId,
  authMethod: 'organization_specific',
  timestamp: new Date().toISOString(),
});

/** The recorded answer of a payment that already reached a final state (Temporal retention is finite). */
export async function recordedSettlement(
  req: Pick<SettleRequest, 'em' | 'auth'>,
  workflowId: string,
  network: string,
): Promise<SettleReply | undefined> {
  const known = await findRow(req.em, Settlement, { id: workflowId });
  if (!known || !FINAL_STATES.has(known.state) || !known.response) return undefined;
  return replyFor(JSON.parse(known.response) as SettleResponse, known.organizationId, req.auth, network);
}

/**
 * Starts (or attaches to) the settlement workflow, under the organization's gas budget, and waits up to SETTLE_WAIT_MS: the final answer,
 * the rejection it failed with, or 202 `settlement_pending` with the transaction hash once recorded
 * (a repeat of the request attaches to the same workflow).
 */
export async function runSettlement(deps: ServiceDeps, req: SettleRequest, input: SettlementInput): Promise<SettleReply> {
  const { workflowId, network, payer } = input;
  const observe = observeWorkflowStart(deps, fastSettlementWorkflow.name, req.requestId, workflowId);
  const handle = await underGasBudget(deps, input.organizationId, input.route, (budgeted) =>
    startOrAttach(deps.temporal, fastSettlementWorkflow, {
      workflowId,
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      args: [input],
      searchAttributes: x402SearchAttributes({ kind: 'settle', network, payer, state: 'verifying', organization: input.organizationId }),
      memo: { requestId: req.requestId },
      onStart: (result) => {
        budgeted(result);
        observe(result);
      },
    }),
  );

  try {
    const result = await resultBefore<SettleOutcome>(deps.temporal, handle, Date.now() + req.waitMs);
    if (result.done) return replyFor(result.value.response, result.value.organizationId, req.auth, network);
  } catch (err) {
    const rejected = settlementRejection(err)?.response;
    if (rejected) return { status: settleStatusFor(rejected.errorReason ?? ''), body: rejected };
    throw err;
  }
  return pendingReply(req, workflowId, network, payer);
}

/** 202 `settlement_pending`, with the transaction hash once the workflow has recorded one. */
export async function pendingReply(
  req: Pick<SettleRequest, 'em'>,
  workflowId: string,
  network: string,
  payer: string,
): Promise<SettleReply> {
  const row = await req.em.fork().findOne(Settlement, { id: workflowId });
  return {
    status: settleStatusFor('settlement_pending'),
    body: { success: false, errorReason: 'settlement_pending', transaction: row?.transaction ?? '', network, payer },
  };
}

/** A payment already settled for another organization is not theirs to claim. */
export function replyFor(response: SettleResponse, ownerOrg: string, auth: AuthContext, network: string): SettleReply {
  if (ownerOrg !== auth.organizationId) return settleFailure('invalid_transaction_state', network, response.payer);
  return { status: response.success ? 200 : settleStatusFor(response.errorReason ?? ''), body: response };
}
