import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the Jest global setup started, written to a file that every test file reads. */
export interface StackInfo {
  temporalAddress: string;
  workflowBundlePath: string;
  chains: Record<'base-sepolia' | 'optimism-sepolia', { rpcUrl: string; chainId: number }>;
  usdc: `0x${string}`;
  facilitator: `0x${string}`;
}

export const STACK_INFO_PATH = join(__dirname, '..', '..', '.data', 'test-stack.json');

export function readStackInfo(): StackInfo {
  return JSON.parse(readFileSync(STACK_INFO_PATH, 'utf8')) as StackInfo;
}
