import { keccak256, serializeErc6492Signature, toHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { isSignedBy, onChainSignature, type SignatureReads } from '../../src/chains/evm/buyer-signature';

/**
 * The buyer-signature rule: an EOA's 65-byte signature never costs a chain call; anything else is the
 * chain's to judge (EIP-1271 / EIP-6492), and a counterfactual wallet counts only through a listed factory.
 */
const eoa = privateKeyToAccount(generatePrivateKey());
const wallet: Address = '0x000000000000000000000000000000000000c0de';
const FACTORY: Address = '0x00000000000000000000000000000000000fac70';
const OTHER_FACTORY: Address = '0x0000000000000000000000000000000000000bad';
const network = { walletFactories: [FACTORY] };
const hash = keccak256(toHex('payment'));

function chain(answer: boolean, code = false) {
  return { verifyHash: jest.fn(async () => answer), hasCode: jest.fn(async () => code) } satisfies SignatureReads;
}

test("an EOA's own 65-byte signature is accepted without a chain call", async () => {
  const reads = chain(false);
  expect(await isSignedBy(network, reads, eoa.address, hash, await eoa.sign({ hash }))).toBe(true);
  expect(reads.verifyHash).not.toHaveBeenCalled();
  expect(reads.hasCode).not.toHaveBeenCalled();
});

test("an EOA's high-s twin is refused without a chain call (USDC and Permit2 refuse it)", async () => {
  const sig = await eoa.sign({ hash });
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const s = BigInt(`0x${sig.slice(66, 130)}`);
  const v = parseInt(sig.slice(130), 16);
  const twin = `${sig.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
  const reads = chain(true);
  expect(await isSignedBy(network, reads, eoa.address, hash, twin)).toBe(false);
  expect(reads.verifyHash).not.toHaveBeenCalled();
});

test("a smart wallet's signature (local recovery names its owner, not it) is the chain's answer", async () => {
  const sig = await eoa.sign({ hash });
  expect(await isSignedBy(network, chain(true), wallet, hash, sig)).toBe(true);
  expect(await isSignedBy(network, chain(false), wallet, hash, sig)).toBe(false);
});

test('an EIP-6492 signature of an undeployed wallet counts only through a listed factory', async () => {
  const inner = await eoa.sign({ hash });
  const listed = serializeErc6492Signature({ address: FACTORY, data: '0x1234', signature: inner });
  const unlisted = serializeErc6492Signature({ address: OTHER_FACTORY, data: '0x1234', signature: inner });
  const reads = chain(true);
  expect(await isSignedBy(network, reads, wallet, hash, listed)).toBe(true);
  expect(await isSignedBy(network, reads, wallet, hash, unlisted)).toBe(false);
  expect(reads.verifyHash).toHaveBeenCalledTimes(1);
  // Once the wallet exists, the factory in the wrapper is never called: the chain judges the signature.
  expect(await isSignedBy(network, chain(true, true), wallet, hash, unlisted)).toBe(true);
  expect(onChainSignature(listed)).toBe(inner);
  expect(onChainSignature(inner)).toBe(inner);
});

test('an ERC-8010 (pre-delegated EIP-7702) signature is refused: we send no authorization lists', async () => {
  const { serializeErc8010Signature } = await import('viem');
  const auth = await eoa.signAuthorization({ address: FACTORY, chainId: 1, nonce: 0 });
  const sig = serializeErc8010Signature({ authorization: auth, signature: await eoa.sign({ hash }) });
  const reads = chain(true);
  expect(await isSignedBy(network, reads, wallet, hash, sig)).toBe(false);
  expect(reads.verifyHash).not.toHaveBeenCalled();
});
