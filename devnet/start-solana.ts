/**
 * `npm start`, Solana part: when solana-devnet's RPC URL is a loopback URL (default
 * http://127.0.0.1:8899), run the litesvm-backed devnet node there (in the start process; its
 * state is in memory and starts fresh on every `npm start`), with the fee payer funded and a demo
 * buyer holding USDC.
 */
import { createHash } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import type { Config } from '../src/config';
import { buildSolanaNetworkTable } from '../src/chains/networks';
import { base58Encode } from '../src/chains/solana/base58';
import { solanaFeePayerFor } from '../src/chains/solana/fee-payer';
import { startSolanaDevnet, type SolanaDevnet } from './solana-rpc';

/** DEVNET ONLY: a Solana demo buyer derived from a public seed. Never fund it on a real cluster. */
export const DEMO_SOLANA_BUYER = Keypair.fromSeed(createHash('sha256').update('x402 devnet solana demo buyer').digest());
const DEMO_USDC = 1_000_000_000n; // 1000 USDC

export async function startLocalSolanaDevnet(
  env: Record<string, string | undefined>,
  config: Config,
  say: (line: string) => void,
): Promise<SolanaDevnet | undefined> {
  const network = buildSolanaNetworkTable(env).get('solana-devnet')!;
  const url = network.rpcUrl ? new URL(network.rpcUrl) : undefined;
  const feePayer = solanaFeePayerFor(network, config.SOLANA_FEE_PAYER_KEY);
  if (!url || !feePayer || !['127.0.0.1', 'localhost'].includes(url.hostname)) return undefined;
  const node = await startSolanaDevnet({
    usdcMint: network.usdc,
    feePayers: [feePayer.publicKey],
    port: Number(url.port || 80),
    host: url.hostname,
  });
  node.ledger.airdrop(DEMO_SOLANA_BUYER.publicKey, 1_000_000_000n);
  node.ledger.fundToken(DEMO_SOLANA_BUYER.publicKey, DEMO_USDC);
  say(`solana-devnet (litesvm, in memory) on ${node.url}: USDC mint ${network.usdc}, fee payer ${feePayer.publicKey.toBase58()}`);
  say(
    `  DEVNET ONLY demo Solana buyer ${DEMO_SOLANA_BUYER.publicKey.toBase58()} (1000 USDC), secret key ${base58Encode(DEMO_SOLANA_BUYER.secretKey)}`,
  );
  return node;
}
