import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the Jest global setup started, written to a file that every test file reads. */
export interface StackInfo {
  temporalAddress: string;
  workflowBundlePath: string;
  chains: Record<'base-sepolia' | 'optimism-sepolia', { rpcUrl: string; chainId: number }>;
  usdc: `0x${string}`;
  facilitator: `0x${string}`;
  /** Upstream batching gateway double (devnet/gateway-double.ts) and our GatewayWallet on both chains. */
  gatewayApiUrl: string;
  gatewayWallet: `0x${string}`;
}

/** Per test run (several runs may share the machine); the global setup exports it to the tests. */
export const stackInfoPath = (pid = process.pid) => join(__dirname, '..', '..', '.data', `test-stack-${pid}.json`);
export const STACK_INFO_ENV = 'X402_TEST_STACK_INFO';

export function readStackInfo(): StackInfo {
  const path = process.env[STACK_INFO_ENV];
  if (!path) throw new Error(`${STACK_INFO_ENV} is not set: run the tests through jest (its global setup starts the stack)`);
  return JSON.parse(readFileSync(path, 'utf8')) as StackInfo;
}
