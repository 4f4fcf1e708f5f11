import { WorkflowFailedError } from '@temporalio/client';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { ApplicationFailure } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/core';
import type { ServiceDeps } from '../deps';
import type { AuthContext } from '../auth/key-mode';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isEvmNetworkId, isListedToken } from '../chains/networks';
import { Settlement } from '../db/entities';
import { permitWorkflowId } from '../temporal/workflow-ids';
import { permitWorkflow } from '../../workflows/permit';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { x402SearchAttributes } from '../temporal/search-attributes';
import { parsePermitRequest, permitStatusFor, rawNetworkOf, type PermitReason, type PermitResponse } from './schema';
import { resolvePermitSignature } from './signature';
import { deadlineProblem } from './verify';
import { PERMIT_REJECTED, type PermitInput, type PermitOutcome, type PermitOwnerOf, type PermitRejection } from './types';
import { mainnetAllowed } from '../chains/mainnet-gate';
import { underGasBudget } from '../settle/gas-budget';

export interface PermitReply {
  status: number;
  body: PermitResponse;
}

/** Finished permits whose recorded response is replayed to repeats without asking Temporal. */
const FINAL_STATES = new Set(['executed', 'failed']);

export const permitFailure = (reason: PermitReason, network: string, message?: string): PermitReply => ({
  status: permitStatusFor(reason),
  body: { success: false, errorReason: reason, transaction: '', network, ...(message ? { message } : {}) },
});

/** POST /v1/permit after authentication, counted in x402_settlements_total with route `permit`. */
export async function executePermit(
  deps: ServiceDeps,
  req: { em: EntityManager; auth: AuthContext; requestId: string; body: unknown },
): Promise<PermitReply> {
  const started = performance.now();
  const out = await permit(deps, req);
  const outcome = out.body.success ? 'success' : (out.body.errorReason ?? 'unknown');
  deps.metrics?.settlement('permit', out.body.network, outcome, (performance.now() - started) / 1000);
  return out;
}

/**
 * Validate in the order of docs/decisions/permit.md (network, key mode, network configured, body,
 * signature form, deadline, tokenAddress given and listed), then start (or attach to) the permit workflow and wait
 * for it up to SETTLE_WAIT_MS.
 */
async function permit(
  deps: ServiceDeps,
  req: { em: EntityManager; auth: AuthContext; requestId: string; body: unknown },
): Promise<PermitReply> {
  const raw = rawNetworkOf(req.body);
  const parsed = parsePermitRequest(req.body);
  const body = req.body as { network?: unknown } | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof body.network !== 'string' || body.network === '') {
    return permitFailure('invalid_request', raw, parsed.ok ? 'network: is required' : parsed.message);
  }
  if (!isEvmNetworkId(raw)) return permitFailure('unsupported_network', raw, `network ${JSON.stringify(raw)} is not an EVM network id`);
  const network = deps.networks.get(raw)!;
  assertKeyModeAllows(req.auth, network); // 403 envelope before anything else is said about the network
  if (!network.enabled || !mainnetAllowed(deps.config, network)) {
    return permitFailure(
      'network_not_configured',
      raw,
      `network ${raw} is not configured on this service (no RPC, chain id or facilitator contract, or mainnets disabled)`,
    );
  }
  if (!parsed.ok) return permitFailure('invalid_request', raw, parsed.message);
  const r = parsed.request;
  const sig = resolvePermitSignature(r);
  if (!sig.ok) return permitFailure('invalid_signature', raw, sig.message);
  const late = deadlineProblem(r.deadline, Math.floor(Date.now() / 1000), deps.config.MIN_VALIDITY_SECONDS);
  if (late) return permitFailure('permit_execution_failed', raw, late);
  if (!r.tokenAddress) {
    return permitFailure(
      'permit_execution_failed',
      raw,
      'tokenAddress is required: the permit is applied to the token it names (there is no fallback to the network USDC)',
    );
  }
  if (!isListedToken(network, r.tokenAddress)) {
    return permitFailure('invalid_request', raw, `tokenAddress: ${r.tokenAddress} is not a token this service settles on ${raw}`);
  }

  const workflowId = permitWorkflowId(network.id, r.tokenAddress, r.owner, sig.sighash);
  const mine: PermitOwnerOf = { organizationId: req.auth.organizationId, recipient: r.recipient.toLowerCase(), value: r.value };
  const known = await req.em.findOne(Settlement, { id: workflowId });
  if (known && FINAL_STATES.has(known.state) && known.response) {
    const theirs = { organizationId: known.organizationId, recipient: known.recipient ?? '', value: known.amount };
    return reply(JSON.parse(known.response) as PermitResponse, theirs, mine);
  }

  const input: PermitInput = {
    workflowId,
    requestId: req.requestId,
    organizationId: req.auth.organizationId,
    apiKeyId: req.auth.apiKeyId ?? '',
    network: network.id,
    token: r.tokenAddress.toLowerCase(),
    owner: r.owner.toLowerCase(),
    spender: r.spender.toLowerCase(),
    recipient: mine.recipient,
    value: r.value,
    deadline: r.deadline,
    v: sig.v,
    r: sig.r,
    s: sig.s,
  };
  const observe = observeWorkflowStart(deps, permitWorkflow.name, req.requestId, workflowId);
  const handle = await underGasBudget(deps, req.auth.organizationId, 'permit', (budgeted) =>
    startOrAttach(deps.temporal, permitWorkflow, {
      workflowId,
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      args: [input],
      searchAttributes: x402SearchAttributes({
        kind: 'permit',
        network: network.id,
        payer: input.owner,
        state: 'verifying',
        organization: req.auth.organizationId,
      }),
      memo: { requestId: req.requestId },
      onStart: (result) => {
        budgeted(result);
        observe(result);
      },
    }),
  );

  const deadline = Date.now() + deps.config.SETTLE_WAIT_MS;
  try {
    for (;;) {
      // The spec's 200 means submitted: answer with the hash as soon as the workflow records it
      // (or with the outcome, when that comes first); the receipt wait goes on in the workflow.
      const submitted = await submittedReply(req.em, workflowId, mine);
      if (submitted) return submitted;
      const result = await resultBefore<PermitOutcome>(deps.temporal, handle, Math.min(deadline, Date.now() + SUBMITTED_POLL_MS));
      if (result.done) return reply(result.value.response, result.value, mine);
      if (Date.now() >= deadline) break;
    }
  } catch (err) {
    const rejected = rejectionOf(err);
    if (rejected) return { status: permitStatusFor(rejected[0].errorReason ?? ''), body: rejected[0] };
    throw err;
  }
  // Not sent yet (e.g. verification retrying a chain that is down): pending; a repeat of this
  // request attaches to the same workflow. (Sent just at the deadline: that is still a 200.)
  const submitted = await submittedReply(req.em, workflowId, mine);
  if (submitted) return submitted;
  return {
    status: permitStatusFor('permit_pending'),
    body: {
      success: false,
      errorReason: 'permit_pending',
      transaction: '',
      network: network.id,
      message: 'the permit is still executing; repeat the same request for the outcome',
    },
  };
}

/** How often a waiting request looks for the recorded transaction of its permit. */
const SUBMITTED_POLL_MS = 200;

/** 200 with the transaction once the permit's transaction is recorded as sent and not yet mined. */
async function submittedReply(em: EntityManager, workflowId: string, mine: PermitOwnerOf): Promise<PermitReply | undefined> {
  const row = await em.fork().findOne(Settlement, { id: workflowId });
  if (row?.state !== 'submitted' || !row.transaction) return undefined;
  const theirs = { organizationId: row.organizationId, recipient: row.recipient ?? '', value: row.amount };
  return reply({ success: true, transaction: row.transaction, network: row.network }, theirs, mine);
}

/**
 * A permit's result belongs to the request that ran it. The signature does not cover the recipient,
 * so a repeat naming another recipient, value or organization is told the permit is used up.
 */
function reply(response: PermitResponse, theirs: PermitOwnerOf, mine: PermitOwnerOf): PermitReply {
  const same = theirs.organizationId === mine.organizationId && theirs.recipient === mine.recipient && theirs.value === mine.value;
  if (!same) {
    return permitFailure('permit_execution_failed', response.network, 'this permit signature was already used by another request');
  }
  return { status: response.success ? 200 : permitStatusFor(response.errorReason ?? ''), body: response };
}

/** A workflow that ended failed with our PermitRejected failure carries its permit response. */
function rejectionOf(err: unknown): PermitRejection | undefined {
  if (!(err instanceof WorkflowFailedError)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === PERMIT_REJECTED && cause.details?.[0]) {
    return cause.details as PermitRejection;
  }
  return undefined;
}
