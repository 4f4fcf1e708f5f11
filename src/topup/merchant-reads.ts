import { getAddress, type Address } from 'viem';
import { publicClientFor } from '../chains/evm/clients';
import type { EvmNetwork } from '../chains/networks';
import type { BuyerPosition } from './amounts';
import { TopupUnavailable } from './unavailable';
import { TOPUP_DESTINATION_NETWORK } from './types';
import { merchantAbi, tokenAbi } from '../chains/evm/abi';

/** The buyer's position on the merchant contract; a fresh buyer's when `buyer` is not known yet. */
export async function readBuyerPosition(destination: EvmNetwork, merchant: Address, buyer?: string): Promise<BuyerPosition> {
  const client = publicClientFor(destination);
  if (!buyer) {
    const [creditLimit, minBuyerDeposit] = await Promise.all([
      client.readContract({ address: merchant, abi: merchantAbi, functionName: 'defaultCreditLimit' }),
      client.readContract({ address: merchant, abi: merchantAbi, functionName: 'minFirstDeposit' }),
    ]);
    return { balance: 0n, creditLimit, minBuyerDeposit };
  }
  const who = getAddress(buyer.toLowerCase());
  const [balance, creditLimit, minBuyerDeposit] = await Promise.all([
    client.readContract({ address: merchant, abi: merchantAbi, functionName: 'balanceOf', args: [who] }),
    client.readContract({ address: merchant, abi: merchantAbi, functionName: 'creditLimitOf', args: [who] }),
    client.readContract({ address: merchant, abi: merchantAbi, functionName: 'minDepositOf', args: [who] }),
  ]);
  return { balance, creditLimit, minBuyerDeposit };
}

const domains = new Map<string, Promise<{ name: string; version: string }>>();

/**
 * The token's EIP-712 domain name and version as the chain reports them (cached per network, token
 * and RPC). A chain that does not answer is TopupUnavailable (503), not a gateway error.
 */
export function tokenDomain(network: EvmNetwork): Promise<{ name: string; version: string }> {
  const key = `${network.id}|${network.usdc}|${network.rpcUrls[0]}`;
  let d = domains.get(key);
  if (!d) {
    const client = publicClientFor(network);
    const token = network.usdc as Address;
    d = Promise.all([
      client.readContract({ address: token, abi: tokenAbi, functionName: 'name' }),
      client.readContract({ address: token, abi: tokenAbi, functionName: 'version' }),
    ]).then(
      ([name, version]) => ({ name, version }),
      (err) => {
        throw new TopupUnavailable(
          `the ${network.id} RPC did not answer: ${String((err as Error)?.message ?? err).split('\n')[0]}`,
          network.id === TOPUP_DESTINATION_NETWORK ? 'destination_unavailable' : 'source_unavailable',
        );
      },
    );
    d.catch(() => domains.delete(key)); // a failed read is retried next time
    domains.set(key, d);
  }
  return d;
}
