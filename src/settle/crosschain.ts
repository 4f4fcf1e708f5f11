import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, isGrpcServiceError } from '@temporalio/client';
import type { AuthContext } from '../auth/key-mode';
import type { ServiceDeps } from '../deps';
import { bpsOf } from '../chains/evm/bridge';
import { Settlement } from '../db/entities';
import { evmSettlementBase, undeliverableLeg } from './evm-request';
import { underGasBudget } from './gas-budget';
import { runsOrCompleted } from '../temporal/run-status';
import { pendingReply, replyFor, settleFailure, skeletonRoute } from './run';
import { x402SearchAttributes } from '../temporal/search-attributes';
import type { SettleResponse } from '../x402/schemas';
import { crossChainSettlementWorkflow, sourceTransactionUpdate } from '../../workflows/crosschain-settlement';
import { eip3009 } from '../schemes/eip3009';
import type { Eip3009Payment } from '../schemes/eip3009/types';
import type { SettleReply, SettleRequest, SettleRoute } from '../schemes/scheme';
import { crossChainRouteOf, type CrossChainRoute } from '../schemes/eip3009-crosschain/route';
import type { CrossChainSettleInput } from '../schemes/eip3009-crosschain/types';

/**
 * States whose recorded response is the answer (the source transaction succeeded, or it ended). An
 * abandoned leg's refund (`refunding`, `refunded`) does not change it: the source transaction did succeed.
 */
const ANSWERED_STATES = new Set(['bridging', 'settled', 'needs_review', 'refunding', 'refunded', 'failed']);

const sameChain = skeletonRoute(eip3009);

/**
 * Routing step 4 with a destination: an EIP-3009 payment whose `extra.destinationChainId` names
 * another chain is bridged (spec "Cross-chain settlement"). It is checked like any EIP-3009 payment
 * first (same parse, same answers), and verified like one.
 */
export const eip3009CrossChain: SettleRoute = {
  route: 'eip3009-crosschain',
  claims: (body) => {
    const destination = body.extra?.destinationChainId;
    return typeof destination === 'number' && body.chainId !== undefined && destination !== body.chainId;
  },
  async settle(deps, req) {
    const parsed = eip3009.parse(deps, req.auth, req.body);
    if (!parsed.ok) return settleFailure(parsed.refused, parsed.network, parsed.payer);
    const source = deps.networks.get(parsed.payment.network)!;
    const destinationChainId = parsed.payment.paymentRequirements.extra?.destinationChainId ?? undefined;
    const route = crossChainRouteOf(source, destinationChainId, deps.networks, { mainnetsEnabled: deps.config.MAINNETS_ENABLED });
    if (route.kind === 'same-chain') return sameChain.settle(deps, req);
    if (route.kind === 'reject') return settleFailure(route.reason, source.id, parsed.payer);
    return settleCrossChain(deps, req, parsed.payment, route);
  },
  verify: (deps, auth, body) => sameChain.verify(deps, auth, body),
};

/**
 * Starts the cross-chain workflow with update-with-start and answers as soon as the source
 * transaction has succeeded (success, the source hash, the source network); the bridge leg goes on
 * in the workflow. Past SETTLE_WAIT_MS: 202 settlement_pending; a repeat attaches or replays.
 */
async function settleCrossChain(
  deps: ServiceDeps,
  req: SettleRequest,
  p: Eip3009Payment,
  route: Extract<CrossChainRoute, { kind: 'cross-chain' }>,
): Promise<SettleReply> {
  const { paymentPayload: payload, paymentRequirements: requirements } = p;
  const network = deps.networks.get(p.network)!;
  const destination = route.destination;
  const value = BigInt(payload.payload.authorization.value);
  const base = await evmSettlementBase(deps, req, {
    workflowId: eip3009.businessKey(p), // one authorization, one settlement, bridged or not
    network: p.network,
    payer: payload.payload.authorization.from,
    amount: value,
    extra: requirements.extra,
    marketplaceFee: false, // the destination payout (receiveAndPayout) pays one fee; see docs/decisions/marketplace-fee.md
  });
  if ('refused' in base) return settleFailure(base.refused, base.network, base.payer, base.message);
  const { workflowId, payer } = base;
  const recorded = await answerFromRecord(req, workflowId, req.auth, network.id);
  if (recorded) return recorded;
  // A payout the destination could not credit (a mint to it would revert after the burn), judged
  // only before this settlement has a record: a repeat of one under way attaches to it, whose burn
  // may be out. Without an answer from the destination's RPC the payment goes on: the worker's
  // verification asks again before the burn, retried.
  if (!(await req.em.findOne(Settlement, { id: workflowId }))) {
    const leg = await undeliverableLeg(deps.networks, destination, base.payout).catch((err: unknown) => {
      deps.logger.warn({ requestId: req.requestId, network: destination.id, err: String(err) }, 'could not read the USDC blacklist');
      return undefined;
    });
    if (leg) return settleFailure(leg.refused, network.id, payer, leg.message);
  }

  const input: CrossChainSettleInput = {
    ...base,
    route: 'eip3009-crosschain',
    network: network.id,
    destinationNetwork: destination.id,
    sourceDomain: route.sourceDomain,
    destinationDomain: destination.cctpDomain,
    paymentPayload: payload,
    paymentRequirements: requirements,
    maxBridgeFee: bpsOf(value, deps.config.BRIDGE_MAX_FEE_BPS).toString(),
  };
  const start = new WithStartWorkflowOperation(crossChainSettlementWorkflow, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    typedSearchAttributes: x402SearchAttributes({
      kind: 'settle',
      network: network.id,
      payer,
      state: 'verifying',
      organization: base.organizationId,
    }),
    memo: { requestId: req.requestId },
  });
  const deadline = Date.now() + req.waitMs;
  try {
    // Charged to the organization's gas budget like every settlement. Update-with-start does not say
    // whether it started the run, so a settlement already running (a repeat of a pending request) or
    // completed is looked up first and not charged again; a failed run may run again and is charged.
    const running = await runsOrCompleted(deps.temporal, workflowId);
    const outcome = await underGasBudget(deps, base.organizationId, input.route, async (budgeted) => {
      const update = deps.temporal.withDeadline(deadline, () =>
        deps.temporal.workflow.executeUpdateWithStart(sourceTransactionUpdate, { startWorkflowOperation: start }),
      );
      // Whatever the update answers, the run exists once the start was accepted (its handle resolves
      // before the update's answer): the charge stands then.
      const accepted = await Promise.race([
        start.workflowHandle().then(
          () => true,
          () => false,
        ),
        update.then(
          () => false,
          () => false,
        ),
      ]);
      if (accepted) budgeted(running ? 'attached' : 'started');
      return update;
    });
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
