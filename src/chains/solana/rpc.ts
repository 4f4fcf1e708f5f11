import { Connection, PublicKey, VersionedTransaction } from '@solana/web3.js';
import { ACCOUNT_SIZE, decodeMint, decodeTokenAccount, isTokenProgram, MINT_SIZE } from './spl-token';

/**
 * The small slice of a Solana node the facilitator needs. Production implements it with
 * @solana/web3.js `Connection` against the network's RPC URL; the devnet/test stack points that same
 * code at devnet/solana-rpc.ts (a JSON-RPC server backed by litesvm), so nothing here is faked.
 */
export interface SolanaRpc {
  /** Whether transactions with this recent blockhash can still land. */
  isBlockhashValid(blockhash: string): Promise<boolean>;
  /** Runs the transaction without committing it (signatures not checked: the fee payer has not signed yet). */
  simulate(tx: VersionedTransaction): Promise<{ err: unknown; logs: string[] }>;
  /** Broadcasts signed wire bytes; returns the transaction signature (base58). */
  sendRawTransaction(raw: Uint8Array): Promise<string>;
  /** Landed status of a signature, or null when the cluster has not seen it (yet). */
  signatureStatus(signature: string): Promise<{ slot: number; err: unknown; confirmed: boolean } | null>;
  /** An SPL token account (Token or Token-2022), or null when it does not exist. */
  tokenAccount(address: PublicKey): Promise<{ mint: PublicKey; owner: PublicKey; amount: bigint; programId: PublicKey } | null>;
  /** An SPL mint, or null. */
  mint(address: PublicKey): Promise<{ decimals: number; programId: PublicKey } | null>;
}

/** SolanaRpc over a real JSON-RPC endpoint. */
export function connectSolanaRpc(url: string): SolanaRpc {
  const conn = new Connection(url, { commitment: 'confirmed', disableRetryOnRateLimit: true });
  return {
    async isBlockhashValid(blockhash) {
      return (await conn.isBlockhashValid(blockhash, { commitment: 'confirmed' })).value;
    },
    async simulate(tx) {
      const { value } = await conn.simulateTransaction(tx, { sigVerify: false, replaceRecentBlockhash: false, commitment: 'confirmed' });
      return { err: value.err, logs: value.logs ?? [] };
    },
    async sendRawTransaction(raw) {
      // Our own checks ran before; re-sends of already-landed bytes must not fail on preflight.
      return conn.sendRawTransaction(raw, { skipPreflight: true, maxRetries: 0 });
    },
    async signatureStatus(signature) {
      const { value } = await conn.getSignatureStatuses([signature], { searchTransactionHistory: true });
      const s = value[0];
      if (!s) return null;
      return { slot: s.slot, err: s.err, confirmed: s.confirmationStatus === 'confirmed' || s.confirmationStatus === 'finalized' };
    },
    async tokenAccount(address) {
      const info = await conn.getAccountInfo(address, 'confirmed');
      if (!info || !isTokenProgram(info.owner) || info.data.length < ACCOUNT_SIZE) return null;
      const a = decodeTokenAccount(info.data);
      return { mint: a.mint, owner: a.owner, amount: a.amount, programId: info.owner };
    },
    async mint(address) {
      const info = await conn.getAccountInfo(address, 'confirmed');
      if (!info || !isTokenProgram(info.owner) || info.data.length < MINT_SIZE) return null;
      const m = decodeMint(info.data);
      return m.isInitialized ? { decimals: m.decimals, programId: info.owner } : null;
    },
  };
}
