import type { ServiceDeps } from '../deps';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isEvmNetworkId, type EvmNetwork } from '../chains/networks';
import { uptoSettleAmount } from '../schemes/permit2/verify';
import { permit2SettleWorkflowId } from '../temporal/workflow-ids';
import { WORKFLOW_TYPES } from '../temporal/task-queues';
import { permit2PaymentPayloadSchema } from '../schemes/permit2/payload';
import { paymentRequirementsSchema } from '../x402/schemas';
import type { Permit2SettleInput } from '../schemes/permit2/types';
import {
  payoutFor,
  platformFee,
  recordedSettlement,
  runSettlement,
  settleFailure,
  type SettleReply,
  type SettleRequest,
} from './run';

/**
 * Permit2 (routing step 3), `exact` and `upto`: the request checks (the same as EIP-3009's, with the
 * Permit2 payload schema), the payout and fee, then start (or attach to) the Permit2 settlement
 * workflow and wait up to SETTLE_WAIT_MS; past that, 202 `settlement_pending`.
 */
export async function settlePermit2(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply> {
  const body = (typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? req.body : {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';

  const payload = permit2PaymentPayloadSchema.safeParse(body.paymentPayload);
  if (!payload.success) return settleFailure('invalid_payload', networkName);
  const payer = payload.data.payload.owner;
  const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!requirements.success) return settleFailure('invalid_payment_requirements', networkName, payer);

  const network: EvmNetwork | undefined = isEvmNetworkId(networkName) ? deps.networks.get(networkName) : undefined;
  if (!network) return settleFailure('invalid_network', networkName, payer);
  assertKeyModeAllows(req.auth, network); // 403 before anything else is said about the network
  if (!network.enabled || network.permitOnly) return settleFailure('invalid_network', network.id, payer);
  if (!network.testnet && !deps.config.MAINNETS_ENABLED) return settleFailure('invalid_network', network.id, payer);

  const resolved = await payoutFor(req, network.testnet, requirements.data.extra?.creditedRecipient);
  if (!resolved) return settleFailure('payout_wallet_not_configured', network.id, payer);
  const { org, payout } = resolved;

  const workflowId = permit2SettleWorkflowId(network.id, payer, payload.data.payload.permit.nonce);
  const recorded = await recordedSettlement(req, workflowId, network.id);
  if (recorded) return recorded;

  // The amount that moves; an invalid settleAmount is rejected by the workflow's verification.
  const amount =
    payload.data.scheme === 'upto' ? uptoSettleAmount(requirements.data) : BigInt(payload.data.payload.permit.permitted.amount);
  const { fee, feeRecipient } = platformFee(amount, org, deps);
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
    feeRecipient,
  };
  return runSettlement(deps, req, { workflowType: WORKFLOW_TYPES.permit2Settlement, workflowId, input, network: network.id, payer });
}
