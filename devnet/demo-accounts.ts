import { toHex, type Address, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';

/**
 * Accounts of `npm start`'s devnet, all from anvil's public test mnemonic. DEVNET ONLY: these keys
 * are known to everyone and must never hold real funds.
 *
 * - #1 is the default worker relayer (config's DEVNET_RELAYER_KEY).
 * - #5, #6, #7 are demo buyers: minted DEMO_BUYER_USDC on a fresh chain, so a newcomer can sign
 *   payments right away (`npm run smoke` pays from the first one).
 *
 * The tests use the same mnemonic on their own chains (test/support/accounts.ts); the two stacks
 * never share a chain.
 */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';

export interface DemoAccount {
  index: number;
  address: Address;
  privateKey: Hex;
}

export function anvilAccount(index: number): DemoAccount {
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
  return { index, address: account.address, privateKey: toHex(account.getHdKey().privateKey!) };
}

/** 10,000 USDC (6 decimals) per demo buyer, minted when the contracts are first deployed. */
export const DEMO_BUYER_USDC = 10_000n * 10n ** 6n;

export const DEMO_BUYERS: DemoAccount[] = [5, 6, 7].map(anvilAccount);
