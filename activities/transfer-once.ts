import { encodeFunctionData, keccak256, maxUint256, parseTransaction, toHex, type Address, type Hex } from 'viem';
import type { Relayer } from '../src/chains/evm/relayer';
import { owedDespiteGas } from '../src/chains/evm/gas-ceilings';
import { transferWithAuthorizationTypedData, type TokenDomain } from '../src/schemes/eip3009/typed-data';
import { tokenAbi } from '../src/chains/evm/abi';

/** Each token's EIP-712 domain, read once per process (name and version never change for a deployment). */
const domains = new Map<string, Promise<TokenDomain>>();

function domainOf(relayer: Relayer, token: Address): Promise<TokenDomain> {
  const chainId = relayer.network.chainId!;
  const key = `${chainId}:${token.toLowerCase()}`;
  let domain = domains.get(key);
  if (!domain) {
    const read = (functionName: 'name' | 'version') => relayer.client.readContract({ address: token, abi: tokenAbi, functionName });
    domain = Promise.all([read('name'), read('version')]).then(([name, version]) => ({ name, version, chainId, verifyingContract: token }));
    domain.catch(() => domains.delete(key)); // a failed read is asked again next time
    domains.set(key, domain);
  }
  return domain;
}

/** The EIP-3009 nonce of one effect: the same for every attempt of it, different for every other effect. */
export const transferOnceNonce = (effectId: string): Hex => keccak256(toHex(`x402-facilitator:transfer-once:${effectId}`));

/**
 * Transfers `value` of `token` from the relayer's own wallet to `to`, at most once for `effectId`
 * whatever is broadcast: the wallet signs an EIP-3009 `transferWithAuthorization` from itself whose
 * nonce is derived from the effect's id (`transferOnceNonce`), and the token marks that nonce used.
 * A second transaction of the same effect (a re-nonce, a replacement, another worker's retry) reverts
 * and moves nothing. Sent through the write-ahead relayer under `effectId`; a recorded call is re-sent
 * as it was (also a plain `transfer` recorded before transfers carried a key). Returns the hash. A
 * refusal for its gas is retried (`owedDespiteGas`): the transfer is owed.
 */
export async function sendTransferOnce(
  relayer: Relayer,
  effectId: string,
  token: Address,
  to: Address,
  value: bigint,
  /** The on-chain key, when another record (a fresh attempt after a proven revert) carries out the same effect. */
  onceKey = effectId,
): Promise<Hex> {
  const sent = sendAsRecorded(relayer, effectId, async () => {
    const authorization = {
      from: relayer.address,
      to,
      value: value.toString(),
      validAfter: '0',
      validBefore: maxUint256.toString(),
      nonce: transferOnceNonce(onceKey),
    };
    const signature = await relayer.account.signTypedData(
      transferWithAuthorizationTypedData(await domainOf(relayer, token), authorization),
    );
    const data = encodeFunctionData({
      abi: tokenAbi,
      functionName: 'transferWithAuthorization',
      args: [relayer.address, to, value, 0n, maxUint256, authorization.nonce, signature],
    });
    return { to: token, data };
  });
  return sent.catch(owedDespiteGas); // a refund is owed: a gas refusal waits, flagged, instead of failing
}

/** The call recorded under `effectId`, if any: what an earlier attempt (of any code version) signed. */
export async function recordedCall(relayer: Relayer, effectId: string): Promise<{ to: Address; data: Hex } | null> {
  const recorded = await relayer.find(effectId);
  if (!recorded) return null;
  const { to, data } = parseTransaction(recorded.rawTx as Hex);
  return { to: to!, data: data ?? '0x' };
}

/**
 * Sends the call recorded under `effectId` as it was signed, or else the call `build` makes now: an
 * effect recorded before a change of its call's shape finishes as it started.
 */
export async function sendAsRecorded(relayer: Relayer, effectId: string, build: () => Promise<{ to: Address; data: Hex }>): Promise<Hex> {
  const call = (await recordedCall(relayer, effectId)) ?? (await build());
  return (await relayer.send(effectId, call)).hash;
}
