import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { toHex } from 'viem';

/**
 * Test accounts from anvil's public test mnemonic: relayers (one per test file that runs a worker,
 * so no two workers ever share a key) and funded buyers. Devnet only.
 */
const MNEMONIC = 'test test test test test test test test test test test junk';
const keyOf = (index: number) => toHex(mnemonicToAccount(MNEMONIC, { addressIndex: index }).getHdKey().privateKey!);
const account = (index: number) => privateKeyToAccount(keyOf(index));

export const TEST_ACCOUNTS = {
  relayers: [1, 2, 3, 4].map(account),
  relayerKeys: [1, 2, 3, 4].map(keyOf),
  buyers: [5, 6, 7, 8, 9].map(account),
  buyerKeys: [5, 6, 7, 8, 9].map(keyOf),
  payout: account(10),
  feeRecipient: account(11),
};
