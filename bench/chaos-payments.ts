/**
 * The settlements of the chaos run (bench/chaos.ts): what each kind's seller sends to POST
 * /v1/settle, signed as its buyer signs it (test/support), and the workflow id the API derives from it.
 */
import { Connection as SolanaConnection, Keypair, PublicKey, type VersionedTransaction } from '@solana/web3.js';
import type { Address, LocalAccount } from 'viem';
import {
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../src/chains/devnet-addresses';
import { buildSolanaNetworkTable } from '../src/chains/networks';
import { DEVNET_SOLANA_FEE_PAYER } from '../src/chains/solana/fee-payer';
import { base58Encode } from '../src/chains/solana/base58';
import { permit2SettleWorkflowId, settleWorkflowId, solanaSettleWorkflowId } from '../src/temporal/workflow-ids';
import { exactPayment } from '../test/support/payments';
import { permit2Payment } from '../test/support/permit2-payments';
import { svmPaymentTransaction, toBase64 } from '../test/support/solana';
import { CROSSCHAIN_EXTRA } from './chaos-crosschain';

export const SOLANA_USDC = new PublicKey(buildSolanaNetworkTable({}).get('solana-devnet')!.usdc);

export type Kind = 'eip3009' | 'permit2' | 'solana' | 'crosschain';
export interface Payment {
  i: number;
  kind: Kind;
  amount: bigint;
  body?: unknown;
  /** The final answer: settled (with its transaction), refused with a 4xx, or none within the deadline. */
  outcome?: { settled: true; transaction: string } | { settled: false; status: number; reason: string };
  tries: number;
  /** Its settlement workflow's id (the business key the API derives from the payload). */
  workflowId?: string;
  /** When it was first sent, and when its final answer came. */
  sentAt?: number;
  answeredAt?: number;
}

export interface SettlementParties {
  buyers: readonly LocalAccount[];
  usdc: Address;
  facilitator: Address;
  solBuyers: Keypair[];
  sellerSol: PublicKey;
  solConn: SolanaConnection;
}

/** The body of payment `p` (its buyer by index), and its workflow id set on `p`. */
export async function settlementBody(p: Payment, o: SettlementParties): Promise<unknown> {
  const { buyers, solBuyers, sellerSol, solConn } = o;
  const deployed = { usdc: o.usdc, facilitator: o.facilitator };
  const buyer = buyers[p.i % buyers.length] as LocalAccount;
  if (p.kind === 'eip3009' || p.kind === 'crosschain') {
    const body = await exactPayment({
      buyer,
      network: 'base-sepolia',
      chainId: 84532,
      usdc: deployed.usdc,
      facilitator: deployed.facilitator,
      value: p.amount,
      ...(p.kind === 'crosschain' ? { extra: CROSSCHAIN_EXTRA } : {}),
    });
    const { from, nonce } = body.paymentPayload.payload.authorization;
    p.workflowId = settleWorkflowId('base-sepolia', from, nonce);
    return body;
  }
  if (p.kind === 'permit2') {
    const common = { network: 'base-sepolia', chainId: 84532, usdc: deployed.usdc, facilitator: deployed.facilitator };
    const proxies = {
      permit2: PERMIT2_CANONICAL_ADDRESS,
      exactProxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
      uptoProxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
    };
    const body = await permit2Payment({ scheme: 'exact', buyer, amount: p.amount, ...common, ...proxies });
    const { owner, permit } = body.paymentPayload.payload;
    p.workflowId = permit2SettleWorkflowId('base-sepolia', owner, permit.nonce);
    return body;
  }
  const solBuyer = solBuyers[p.i % solBuyers.length];
  const tx: VersionedTransaction = svmPaymentTransaction({
    buyer: solBuyer,
    payTo: sellerSol,
    mint: SOLANA_USDC,
    feePayer: DEVNET_SOLANA_FEE_PAYER.publicKey,
    amount: p.amount,
    blockhash: (await solConn.getLatestBlockhash()).blockhash,
  });
  const authority = tx.message.staticAccountKeys.findIndex((k) => k.equals(solBuyer.publicKey));
  p.workflowId = solanaSettleWorkflowId('solana-devnet', solBuyer.publicKey.toBase58(), base58Encode(tx.signatures[authority]));
  return {
    paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: { transaction: toBase64(tx) } },
    paymentRequirements: {
      scheme: 'exact',
      network: 'solana-devnet',
      maxAmountRequired: p.amount.toString(),
      resource: 'https://seller.example/chaos',
      description: 'chaos',
      mimeType: 'application/json',
      payTo: sellerSol.toBase58(),
      maxTimeoutSeconds: 60,
      asset: SOLANA_USDC.toBase58(),
      extra: { feePayer: DEVNET_SOLANA_FEE_PAYER.publicKey.toBase58() },
    },
  };
}
