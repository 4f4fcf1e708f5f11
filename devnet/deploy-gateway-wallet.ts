import { createPublicClient, createWalletClient, defineChain, http, numberToHex, type Address, type Hash } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { DEVNET_GATEWAY_DEPLOYER_KEY, DEVNET_GATEWAY_OPERATOR_KEY, DEVNET_GATEWAY_WALLET_ADDRESS } from '../src/chains/devnet-addresses';
import { getContract } from './contracts';
import { gatewayWalletAbi } from '../src/chains/evm/abi';

/**
 * Deploys our GatewayWallet to a devnet chain from its own deployer key (nonce 0, so the address is
 * the same on every chain), supports the chain's USDC and allows the upstream double's operator.
 * Idempotent: on a chain that has it, only the token, the operator and the delay are checked.
 */

/** Default withdrawal delay on the devnet, in blocks (anvil mines a block per transaction). */
export const DEVNET_WITHDRAWAL_DELAY_BLOCKS = 10;

const ETH = 10n ** 21n;

export async function deployGatewayWallet(opts: {
  rpcUrl: string;
  chainId: number;
  usdc: Address;
  withdrawalDelayBlocks?: number;
}): Promise<Address> {
  const chain = defineChain({
    id: opts.chainId,
    name: `devnet-${opts.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [opts.rpcUrl] } },
  });
  const transport = http(opts.rpcUrl, { retryCount: 0 });
  const client = createPublicClient({ chain, transport });
  const deployer = privateKeyToAccount(DEVNET_GATEWAY_DEPLOYER_KEY);
  const operator = privateKeyToAccount(DEVNET_GATEWAY_OPERATOR_KEY);
  const wallet = createWalletClient({ chain, transport, account: deployer });
  const fund = async (who: Address) => {
    if ((await client.getBalance({ address: who })) >= ETH) return;
    await client.request({ method: 'anvil_setBalance', params: [who, numberToHex(ETH)] } as never);
  };
  const mined = async (hash: Hash, what: string) => {
    const deadline = Date.now() + 30_000;
    for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
      const r = await client.getTransactionReceipt({ hash }).catch(() => null);
      if (r) {
        if (r.status !== 'success') throw new Error(`gateway wallet deploy: ${what} reverted (${hash})`);
        return r;
      }
      if (Date.now() > deadline) throw new Error(`gateway wallet deploy: no receipt for ${what}`);
      await new Promise((res) => setTimeout(res, delay));
    }
  };
  await fund(deployer.address);
  await fund(operator.address);
  const address = DEVNET_GATEWAY_WALLET_ADDRESS;
  const delay = BigInt(opts.withdrawalDelayBlocks ?? DEVNET_WITHDRAWAL_DELAY_BLOCKS);

  const code = await client.getCode({ address });
  if (!code || code === '0x') {
    const nonce = await client.getTransactionCount({ address: deployer.address, blockTag: 'pending' });
    if (nonce !== 0) throw new Error(`gateway wallet deploy: deployer ${deployer.address} already used nonce 0 on chain ${opts.chainId}`);
    const artifact = getContract('GatewayWallet');
    const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: [deployer.address, delay], nonce: 0 });
    const receipt = await mined(hash, 'GatewayWallet deployment');
    if (receipt.contractAddress?.toLowerCase() !== address.toLowerCase()) {
      throw new Error(`gateway wallet deploy: landed at ${receipt.contractAddress} instead of ${address}`);
    }
  }
  // One sender, each transaction mined before the next (anvil can stall on nonce gaps).
  const send = async (functionName: 'setTokenSupported' | 'setOperator' | 'setWithdrawalDelay', args: readonly unknown[]) => {
    const hash = await wallet.writeContract({ address, abi: gatewayWalletAbi, functionName, args } as never);
    await mined(hash, functionName);
  };
  const read = <T>(functionName: string, args: readonly unknown[] = []) =>
    client.readContract({ address, abi: gatewayWalletAbi, functionName, args } as never) as Promise<T>;
  if (!(await read<boolean>('isTokenSupported', [opts.usdc]))) await send('setTokenSupported', [opts.usdc, true]);
  if (!(await read<boolean>('isOperator', [operator.address]))) await send('setOperator', [operator.address, true]);
  if ((await read<bigint>('withdrawalDelay')) !== delay) await send('setWithdrawalDelay', [delay]);
  return address;
}
