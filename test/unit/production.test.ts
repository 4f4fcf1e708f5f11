import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rpc, startAnvil, type Anvil } from '../../devnet/anvil';
import { anvilAccount } from '../../devnet/demo-accounts';
import { ConfigError, DEVNET_RELAYER_ADDRESS, DEVNET_RELAYER_KEY, loadConfig } from '../../src/config';
import { buildNetworkTable, buildSolanaNetworkTable } from '../../src/chains/networks';
import {
  DEVNET_BRIDGE_MESSENGER_ADDRESS,
  DEVNET_DEPLOYER_KEY,
  DEVNET_MERCHANT_ADDRESS,
  DEVNET_DEPOSITOR_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  DEVNET_USDC_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { DEVNET_SOLANA_FEE_PAYER } from '../../src/chains/solana/fee-payer';
import { inferenceConfig } from '../../src/inference/config';
import { checkContractCode, isDevnetAddress, isDevnetKey, workerKeys } from '../../src/production';
import { loadStartup, startUp } from '../../src/startup';
import { generatePayloadCodecKey } from '../../src/temporal/codec-keys';

/**
 * Issue 12: no devnet default reaches production, keys are separated by role, and configured
 * contracts must have code. Unit tests: no stack (one anvil of its own for the code check).
 */

const randomAddress = () => getAddress(`0x${randomBytes(20).toString('hex')}`);
const codecKeys = generatePayloadCodecKey('prod-1');
/** A production environment that passes: own keys and addresses, no network enabled. */
function productionEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return { NODE_ENV: 'production', SESSION_SECRET: 'x'.repeat(40), METRICS_TOKEN: 'm'.repeat(24), PAYLOAD_CODEC_KEYS: codecKeys, ...extra };
}
const relayerKey = generatePrivateKey();
const revenueKey = generatePrivateKey();
const topupKey = generatePrivateKey();
const apiEnv = () =>
  productionEnv({ RELAYER_ADDRESS: privateKeyToAddress(relayerKey), INFERENCE_REVENUE_WALLET: privateKeyToAddress(revenueKey) });
const workerEnv = () => ({
  ...apiEnv(),
  RELAYER_PRIVATE_KEY: relayerKey,
  REVENUE_WALLET_PRIVATE_KEY: revenueKey,
  TOPUP_RELAYER_PRIVATE_KEY: topupKey,
  TOPUP_DEPOSITOR_CONTRACT: depositor,
});
const depositor = randomAddress();
const topupEnv = () =>
  productionEnv({
    TOPUP_MERCHANT_CONTRACT: randomAddress(),
    TOPUP_DEPOSITOR_CONTRACT: depositor,
    TOPUP_RELAYER_ADDRESS: privateKeyToAddress(topupKey),
    TOPUP_FEE_FIXED: '20000',
    TOPUP_FEE_RECIPIENT: randomAddress(),
    TOPUP_MIN_AMOUNT: '100000',
  });

/** Variables named in the ConfigError that `fn` throws. */
function refused(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(':')[0]!);
  }
  throw new Error('expected a ConfigError');
}

describe('devnet keys and addresses are known', () => {
  test('every devnet key and its addresses (accounts and contracts it can deploy) are devnet; a fresh one is not', () => {
    expect(isDevnetKey(DEVNET_RELAYER_KEY)).toBe(true);
    expect(isDevnetKey(DEVNET_DEPLOYER_KEY.toUpperCase().replace('0X', '0x'))).toBe(true);
    expect(isDevnetKey(anvilAccount(0).privateKey)).toBe(true);
    expect(isDevnetKey(anvilAccount(11).privateKey)).toBe(true); // the tests' fee recipient
    expect(isDevnetKey(generatePrivateKey())).toBe(false);
    for (const a of [DEVNET_RELAYER_ADDRESS, DEVNET_USDC_ADDRESS, DEVNET_BRIDGE_MESSENGER_ADDRESS, DEVNET_MERCHANT_ADDRESS]) {
      expect(isDevnetAddress(a)).toBe(true);
    }
    expect(isDevnetAddress(anvilAccount(5).address.toLowerCase())).toBe(true);
    expect(isDevnetAddress(randomAddress())).toBe(false);
    // The canonical Permit2 and x402 proxy addresses are the real ones production uses too.
    expect(isDevnetAddress(PERMIT2_CANONICAL_ADDRESS)).toBe(false);
    expect(DEVNET_RELAYER_ADDRESS).toBe(privateKeyToAddress(DEVNET_RELAYER_KEY));
  });
});

describe('production mode: no devnet default applies', () => {
  test('loadConfig in production gives no relayer key or address; devnet gives anvil #1', () => {
    const prod = loadConfig(productionEnv());
    expect(prod.production).toBe(true);
    expect(prod.RELAYER_PRIVATE_KEY).toBeUndefined();
    expect(prod.RELAYER_ADDRESS).toBeUndefined();
    const dev = loadConfig({});
    expect(dev.production).toBe(false);
    expect(dev.RELAYER_PRIVATE_KEY).toBe(DEVNET_RELAYER_KEY);
    expect(dev.RELAYER_ADDRESS).toBe(DEVNET_RELAYER_ADDRESS);
    // MAINNETS_ENABLED alone is production mode too.
    expect(loadConfig({ MAINNETS_ENABLED: 'true' }).production).toBe(true);
  });

  test('the network tables enable nothing by default in production (no devnet RPC, no devnet bridge)', () => {
    const prod = buildNetworkTable(productionEnv());
    expect([...prod.values()].filter((n) => n.enabled)).toEqual([]);
    expect(prod.get('base-sepolia')!.bridgeMessenger).toBeUndefined();
    expect(buildNetworkTable({}).get('base-sepolia')!.enabled).toBe(true);
    expect(buildSolanaNetworkTable(productionEnv()).get('solana-devnet')!.enabled).toBe(false);
  });

  test('api: the devnet defaults are refused with the variables named', () => {
    expect(refused(() => loadStartup('api', productionEnv({ INFERENCE_REVENUE_WALLET: randomAddress() })))).toEqual(['RELAYER_ADDRESS']);
    expect(refused(() => loadStartup('api', productionEnv({ RELAYER_ADDRESS: randomAddress() })))).toEqual(['INFERENCE_REVENUE_WALLET']);
    expect(refused(() => loadStartup('api', { ...apiEnv(), RELAYER_ADDRESS: DEVNET_RELAYER_ADDRESS }))).toEqual(['RELAYER_ADDRESS']);
    expect(refused(() => loadStartup('api', { ...apiEnv(), OPERATOR_ADDRESSES: anvilAccount(0).address }))).toEqual(['OPERATOR_ADDRESSES']);
    expect(refused(() => loadStartup('api', { ...apiEnv(), PLATFORM_FEE_RECIPIENT: anvilAccount(11).address }))).toEqual([
      'PLATFORM_FEE_RECIPIENT',
    ]);
    expect(loadStartup('api', apiEnv()).config.production).toBe(true);
  });

  test('every process needs the payload codec key, and not a devnet one (issue 39: forged workflows)', () => {
    const devnetKeys = generatePayloadCodecKey('devnet-a1');
    for (const [role, env] of [
      ['api', apiEnv()],
      ['worker', workerEnv()],
      ['topup', topupEnv()],
    ] as const) {
      expect(refused(() => loadStartup(role, { ...env, PAYLOAD_CODEC_KEYS: undefined }))).toEqual(['PAYLOAD_CODEC_KEYS']);
      expect(refused(() => loadStartup(role, { ...env, PAYLOAD_CODEC_KEYS: devnetKeys }))).toEqual(['PAYLOAD_CODEC_KEYS']);
      expect(loadStartup(role, env).config.PAYLOAD_CODEC_KEYS).toBe(codecKeys);
    }
  });

  test('api: an enabled network with devnet contract defaults names each variable', () => {
    const names = refused(() => loadStartup('api', { ...apiEnv(), RPC_URLS_BASE_SEPOLIA: 'https://rpc.example' }));
    // Permit2 and the x402 proxies default to their canonical addresses, which are production's too, and
    // the token to Circle's base-sepolia USDC (issue 40: public facts ship with the code).
    expect(names.sort()).toEqual(['FACILITATOR_ADDRESS_TESTNET', 'GATEWAY_WALLET_TESTNET'].sort());
    expect(buildNetworkTable(apiEnv()).get('base-sepolia')!.usdc).toBe('0x036CbD53842c5426634e7929541eC2318f3dCF7e');
    // An explicitly configured devnet address is refused the same way.
    const explicit = {
      ...apiEnv(),
      RPC_URLS_BASE_SEPOLIA: 'https://rpc.example',
      FACILITATOR_ADDRESS_TESTNET: randomAddress(),
      USDC_ADDRESS_BASE_SEPOLIA: randomAddress(),
      PERMIT2_ADDRESS: randomAddress(),
      EXACT_PERMIT2_PROXY_ADDRESS: randomAddress(),
      UPTO_PERMIT2_PROXY_ADDRESS: randomAddress(),
      GATEWAY_WALLET_TESTNET: randomAddress(),
      BRIDGE_MESSENGER_ADDRESS: DEVNET_BRIDGE_MESSENGER_ADDRESS,
    };
    expect(refused(() => loadStartup('api', explicit))).toEqual(['BRIDGE_MESSENGER_ADDRESS']);
    expect(loadStartup('api', { ...explicit, BRIDGE_MESSENGER_ADDRESS: randomAddress() }).networks.get('base-sepolia')!.enabled).toBe(true);
  });

  test('api and top-up hold no private key in production', () => {
    expect(refused(() => loadStartup('api', { ...apiEnv(), RELAYER_PRIVATE_KEY: relayerKey }))).toEqual(['RELAYER_PRIVATE_KEY']);
    expect(refused(() => loadStartup('topup', { ...topupEnv(), TOPUP_RELAYER_PRIVATE_KEY: topupKey }))).toEqual([
      'TOPUP_RELAYER_PRIVATE_KEY',
    ]);
  });

  test('api and top-up need METRICS_TOKEN in production (issue 39: /metrics is otherwise open to a same-host proxy); the worker does not', () => {
    expect(refused(() => loadStartup('api', { ...apiEnv(), METRICS_TOKEN: undefined }))).toEqual(['METRICS_TOKEN']);
    expect(refused(() => loadStartup('topup', { ...topupEnv(), METRICS_TOKEN: undefined }))).toEqual(['METRICS_TOKEN']);
    expect(loadStartup('worker', { ...workerEnv(), METRICS_TOKEN: undefined }).role).toBe('worker');
  });

  test("the media download's devnet exception (MEDIA_ARTIFACT_PRIVATE_HOSTS) is refused in production (issue 39: server-side request forgery)", () => {
    expect(refused(() => loadStartup('worker', { ...workerEnv(), MEDIA_ARTIFACT_PRIVATE_HOSTS: '127.0.0.1' }))).toEqual([
      'MEDIA_ARTIFACT_PRIVATE_HOSTS',
    ]);
    expect(loadStartup('worker', workerEnv()).media!.artifacts.privateHosts).toEqual([]);
  });

  test('only the API needs SESSION_SECRET in production (it signs the siwe-session cookie); the worker, top-up and the other processes do not', () => {
    expect(refused(() => loadStartup('api', { ...apiEnv(), SESSION_SECRET: undefined }))).toEqual(['SESSION_SECRET']);
    expect(loadStartup('worker', { ...workerEnv(), SESSION_SECRET: undefined }).role).toBe('worker');
    expect(loadStartup('topup', { ...topupEnv(), SESSION_SECRET: undefined }).role).toBe('topup');
    expect(loadConfig({ NODE_ENV: 'production' }).production).toBe(true); // migrate, ops, codec server
  });

  test('solana: an RPC URL without an own fee payer key, or with the devnet one, is refused', () => {
    const rpcUrl = { SOLANA_RPC_URL_SOLANA_DEVNET: 'https://solana.example' };
    expect(refused(() => loadStartup('api', { ...apiEnv(), ...rpcUrl }))).toEqual(['SOLANA_FEE_PAYER_KEY']);
    const devnetKey = JSON.stringify([...DEVNET_SOLANA_FEE_PAYER.secretKey]);
    expect(refused(() => loadStartup('api', { ...apiEnv(), ...rpcUrl, SOLANA_FEE_PAYER_KEY: devnetKey }))).toEqual([
      'SOLANA_FEE_PAYER_KEY',
    ]);
  });

  test('topup: the devnet merchant contract, deposit key and relayer defaults are refused with the variables named', () => {
    expect(refused(() => loadStartup('topup', productionEnv())).sort()).toEqual([
      'TOPUP_DEPOSITOR_CONTRACT',
      'TOPUP_FEE_FIXED',
      'TOPUP_MERCHANT_CONTRACT',
      'TOPUP_MIN_AMOUNT',
      'TOPUP_RELAYER_ADDRESS',
    ]);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), TOPUP_DEPOSITOR_CONTRACT: undefined }))).toEqual([
      'TOPUP_DEPOSITOR_CONTRACT',
    ]);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), TOPUP_DEPOSITOR_CONTRACT: DEVNET_DEPOSITOR_ADDRESS }))).toEqual([
      'TOPUP_DEPOSITOR_CONTRACT',
    ]);
    expect(refused(() => loadStartup('topup', { ...topupEnv(), TOPUP_MERCHANT_CONTRACT: DEVNET_MERCHANT_ADDRESS }))).toEqual([
      'TOPUP_MERCHANT_CONTRACT',
    ]);
    expect(loadStartup('topup', topupEnv()).topup!.TOPUP_RELAYER_ADDRESS).toBe(privateKeyToAddress(topupKey));
  });

  test('topup: a free top-up, or one of a few base units, is refused in production (issue 39: each costs us 3-4 transactions)', () => {
    const recipient = { TOPUP_FEE_RECIPIENT: randomAddress() };
    // No fixed fee (a fee in basis points alone is nothing on one base unit), and the devnet minimum of 1.
    expect(refused(() => loadStartup('topup', { ...topupEnv(), TOPUP_FEE_FIXED: undefined, TOPUP_MIN_AMOUNT: undefined })).sort()).toEqual([
      'TOPUP_FEE_FIXED',
      'TOPUP_MIN_AMOUNT',
    ]);
    expect(refused(() => loadStartup('topup', { ...topupEnv(), ...recipient, TOPUP_FEE_FIXED: '0', TOPUP_FEE_BPS: '50' }))).toEqual([
      'TOPUP_FEE_FIXED',
    ]);
    expect(refused(() => loadStartup('topup', { ...topupEnv(), TOPUP_MIN_AMOUNT: '99999' }))).toEqual(['TOPUP_MIN_AMOUNT']);
    // The minimum must leave the buyer something after the fixed fee.
    expect(refused(() => loadStartup('topup', { ...topupEnv(), TOPUP_FEE_FIXED: '200000', TOPUP_MIN_AMOUNT: '200000' }))).toEqual([
      'TOPUP_MIN_AMOUNT',
    ]);
    expect(loadStartup('topup', topupEnv()).topup).toMatchObject({ TOPUP_FEE_FIXED: 20_000n, TOPUP_MIN_AMOUNT: 100_000n });
    // The devnet keeps its defaults: free top-ups from one base unit.
    expect(loadStartup('topup', {}).topup).toMatchObject({ TOPUP_FEE_FIXED: 0n, TOPUP_MIN_AMOUNT: 1n });
  });

  test('topup: a devnet TOPUP_FEE_RECIPIENT is refused by name; an own one starts', () => {
    const own = randomAddress();
    expect(loadStartup('topup', { ...topupEnv(), TOPUP_FEE_BPS: '25', TOPUP_FEE_RECIPIENT: own }).topup!.TOPUP_FEE_RECIPIENT).toBe(own);
    // anvil account #0 and a contract the devnet deployer creates: both have public keys behind them.
    for (const devnetRecipient of [anvilAccount(0).address, DEVNET_USDC_ADDRESS]) {
      expect(isDevnetAddress(devnetRecipient)).toBe(true);
      expect(refused(() => loadStartup('topup', { ...topupEnv(), TOPUP_FEE_BPS: '25', TOPUP_FEE_RECIPIENT: devnetRecipient }))).toEqual([
        'TOPUP_FEE_RECIPIENT',
      ]);
    }
  });
});

describe('keys by role (worker only)', () => {
  test('devnet: every role falls back to the relayer key', () => {
    const keys = workerKeys(loadConfig({}));
    expect(keys).toEqual({
      relayer: DEVNET_RELAYER_KEY,
      lanes: [DEVNET_RELAYER_KEY],
      revenue: DEVNET_RELAYER_KEY,
      topupRelayer: DEVNET_RELAYER_KEY,
    });
    const own = generatePrivateKey();
    expect(workerKeys(loadConfig({ RELAYER_PRIVATE_KEY: own })).topupRelayer).toBe(own);
  });

  test('production: each key required, none a devnet key, no two the same, addresses matching', () => {
    expect(refused(() => loadStartup('worker', apiEnv())).sort()).toEqual(WORKER_KEYS);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), RELAYER_PRIVATE_KEY: DEVNET_RELAYER_KEY }))).toContain(
      'RELAYER_PRIVATE_KEY',
    );
    expect(refused(() => loadStartup('worker', { ...workerEnv(), TOPUP_RELAYER_PRIVATE_KEY: anvilAccount(7).privateKey }))).toEqual([
      'TOPUP_RELAYER_PRIVATE_KEY',
    ]);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), REVENUE_WALLET_PRIVATE_KEY: relayerKey }))).toEqual([
      'REVENUE_WALLET_PRIVATE_KEY',
    ]);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), INFERENCE_REVENUE_WALLET: randomAddress() }))).toEqual([
      'INFERENCE_REVENUE_WALLET',
    ]);
    expect(loadStartup('worker', workerEnv()).keys).toEqual({
      relayer: relayerKey,
      lanes: [relayerKey],
      revenue: revenueKey,
      topupRelayer: topupKey,
    });
    // Settlement lanes are relayer keys too: never a devnet key, never another role's key.
    expect(refused(() => loadStartup('worker', { ...workerEnv(), RELAYER_PRIVATE_KEYS: `${relayerKey},${DEVNET_RELAYER_KEY}` }))).toEqual([
      'RELAYER_PRIVATE_KEYS',
    ]);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), RELAYER_PRIVATE_KEYS: `${relayerKey},${topupKey}` }))).toEqual([
      'RELAYER_PRIVATE_KEYS',
    ]);
  });

  test("production: each role address that is set must be its own key's address, and the API's role addresses must differ", () => {
    // Precondition: every role address set to its own key's address starts.
    const matching = { ...workerEnv(), TOPUP_RELAYER_ADDRESS: privateKeyToAddress(topupKey) };
    expect(loadStartup('worker', matching).keys!.topupRelayer).toBe(topupKey);
    // The worker: an address that is not its role key's is refused by name (each on its own).
    expect(refused(() => loadStartup('worker', { ...matching, RELAYER_ADDRESS: privateKeyToAddress(revenueKey) }))).toEqual([
      'RELAYER_ADDRESS',
    ]);
    expect(refused(() => loadStartup('worker', { ...matching, TOPUP_RELAYER_ADDRESS: privateKeyToAddress(relayerKey) }))).toEqual([
      'TOPUP_RELAYER_ADDRESS',
    ]);
    expect(refused(() => loadStartup('worker', { ...matching, INFERENCE_REVENUE_WALLET: privateKeyToAddress(topupKey) }))).toEqual([
      'INFERENCE_REVENUE_WALLET',
    ]);
    // No two roles share a key: the top-up key may be neither the relayer's nor the revenue wallet's.
    expect(refused(() => loadStartup('worker', { ...workerEnv(), TOPUP_RELAYER_PRIVATE_KEY: relayerKey }))).toEqual([
      'TOPUP_RELAYER_PRIVATE_KEY',
    ]);
    expect(refused(() => loadStartup('worker', { ...workerEnv(), TOPUP_RELAYER_PRIVATE_KEY: revenueKey }))).toEqual([
      'TOPUP_RELAYER_PRIVATE_KEY',
    ]);
    // The API: the revenue wallet may not be the relayer (compared without case).
    expect(loadStartup('api', apiEnv()).inference!.revenueWallet).toBe(privateKeyToAddress(revenueKey));
    const relayer = privateKeyToAddress(relayerKey);
    expect(refused(() => loadStartup('api', { ...apiEnv(), INFERENCE_REVENUE_WALLET: relayer.toLowerCase() }))).toEqual([
      'INFERENCE_REVENUE_WALLET',
    ]);
  });

  test('the revenue wallet is required in production and never derived from a key', () => {
    expect(() => inferenceConfig(loadConfig(productionEnv({ RELAYER_ADDRESS: randomAddress() })))).toThrow(
      /INFERENCE_REVENUE_WALLET: required in production/,
    );
    expect(inferenceConfig(loadConfig({ RELAYER_PRIVATE_KEY: relayerKey })).revenueWallet).toBe(privateKeyToAddress(relayerKey));
  });
});
const WORKER_KEYS = ['RELAYER_PRIVATE_KEY', 'REVENUE_WALLET_PRIVATE_KEY', 'TOPUP_RELAYER_PRIVATE_KEY'].sort();

describe('start-up contract code check (a real anvil)', () => {
  let anvil: Anvil;
  const withCode = randomAddress();
  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 84532, log: () => undefined });
    await rpc(anvil.rpcUrl, 'anvil_setCode', [withCode, '0x6000']);
  });
  afterAll(async () => {
    await anvil?.stop();
  });

  test('an address without code is refused with the variable and network named; one with code passes', async () => {
    const empty: Address = randomAddress();
    const target = (variable: string, address: Address) => ({ variable, network: 'base-sepolia', rpcUrl: anvil.rpcUrl, address });
    await expect(checkContractCode([target('PERMIT2_ADDRESS', withCode)])).resolves.toBeUndefined();
    await expect(checkContractCode([target('PERMIT2_ADDRESS', withCode), target('UPTO_PERMIT2_PROXY_ADDRESS', empty)])).rejects.toThrow(
      `Invalid configuration (contracts):\n  UPTO_PERMIT2_PROXY_ADDRESS: no contract code at ${empty} on base-sepolia`,
    );
  });

  test('a chain that does not answer stops start-up within the bound, naming the variable', async () => {
    const started = Date.now();
    await expect(
      checkContractCode(
        [{ variable: 'FACILITATOR_ADDRESS_MAINNET', network: 'base', rpcUrl: 'http://127.0.0.1:1', address: withCode }],
        2000,
      ),
    ).rejects.toThrow(/FACILITATOR_ADDRESS_MAINNET: could not read the code at 0x[0-9a-fA-F]{40} on base within 2000 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('startUp in production checks every contract of every enabled network', async () => {
    const addresses = {
      FACILITATOR_ADDRESS_TESTNET: withCode,
      USDC_ADDRESS_BASE_SEPOLIA: withCode,
      PERMIT2_ADDRESS: withCode,
      EXACT_PERMIT2_PROXY_ADDRESS: withCode,
      UPTO_PERMIT2_PROXY_ADDRESS: withCode,
      GATEWAY_WALLET_TESTNET: withCode,
    };
    const env = { ...apiEnv(), RPC_URLS_BASE_SEPOLIA: anvil.rpcUrl, ...addresses };
    await expect(startUp('api', env)).resolves.toMatchObject({ role: 'api' });
    const noCode = randomAddress();
    await expect(startUp('api', { ...env, EXACT_PERMIT2_PROXY_ADDRESS: noCode })).rejects.toThrow(
      `EXACT_PERMIT2_PROXY_ADDRESS: no contract code at ${noCode} on base-sepolia`,
    );
    // The top-up gateway also checks its merchant contract on `base`.
    const topup = {
      ...topupEnv(),
      RPC_URLS_BASE: anvil.rpcUrl,
      CHAIN_ID_BASE: '84532',
      FACILITATOR_ADDRESS_MAINNET: withCode,
      USDC_ADDRESS_BASE: withCode,
    };
    const perm = {
      PERMIT2_ADDRESS: withCode,
      EXACT_PERMIT2_PROXY_ADDRESS: withCode,
      UPTO_PERMIT2_PROXY_ADDRESS: withCode,
      GATEWAY_WALLET_MAINNET: withCode,
    };
    await expect(startUp('topup', { ...topup, ...perm })).rejects.toThrow(
      /TOPUP_MERCHANT_CONTRACT: no contract code at 0x[0-9a-fA-F]{40} on base/,
    );
    await expect(startUp('topup', { ...topup, ...perm, TOPUP_MERCHANT_CONTRACT: withCode })).rejects.toThrow(
      `TOPUP_DEPOSITOR_CONTRACT: no contract code at ${depositor} on base`,
    );
    await expect(
      startUp('topup', { ...topup, ...perm, TOPUP_MERCHANT_CONTRACT: withCode, TOPUP_DEPOSITOR_CONTRACT: withCode }),
    ).resolves.toMatchObject({ role: 'topup' });
  });
});

describe('production mode is inferred from the chain (issue 39)', () => {
  let anvil: Anvil;
  let geth: Server;
  let gethUrl: string;
  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 8453, log: () => undefined }); // a devnet `base`, as `npm start` runs
    // A node that is not anvil: it answers as Geth does (the only call start-up makes before refusing).
    geth = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const { id } = JSON.parse(body);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id, result: 'Geth/v1.14.12-stable/linux-amd64/go1.23.4' }));
      });
    });
    await new Promise<void>((resolve) => geth.listen(0, '127.0.0.1', resolve));
    gethUrl = `http://127.0.0.1:${(geth.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await anvil?.stop();
    await new Promise((resolve) => geth?.close(resolve));
  });
  /** A Base mainnet RPC and facilitator, and nothing else: no NODE_ENV, every other value a devnet default. */
  const baseMainnet = (rpcUrl: string) => ({
    SESSION_SECRET: 'x'.repeat(40),
    RPC_URLS_BASE: rpcUrl,
    FACILITATOR_ADDRESS_MAINNET: randomAddress(),
  });

  test('a Base mainnet RPC without NODE_ENV: the top-up gateway and the worker refuse every devnet key and default, naming them', async () => {
    for (const rpcUrl of ['https://mainnet.base.org', gethUrl]) {
      const topup = startUp('topup', baseMainnet(rpcUrl), 3000);
      await expect(topup).rejects.toThrow(/^Invalid configuration \(production mode: base \(chain 8453\) is not (proven )?a devnet chain/);
      const names = refusedNames(await topup.catch((e: Error) => e));
      expect(names).toEqual(
        expect.arrayContaining([
          'TOPUP_MERCHANT_CONTRACT',
          'TOPUP_DEPOSITOR_CONTRACT',
          'TOPUP_RELAYER_ADDRESS',
          'PAYLOAD_CODEC_KEYS',
          'METRICS_TOKEN',
        ]),
      );
      const worker = await startUp('worker', { ...baseMainnet(rpcUrl), INFERENCE_REVENUE_WALLET: randomAddress() }, 3000).catch(
        (e: Error) => e,
      );
      expect(refusedNames(worker)).toEqual(
        expect.arrayContaining(['RELAYER_PRIVATE_KEY', 'REVENUE_WALLET_PRIVATE_KEY', 'TOPUP_RELAYER_PRIVATE_KEY']),
      );
      const api = await startUp('api', baseMainnet(rpcUrl), 3000).catch((e: Error) => e);
      expect(refusedNames(api)).toEqual(['INFERENCE_REVENUE_WALLET']); // devnet: the relayer's address
    }
  });

  test('a mainnet chain id given to a testnet entry counts as a mainnet', async () => {
    const env = { SESSION_SECRET: 'x'.repeat(40), RPC_URLS_BASE_SEPOLIA: gethUrl, CHAIN_ID_BASE_SEPOLIA: '8453' };
    await expect(startUp('worker', env, 3000)).rejects.toThrow(/production mode: base-sepolia \(chain 8453\) is not a devnet chain/);
  });

  test('the devnet `base` (anvil, chain 8453) stays a devnet: its defaults apply', async () => {
    const s = await startUp(
      'topup',
      { RPC_URLS_BASE: anvil.rpcUrl, FACILITATOR_ADDRESS_MAINNET: randomAddress(), USDC_ADDRESS_BASE: randomAddress() },
      3000,
    );
    expect(s.config.production).toBe(false);
    expect(s.networks.get('base')!.enabled).toBe(true);
    expect(s.topup!.TOPUP_RELAYER_ADDRESS).toBe(DEVNET_RELAYER_ADDRESS);
  });

  test('BRIDGE_ATTESTATION_URL has no default in production: the worker of a bridged network needs it', () => {
    expect(loadConfig({}).BRIDGE_ATTESTATION_URL).toBe('http://127.0.0.1:4023');
    expect(loadConfig(productionEnv()).BRIDGE_ATTESTATION_URL).toBeUndefined();
    const bridged = { ...workerEnv(), BRIDGE_MESSENGER_ADDRESS: randomAddress(), BRIDGE_TRANSMITTER_ADDRESS: randomAddress() };
    const enabled = {
      RPC_URLS_BASE_SEPOLIA: anvil.rpcUrl,
      FACILITATOR_ADDRESS_TESTNET: randomAddress(),
      USDC_ADDRESS_BASE_SEPOLIA: randomAddress(),
      GATEWAY_WALLET_TESTNET: randomAddress(),
    };
    expect(refused(() => loadStartup('worker', { ...bridged, ...enabled }))).toEqual(['BRIDGE_ATTESTATION_URL']);
    expect(
      loadStartup('worker', { ...bridged, ...enabled, BRIDGE_ATTESTATION_URL: 'https://iris-api.circle.com' }).config
        .BRIDGE_ATTESTATION_URL,
    ).toBe('https://iris-api.circle.com');
  });
});

/** Variables named in a ConfigError. */
function refusedNames(err: unknown): string[] {
  expect(err).toBeInstanceOf(ConfigError);
  return (err as Error).message
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(':')[0]!);
}
