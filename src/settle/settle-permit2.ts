import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ApiDeps, AuthContext } from '../api/context';
import { assertKeyModeAllows } from '../api/middleware/auth';
import { isEvmNetworkId, type EvmNetwork } from '../chains/networks';
import { uptoSettleAmount } from '../chains/evm/verify-permit2';
import { Organization, Settlement } from '../db/entities';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { permit2SettleWorkflowId } from '../temporal/workflow-ids';
import { WORKFLOW_TYPES } from '../temporal/task-queues';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../../temporal/search-attributes';
import { settleStatusFor, type SettleReason } from '../x402/error-reasons';
import { permit2PaymentPayloadSchema } from '../x402/permit2-payload';
import { paymentRequirementsSchema, type SettleResponse } from '../x402/schemas';
import { SETTLEMENT_REJECTED, type SettleOutcome } from './types';
import type { Permit2SettleInput } from './permit2-types';
// Types only: a value import of settle-service would be circular (it imports this handler).
import type { SettleReply, SettleRequest } from './settle-service';

const FINAL_STATES = new Set(['settled', 'failed']);
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

const failure = (reason: SettleReason | string, network = '', payer?: string): SettleReply => ({
  status: settleStatusFor(reason),
  body: { success: false, errorReason: reason, transaction: '', network, ...(payer ? { payer } : {}) },
});

/**
 * Permit2 (routing step 3), `exact` and `upto`: the request checks (the same as EIP-3009's, with the
 * Permit2 payload schema), the payout and fee, then start (or attach to) the Permit2 settlement
 * workflow and wait up to SETTLE_WAIT_MS; past that, 202 `settlement_pending`.
 */
export async function settlePermit2(deps: ApiDeps, req: SettleRequest): Promise<SettleReply> {
  const body = (typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? req.body : {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';

  const payload = permit2PaymentPayloadSchema.safeParse(body.paymentPayload);
  if (!payload.success) return failure('invalid_payload', networkName);
  const payer = payload.data.payload.owner;
  const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!requirements.success) return failure('invalid_payment_requirements', networkName, payer);

  const network: EvmNetwork | undefined = isEvmNetworkId(networkName) ? deps.networks.get(networkName) : undefined;
  if (!network) return failure('invalid_network', networkName, payer);
  assertKeyModeAllows(req.auth, network); // 403 before anything else is said about the network
  if (!network.enabled || network.permitOnly) return failure('invalid_network', network.id, payer);
  if (!network.testnet && !deps.config.MAINNETS_ENABLED) return failure('invalid_network', network.id, payer);

  const org = await req.em.findOne(Organization, { id: req.auth.organizationId });
  const payout = requirements.data.extra?.creditedRecipient ?? (network.testnet ? org?.payoutWalletTest : org?.payoutWalletLive);
  if (!org || !payout) return failure('payout_wallet_not_configured', network.id, payer);

  const workflowId = permit2SettleWorkflowId(network.id, payer, payload.data.payload.permit.nonce);
  const known = await req.em.findOne(Settlement, { id: workflowId });
  if (known && FINAL_STATES.has(known.state) && known.response) {
    return reply(JSON.parse(known.response) as SettleResponse, known.organizationId, req.auth, network);
  }

  // The amount that moves; an invalid settleAmount is rejected by the workflow's verification.
  const amount = payload.data.scheme === 'upto' ? uptoSettleAmount(requirements.data) : BigInt(payload.data.payload.permit.permitted.amount);
  const feeRecipient = deps.config.PLATFORM_FEE_RECIPIENT;
  const fee = feeRecipient && org.platformFeeBps ? (amount * BigInt(org.platformFeeBps)) / 10_000n : 0n;
  const input: Permit2SettleInput = {
    workflowId,
    requestId: req.requestId,
    organizationId: org.id,
    apiKeyId: req.auth.apiKeyId ?? '',
    route: 'permit2',
    network: network.id,
    paymentPayload: payload.data,
    paymentRequirements: requirements.data,
    amount: amount.toString(),
    payout,
    fee: fee.toString(),
    feeRecipient: fee > 0n && feeRecipient ? feeRecipient : ZERO_ADDRESS,
  };
  const handle = await startOrAttach(deps.temporal, WORKFLOW_TYPES.permit2Settlement, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: [
      { key: X402Kind, value: 'settle' },
      { key: X402Network, value: network.id },
      { key: X402Payer, value: payer.toLowerCase() },
      { key: X402State, value: 'verifying' },
      { key: X402Organization, value: org.id },
    ],
    memo: { requestId: req.requestId },
    onStart: observeWorkflowStart(deps, WORKFLOW_TYPES.permit2Settlement, req.requestId, workflowId),
  });

  try {
    const result = await resultBefore<SettleOutcome>(deps.temporal, handle, Date.now() + deps.config.SETTLE_WAIT_MS);
    if (result.done) return reply(result.value.response, result.value.organizationId, req.auth, network);
  } catch (err) {
    const rejected = rejectionOf(err);
    if (rejected) return { status: settleStatusFor(rejected.errorReason ?? ''), body: rejected };
    throw err;
  }
  const row = await req.em.fork().findOne(Settlement, { id: workflowId });
  return {
    status: settleStatusFor('settlement_pending'),
    body: { success: false, errorReason: 'settlement_pending', transaction: row?.transaction ?? '', network: network.id, payer },
  };
}

/** A payment already settled for another organization is not theirs to claim. */
function reply(response: SettleResponse, ownerOrg: string, auth: AuthContext, network: EvmNetwork): SettleReply {
  if (ownerOrg !== auth.organizationId) return failure('invalid_transaction_state', network.id, response.payer);
  return { status: response.success ? 200 : settleStatusFor(response.errorReason ?? ''), body: response };
}

/** A workflow that ended failed with our SettlementRejected failure carries its settle response. */
function rejectionOf(err: unknown): SettleResponse | undefined {
  if (!(err instanceof WorkflowFailedError)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === SETTLEMENT_REJECTED && cause.details?.[0]) {
    return cause.details[0] as SettleResponse;
  }
  return undefined;
}
