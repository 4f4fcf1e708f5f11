import { ApplicationFailure } from '@temporalio/common';
import { encodeFunctionData, erc20Abi, keccak256, maxUint256, parseTransaction, toHex, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { buildNetworkTable } from '../../src/chains/networks';
import {
  GAS_CEILINGS,
  GAS_CEILING_EXCEEDED,
  SLOT_FROM_ZERO_GAS,
  callTypeOf,
  checkGas,
  owedDespiteGas,
} from '../../src/chains/evm/gas-ceilings';
import { revertOf } from '../../src/chains/evm/calls';
import { revertReason } from '../../src/permit/chain-errors';
import { Relayer } from '../../src/chains/evm/relayer';
import { RelayerTransaction } from '../../src/db/entities';
import { openTestDatabase, type TestDatabase } from '../support/db';
import { ModelChain, ModelServer } from '../support/model-chain';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * The relayer signs no call above its type's gas ceiling, and no call of an unlisted type (issue 39:
 * a gas-burning token spent 13.6M of our gas in one settlement). The real Relayer on a real SQLite
 * database, against the in-memory chain model whose gas estimate the test sets.
 */
const TOKEN = '0x00000000000000000000000000000000000070c3' as Address;
const refund = (k: number): Hex =>
  encodeFunctionData({
    abi: tokenAbi,
    functionName: 'transferWithAuthorization',
    args: [TOKEN, TOKEN, BigInt(k), 0n, maxUint256, keccak256(toHex(k)), '0x'],
  });

let tdb: TestDatabase;
let server: ModelServer;
beforeAll(async () => {
  [tdb, server] = await Promise.all([openTestDatabase('sqlite'), ModelServer.start()]);
});
afterAll(async () => {
  await server?.stop();
  await tdb?.close();
});

function relayerOn(chain: ModelChain, path: string) {
  const url = server.endpoint(path, chain);
  const network = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: url }).get('base-sepolia')!;
  return new Relayer(network, privateKeyToAccount(keccak256(toHex(`gas-ceilings:${path}`))), tdb.db);
}

describe('call types', () => {
  test('by selector: every listed function, `plain` without one, undefined for anything else', () => {
    expect(callTypeOf(refund(1))).toBe('transferWithAuthorization');
    expect(callTypeOf('0x')).toBe('plain');
    expect(callTypeOf('0x1234')).toBe('plain');
    // A token's own transferFrom is never a call of ours.
    const transferFrom = encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [TOKEN, TOKEN, 1n] });
    expect(callTypeOf(transferFrom)).toBeUndefined();
  });

  test('checkGas: the ceiling at or under it; a non-retryable GasCeilingExceeded above it or for an unlisted call', () => {
    const ceiling = GAS_CEILINGS.transferWithAuthorization;
    expect(checkGas(refund(1), ceiling)).toBe(ceiling);
    const refusals = [() => checkGas(refund(1), ceiling + 1n), () => checkGas('0xdeadbeef', 21_000n)];
    for (const refuse of refusals) {
      let err: unknown;
      try {
        refuse();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err).toMatchObject({ type: GAS_CEILING_EXCEEDED, nonRetryable: true });
      // Every caller that reports a call that would revert reports this refusal the same way.
      expect(revertOf(err)).toMatch(/^refused: /);
      expect(revertReason(err, tokenAbi)).toMatch(/^refused: /);
    }
  });
});

describe('the relayer', () => {
  test('an estimate above the ceiling: refused before signing, nothing recorded or broadcast, the nonce unused', async () => {
    const chain = new ModelChain({ chainId: 84532 });
    const relayer = relayerOn(chain, 'over');
    chain.gasEstimate = GAS_CEILINGS.transferWithAuthorization + 1n;
    await expect(relayer.send('refund:over', { to: TOKEN, data: refund(1) })).rejects.toMatchObject({ type: GAS_CEILING_EXCEEDED });
    expect(await tdb.db.em.fork().count(RelayerTransaction, { id: 'refund:over' })).toBe(0);
    expect(chain.stats['eth_sendRawTransaction'] ?? 0).toBe(0);
    expect(chain.pendingNonce(relayer.address)).toBe(0);

    // An unlisted call is refused whatever its estimate.
    chain.gasEstimate = 21_000n;
    await expect(relayer.send('odd', { to: TOKEN, data: '0xdeadbeef' })).rejects.toMatchObject({ type: GAS_CEILING_EXCEEDED });
    expect(chain.pendingNonce(relayer.address)).toBe(0);
  });

  test('under the ceiling: signed with the estimate plus 20% and a slot written from zero, never above the ceiling', async () => {
    const chain = new ModelChain({ chainId: 84532 });
    const relayer = relayerOn(chain, 'under');
    const ceiling = GAS_CEILINGS.transferWithAuthorization;
    chain.gasEstimate = 50_000n;
    await relayer.send('refund:low', { to: TOKEN, data: refund(1) });
    chain.gasEstimate = ceiling;
    await relayer.send('refund:high', { to: TOKEN, data: refund(2) });
    const gasOf = async (id: string) => parseTransaction((await relayer.find(id))!.rawTx as Hex).gas;
    expect(await gasOf('refund:low')).toBe(60_000n + SLOT_FROM_ZERO_GAS);
    expect(await gasOf('refund:high')).toBe(ceiling);
  });

  test('a transfer we owe (refunds, a top-up allowance) is never given up for its gas: the refusal comes back retryable', async () => {
    const chain = new ModelChain({ chainId: 84532 });
    const relayer = relayerOn(chain, 'owed');
    chain.gasEstimate = GAS_CEILINGS.transferWithAuthorization + 1n;
    // As activities/transfer-once.ts and the top-up allowance send: the activity retries, the workflow waits flagged.
    await expect(relayer.send('refund:owed', { to: TOKEN, data: refund(3) }).catch(owedDespiteGas)).rejects.toMatchObject({
      type: GAS_CEILING_EXCEEDED,
      nonRetryable: false,
      message: expect.stringMatching(
        /^refused: transferWithAuthorization is estimated at \d+ gas, above its ceiling of \d+; owed, so retried/,
      ),
    });
    expect(chain.stats['eth_sendRawTransaction'] ?? 0).toBe(0);
    // Once the estimate fits, the same effect is sent.
    chain.gasEstimate = 60_000n;
    await relayer.send('refund:owed', { to: TOKEN, data: refund(3) });
    expect(await relayer.find('refund:owed')).not.toBeNull();
    // Any other error passes as it was.
    const other = new Error('rpc down');
    expect(() => owedDespiteGas(other)).toThrow(other);
  });
});
