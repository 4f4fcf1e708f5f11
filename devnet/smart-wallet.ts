import {
  encodeAbiParameters,
  encodeFunctionData,
  hashMessage,
  hashTypedData,
  keccak256,
  type Address,
  type Client,
  type Hex,
  type LocalAccount,
  type TypedDataDefinition,
} from 'viem';
import { entryPoint07Abi, entryPoint07Address, toSmartAccount, type SmartAccount } from 'viem/account-abstraction';
import { DEVNET_WALLET_FACTORY_ADDRESS } from '../src/chains/devnet-addresses';
import { walletFactoryAbi } from '../src/chains/evm/abi';

/** The digest the devnet wallet's owner signs for `hash` (DevnetSmartWallet.replaySafeHash). */
export const replaySafeHash = (wallet: Address, chainId: number, hash: Hex): Hex =>
  keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }, { type: 'bytes32' }], [wallet, BigInt(chainId), hash]));

/**
 * A viem smart account over the devnet's smart wallet (devnet/contracts/DevnetSmartWallet.sol), driven
 * by viem's own `toSmartAccount`: typed data is signed by the owner key over the wallet's replay-safe
 * digest (what its EIP-1271 `isValidSignature` checks), and, while the wallet has no code, viem wraps
 * the signature in EIP-6492 with the factory's `createAccount(owner, salt)` call. So a buyer pays from it
 * exactly as from an embedded smart wallet: deployed or counterfactual. No user operations: the devnet
 * wallet has no entry point (the entry point below only fills viem's type).
 */
export async function devnetSmartAccount(opts: {
  client: Client;
  owner: LocalAccount;
  salt?: bigint;
  factory?: Address;
}): Promise<SmartAccount> {
  const { client, owner } = opts;
  const salt = opts.salt ?? 0n;
  const factory = opts.factory ?? DEVNET_WALLET_FACTORY_ADDRESS;
  const chainId = client.chain?.id;
  if (chainId === undefined) throw new Error('devnetSmartAccount: the client needs a chain');
  const address = (await (client as unknown as { readContract: (a: unknown) => Promise<Address> }).readContract({
    address: factory,
    abi: walletFactoryAbi,
    functionName: 'getAddress',
    args: [owner.address, salt],
  })) as Address;
  const signHash = (hash: Hex) => owner.sign!({ hash: replaySafeHash(address, chainId, hash) });
  const unsupported = async (): Promise<never> => {
    throw new Error('the devnet smart wallet takes no user operations');
  };
  return toSmartAccount({
    client: client as never,
    entryPoint: { abi: entryPoint07Abi, address: entryPoint07Address, version: '0.7' },
    getAddress: async () => address,
    getFactoryArgs: async () => ({
      factory,
      factoryData: encodeFunctionData({ abi: walletFactoryAbi, functionName: 'createAccount', args: [owner.address, salt] }),
    }),
    encodeCalls: unsupported,
    getStubSignature: unsupported,
    signUserOperation: unsupported,
    sign: ({ hash }) => signHash(hash),
    signMessage: ({ message }) => signHash(hashMessage(message)),
    signTypedData: (typed) => signHash(hashTypedData(typed as TypedDataDefinition)),
  }) as Promise<SmartAccount>;
}
