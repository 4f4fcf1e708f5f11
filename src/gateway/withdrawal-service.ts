import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import type { Address } from 'viem';
import { z } from 'zod';
import type { ServiceDeps } from '../deps';
import type { AuthContext } from '../auth/key-mode';
import { ApiError } from '../errors';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isEvmNetworkId, type EvmNetwork } from '../chains/networks';
import { publicClientFor } from '../chains/evm/clients';
import { Settlement } from '../db/entities';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { startOrAttach } from '../temporal/start-or-attach';
import { withdrawalWorkflow } from '../../workflows/withdrawal';
import { withdrawalWorkflowId } from '../temporal/workflow-ids';
import { x402SearchAttributes } from '../temporal/search-attributes';
import { WITHDRAWAL_ROUTE, type WithdrawalInput, type WithdrawalRecord } from './withdrawal-types';
import { mainnetAllowed } from '../chains/mainnet-gate';
import { gatewayWalletAbi } from '../chains/evm/abi';

/**
 * The facilitator's own account in the gateway wallet (docs/decisions/batched-payments-and-withdrawals.md):
 * balances, and withdrawals as durable WithdrawalWorkflows. The depositor is the
 * relayer (RELAYER_ADDRESS; the worker signs the withdrawal with its key, which the API never holds).
 */

export const depositorOf = (deps: Pick<ServiceDeps, 'config'>): Address => {
  if (!deps.config.RELAYER_ADDRESS) throw new ApiError(503, 'RELAYER_ADDRESS is not configured on this service');
  return deps.config.RELAYER_ADDRESS as Address;
};

/** A network whose chain we reach, with a known USDC (the gateway wallet's token). */
function gatewayChain(deps: ServiceDeps, auth: AuthContext, id: unknown): EvmNetwork & { usdc: Address } {
  if (typeof id !== 'string' || !isEvmNetworkId(id)) throw new ApiError(400, 'network: must be an EVM network id, e.g. base-sepolia');
  const network = deps.networks.get(id)!;
  assertKeyModeAllows(auth, network);
  if (!network.enabled || !network.usdc) throw new ApiError(400, `network: ${id} is not configured on this service (no RPC URL or USDC)`);
  if (!mainnetAllowed(deps.config, network)) throw new ApiError(400, `network: ${id} is a mainnet and MAINNETS_ENABLED is off`);
  return network as EvmNetwork & { usdc: Address };
}

export async function gatewayBalances(deps: ServiceDeps, auth: AuthContext, networkId: unknown) {
  const network = gatewayChain(deps, auth, networkId);
  const depositor = depositorOf(deps);
  const client = publicClientFor(network);
  const read = (functionName: 'availableBalance' | 'withdrawingBalance' | 'withdrawableBalance' | 'totalBalance' | 'withdrawalBlock') =>
    client.readContract({ address: network.gatewayWallet, abi: gatewayWalletAbi, functionName, args: [network.usdc, depositor] });
  const [tokenSupported, withdrawalDelay, available, withdrawing, withdrawable, total, withdrawalBlock, blockNumber] = await Promise.all([
    client.readContract({ address: network.gatewayWallet, abi: gatewayWalletAbi, functionName: 'isTokenSupported', args: [network.usdc] }),
    readWithdrawalDelay(network),
    read('availableBalance'),
    read('withdrawingBalance'),
    read('withdrawableBalance'),
    read('totalBalance'),
    read('withdrawalBlock'),
    client.getBlockNumber({ cacheTime: 0 }),
  ]);
  return {
    network: network.id,
    gatewayWallet: network.gatewayWallet,
    token: network.usdc,
    depositor,
    tokenSupported,
    availableBalance: available.toString(),
    withdrawingBalance: withdrawing.toString(),
    withdrawableBalance: withdrawable.toString(),
    totalBalance: total.toString(),
    withdrawalBlock: withdrawalBlock.toString(),
    withdrawalDelayBlocks: withdrawalDelay.toString(),
    blockNumber: blockNumber.toString(),
  };
}

/** The spec's withdrawal delay ("7 days") is what the contract enforces: its `withdrawalDelay()`, in blocks. */
const readWithdrawalDelay = (network: EvmNetwork) =>
  publicClientFor(network).readContract({ address: network.gatewayWallet, abi: gatewayWalletAbi, functionName: 'withdrawalDelay' });

export const withdrawalRequestSchema = z.object({
  network: z.string().min(1).max(64),
  amount: z.string().regex(/^[1-9][0-9]{0,77}$/, 'must be a positive decimal integer string (base units)'),
  idempotencyKey: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 . _ -')
    .optional()
    .describe('Repeat a request with the same key to get the same withdrawal; default: a new withdrawal'),
});

const ACTIVE = ['initiating', 'waiting', 'withdrawing'];

/** POST /v1/gateway/withdrawals: checks, then starts (or attaches to) the withdrawal workflow. */
export async function startWithdrawal(deps: ServiceDeps, em: EntityManager, auth: AuthContext, requestId: string, raw: unknown) {
  const parsed = withdrawalRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new ApiError(400, `${i.path.join('.') || 'body'}: ${i.message}`);
  }
  const { amount, idempotencyKey } = parsed.data;
  const network = gatewayChain(deps, auth, parsed.data.network);
  const depositor = depositorOf(deps);
  const workflowId = withdrawalWorkflowId(network.id, depositor, idempotencyKey ?? randomUUID());

  const existing = await em.findOne(Settlement, { id: workflowId, route: WITHDRAWAL_ROUTE });
  if (existing) {
    if (existing.organizationId !== auth.organizationId || existing.amount !== amount) {
      throw new ApiError(409, 'idempotencyKey was used for a different withdrawal');
    }
    return { status: 202, body: recordOf(existing) };
  }
  // initiateWithdrawal restarts the delay of everything pending and withdraw takes it all: one at a time.
  const active = await em.findOne(Settlement, {
    route: WITHDRAWAL_ROUTE,
    network: network.id,
    payer: depositor.toLowerCase(),
    state: { $in: ACTIVE },
  });
  if (active) throw new ApiError(409, `withdrawal ${active.id} is still in progress on ${network.id}`);
  const [available, withdrawalDelay] = await Promise.all([
    publicClientFor(network).readContract({
      address: network.gatewayWallet,
      abi: gatewayWalletAbi,
      functionName: 'availableBalance',
      args: [network.usdc, depositor],
    }),
    readWithdrawalDelay(network),
  ]);
  if (available < BigInt(amount)) throw new ApiError(400, `amount: exceeds the available balance ${available} in the gateway wallet`);

  const input: WithdrawalInput = {
    workflowId,
    requestId,
    organizationId: auth.organizationId,
    apiKeyId: auth.apiKeyId ?? '',
    network: network.id,
    gatewayWallet: network.gatewayWallet,
    token: network.usdc,
    depositor,
    amount,
    withdrawalDelayBlocks: withdrawalDelay.toString(),
    pollMs: deps.config.WITHDRAWAL_POLL_MS,
  };
  await startOrAttach(deps.temporal, withdrawalWorkflow, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: x402SearchAttributes({
      kind: 'withdrawal',
      network: network.id,
      payer: depositor,
      state: 'initiating',
      organization: auth.organizationId,
    }),
    memo: { requestId },
    onStart: observeWorkflowStart(deps, withdrawalWorkflow.name, requestId, workflowId),
  });
  const initial: WithdrawalRecord = {
    id: workflowId,
    network: network.id,
    gatewayWallet: network.gatewayWallet,
    token: network.usdc,
    depositor,
    amount,
    state: 'initiating',
    initiateTransaction: null,
    withdrawalDelayBlocks: withdrawalDelay.toString(),
    withdrawalBlock: null,
    withdrawTransaction: null,
    errorReason: null,
    message: null,
  };
  return { status: 202, body: initial };
}

/** GET /v1/gateway/withdrawals/:id: the record of a withdrawal this organization started. */
export async function getWithdrawal(em: EntityManager, auth: AuthContext, id: string): Promise<WithdrawalRecord> {
  const row = await em.findOne(Settlement, { id, route: WITHDRAWAL_ROUTE, organizationId: auth.organizationId });
  if (!row) throw new ApiError(404, 'withdrawal not found');
  return recordOf(row);
}

function recordOf(row: Settlement): WithdrawalRecord {
  return JSON.parse(row.response ?? '{}') as WithdrawalRecord;
}
