import { randomBytes } from 'node:crypto';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  http,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { transferWithAuthorizationTypedData } from '../../src/schemes/eip3009/typed-data';
import { waitForReceipt } from './evm';
import { readStackInfo } from './stack-info';
import { gatewayWalletAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * Batched-payment helpers on one of the test stack's chains (default base-sepolia; `base` where a test
 * deployed the gateway wallet there): deposits, views, x402-client signing.
 */
export function gatewayHelpers(network: 'base-sepolia' | 'base' = 'base-sepolia') {
  const stack = readStackInfo();
  const { rpcUrl, chainId } = stack.chains[network];
  const chain = defineChain({
    id: chainId,
    name: network,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport: http(rpcUrl) }) as PublicClient;
  const wallet = stack.gatewayWallet;
  const view = (fn: 'availableBalance' | 'withdrawingBalance' | 'withdrawableBalance' | 'totalBalance' | 'withdrawalBlock', who: Address) =>
    client.readContract({ address: wallet, abi: gatewayWalletAbi, functionName: fn, args: [stack.usdc, who] }) as Promise<bigint>;
  return {
    stack,
    client,
    wallet,
    view,
    usdcOf: (who: Address) => client.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] }),
    /** `payer` approves and deposits `amount` USDC into `depositor`'s gateway balance (default: itself). */
    async deposit(payer: LocalAccount, amount: bigint, depositor: Address = payer.address) {
      const w = createWalletClient({ chain, transport: http(rpcUrl), account: payer });
      await waitForReceipt(
        client,
        await w.writeContract({ address: stack.usdc, abi: erc20Abi, functionName: 'approve', args: [wallet, amount] }),
      );
      await waitForReceipt(
        client,
        await w.writeContract({
          address: wallet,
          abi: gatewayWalletAbi,
          functionName: 'depositFor',
          args: [stack.usdc, depositor, amount],
        }),
      );
    },
    /** A batched settle/verify body, signed as an x402 v1 client signs it from the requirements' `extra`. */
    async batchedPayment(o: { buyer: LocalAccount; payTo: Address; value: bigint; network?: string; signer?: LocalAccount; nonce?: Hex }) {
      const now = BigInt(Math.floor(Date.now() / 1000));
      const requirements = {
        scheme: 'exact',
        network: o.network ?? network,
        maxAmountRequired: o.value.toString(),
        resource: 'https://seller.example/api/tick',
        description: 'one tick',
        mimeType: 'application/json',
        payTo: o.payTo,
        maxTimeoutSeconds: 345_600,
        asset: wallet, // the client names the gateway wallet; the service swaps it for USDC
        extra: { name: 'GatewayWalletBatched', version: '1', verifyingContract: wallet },
      };
      const authorization = {
        from: o.buyer.address,
        to: o.payTo,
        value: o.value.toString(),
        validAfter: (now - 600n).toString(),
        validBefore: (now + 345_600n).toString(),
        nonce: o.nonce ?? (`0x${randomBytes(32).toString('hex')}` as Hex),
      };
      const typed = transferWithAuthorizationTypedData(
        {
          name: requirements.extra.name,
          version: requirements.extra.version,
          chainId,
          verifyingContract: requirements.extra.verifyingContract,
        },
        authorization,
      );
      const signature = await (o.signer ?? o.buyer).signTypedData(typed);
      return {
        paymentPayload: { x402Version: 1, scheme: 'exact', network: requirements.network, payload: { signature, authorization } },
        paymentRequirements: requirements,
      };
    },
  };
}
