import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  maxUint256,
  numberToHex,
  parseEventLogs,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { startAnvil, type Anvil } from '../../devnet/anvil';
import { revertOf, waitForReceipt } from '../support/evm';
import { getContract } from '../../devnet/contracts';
import { deployUsdcImplementation, fiatTokenAbi, fiatTokenProxyArtifact, initializeUsdc } from '../../devnet/usdc';
import { DEVNET_DEPLOYER_KEY, deployDevnet, devnetAddresses } from '../../devnet/deploy';
import {
  DEVNET_USDC_IMPLEMENTATION_ADDRESS,
  DEVNET_USDC_ISSUER_KEY,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { EIP2612_PERMIT_TYPES } from '../support/evm';
import { PERMIT_WITNESS_TRANSFER_FROM, TOKEN_PERMISSIONS } from '../support/permit2-payments';
import { parseSignature, zeroAddress } from 'viem';
import {
  exactPermit2ProxyAbi,
  facilitatorAbi,
  facilitatorPermit2Abi,
  permit2Abi,
  tokenAbi,
  uptoPermit2ProxyAbi,
} from '../../src/chains/evm/abi';

/**
 * The Permit2 contract layer on a real anvil chain: our Permit2 SignatureTransfer and the x402 exact
 * and upto proxies, driven with signatures made exactly as an x402 buyer makes them (viem
 * signTypedData over PermitWitnessTransferFrom, domain {name: 'Permit2', chainId, verifyingContract}).
 */

const CHAIN_ID = 84532;
const USDC = (units: number): bigint => BigInt(Math.round(units * 1_000_000));

const chain = defineChain({
  id: CHAIN_ID,
  name: 'base-sepolia (anvil)',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1'] } },
});

function makePublicClient(url: string) {
  return createPublicClient({ chain, transport: http(url, { retryCount: 0 }) });
}
type Client = ReturnType<typeof makePublicClient>;

/** A fresh anvil chain with a client for it. */
async function startChain(): Promise<{ anvil: Anvil; rpcUrl: string; client: Client }> {
  const anvil = await startAnvil({ chainId: CHAIN_ID, log: () => undefined });
  return { anvil, rpcUrl: anvil.rpcUrl, client: makePublicClient(anvil.rpcUrl) };
}

const anvils: Anvil[] = [];
let rpcUrl = '';
let client: Client;
let usdc: Address;
let facilitator: Address;
let permit2: Address;
let exactProxy: Address;
let uptoProxy: Address;

const buyer = privateKeyToAccount(generatePrivateKey());
const relayer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());
const BUYER_FUNDS = USDC(1000);

function walletOf(account: PrivateKeyAccount, url = rpcUrl) {
  return createWalletClient({ chain, account, transport: http(url, { retryCount: 0 }) });
}

const balanceOf = (account: Address): Promise<bigint> =>
  client.readContract({ address: usdc, abi: tokenAbi, functionName: 'balanceOf', args: [account] });

async function latestTimestamp(): Promise<bigint> {
  return (await client.getBlock({ blockTag: 'latest' })).timestamp;
}

/** A random Permit2 nonce (x402 clients pick a random uint256). */
function randomNonce(): bigint {
  return BigInt(generatePrivateKey());
}

interface Permit {
  permitted: { token: Address; amount: bigint };
  nonce: bigint;
  deadline: bigint;
}

function permitDomain() {
  return { name: 'Permit2', chainId: CHAIN_ID, verifyingContract: permit2 } as const;
}

async function newPermit(overrides: Partial<Permit> = {}): Promise<Permit> {
  return {
    permitted: { token: usdc, amount: USDC(2.5) },
    nonce: randomNonce(),
    deadline: (await latestTimestamp()) + 3600n,
    ...overrides,
  };
}

/** What an x402 `exact` Permit2 buyer signs: spender = the exact proxy, witness {to, validAfter}. */
async function signExact(
  permit: Permit,
  witness: { to: Address; validAfter: bigint },
  { signer = buyer, spender = exactProxy }: { signer?: PrivateKeyAccount; spender?: Address } = {},
): Promise<Hex> {
  return signer.signTypedData({
    domain: permitDomain(),
    types: {
      PermitWitnessTransferFrom: PERMIT_WITNESS_TRANSFER_FROM,
      TokenPermissions: TOKEN_PERMISSIONS,
      Witness: [
        { name: 'to', type: 'address' },
        { name: 'validAfter', type: 'uint256' },
      ],
    },
    primaryType: 'PermitWitnessTransferFrom',
    message: { permitted: permit.permitted, spender, nonce: permit.nonce, deadline: permit.deadline, witness },
  });
}

/** What an x402 `upto` Permit2 buyer signs: spender = the upto proxy, witness {to, facilitator, validAfter}. */
async function signUpto(
  permit: Permit,
  witness: { to: Address; facilitator: Address; validAfter: bigint },
  { signer = buyer, spender = uptoProxy }: { signer?: PrivateKeyAccount; spender?: Address } = {},
): Promise<Hex> {
  return signer.signTypedData({
    domain: permitDomain(),
    types: {
      PermitWitnessTransferFrom: PERMIT_WITNESS_TRANSFER_FROM,
      TokenPermissions: TOKEN_PERMISSIONS,
      Witness: [
        { name: 'to', type: 'address' },
        { name: 'facilitator', type: 'address' },
        { name: 'validAfter', type: 'uint256' },
      ],
    },
    primaryType: 'PermitWitnessTransferFrom',
    message: { permitted: permit.permitted, spender, nonce: permit.nonce, deadline: permit.deadline, witness },
  });
}

const simulateExact = (permit: Permit, owner: Address, witness: { to: Address; validAfter: bigint }, signature: Hex, account = stranger) =>
  revertOf(() =>
    client.simulateContract({
      account,
      address: exactProxy,
      abi: exactPermit2ProxyAbi,
      functionName: 'settle',
      args: [permit, owner, witness, signature],
    }),
  );

const simulateUpto = (
  permit: Permit,
  amount: bigint,
  owner: Address,
  witness: { to: Address; facilitator: Address; validAfter: bigint },
  signature: Hex,
  account = relayer,
) =>
  revertOf(() =>
    client.simulateContract({
      account,
      address: uptoProxy,
      abi: uptoPermit2ProxyAbi,
      functionName: 'settle',
      args: [permit, amount, owner, witness, signature],
    }),
  );

const isNonceUsed = async (owner: Address, nonce: bigint): Promise<boolean> => {
  const word = await client.readContract({ address: permit2, abi: permit2Abi, functionName: 'nonceBitmap', args: [owner, nonce >> 8n] });
  return ((word >> (nonce & 255n)) & 1n) === 1n;
};

beforeAll(async () => {
  const started = await startChain();
  anvils.push(started.anvil);
  rpcUrl = started.rpcUrl;
  client = started.client;
  const deployment = await deployDevnet({
    rpcUrl,
    chainId: CHAIN_ID,
    relayers: [relayer.address],
    buyers: [{ address: buyer.address, amount: BUYER_FUNDS }],
  });
  ({ usdc, facilitator, permit2, exactPermit2Proxy: exactProxy, uptoPermit2Proxy: uptoProxy } = deployment);
  await client.request({ method: 'anvil_setBalance', params: [stranger.address, numberToHex(10n ** 20n)] } as never);

  // The one-time step of a Permit2 buyer: approve Permit2 on the token.
  // (tokenAbi is the service's slice and has no `approve`; a buyer's wallet uses the token's ABI.)
  const hash = await walletOf(buyer).writeContract({
    address: usdc,
    abi: fiatTokenAbi(),
    functionName: 'approve',
    args: [permit2, maxUint256],
  });
  expect((await waitForReceipt(client, hash)).status).toBe('success');
});

afterAll(async () => {
  for (const a of anvils) await a.stop();
});

describe('Permit2 devnet contracts', () => {
  test('sit at the canonical addresses x402 buyers sign for, wired to Permit2 and the facilitator', async () => {
    expect([permit2, exactProxy, uptoProxy]).toEqual([
      PERMIT2_CANONICAL_ADDRESS,
      X402_EXACT_PERMIT2_PROXY_ADDRESS,
      X402_UPTO_PERMIT2_PROXY_ADDRESS,
    ]);
    for (const [proxy, abi] of [
      [exactProxy, exactPermit2ProxyAbi],
      [uptoProxy, uptoPermit2ProxyAbi],
    ] as const) {
      expect(await client.readContract({ address: proxy, abi, functionName: 'PERMIT2' })).toBe(permit2);
      expect(await client.readContract({ address: proxy, abi, functionName: 'FACILITATOR' })).toBe(facilitator);
    }
    // The EIP-712 domain is {name: 'Permit2', chainId, verifyingContract} with no version.
    const { hashDomain } = await import('viem');
    expect(await client.readContract({ address: permit2, abi: permit2Abi, functionName: 'DOMAIN_SEPARATOR' })).toBe(
      hashDomain({
        domain: { ...permitDomain(), chainId: BigInt(CHAIN_ID) },
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'chainId', type: 'uint256' },
            { name: 'verifyingContract', type: 'address' },
          ],
        },
      }),
    );
  });

  test('exact: settle moves the full signed amount to the facilitator; replay fails on the nonce bitmap', async () => {
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(2.5) } });
    const witness = { to: facilitator, validAfter: (await latestTimestamp()) - 5n };
    const signature = await signExact(permit, witness);
    const [buyerBefore, facilitatorBefore] = [await balanceOf(buyer.address), await balanceOf(facilitator)];
    expect(await isNonceUsed(buyer.address, permit.nonce)).toBe(false);

    // Anyone may submit an exact payment: the signature binds amount and recipient.
    const hash = await walletOf(stranger).writeContract({
      address: exactProxy,
      abi: exactPermit2ProxyAbi,
      functionName: 'settle',
      args: [permit, buyer.address, witness, signature],
    });
    const receipt = await waitForReceipt(client, hash);
    expect(receipt.status).toBe('success');
    expect(await balanceOf(buyer.address)).toBe(buyerBefore - USDC(2.5));
    expect(await balanceOf(facilitator)).toBe(facilitatorBefore + USDC(2.5));
    expect(await balanceOf(exactProxy)).toBe(0n);
    expect(await balanceOf(permit2)).toBe(0n);
    expect(await isNonceUsed(buyer.address, permit.nonce)).toBe(true);

    const transfers = parseEventLogs({ abi: tokenAbi, logs: receipt.logs, eventName: 'Transfer' });
    expect(transfers.map((l) => l.args)).toEqual([{ from: buyer.address, to: facilitator, value: USDC(2.5) }]);
    const settled = parseEventLogs({ abi: exactPermit2ProxyAbi, logs: receipt.logs, eventName: 'Settled' });
    expect(settled.map((l) => l.args)).toEqual([
      { token: usdc, owner: buyer.address, to: facilitator, amount: USDC(2.5), nonce: permit.nonce },
    ]);

    expect(await simulateExact(permit, buyer.address, witness, signature)).toEqual({ errorName: 'InvalidNonce' });
    const replay = await walletOf(stranger).writeContract({
      address: exactProxy,
      abi: exactPermit2ProxyAbi,
      functionName: 'settle',
      args: [permit, buyer.address, witness, signature],
      gas: 300_000n,
    });
    expect((await waitForReceipt(client, replay)).status).toBe('reverted');
    expect(await balanceOf(buyer.address)).toBe(buyerBefore - USDC(2.5));
    expect(await balanceOf(facilitator)).toBe(facilitatorBefore + USDC(2.5));
  });

  test('exact: rejects a wrong recipient, wrong spender, expired deadline, early validAfter and bad signatures', async () => {
    const now = await latestTimestamp();
    const buyerBefore = await balanceOf(buyer.address);

    // witness.to must be the facilitator (checked before Permit2, with a clear error) ...
    const permitA = await newPermit();
    const elsewhere = stranger.address;
    const toElsewhere = { to: elsewhere, validAfter: 0n };
    expect(await simulateExact(permitA, buyer.address, toElsewhere, await signExact(permitA, toElsewhere))).toEqual({
      errorName: 'RecipientNotFacilitator',
      args: [elsewhere, facilitator],
    });
    // ... and a relayer cannot swap the signed witness for the facilitator one either.
    expect(await simulateExact(permitA, buyer.address, { to: facilitator, validAfter: 0n }, await signExact(permitA, toElsewhere))).toEqual(
      {
        errorName: 'InvalidSigner',
        args: undefined,
      },
    );

    // Signed for the upto proxy (wrong spender): Permit2 binds spender = msg.sender.
    const permitB = await newPermit();
    const witness = { to: facilitator, validAfter: 0n };
    expect(await simulateExact(permitB, buyer.address, witness, await signExact(permitB, witness, { spender: uptoProxy }))).toEqual({
      errorName: 'InvalidSigner',
      args: undefined,
    });

    const expired = await newPermit({ deadline: now - 1n });
    expect(await simulateExact(expired, buyer.address, witness, await signExact(expired, witness))).toEqual({
      errorName: 'SignatureExpired',
      args: [now - 1n],
    });

    const permitC = await newPermit();
    const early = { to: facilitator, validAfter: now + 3600n };
    const earlyResult = await simulateExact(permitC, buyer.address, early, await signExact(permitC, early));
    expect(earlyResult.errorName).toBe('PaymentNotYetValid');
    expect(earlyResult.args?.[0]).toBe(now + 3600n);

    // Signed by someone else; tampered amount; malformed signatures.
    const permitD = await newPermit();
    expect(await simulateExact(permitD, buyer.address, witness, await signExact(permitD, witness, { signer: stranger }))).toEqual({
      errorName: 'InvalidSigner',
      args: undefined,
    });
    const good = await signExact(permitD, witness);
    const inflated = { ...permitD, permitted: { token: usdc, amount: permitD.permitted.amount + 1n } };
    expect((await simulateExact(inflated, buyer.address, witness, good)).errorName).toBe('InvalidSigner');
    expect((await simulateExact(permitD, buyer.address, witness, good.slice(0, 130) as Hex)).errorName).toBe('InvalidSignatureLength');
    const badV = `${good.slice(0, 130)}1d` as Hex; // v = 29
    expect((await simulateExact(permitD, buyer.address, witness, badV)).errorName).toBe('InvalidSignature');
    // The high-s twin of a valid signature (s' = n - s, v flipped) is rejected as malleable.
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const s = BigInt(`0x${good.slice(66, 130)}`);
    const v = parseInt(good.slice(130, 132), 16);
    const highS = `${good.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    expect((await simulateExact(permitD, buyer.address, witness, highS)).errorName).toBe('InvalidSignature');

    // The valid one still goes through afterwards (nothing above consumed its nonce).
    expect(await isNonceUsed(buyer.address, permitD.nonce)).toBe(false);
    const hash = await walletOf(stranger).writeContract({
      address: exactProxy,
      abi: exactPermit2ProxyAbi,
      functionName: 'settle',
      args: [permitD, buyer.address, witness, good],
    });
    expect((await waitForReceipt(client, hash)).status).toBe('success');
    expect(await balanceOf(buyer.address)).toBe(buyerBefore - permitD.permitted.amount);
  });

  test('upto: a relayer settles less than the signed maximum; the rest stays with the buyer', async () => {
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(5) } });
    const witness = { to: facilitator, facilitator, validAfter: 0n };
    const signature = await signUpto(permit, witness);
    const [buyerBefore, facilitatorBefore] = [await balanceOf(buyer.address), await balanceOf(facilitator)];

    // Strangers may not pick the amount.
    expect(await simulateUpto(permit, USDC(1.75), buyer.address, witness, signature, stranger)).toEqual({
      errorName: 'UnauthorizedCaller',
      args: [stranger.address],
    });
    expect(await simulateUpto(permit, 0n, buyer.address, witness, signature)).toEqual({
      errorName: 'InvalidSettleAmount',
      args: [0n, USDC(5)],
    });
    expect(await simulateUpto(permit, USDC(5) + 1n, buyer.address, witness, signature)).toEqual({
      errorName: 'InvalidSettleAmount',
      args: [USDC(5) + 1n, USDC(5)],
    });

    const hash = await walletOf(relayer).writeContract({
      address: uptoProxy,
      abi: uptoPermit2ProxyAbi,
      functionName: 'settle',
      args: [permit, USDC(1.75), buyer.address, witness, signature],
    });
    const receipt = await waitForReceipt(client, hash);
    expect(receipt.status).toBe('success');
    expect(await balanceOf(buyer.address)).toBe(buyerBefore - USDC(1.75));
    expect(await balanceOf(facilitator)).toBe(facilitatorBefore + USDC(1.75));
    expect(await balanceOf(uptoProxy)).toBe(0n);
    const settled = parseEventLogs({ abi: uptoPermit2ProxyAbi, logs: receipt.logs, eventName: 'Settled' });
    expect(settled.map((l) => l.args)).toEqual([
      { token: usdc, owner: buyer.address, to: facilitator, amount: USDC(1.75), maxAmount: USDC(5), nonce: permit.nonce },
    ]);

    // One signature, one settlement: the remainder cannot be pulled with the same nonce.
    expect(await simulateUpto(permit, USDC(1), buyer.address, witness, signature)).toEqual({ errorName: 'InvalidNonce' });

    // The full maximum is allowed too.
    const full = await newPermit({ permitted: { token: usdc, amount: USDC(0.5) } });
    const fullHash = await walletOf(relayer).writeContract({
      address: uptoProxy,
      abi: uptoPermit2ProxyAbi,
      functionName: 'settle',
      args: [full, USDC(0.5), buyer.address, witness, await signUpto(full, witness)],
    });
    expect((await waitForReceipt(client, fullHash)).status).toBe('success');
    expect(await balanceOf(buyer.address)).toBe(buyerBefore - USDC(2.25));
    expect(await balanceOf(facilitator)).toBe(facilitatorBefore + USDC(2.25));
  });

  test('upto: rejects a wrong recipient or facilitator, wrong spender, expiry, early validAfter and bad signatures', async () => {
    const now = await latestTimestamp();
    const permit = await newPermit();
    const good = { to: facilitator, facilitator, validAfter: 0n };
    const amount = USDC(1);

    const wrongTo = { ...good, to: stranger.address };
    expect(await simulateUpto(permit, amount, buyer.address, wrongTo, await signUpto(permit, wrongTo))).toEqual({
      errorName: 'RecipientNotFacilitator',
      args: [stranger.address, facilitator],
    });
    const wrongFacilitator = { ...good, facilitator: stranger.address };
    expect(await simulateUpto(permit, amount, buyer.address, wrongFacilitator, await signUpto(permit, wrongFacilitator))).toEqual({
      errorName: 'FacilitatorMismatch',
      args: [stranger.address, facilitator],
    });
    // Signed with the exact proxy as spender, or as an exact-type witness.
    expect(await simulateUpto(permit, amount, buyer.address, good, await signUpto(permit, good, { spender: exactProxy }))).toEqual({
      errorName: 'InvalidSigner',
      args: undefined,
    });
    expect(
      await simulateUpto(
        permit,
        amount,
        buyer.address,
        good,
        await signExact(permit, { to: facilitator, validAfter: 0n }, { spender: uptoProxy }),
      ),
    ).toEqual({ errorName: 'InvalidSigner' });

    const expired = await newPermit({ deadline: now - 1n });
    expect(await simulateUpto(expired, amount, buyer.address, good, await signUpto(expired, good))).toEqual({
      errorName: 'SignatureExpired',
      args: [now - 1n],
    });
    const early = { ...good, validAfter: now + 3600n };
    expect((await simulateUpto(permit, amount, buyer.address, early, await signUpto(permit, early))).errorName).toBe('PaymentNotYetValid');
    expect(await simulateUpto(permit, amount, buyer.address, good, await signUpto(permit, good, { signer: stranger }))).toEqual({
      errorName: 'InvalidSigner',
      args: undefined,
    });
  });

  test('Permit2 directly: amount over the maximum, the nonce bitmap and invalidateUnorderedNonces', async () => {
    // A buyer may call Permit2 as spender themselves (spender = msg.sender).
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(1) } });
    const witnessHash = generatePrivateKey();
    const typeString = 'Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)';
    const callPermit2 = (requestedAmount: bigint) =>
      revertOf(() =>
        client.simulateContract({
          account: stranger,
          address: permit2,
          abi: permit2Abi,
          functionName: 'permitWitnessTransferFrom',
          args: [permit, { to: stranger.address, requestedAmount }, buyer.address, witnessHash, typeString, '0x'],
        }),
      );
    expect(await callPermit2(USDC(1) + 1n)).toEqual({ errorName: 'InvalidAmount', args: [USDC(1)] });
    expect(await callPermit2(USDC(1))).toEqual({ errorName: 'InvalidSignatureLength' });

    // Invalidate nonces 256*7 + {3, 200}: the word at position 7 gets those bits.
    const nonce = 7n * 256n + 200n;
    const mask = (1n << 3n) | (1n << 200n);
    const hash = await walletOf(buyer).writeContract({
      address: permit2,
      abi: permit2Abi,
      functionName: 'invalidateUnorderedNonces',
      args: [7n, mask],
    });
    const receipt = await waitForReceipt(client, hash);
    expect(receipt.status).toBe('success');
    expect(parseEventLogs({ abi: permit2Abi, logs: receipt.logs, eventName: 'UnorderedNonceInvalidation' }).map((l) => l.args)).toEqual([
      { owner: buyer.address, word: 7n, mask },
    ]);
    expect(await client.readContract({ address: permit2, abi: permit2Abi, functionName: 'nonceBitmap', args: [buyer.address, 7n] })).toBe(
      mask,
    );
    const invalidated = await newPermit({ nonce });
    const witness = { to: facilitator, validAfter: 0n };
    expect(await simulateExact(invalidated, buyer.address, witness, await signExact(invalidated, witness))).toEqual({
      errorName: 'InvalidNonce',
    });
    // Neighbouring nonces in the same word are still usable.
    const neighbour = await newPermit({ nonce: nonce + 1n, permitted: { token: usdc, amount: 1n } });
    const ok = await walletOf(stranger).writeContract({
      address: exactProxy,
      abi: exactPermit2ProxyAbi,
      functionName: 'settle',
      args: [neighbour, buyer.address, witness, await signExact(neighbour, witness)],
    });
    expect((await waitForReceipt(client, ok)).status).toBe('success');
    expect(await client.readContract({ address: permit2, abi: permit2Abi, functionName: 'nonceBitmap', args: [buyer.address, 7n] })).toBe(
      mask | (1n << 201n),
    );
  });

  test('without a Permit2 approval the token refuses, with its own error', async () => {
    const unapproved = privateKeyToAccount(generatePrivateKey());
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(1) } });
    const witness = { to: facilitator, validAfter: 0n };
    const result = await simulateExact(permit, unapproved.address, witness, await signExact(permit, witness, { signer: unapproved }));
    expect(result).toEqual({ errorName: 'Error', args: ['ERC20: transfer amount exceeds allowance'] });
  });

  test('deployDevnet adds the Permit2 contracts to a chain deployed by the previous version', async () => {
    // The previous deploy: USDC (its proxy at nonce 0), facilitator (nonce 1), then setRelayer from the
    // deployer (nonce 2), so Permit2's CREATE slot is gone and its code is placed with anvil_setCode.
    const old = await startChain();
    anvils.push(old.anvil);
    const deployer = privateKeyToAccount(DEVNET_DEPLOYER_KEY);
    const issuer = walletOf(privateKeyToAccount(DEVNET_USDC_ISSUER_KEY), old.rpcUrl);
    for (const account of [deployer.address, issuer.account.address]) {
      await old.client.request({ method: 'anvil_setBalance', params: [account, numberToHex(10n ** 22n)] } as never);
    }
    const wallet = walletOf(deployer, old.rpcUrl);
    const fac = getContract('X402Facilitator');
    await deployUsdcImplementation(old.client, issuer);
    const proxy = fiatTokenProxyArtifact();
    await waitForReceipt(
      old.client,
      await wallet.deployContract({ abi: proxy.abi, bytecode: proxy.bytecode, args: [DEVNET_USDC_IMPLEMENTATION_ADDRESS], nonce: 0 }),
    );
    await initializeUsdc(old.client, issuer);
    await waitForReceipt(
      old.client,
      await wallet.deployContract({ abi: fac.abi, bytecode: fac.bytecode, args: [deployer.address], nonce: 1 }),
    );
    await waitForReceipt(
      old.client,
      await wallet.writeContract({
        address: facilitator,
        abi: facilitatorAbi,
        functionName: 'setRelayer',
        args: [relayer.address, true],
        nonce: 2,
      }),
    );
    expect(await old.client.getCode({ address: permit2 })).toBeUndefined();

    const deployment = await deployDevnet({ rpcUrl: old.rpcUrl, chainId: CHAIN_ID, relayers: [relayer.address], buyers: [] });
    expect(deployment).toEqual({ ...devnetAddresses(), chainId: CHAIN_ID });
    expect(await old.client.getTransactionCount({ address: deployer.address })).toBe(3); // placed with anvil_setCode: no deployer transaction
    for (const [proxy, abi] of [
      [exactProxy, exactPermit2ProxyAbi],
      [uptoProxy, uptoPermit2ProxyAbi],
    ] as const) {
      expect(await old.client.readContract({ address: proxy, abi, functionName: 'PERMIT2' })).toBe(permit2);
      expect(await old.client.readContract({ address: proxy, abi, functionName: 'FACILITATOR' })).toBe(facilitator);
    }
    // Same runtime code as the CREATE-deployed contracts on the main test chain.
    for (const address of [permit2, exactProxy, uptoProxy]) {
      expect(await old.client.getCode({ address })).toBe(await client.getCode({ address }));
    }
    // Idempotent: a second run changes nothing.
    expect(await deployDevnet({ rpcUrl: old.rpcUrl, chainId: CHAIN_ID, relayers: [relayer.address], buyers: [] })).toEqual(deployment);
    await old.anvil.stop();
  });

  test("deployDevnet refuses, by name, a chain kept from before the devnet ran Circle's USDC", async () => {
    const old = await startChain();
    anvils.push(old.anvil);
    await deployDevnet({ rpcUrl: old.rpcUrl, chainId: CHAIN_ID, relayers: [relayer.address], buyers: [] });
    // Stand-in for the old token's code: anything that is not a FiatToken (it has no master minter).
    await old.client.request({ method: 'anvil_setCode', params: [usdc, await client.getCode({ address: exactProxy })] } as never);
    await expect(deployDevnet({ rpcUrl: old.rpcUrl, chainId: CHAIN_ID, relayers: [relayer.address], buyers: [] })).rejects.toThrow(
      `devnet deploy: the token at ${usdc} is not Circle's FiatToken (a chain from an earlier version): start afresh with rm -rf .data`,
    );
    await old.anvil.stop();
  });
});

/**
 * The facilitator's Permit2 section: a relayer settles through the exact or upto proxy and the
 * facilitator pays `amount - fee` to the payout and `fee` to the fee recipient in the same
 * transaction (as `settle` does for EIP-3009).
 */
describe('X402Facilitator Permit2 settlement', () => {
  const payout = privateKeyToAccount(generatePrivateKey()).address;
  const feeRecipient = privateKeyToAccount(generatePrivateKey()).address;
  const NO_2612 = { value: 0n, deadline: 0n, v: 0, r: `0x${'0'.repeat(64)}` as Hex, s: `0x${'0'.repeat(64)}` as Hex };

  const paymentOf = (proxy: Address, permit: Permit, owner: Address, validAfter: bigint, signature: Hex) => ({
    proxy,
    token: permit.permitted.token,
    amount: permit.permitted.amount,
    nonce: permit.nonce,
    deadline: permit.deadline,
    owner,
    validAfter,
    signature,
  });
  const out = (fee: bigint) => ({ payout, fee, feeRecipient, platformFee: 0n, platform: zeroAddress });

  async function relayerSends(functionName: 'settlePermit2Exact' | 'settlePermit2Upto', args: readonly unknown[]) {
    const hash = await walletOf(relayer).writeContract({ address: facilitator, abi: facilitatorPermit2Abi, functionName, args } as never);
    return waitForReceipt(client, hash);
  }
  const simulate = (functionName: 'settlePermit2Exact' | 'settlePermit2Upto', args: readonly unknown[], account = relayer) =>
    revertOf(() => client.simulateContract({ account, address: facilitator, abi: facilitatorPermit2Abi, functionName, args } as never));

  test('exact: pulls the signed amount through the exact proxy and pays out minus the fee, in one transaction', async () => {
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(4) } });
    const signature = await signExact(permit, { to: facilitator, validAfter: 0n });
    const args = [paymentOf(exactProxy, permit, buyer.address, 0n, signature), NO_2612, out(USDC(0.1))] as const;
    const before = await Promise.all([balanceOf(buyer.address), balanceOf(payout), balanceOf(feeRecipient), balanceOf(facilitator)]);

    // Only relayers: the payout is not covered by the buyer's signature.
    expect(await simulate('settlePermit2Exact', args, stranger)).toEqual({ errorName: 'NotRelayer', args: [stranger.address] });
    expect(await simulate('settlePermit2Exact', [args[0], NO_2612, out(USDC(4) + 1n)])).toEqual({
      errorName: 'FeeExceedsValue',
      args: [USDC(4) + 1n, USDC(4)],
    });

    const receipt = await relayerSends('settlePermit2Exact', args);
    expect(receipt.status).toBe('success');
    expect(await Promise.all([balanceOf(buyer.address), balanceOf(payout), balanceOf(feeRecipient), balanceOf(facilitator)])).toEqual([
      before[0]! - USDC(4),
      before[1]! + USDC(3.9),
      before[2]! + USDC(0.1),
      before[3],
    ]);
    const events = parseEventLogs({ abi: facilitatorPermit2Abi, logs: receipt.logs, eventName: 'Permit2Settled' });
    expect(events.map((l) => l.args)).toEqual([
      { token: usdc, owner: buyer.address, nonce: permit.nonce, proxy: exactProxy, payout, amount: USDC(4), fee: USDC(0.1) },
    ]);
    // One signature, one settlement.
    expect(await simulate('settlePermit2Exact', args)).toEqual({ errorName: 'InvalidNonce', args: undefined });
  });

  test('upto: settles settleAmount of the signed maximum through the upto proxy and pays it out', async () => {
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(6) } });
    const signature = await signUpto(permit, { to: facilitator, facilitator, validAfter: 0n });
    const payment = paymentOf(uptoProxy, permit, buyer.address, 0n, signature);
    const before = await Promise.all([balanceOf(buyer.address), balanceOf(payout), balanceOf(feeRecipient)]);

    expect(await simulate('settlePermit2Upto', [payment, USDC(6) + 1n, NO_2612, out(0n)])).toEqual({
      errorName: 'InvalidSettleAmount',
      args: [USDC(6) + 1n, USDC(6)],
    });
    const receipt = await relayerSends('settlePermit2Upto', [payment, USDC(2.5), NO_2612, out(USDC(0.05))]);
    expect(receipt.status).toBe('success');
    expect(await Promise.all([balanceOf(buyer.address), balanceOf(payout), balanceOf(feeRecipient)])).toEqual([
      before[0]! - USDC(2.5),
      before[1]! + USDC(2.45),
      before[2]! + USDC(0.05),
    ]);
    const events = parseEventLogs({ abi: facilitatorPermit2Abi, logs: receipt.logs, eventName: 'Permit2Settled' });
    expect(events.map((l) => [l.args.proxy, l.args.amount, l.args.fee])).toEqual([[uptoProxy, USDC(2.5), USDC(0.05)]]);
  });

  test('the witness is the facilitator itself: a signature for another recipient, or the wrong proxy, reverts', async () => {
    const permit = await newPermit();
    const toStranger = await signExact(permit, { to: stranger.address, validAfter: 0n });
    expect(await simulate('settlePermit2Exact', [paymentOf(exactProxy, permit, buyer.address, 0n, toStranger), NO_2612, out(0n)])).toEqual({
      errorName: 'InvalidSigner',
      args: undefined,
    });
    const forUpto = await signExact(permit, { to: facilitator, validAfter: 0n }, { spender: uptoProxy });
    expect(await simulate('settlePermit2Exact', [paymentOf(exactProxy, permit, buyer.address, 0n, forUpto), NO_2612, out(0n)])).toEqual({
      errorName: 'InvalidSigner',
      args: undefined,
    });
  });

  test('a proxy that delivers nothing cannot pay out funds the facilitator already holds', async () => {
    expect(await balanceOf(facilitator)).toBeGreaterThan(USDC(1)); // left there by the proxy tests above
    const permit = await newPermit({ permitted: { token: usdc, amount: USDC(1) } });
    const signature = await signExact(permit, { to: facilitator, validAfter: 0n });
    // An account without code as "proxy": the call succeeds and moves nothing.
    expect(
      await simulate('settlePermit2Exact', [paymentOf(stranger.address, permit, buyer.address, 0n, signature), NO_2612, out(0n)]),
    ).toEqual({
      errorName: 'Permit2AmountNotReceived',
      args: [USDC(1), 0n],
    });
  });

  test("permit2612: the token's EIP-2612 permit for Permit2 is applied in the same transaction, and skipped once the allowance is there", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const fund = await walletOf(buyer).writeContract({
      address: usdc,
      abi: fiatTokenAbi(),
      functionName: 'transfer',
      args: [owner.address, USDC(3)],
    });
    expect((await waitForReceipt(client, fund)).status).toBe('success');
    const deadline = (await latestTimestamp()) + 3600n;
    const permitSig = parseSignature(
      await owner.signTypedData({
        domain: { name: 'USDC', version: '2', chainId: CHAIN_ID, verifyingContract: usdc },
        types: EIP2612_PERMIT_TYPES,
        primaryType: 'Permit',
        message: { owner: owner.address, spender: permit2, value: USDC(10), nonce: 0n, deadline },
      }),
    );
    const eip2612 = { value: USDC(10), deadline, v: Number(permitSig.v), r: permitSig.r, s: permitSig.s };

    const first = await newPermit({ permitted: { token: usdc, amount: USDC(1) } });
    const firstSig = await signExact(first, { to: facilitator, validAfter: 0n }, { signer: owner });
    // Without the permit the token refuses: no allowance for Permit2.
    expect(await simulate('settlePermit2Exact', [paymentOf(exactProxy, first, owner.address, 0n, firstSig), NO_2612, out(0n)])).toEqual({
      errorName: 'Error',
      args: ['ERC20: transfer amount exceeds allowance'],
    });
    expect(
      (await relayerSends('settlePermit2Exact', [paymentOf(exactProxy, first, owner.address, 0n, firstSig), eip2612, out(0n)])).status,
    ).toBe('success');
    expect(await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'allowance', args: [owner.address, permit2] })).toBe(
      USDC(9),
    );

    // The permit's nonce is spent; carrying it again is harmless because the allowance suffices.
    const second = await newPermit({ permitted: { token: usdc, amount: USDC(2) } });
    const secondSig = await signExact(second, { to: facilitator, validAfter: 0n }, { signer: owner });
    expect(
      (await relayerSends('settlePermit2Exact', [paymentOf(exactProxy, second, owner.address, 0n, secondSig), eip2612, out(0n)])).status,
    ).toBe('success');
    expect(await balanceOf(owner.address)).toBe(0n);
  });

  test("deployDevnet brings a resumed chain's facilitator code up to date, keeping its owner and relayers", async () => {
    const old = await startChain();
    anvils.push(old.anvil);
    await deployDevnet({ rpcUrl: old.rpcUrl, chainId: CHAIN_ID, relayers: [relayer.address], buyers: [] });
    // Stand-in for the code of an earlier version: anything other than the current runtime.
    await old.client.request({ method: 'anvil_setCode', params: [facilitator, await client.getCode({ address: exactProxy })] } as never);
    expect(await old.client.getCode({ address: facilitator })).not.toBe(await client.getCode({ address: facilitator }));

    await deployDevnet({ rpcUrl: old.rpcUrl, chainId: CHAIN_ID, relayers: [relayer.address], buyers: [] });
    expect(await old.client.getCode({ address: facilitator })).toBe(await client.getCode({ address: facilitator }));
    expect(await old.client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'owner' })).toBe(
      privateKeyToAccount(DEVNET_DEPLOYER_KEY).address,
    );
    expect(
      await old.client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'isRelayer', args: [relayer.address] }),
    ).toBe(true);
    await old.anvil.stop();
  });
});
