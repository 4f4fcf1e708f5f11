import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ApiDeps, AuthContext } from '../api/context';
import { assertKeyModeAllows } from '../api/middleware/auth';
import { isSolanaNetworkId } from '../chains/networks';
import { solanaNetworks } from '../chains/solana/context';
import { inspectExactSvmTransaction } from '../chains/solana/verify-exact-svm';
import { Settlement } from '../db/entities';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { WORKFLOW_TYPES } from '../temporal/task-queues';
import { solanaSettleWorkflowId } from '../temporal/workflow-ids';
import { settleStatusFor } from '../x402/error-reasons';
import { paymentPayloadEnvelopeSchema, type SettleResponse } from '../x402/schemas';
import { exactSvmPayloadBodySchema, solanaPaymentRequirementsSchema } from '../x402/solana-schemas';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../../temporal/search-attributes';
import type { SettleReply, SettleRequest } from './settle-service';
import type { SolanaSettleInput } from './solana-types';
import type { SettleOutcome } from './types';

const FINAL_STATES = new Set(['settled', 'failed']);

const failure = (reason: string, network: string, payer?: string): SettleReply => ({
  status: settleStatusFor(reason),
  body: { success: false, errorReason: reason, transaction: '', network, ...(payer ? { payer } : {}) },
});

/**
 * Solana (routing step 1): parse and check the request and the buyer's transaction (pure rules),
 * then start (or attach to) the Solana settlement workflow, which checks the cluster, co-signs as
 * fee payer, broadcasts and confirms. The buyer pays `payTo` directly, so organization payout and
 * platform-fee settings do not apply (docs/decisions.md "Solana settlement").
 */
export async function settleSolana(deps: ApiDeps, req: SettleRequest): Promise<SettleReply> {
  const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';

  const envelope = paymentPayloadEnvelopeSchema.safeParse(body.paymentPayload);
  if (!envelope.success) return failure('invalid_payload', networkName);
  const parsedReq = solanaPaymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!parsedReq.success) return failure('invalid_payment_requirements', networkName);
  const requirements = parsedReq.data;
  if (envelope.data.scheme !== 'exact' || requirements.scheme !== 'exact') return failure('unsupported_scheme', networkName);
  const svmPayload = exactSvmPayloadBodySchema.safeParse(envelope.data.payload);
  if (!svmPayload.success) return failure('invalid_payload', networkName);

  // Same-chain only: the requirement names the same network and no bridge destination.
  const id = envelope.data.network;
  if (!isSolanaNetworkId(id) || requirements.network !== id || requirements.extra?.destinationChainId !== undefined) {
    return failure('invalid_network', networkName);
  }
  const ctx = solanaNetworks(deps.config).get(id);
  assertKeyModeAllows(req.auth, { testnet: id === 'solana-devnet' }); // 403 before anything else is said
  if (!ctx || (!ctx.network.testnet && !deps.config.MAINNETS_ENABLED)) return failure('invalid_network', id);
  // We sponsor fees for USDC payments only (what /v1/supported advertises).
  if (requirements.asset !== ctx.network.usdc) return failure('invalid_payment_requirements', id);
  const feePayer = ctx.feePayer.publicKey;
  if (requirements.extra?.feePayer !== undefined && requirements.extra.feePayer !== feePayer.toBase58()) {
    return failure('invalid_exact_svm_payload_fee_payer_mismatch', id);
  }

  const inspection = inspectExactSvmTransaction(svmPayload.data.transaction, requirements, feePayer);
  if (!inspection.ok) return failure(inspection.reason, id, inspection.payer);
  const { payer, payerSignature } = inspection;

  const workflowId = solanaSettleWorkflowId(id, payer, payerSignature);
  const known = await req.em.findOne(Settlement, { id: workflowId });
  if (known && FINAL_STATES.has(known.state) && known.response) {
    return reply(JSON.parse(known.response) as SettleResponse, known.organizationId, req.auth, id);
  }

  const input: SolanaSettleInput = {
    workflowId,
    requestId: req.requestId,
    organizationId: req.auth.organizationId,
    apiKeyId: req.auth.apiKeyId ?? '',
    route: 'solana',
    network: id,
    transaction: svmPayload.data.transaction,
    payTo: requirements.payTo,
    asset: requirements.asset,
    maxAmountRequired: requirements.maxAmountRequired,
    payer,
    payerSignature,
  };
  const handle = await startOrAttach(deps.temporal, WORKFLOW_TYPES.solanaSettlement, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: [
      { key: X402Kind, value: 'settle' },
      { key: X402Network, value: id },
      { key: X402Payer, value: payer },
      { key: X402State, value: 'verifying' },
      { key: X402Organization, value: req.auth.organizationId },
    ],
    memo: { requestId: req.requestId },
    onStart: observeWorkflowStart(deps, WORKFLOW_TYPES.solanaSettlement, req.requestId, workflowId),
  });

  try {
    const result = await resultBefore<SettleOutcome>(deps.temporal, handle, Date.now() + deps.config.SETTLE_WAIT_MS);
    if (result.done) return reply(result.value.response, result.value.organizationId, req.auth, id);
  } catch (err) {
    const rejected = rejectionOf(err);
    if (rejected) return { status: settleStatusFor(rejected.errorReason ?? ''), body: rejected };
    throw err;
  }
  // Still running: pending, with the transaction signature once one is recorded.
  const row = await req.em.fork().findOne(Settlement, { id: workflowId });
  return {
    status: settleStatusFor('settlement_pending'),
    body: { success: false, errorReason: 'settlement_pending', transaction: row?.transaction ?? '', network: id, payer },
  };
}

/** A payment already settled for another organization is not theirs to claim. */
function reply(response: SettleResponse, ownerOrg: string, auth: AuthContext, network: string): SettleReply {
  if (ownerOrg !== auth.organizationId) return failure('invalid_transaction_state', network, response.payer);
  return { status: response.success ? 200 : settleStatusFor(response.errorReason ?? ''), body: response };
}

function rejectionOf(err: unknown): SettleResponse | undefined {
  if (!(err instanceof WorkflowFailedError)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === 'SettlementRejected' && cause.details?.[0]) {
    return cause.details[0] as SettleResponse;
  }
  return undefined;
}
