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
