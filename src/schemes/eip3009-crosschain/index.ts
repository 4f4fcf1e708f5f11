import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, isGrpcServiceError } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { ServiceDeps } from '../../deps';
import type { AuthContext } from '../../auth/key-mode';
import type { EvmNetwork } from '../../chains/networks';
import { bpsOf } from '../../chains/evm/bridge';
import { Settlement } from '../../db/entities';
import { WORKFLOW_TYPES } from '../../temporal/task-queues';
import { settleWorkflowId } from '../../temporal/workflow-ids';
import type { SettleResponse } from '../../x402/schemas';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../../temporal/search-attributes';
import { SOURCE_TRANSACTION_UPDATE, type CrossChainOutcome, type CrossChainSettleInput } from './types';
import { crossChainRouteOf } from './route';
import { parseExactPayment } from '../../settle/parse-payment';
import {
  payoutFor,
  pendingReply,
  platformFee,
  replyFor,
  settleFailure,
  type SettleHandler,
  type SettleReply,
  type SettleRequest,
} from '../../settle/run';

/** States whose recorded response is the answer (the source transaction succeeded, or it ended). */
const ANSWERED_STATES = new Set(['bridging', 'settled', 'needs_review', 'failed']);

/**
 * Routing step 4 with the cross-chain decision in front: a payment whose `extra.destinationChainId`
 * names another chain is bridged (below); every other EIP-3009 payment, and every body that does not
 * parse, goes to the same-chain handler unchanged.
 */
export function withCrossChainRoute(sameChain: SettleHandler): SettleHandler {
  return async (deps, req) => {
    const parsed = parseExactPayment(deps, req.auth, req.body);
    if (!parsed.ok) return sameChain(deps, req);
    const route = crossChainRouteOf(parsed.network, parsed.requirements.extra?.destinationChainId ?? undefined, deps.networks, {
      mainnetsEnabled: deps.config.MAINNETS_ENABLED,
    });
    if (route.kind === 'same-chain') return sameChain(deps, req);
    if (route.kind === 'reject') return settleFailure(route.reason, parsed.network.id, parsed.payer);
    return settleCrossChain(deps, req, { ...parsed, destination: route.destination, sourceDomain: route.sourceDomain });
  };
}

/**
 * Starts the cross-chain workflow with update-with-start and answers as soon as the source
 * transaction has succeeded (success, the source hash, the source network); the bridge leg goes on
 * in the workflow. Past SETTLE_WAIT_MS: 202 settlement_pending; a repeat attaches or replays.
 */
async function settleCrossChain(
  deps: ServiceDeps,
  req: SettleRequest,
  p: Extract<ReturnType<typeof parseExactPayment>, { ok: true }> & {
    destination: EvmNetwork & { gatewayDomain: number };
    sourceDomain: number;
  },
): Promise<SettleReply> {
  const { payload, requirements, network, payer, destination } = p;
  const resolved = await payoutFor(req, network.testnet, requirements.extra?.creditedRecipient);
  if (!resolved) return settleFailure('payout_wallet_not_configured', network.id, payer);
  const { org, payout } = resolved;

  const a = payload.payload.authorization;
  const workflowId = settleWorkflowId(network.id, payer, a.nonce);
  const recorded = await answerFromRecord(req, workflowId, req.auth, network.id);
  if (recorded) return recorded;

  const value = BigInt(a.value);
  const { fee, feeRecipient } = platformFee(value, org, deps);
  const input: CrossChainSettleInput = {
    workflowId,
    requestId: req.requestId,
    organizationId: org.id,
    apiKeyId: req.auth.apiKeyId ?? '',
    route: 'eip3009-crosschain',
    network: network.id,
    destinationNetwork: destination.id,
    sourceDomain: p.sourceDomain,
    destinationDomain: destination.gatewayDomain,
    paymentPayload: payload,
    paymentRequirements: requirements,
    payout,
    fee: fee.toString(),
    feeRecipient,
    maxBridgeFee: bpsOf(value, deps.config.BRIDGE_MAX_FEE_BPS).toString(),
  };
  const start = new WithStartWorkflowOperation(WORKFLOW_TYPES.crossChainSettlement, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: [
      { key: X402Kind, value: 'settle' },
      { key: X402Network, value: network.id },
      { key: X402Payer, value: payer.toLowerCase() },
      { key: X402State, value: 'verifying' },
      { key: X402Organization, value: org.id },
    ],
    memo: { requestId: req.requestId },
  });
  const deadline = Date.now() + deps.config.SETTLE_WAIT_MS;
  try {
    const outcome = await deps.temporal.withDeadline(deadline, () =>
      deps.temporal.workflow.executeUpdateWithStart<Workflow, CrossChainOutcome, []>(SOURCE_TRANSACTION_UPDATE, {
        startWorkflowOperation: start,
      }),
    );
    deps.logger.info({ requestId: req.requestId, workflowId }, 'cross-chain settlement answered');
    return replyFor(outcome.response, outcome.organizationId, req.auth, network.id);
  } catch (err) {
    // Completed meanwhile (a concurrent duplicate finished it): the record has the answer.
    const em = req.em.fork();
    const again = await answerFromRecord({ em }, workflowId, req.auth, network.id);
    if (again) return again;
    // The same authorization is being settled on the source chain (sent earlier without a
    // destination): that settlement has no cross-chain update, and this one cannot happen too.
    const other = await em.findOne(Settlement, { id: workflowId });
    if (other && other.route !== 'eip3009-crosschain') return settleFailure('invalid_transaction_state', network.id, payer);
    if (!(err instanceof WorkflowExecutionAlreadyStartedError) && !(Date.now() >= deadline - 50 || isDeadline(err))) throw err;
  }
  return pendingReply(req, workflowId, network.id, payer);
}

const isDeadline = (err: unknown) =>
  (isGrpcServiceError(err) && (err.code === 4 || err.code === 1)) || /deadline|cancel/i.test(String((err as Error)?.message));

/** The recorded answer of a settlement that has one (source transaction succeeded, or it ended). */
async function answerFromRecord(
  req: Pick<SettleRequest, 'em'>,
  workflowId: string,
  auth: AuthContext,
  network: string,
): Promise<SettleReply | undefined> {
  const row = await req.em.findOne(Settlement, { id: workflowId });
  if (!row?.response) return undefined;
  // A same-chain settlement of this very authorization answers once it is final.
  const answered = row.route === 'eip3009-crosschain' ? ANSWERED_STATES.has(row.state) : ['settled', 'failed'].includes(row.state);
  if (!answered) return undefined;
  return replyFor(JSON.parse(row.response) as SettleResponse, row.organizationId, auth, network);
}
