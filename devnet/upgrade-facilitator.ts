import { createWalletClient, http, numberToHex, type Address, type Chain, type Hex, type PublicClient, type Transport } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getContract } from './contracts';

/**
 * A devnet chain resumed from `.data` keeps the X402Facilitator code of its first deploy, so
 * functions added to the contract since then (e.g. the Permit2 settlement section) would be
 * missing. This compares the deployed runtime code with the current source's and, when they
 * differ, places the new runtime code at the same address with `anvil_setCode` (DESIGN §3). That
 * keeps the storage (owner, relayer list): the contract has no immutables, and new sections add
 * functions, not storage. Devnet only (anvil).
 */
export async function ensureFacilitatorCode(client: PublicClient<Transport, Chain>, facilitator: Address): Promise<boolean> {
  const current = await client.getCode({ address: facilitator });
  const runtime = await compiledRuntime(client);
  if (current === runtime) return false;
  await rpc(client, 'anvil_setCode', [facilitator, runtime]);
  return true;
}

/** The runtime code of the current X402Facilitator source: deployed once by a throwaway account. */
async function compiledRuntime(client: PublicClient<Transport, Chain>): Promise<Hex> {
  const artifact = getContract('X402Facilitator');
  const throwaway = privateKeyToAccount(generatePrivateKey());
  await rpc(client, 'anvil_setBalance', [throwaway.address, numberToHex(10n ** 18n)]);
  const wallet = createWalletClient({
    chain: client.chain,
    transport: http(client.transport.url as string, { retryCount: 0 }),
    account: throwaway,
  });
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: [throwaway.address], nonce: 0 });
  const deadline = Date.now() + 30_000;
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt?.contractAddress) {
      const code = await client.getCode({ address: receipt.contractAddress });
      if (!code || code === '0x') throw new Error(`devnet: X402Facilitator deployment left no code (tx ${hash})`);
      return code;
    }
    if (receipt) throw new Error(`devnet: X402Facilitator deployment reverted (tx ${hash})`);
    if (Date.now() > deadline) throw new Error(`devnet: no receipt for the X402Facilitator deployment (tx ${hash})`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

function rpc(client: PublicClient<Transport, Chain>, method: string, params: unknown[]): Promise<unknown> {
  return (client.request as (args: { method: string; params: unknown[] }) => Promise<unknown>)({ method, params });
}
