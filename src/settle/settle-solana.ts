import type { ServiceDeps } from '../deps';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isSolanaNetworkId } from '../chains/networks';
import { solanaNetworks } from '../chains/solana/context';
import { inspectExactSvmTransaction } from '../schemes/solana/verify';
import { WORKFLOW_TYPES } from '../temporal/task-queues';
import { solanaSettleWorkflowId } from '../temporal/workflow-ids';
import { paymentPayloadEnvelopeSchema } from '../x402/schemas';
import { exactSvmPayloadBodySchema, solanaPaymentRequirementsSchema } from '../schemes/solana/schemas';
import { recordedSettlement, runSettlement, settleFailure, type SettleReply, type SettleRequest } from './run';
import type { SolanaSettleInput } from '../schemes/solana/types';

/**
 * Solana (routing step 1): parse and check the request and the buyer's transaction (pure rules),
 * then start (or attach to) the Solana settlement workflow, which checks the cluster, co-signs as
 * fee payer, broadcasts and confirms. The buyer pays `payTo` directly, so organization payout and
 * platform-fee settings do not apply (docs/decisions.md "Solana settlement").
 */
export async function settleSolana(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply> {
  const body = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';

  const envelope = paymentPayloadEnvelopeSchema.safeParse(body.paymentPayload);
  if (!envelope.success) return settleFailure('invalid_payload', networkName);
  const parsedReq = solanaPaymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!parsedReq.success) return settleFailure('invalid_payment_requirements', networkName);
  const requirements = parsedReq.data;
  if (envelope.data.scheme !== 'exact' || requirements.scheme !== 'exact') return settleFailure('unsupported_scheme', networkName);
  const svmPayload = exactSvmPayloadBodySchema.safeParse(envelope.data.payload);
  if (!svmPayload.success) return settleFailure('invalid_payload', networkName);

  // Same-chain only: the requirement names the same network and no bridge destination.
  const id = envelope.data.network;
  if (!isSolanaNetworkId(id) || requirements.network !== id || requirements.extra?.destinationChainId !== undefined) {
    return settleFailure('invalid_network', networkName);
  }
  const ctx = solanaNetworks(deps.config).get(id);
  assertKeyModeAllows(req.auth, { testnet: id === 'solana-devnet' }); // 403 before anything else is said
  if (!ctx || (!ctx.network.testnet && !deps.config.MAINNETS_ENABLED)) return settleFailure('invalid_network', id);
  // We sponsor fees for USDC payments only (what /v1/supported advertises).
  if (requirements.asset !== ctx.network.usdc) return settleFailure('invalid_payment_requirements', id);
  const feePayer = ctx.feePayer.publicKey;
  if (requirements.extra?.feePayer !== undefined && requirements.extra.feePayer !== feePayer.toBase58()) {
    return settleFailure('invalid_exact_svm_payload_fee_payer_mismatch', id);
  }

  const inspection = inspectExactSvmTransaction(svmPayload.data.transaction, requirements, feePayer);
  if (!inspection.ok) return settleFailure(inspection.reason, id, inspection.payer);
  const { payer, payerSignature } = inspection;

  const workflowId = solanaSettleWorkflowId(id, payer, payerSignature);
  const recorded = await recordedSettlement(req, workflowId, id);
  if (recorded) return recorded;

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
  return runSettlement(deps, req, { workflowType: WORKFLOW_TYPES.solanaSettlement, workflowId, input, network: id, payer });
}
