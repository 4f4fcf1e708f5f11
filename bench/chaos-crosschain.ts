/**
 * Cross-chain settlements in the chaos run (scheme eip3009-crosschain): a second anvil chain standing
 * for optimism-sepolia with our contracts, and the bridge attester double over both chains, as the
 * integration tests' global setup starts them. A buyer signs on base-sepolia for a payout on
 * optimism-sepolia; the seller is answered once the burn succeeded, and the mint and payout follow.
 * The verdict counts, per payment, the burns on the source and the payouts on the destination.
 */
import { createPublicClient, http, parseEventLogs, type Address, type PublicClient } from 'viem';
import { startAnvil } from '../devnet/anvil';
import { deployDevnet } from '../devnet/deploy';
import { attesterChainsFrom, startBridgeAttester } from '../devnet/bridge-attester';
import type { LogFn } from '../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../devnet/rpc-provider-double';
import { BridgeTransfer } from '../src/db/bridge-transfer';
import { Settlement } from '../src/db/entities';
import type { Database } from '../src/db/orm';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { PROVIDER_RULES } from './chaos-faults';
import { settleDown } from './chaos-kinds';
import { facilitatorAbi, tokenAbi } from '../src/chains/evm/abi';

export const DESTINATION_CHAIN_ID = 11155420;
export const CROSSCHAIN_ROUTE = 'eip3009-crosschain';
/** What the buyer signs in `extra` for a payout on the destination chain. */
export const CROSSCHAIN_EXTRA = { name: 'USDC', version: '2', destinationChainId: DESTINATION_CHAIN_ID };

export interface CrosschainSetup {
  env: Record<string, string>;
  dest: PublicClient;
  provider?: RpcProviderDouble;
  stop(): Promise<void>;
}

/** The destination chain and the attester; `sourceRpcUrl` is the source anvil itself (the attester is a third party). */
export async function setupCrosschain(o: { sourceRpcUrl: string; seed?: number; log: LogFn }): Promise<CrosschainSetup> {
  const stops: (() => Promise<unknown>)[] = [];
  const anvil = await startAnvil({ chainId: DESTINATION_CHAIN_ID, log: o.log });
  stops.push(() => anvil.stop());
  await deployDevnet({
    rpcUrl: anvil.rpcUrl,
    chainId: DESTINATION_CHAIN_ID,
    relayers: TEST_ACCOUNTS.relayers.map((a) => a.address),
    buyers: TEST_ACCOUNTS.buyers.map((b) => ({ address: b.address, amount: 1_000_000_000_000n })),
  });
  const attester = await startBridgeAttester({
    chains: attesterChainsFrom({ RPC_URLS_BASE_SEPOLIA: o.sourceRpcUrl, RPC_URLS_OPTIMISM_SEPOLIA: anvil.rpcUrl }),
  });
  stops.push(() => attester.stop());
  let provider: RpcProviderDouble | undefined;
  if (o.seed !== undefined) {
    provider = await startRpcProviderDouble({ upstream: anvil.rpcUrl, seed: o.seed, rules: PROVIDER_RULES, noSyncSend: true });
    stops.push(() => provider!.stop());
  }
  return {
    env: { RPC_URLS_OPTIMISM_SEPOLIA: provider?.url ?? anvil.rpcUrl, BRIDGE_ATTESTATION_URL: attester.url },
    dest: createPublicClient({ transport: http(anvil.rpcUrl) }) as PublicClient,
    provider,
    async stop() {
      for (const s of stops.reverse()) await s().catch(() => undefined);
    },
  };
}

export interface CrosschainPayment {
  workflowId: string;
  amount: bigint;
}

export interface CrosschainAudit {
  /** Per settlement workflow id: burns of its amount on the source, payouts of its bridge leg on the destination. */
  burns: Map<string, number>;
  payouts: Map<string, number>;
  /** Its bridge leg waits in needs_review (an operator's case, with the reason in its row). */
  bridgeParked: Set<string>;
  /** The destination payout wallet's balance delta against the delivered legs' payout amounts. */
  ledgerOk: boolean;
  problems: string[];
}

/**
 * Waits (bounded) until no cross-chain settlement is still bridging, then reads both chains. Burns
 * are the source facilitator's pulls of each payment's distinct amount from a buyer; payouts the
 * destination facilitator's BridgePayout events for the leg's CCTP nonce, which is on chain data
 * (the burn's message), recorded in the leg's row.
 */
export async function auditCrosschain(o: {
  payments: CrosschainPayment[];
  db: Database;
  source: PublicClient;
  dest: PublicClient;
  usdc: Address;
  facilitator: Address;
  payout: Address;
  payoutBefore: bigint;
  waitMs: number;
}): Promise<CrosschainAudit> {
  const ids = o.payments.map((p) => p.workflowId);
  const legs = () => o.db.em.fork().find(BridgeTransfer, { settlementId: { $in: ids } });
  await settleDown(async () => {
    const rows = await o.db.em.fork().find(Settlement, { id: { $in: ids } });
    return rows.every((r) => r.state !== 'bridging' && r.state !== 'submitted');
  }, o.waitMs);
  const rows = await legs();
  const problems: string[] = [];
  const buyers = new Set(TEST_ACCOUNTS.buyers.map((b) => b.address.toLowerCase()));
  const pulls = parseEventLogs({
    abi: tokenAbi,
    eventName: 'Transfer',
    logs: await o.source.getLogs({ address: o.usdc, fromBlock: 0n, toBlock: 'latest' }),
  }).filter((l) => buyers.has(l.args.from.toLowerCase()) && l.args.to.toLowerCase() === o.facilitator.toLowerCase());
  const payoutEvents = parseEventLogs({
    abi: facilitatorAbi,
    eventName: 'BridgePayout',
    logs: await o.dest.getLogs({ address: o.facilitator, fromBlock: 0n, toBlock: 'latest' }),
  }).filter((l) => l.args.payout.toLowerCase() === o.payout.toLowerCase());
  const burns = new Map<string, number>();
  const payouts = new Map<string, number>();
  const bridgeParked = new Set<string>();
  for (const p of o.payments) {
    burns.set(p.workflowId, pulls.filter((l) => l.args.value === p.amount).length);
    const legsOf = rows.filter((r) => r.settlementId === p.workflowId);
    if (legsOf.length > 1) problems.push(`${p.workflowId}: ${legsOf.length} bridge legs recorded`);
    const nonces = legsOf.map((r) => r.bridgeNonce).filter((n): n is string => !!n);
    payouts.set(p.workflowId, payoutEvents.filter((l) => nonces.includes(l.args.bridgeNonce)).length);
    if (legsOf.some((r) => r.state === 'needs_review')) bridgeParked.add(p.workflowId);
  }
  // Every payout on the destination belongs to a recorded leg, and the wallet got what the legs say.
  const known = new Set(rows.map((r) => r.bridgeNonce).filter(Boolean));
  const strangers = payoutEvents.filter((l) => !known.has(l.args.bridgeNonce));
  if (strangers.length) problems.push(`destination: ${strangers.length} payout(s) of no recorded bridge leg`);
  const delivered = rows.filter((r) => r.state === 'delivered').reduce((s, r) => s + BigInt(r.payoutAmount ?? '0'), 0n);
  const balance = (await o.dest.readContract({ address: o.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [o.payout] })) as bigint;
  const onChain = balance - o.payoutBefore;
  const ledgerOk = onChain === delivered && strangers.length === 0;
  if (onChain !== delivered) problems.push(`destination payout wallet: +${onChain} on chain, delivered legs ${delivered}`);
  return { burns, payouts, bridgeParked, ledgerOk, problems };
}
