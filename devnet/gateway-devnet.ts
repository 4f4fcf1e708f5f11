import type { Address } from 'viem';
import { DEVNET_GATEWAY_OPERATOR_KEY, DEVNET_GATEWAY_WALLET_ADDRESS } from '../src/chains/devnet-addresses';
import { deployGatewayWallet } from './deploy-gateway-wallet';
import { startGatewayDouble, type GatewayDouble } from './gateway-double';

/**
 * The batched-payments part of the local stack, in one call (Jest global setup and `npm start`):
 * our GatewayWallet on every devnet chain, then the upstream gateway double serving them.
 */
export async function startDevnetGateway(opts: {
  chains: { network: string; chainId: number; rpcUrl: string }[];
  usdc: Address;
  port?: number;
  withdrawalDelayBlocks?: number;
  batchIntervalMs?: number;
  log?: (line: string) => void;
}): Promise<GatewayDouble & { gatewayWallet: Address }> {
  for (const c of opts.chains) {
    await deployGatewayWallet({ rpcUrl: c.rpcUrl, chainId: c.chainId, usdc: opts.usdc, withdrawalDelayBlocks: opts.withdrawalDelayBlocks });
  }
  const double = await startGatewayDouble({
    chains: opts.chains.map((c) => ({ ...c, usdc: opts.usdc })),
    gatewayWallet: DEVNET_GATEWAY_WALLET_ADDRESS,
    operatorKey: DEVNET_GATEWAY_OPERATOR_KEY,
    port: opts.port,
    batchIntervalMs: opts.batchIntervalMs,
    log: opts.log,
  });
  return Object.assign(double, { gatewayWallet: DEVNET_GATEWAY_WALLET_ADDRESS });
}

/**
 * `npm start`: when the testnet gateway URL is on this machine (the default), deploy the gateway
 * wallet on the devnet chains and serve the upstream double there. The devnet withdrawal delay is
 * GATEWAY_WITHDRAWAL_DELAY_BLOCKS (default 10); anvil mines a block per transaction (or `anvil_mine`).
 */
export async function startGatewayForDevnet(
  gatewayApiUrlTestnet: string,
  chains: { network: string; chainId: number; rpcUrl: string }[],
  usdc: Address,
  say: (line: string) => void,
): Promise<GatewayDouble | undefined> {
  const url = new URL(gatewayApiUrlTestnet);
  if (!['127.0.0.1', 'localhost'].includes(url.hostname)) return undefined;
  const delay = process.env.GATEWAY_WITHDRAWAL_DELAY_BLOCKS;
  const double = await startDevnetGateway({
    chains,
    usdc,
    port: Number(url.port || 80),
    withdrawalDelayBlocks: delay && /^\d+$/.test(delay) ? Number(delay) : undefined,
    log: (line) => say(`gateway double: ${line}`),
  });
  say(`upstream gateway double at ${double.url}, gateway wallet ${double.gatewayWallet} on ${chains.map((c) => c.network).join(', ')}`);
  return double;
}
