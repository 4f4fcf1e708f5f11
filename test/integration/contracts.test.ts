import {
  DEVNET_USDC_IMPLEMENTATION_ADDRESS,
  DEVNET_USDC_ISSUER_ADDRESS,
  DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { createPublicClient, createWalletClient, defineChain, http, numberToHex, parseEventLogs, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { startAnvil, type Anvil } from '../../devnet/anvil';
import { transferWithAuthorizationTypes } from '../../src/schemes/eip3009/typed-data';
import { EIP2612_PERMIT_TYPES, revertOf, waitForReceipt } from '../support/evm';
import { DEVNET_DEPLOYER_KEY, deployDevnet, devnetAddresses } from '../../devnet/deploy';
import { fiatTokenAbi, fiatTokenProxyArtifact } from '../../devnet/usdc';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

const CHAIN_ID = 84532;
const USDC = (units: number): bigint => BigInt(Math.round(units * 1_000_000));

const chain = defineChain({
  id: CHAIN_ID,
  name: 'base-sepolia (anvil)',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1'] } },
});

let anvil: Anvil | undefined;
let rpcUrl = '';
let client: ReturnType<typeof makePublicClient>;
let usdc: Address;
let facilitator: Address;
let permit2Contracts: { permit2: Address; exactPermit2Proxy: Address; uptoPermit2Proxy: Address };

const buyer = privateKeyToAccount(generatePrivateKey());
const permitOwner = privateKeyToAccount(generatePrivateKey());
const relayer = privateKeyToAccount(generatePrivateKey());
const secondRelayer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());
const payout = privateKeyToAccount(generatePrivateKey()).address;
const feeRecipient = privateKeyToAccount(generatePrivateKey()).address;
const permitRecipient = privateKeyToAccount(generatePrivateKey()).address;

const BUYER_FUNDS = USDC(1000);
const PERMIT_OWNER_FUNDS = USDC(500);

function makePublicClient(url: string) {
  return createPublicClient({ chain, transport: http(url, { retryCount: 0 }) });
}

function walletOf(account: PrivateKeyAccount) {
  return createWalletClient({ chain, account, transport: http(rpcUrl, { retryCount: 0 }) });
}

const balanceOf = (account: Address): Promise<bigint> =>
  client.readContract({ address: usdc, abi: tokenAbi, functionName: 'balanceOf', args: [account] });

async function latestTimestamp(): Promise<bigint> {
  return (await client.getBlock({ blockTag: 'latest' })).timestamp;
}

function randomNonce(): Hex {
  return generatePrivateKey(); // 32 random bytes
}

interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

const authorizationFields = transferWithAuthorizationTypes.TransferWithAuthorization;

async function signAuthorization(
  signer: PrivateKeyAccount,
  primaryType: 'ReceiveWithAuthorization' | 'TransferWithAuthorization',
  message: Authorization,
): Promise<Hex> {
  const domain = { name: 'USDC', version: '2', chainId: CHAIN_ID, verifyingContract: usdc } as const;
  return primaryType === 'ReceiveWithAuthorization'
    ? signer.signTypedData({ domain, types: { ReceiveWithAuthorization: authorizationFields }, primaryType, message })
    : signer.signTypedData({ domain, types: { TransferWithAuthorization: authorizationFields }, primaryType, message });
}

/** What an x402 buyer signs: TransferWithAuthorization with the facilitator as `to`. */
async function newTransferAuthorization(overrides: Partial<Authorization> = {}, signer = buyer) {
  const now = await latestTimestamp();
  const auth: Authorization = {
    from: signer.address,
    to: facilitator,
    value: USDC(1.25),
    validAfter: 0n,
    validBefore: now + 3600n,
    nonce: randomNonce(),
    ...overrides,
  };
  return { auth, signature: await signAuthorization(signer, 'TransferWithAuthorization', auth) };
}

async function newReceiveAuthorization(overrides: Partial<Authorization> = {}, signer = buyer) {
  const { auth } = await newTransferAuthorization(overrides, signer);
  return { auth, signature: await signAuthorization(signer, 'ReceiveWithAuthorization', auth) };
}

function settleArgs(auth: Authorization, signature: Hex, fee: bigint) {
  return [usdc, auth.from, auth.value, auth.validAfter, auth.validBefore, auth.nonce, signature, payout, fee, feeRecipient] as const;
}

/** Simulates a facilitator call and returns the decoded custom error name and args. */

beforeAll(async () => {
  anvil = await startAnvil({ chainId: CHAIN_ID, log: () => undefined });
  rpcUrl = anvil.rpcUrl;
  client = makePublicClient(rpcUrl);

  const deployment = await deployDevnet({
    rpcUrl,
    chainId: CHAIN_ID,
    relayers: [relayer.address],
    buyers: [
      { address: buyer.address, amount: BUYER_FUNDS },
      { address: permitOwner.address, amount: PERMIT_OWNER_FUNDS },
    ],
  });
  usdc = deployment.usdc;
  facilitator = deployment.facilitator;
  permit2Contracts = {
    permit2: deployment.permit2,
    exactPermit2Proxy: deployment.exactPermit2Proxy,
    uptoPermit2Proxy: deployment.uptoPermit2Proxy,
  };
  await client.request({ method: 'anvil_setBalance', params: [stranger.address, numberToHex(10n ** 20n)] } as never);
});

afterAll(async () => {
  await anvil?.stop();
});

describe('devnet contracts', () => {
  test('deploys at the deterministic addresses with the configured token identity', async () => {
    expect(devnetAddresses()).toEqual({ usdc, facilitator, ...permit2Contracts });
    const deployerAddress = privateKeyToAccount(DEVNET_DEPLOYER_KEY).address;
    const { getContractAddress } = await import('viem');
    const created = [usdc, facilitator, permit2Contracts.permit2, permit2Contracts.exactPermit2Proxy, permit2Contracts.uptoPermit2Proxy];
    // USDC and the facilitator at the deployer's nonces 0 and 1; Permit2 and its proxies at the
    // canonical addresses x402 buyers sign for.
    expect(created).toEqual([
      ...[0n, 1n].map((nonce) => getContractAddress({ from: deployerAddress, nonce })),
      PERMIT2_CANONICAL_ADDRESS,
      X402_EXACT_PERMIT2_PROXY_ADDRESS,
      X402_UPTO_PERMIT2_PROXY_ADDRESS,
    ]);
    for (const address of created) expect((await client.getCode({ address }))?.length ?? 0).toBeGreaterThan(2);
    const read = <F extends 'name' | 'symbol' | 'version'>(functionName: F) =>
      client.readContract({ address: usdc, abi: tokenAbi, functionName });
    expect(await read('name')).toBe('USDC');
    expect(await read('symbol')).toBe('USDC');
    expect(await read('version')).toBe('2');
    expect(await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'decimals' })).toBe(6);
    // Circle's FiatToken V2.2 behind FiatTokenProxy: the deployer is the proxy admin (which the proxy
    // keeps from calling the token), the issuer holds every token role; the implementation links
    // SignatureChecker at its deterministic address.
    const fiatToken = { address: usdc, abi: fiatTokenAbi() } as const;
    for (const role of ['owner', 'masterMinter', 'pauser', 'blacklister'] as const) {
      expect(await client.readContract({ ...fiatToken, functionName: role })).toBe(DEVNET_USDC_ISSUER_ADDRESS);
    }
    expect(await client.readContract({ ...fiatToken, functionName: 'currency' })).toBe('USD');
    expect(await client.readContract({ ...fiatToken, functionName: 'isMinter', args: [DEVNET_USDC_ISSUER_ADDRESS] })).toBe(true);
    const proxy = { address: usdc, abi: fiatTokenProxyArtifact().abi, account: deployerAddress } as const;
    expect(await client.readContract({ ...proxy, functionName: 'admin' })).toBe(deployerAddress);
    expect(await client.readContract({ ...proxy, functionName: 'implementation' })).toBe(DEVNET_USDC_IMPLEMENTATION_ADDRESS);
    expect(
      await revertOf(() =>
        client.readContract({ ...fiatToken, account: deployerAddress, functionName: 'balanceOf', args: [buyer.address] }),
      ),
    ).toEqual({ errorName: 'Error', args: ['Cannot call fallback function from the proxy admin'] });
    const implementationCode = (await client.getCode({ address: DEVNET_USDC_IMPLEMENTATION_ADDRESS }))!;
    expect(implementationCode).toContain(DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS.slice(2).toLowerCase());
    expect((await client.getCode({ address: DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS }))?.length ?? 0).toBeGreaterThan(2);
    expect(await balanceOf(buyer.address)).toBe(BUYER_FUNDS);
    expect(await balanceOf(permitOwner.address)).toBe(PERMIT_OWNER_FUNDS);
    expect(
      await client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'isRelayer', args: [relayer.address] }),
    ).toBe(true);
    expect(
      await client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'isRelayer', args: [stranger.address] }),
    ).toBe(false);
    expect(await client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'owner' })).toBe(deployerAddress);
    expect(await client.getBalance({ address: relayer.address })).toBe(10n ** 22n);
    expect(await client.getBalance({ address: buyer.address })).toBe(10n ** 22n);
  });

  test('settle pulls a TransferWithAuthorization and splits value between payout and fee', async () => {
    const value = USDC(1.25);
    const fee = USDC(0.05);
    const { auth, signature } = await newTransferAuthorization({ value });
    const before = await Promise.all([balanceOf(buyer.address), balanceOf(payout), balanceOf(feeRecipient)]);
    expect(before).toEqual([BUYER_FUNDS, 0n, 0n]);
    expect(
      await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'authorizationState', args: [buyer.address, auth.nonce] }),
    ).toBe(false);

    const hash = await walletOf(relayer).writeContract({
      address: facilitator,
      abi: facilitatorAbi,
      functionName: 'settle',
      args: settleArgs(auth, signature, fee),
    });
    const receipt = await waitForReceipt(client, hash);
    expect(receipt.status).toBe('success');

    expect(await balanceOf(buyer.address)).toBe(BUYER_FUNDS - value);
    expect(await balanceOf(payout)).toBe(USDC(1.2));
    expect(await balanceOf(feeRecipient)).toBe(USDC(0.05));
    expect(await balanceOf(facilitator)).toBe(0n);
    expect(
      await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'authorizationState', args: [buyer.address, auth.nonce] }),
    ).toBe(true);

    const settled = parseEventLogs({ abi: facilitatorAbi, logs: receipt.logs, eventName: 'Settled' });
    expect(settled).toHaveLength(1);
    expect(settled[0]!.args).toEqual({ token: usdc, from: buyer.address, nonce: auth.nonce, payout, value, fee });
    const used = parseEventLogs({ abi: tokenAbi, logs: receipt.logs, eventName: 'AuthorizationUsed' });
    expect(used.map((l) => l.args)).toEqual([{ authorizer: buyer.address, nonce: auth.nonce }]);
    const transfers = parseEventLogs({ abi: tokenAbi, logs: receipt.logs, eventName: 'Transfer' });
    expect(transfers.map((l) => l.args)).toEqual([
      { from: buyer.address, to: facilitator, value },
      { from: facilitator, to: payout, value: USDC(1.2) },
      { from: facilitator, to: feeRecipient, value: fee },
    ]);

    // Replaying the same authorization reverts, both in simulation and on chain.
    const replay = await revertOf(() =>
      client.simulateContract({
        account: relayer,
        address: facilitator,
        abi: facilitatorAbi,
        functionName: 'settle',
        args: settleArgs(auth, signature, fee),
      }),
    );
    expect(replay).toEqual({ errorName: 'Error', args: ['FiatTokenV2: authorization is used or canceled'] });
    const replayHash = await walletOf(relayer).writeContract({
      address: facilitator,
      abi: facilitatorAbi,
      functionName: 'settle',
      args: settleArgs(auth, signature, fee),
      gas: 300_000n,
    });
    expect((await waitForReceipt(client, replayHash)).status).toBe('reverted');
    expect(await balanceOf(buyer.address)).toBe(BUYER_FUNDS - value);
    expect(await balanceOf(payout)).toBe(USDC(1.2));
  });

  test('settle with a zero fee pays the whole value out', async () => {
    const payoutBefore = await balanceOf(payout);
    const feeBefore = await balanceOf(feeRecipient);
    const { auth, signature } = await newTransferAuthorization({ value: USDC(0.01) });
    const hash = await walletOf(relayer).writeContract({
      address: facilitator,
      abi: facilitatorAbi,
      functionName: 'settle',
      args: settleArgs(auth, signature, 0n),
    });
    expect((await waitForReceipt(client, hash)).status).toBe('success');
    expect(await balanceOf(payout)).toBe(payoutBefore + USDC(0.01));
    expect(await balanceOf(feeRecipient)).toBe(feeBefore);
  });

  test('only relayers may settle', async () => {
    const { auth, signature } = await newTransferAuthorization();
    const balanceBefore = await balanceOf(buyer.address);
    const simulated = await revertOf(() =>
      client.simulateContract({
        account: stranger,
        address: facilitator,
        abi: facilitatorAbi,
        functionName: 'settle',
        args: settleArgs(auth, signature, 0n),
      }),
    );
    expect(simulated).toEqual({ errorName: 'NotRelayer', args: [stranger.address] });

    const hash = await walletOf(stranger).writeContract({
      address: facilitator,
      abi: facilitatorAbi,
      functionName: 'settle',
      args: settleArgs(auth, signature, 0n),
      gas: 300_000n,
    });
    expect((await waitForReceipt(client, hash)).status).toBe('reverted');
    expect(await balanceOf(buyer.address)).toBe(balanceBefore);
    expect(
      await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'authorizationState', args: [buyer.address, auth.nonce] }),
    ).toBe(false);
  });

  test('rejects expired, not-yet-valid, mis-signed and over-fee settlements', async () => {
    const simulateSettle = (auth: Authorization, signature: Hex, fee = 0n) =>
      revertOf(() =>
        client.simulateContract({
          account: relayer,
          address: facilitator,
          abi: facilitatorAbi,
          functionName: 'settle',
          args: settleArgs(auth, signature, fee),
        }),
      );
    const now = await latestTimestamp();

    const expired = await newTransferAuthorization({ validBefore: now - 1n });
    expect(await simulateSettle(expired.auth, expired.signature)).toEqual({
      errorName: 'Error',
      args: ['FiatTokenV2: authorization is expired'],
    });

    const early = await newTransferAuthorization({ validAfter: now + 3600n, validBefore: now + 7200n });
    expect(await simulateSettle(early.auth, early.signature)).toEqual({
      errorName: 'Error',
      args: ['FiatTokenV2: authorization is not yet valid'],
    });

    // Signed by someone other than `from`.
    const forged = await newTransferAuthorization({}, stranger);
    const forgedAuth = { ...forged.auth, from: buyer.address };
    expect(await simulateSettle(forgedAuth, forged.signature)).toEqual({ errorName: 'Error', args: ['FiatTokenV2: invalid signature'] });

    // A ReceiveWithAuthorization signature is not the TransferWithAuthorization that settle pulls.
    const wrongType = await newReceiveAuthorization();
    expect(await simulateSettle(wrongType.auth, wrongType.signature)).toEqual({
      errorName: 'Error',
      args: ['FiatTokenV2: invalid signature'],
    });

    const valid = await newTransferAuthorization({ value: USDC(1) });
    expect(await simulateSettle(valid.auth, valid.signature, USDC(1) + 1n)).toEqual({
      errorName: 'FeeExceedsValue',
      args: [USDC(1) + 1n, USDC(1)],
    });
  });

  test('receiveWithAuthorization is reserved for the payee; transferWithAuthorization works for anyone', async () => {
    const { auth, signature } = await newReceiveAuthorization();
    const wrongCaller = await revertOf(() =>
      client.simulateContract({
        account: relayer,
        address: usdc,
        abi: tokenAbi,
        functionName: 'receiveWithAuthorization',
        args: [auth.from, auth.to, auth.value, auth.validAfter, auth.validBefore, auth.nonce, signature],
      }),
    );
    expect(wrongCaller).toEqual({ errorName: 'Error', args: ['FiatTokenV2: caller must be the payee'] });

    const buyerBefore = await balanceOf(buyer.address);
    const payoutBefore = await balanceOf(payout);
    const now = await latestTimestamp();
    const transfer: Authorization = {
      from: buyer.address,
      to: payout,
      value: USDC(2),
      validAfter: now - 10n,
      validBefore: now + 600n,
      nonce: randomNonce(),
    };
    const transferSig = await signAuthorization(buyer, 'TransferWithAuthorization', transfer);
    const hash = await walletOf(relayer).writeContract({
      address: usdc,
      abi: tokenAbi,
      functionName: 'transferWithAuthorization',
      args: [transfer.from, transfer.to, transfer.value, transfer.validAfter, transfer.validBefore, transfer.nonce, transferSig],
    });
    expect((await waitForReceipt(client, hash)).status).toBe('success');
    expect(await balanceOf(buyer.address)).toBe(buyerBefore - USDC(2));
    expect(await balanceOf(payout)).toBe(payoutBefore + USDC(2));
    expect(
      await client.readContract({
        address: usdc,
        abi: tokenAbi,
        functionName: 'authorizationState',
        args: [buyer.address, transfer.nonce],
      }),
    ).toBe(true);
  });

  test('transferWithPermit applies an EIP-2612 permit and moves the tokens', async () => {
    const value = USDC(12.5);
    const nonce = await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'nonces', args: [permitOwner.address] });
    expect(nonce).toBe(0n);
    const deadline = (await latestTimestamp()) + 600n;
    const signature = await permitOwner.signTypedData({
      domain: { name: 'USDC', version: '2', chainId: CHAIN_ID, verifyingContract: usdc },
      types: EIP2612_PERMIT_TYPES,
      primaryType: 'Permit',
      message: { owner: permitOwner.address, spender: facilitator, value, nonce, deadline },
    });
    const r = `0x${signature.slice(2, 66)}` as Hex;
    const s = `0x${signature.slice(66, 130)}` as Hex;
    const v = parseInt(signature.slice(130, 132), 16);
    const args = [usdc, permitOwner.address, permitRecipient, value, deadline, v, r, s] as const;

    expect(
      await revertOf(() =>
        client.simulateContract({ account: stranger, address: facilitator, abi: facilitatorAbi, functionName: 'transferWithPermit', args }),
      ),
    ).toEqual({ errorName: 'NotRelayer', args: [stranger.address] });

    const hash = await walletOf(relayer).writeContract({
      address: facilitator,
      abi: facilitatorAbi,
      functionName: 'transferWithPermit',
      args,
    });
    const receipt = await waitForReceipt(client, hash);
    expect(receipt.status).toBe('success');
    expect(await balanceOf(permitOwner.address)).toBe(PERMIT_OWNER_FUNDS - value);
    expect(await balanceOf(permitRecipient)).toBe(value);
    expect(await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'nonces', args: [permitOwner.address] })).toBe(1n);
    expect(
      await client.readContract({ address: usdc, abi: tokenAbi, functionName: 'allowance', args: [permitOwner.address, facilitator] }),
    ).toBe(0n);
    const events = parseEventLogs({ abi: facilitatorAbi, logs: receipt.logs, eventName: 'PermitTransfer' });
    expect(events.map((e) => e.args)).toEqual([{ token: usdc, owner: permitOwner.address, recipient: permitRecipient, value }]);

    // The same permit cannot be used twice (its nonce is spent).
    expect(
      await revertOf(() =>
        client.simulateContract({
          account: relayer,
          address: facilitator,
          abi: facilitatorAbi,
          functionName: 'transferWithPermit',
          args,
        }),
      ),
    ).toEqual({ errorName: 'Error', args: ['EIP2612: invalid signature'] });
  });

  test('deployDevnet is idempotent and only adds missing relayers', async () => {
    const deployerAddress = privateKeyToAccount(DEVNET_DEPLOYER_KEY).address;
    const nonceBefore = await client.getTransactionCount({ address: deployerAddress });
    const buyerBefore = await balanceOf(buyer.address);
    const options = {
      rpcUrl,
      chainId: CHAIN_ID,
      relayers: [relayer.address, secondRelayer.address],
      buyers: [{ address: buyer.address, amount: BUYER_FUNDS }],
    };

    expect(await deployDevnet(options)).toEqual({ usdc, facilitator, ...permit2Contracts, chainId: CHAIN_ID });
    expect(await client.getTransactionCount({ address: deployerAddress })).toBe(nonceBefore + 1); // one setRelayer
    expect(
      await client.readContract({ address: facilitator, abi: facilitatorAbi, functionName: 'isRelayer', args: [secondRelayer.address] }),
    ).toBe(true);
    expect(await client.getBalance({ address: secondRelayer.address })).toBe(10n ** 22n);

    expect(await deployDevnet(options)).toEqual({ usdc, facilitator, ...permit2Contracts, chainId: CHAIN_ID });
    expect(await client.getTransactionCount({ address: deployerAddress })).toBe(nonceBefore + 1); // nothing to do
    expect(await balanceOf(buyer.address)).toBe(buyerBefore); // no second mint

    await expect(deployDevnet({ ...options, chainId: 1 })).rejects.toThrow(/chain id 84532, expected 1/);
  });
});
