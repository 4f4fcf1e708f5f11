import { ConfigError } from '../../src/config';
import {
  DEVNET_BRIDGE_MESSENGER_ADDRESS,
  DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  DEVNET_FACILITATOR_ADDRESS,
  DEVNET_GATEWAY_WALLET_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
  DEVNET_USDC_ADDRESS,
  DEVNET_WALLET_FACTORY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import {
  buildNetworkTable,
  buildSolanaNetworkTable,
  envSuffix,
  EVM_NETWORK_IDS,
  isEvmNetworkId,
  isListedToken,
  isSolanaNetworkId,
  missingFacts,
  type EvmNetwork,
  type EvmNetworkId,
} from '../../src/chains/networks';

const MAINNET_FACILITATOR = '0x4444444444444444444444444444444444444444';
const FLUENT_FACILITATOR = '0x5555555555555555555555555555555555555555';
const TESTNET_FACILITATOR = '0x6666666666666666666666666666666666666666';

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    buildNetworkTable(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`buildNetworkTable(${JSON.stringify(env)}) did not throw`);
}
const ids = (pred: (n: EvmNetwork) => boolean) =>
  [...buildNetworkTable({}).values()]
    .filter(pred)
    .map((n) => n.id)
    .sort();

const OTHER_FACTORY = '0x00000000000000000000000000000000000fAC70';

describe('buildNetworkTable defaults', () => {
  const table = buildNetworkTable({});

  test('holds every EVM network id of the spec, in order', () => {
    expect([...table.keys()]).toEqual([...EVM_NETWORK_IDS]);
    expect([...EVM_NETWORK_IDS].sort()).toEqual(
      [
        'base',
        'base-sepolia',
        'optimism',
        'optimism-sepolia',
        'arbitrum',
        'avalanche',
        'bsc',
        'bot-chain',
        'bot-chain-testnet',
        'arc-testnet',
        'polygon',
        'unichain',
        'ink',
        'worldchain',
        'sei',
        'hyperevm',
        'megaeth',
        'tempo',
        'monad',
        'robinhood',
        'fluent-testnet',
        'ethereum',
        'sonic',
      ].sort(),
    );
  });

  test('base-sepolia is enabled on the devnet chain with the devnet addresses', () => {
    expect(table.get('base-sepolia')).toEqual({
      id: 'base-sepolia',
      kind: 'evm',
      chainId: 84532,
      caip2: 'eip155:84532',
      testnet: true,
      facilitator: DEVNET_FACILITATOR_ADDRESS,
      usdc: DEVNET_USDC_ADDRESS,
      permit2: PERMIT2_CANONICAL_ADDRESS,
      exactPermit2Proxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
      uptoPermit2Proxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
      gatewayDomain: 6,
      cctpDomain: 6,
      stablecoin: 'USDC',
      bridgeMessenger: DEVNET_BRIDGE_MESSENGER_ADDRESS,
      bridgeTransmitter: DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
      bridgeFinality: 'standard',
      gatewayWallet: DEVNET_GATEWAY_WALLET_ADDRESS,
      permit2Only: false,
      sameChainOnly: false,
      permitOnly: false,
      rpcUrls: ['http://127.0.0.1:8545'],
      walletFactories: [DEVNET_WALLET_FACTORY_ADDRESS],
      minSettleAmount: 1n,
      maxFeePerGas: 100_000_000_000n,
      confirmationDepth: 0,
      rpcRetryAfterMaxMs: 2000,
      enabled: true,
    });
  });

  test('optimism-sepolia is enabled on the second devnet chain', () => {
    const n = table.get('optimism-sepolia')!;
    expect(n.chainId).toBe(11155420);
    expect(n.rpcUrls).toEqual(['http://127.0.0.1:8546']);
    expect(n.facilitator).toBe(DEVNET_FACILITATOR_ADDRESS);
    expect(n.usdc).toBe(DEVNET_USDC_ADDRESS);
    expect(n.enabled).toBe(true);
  });

  test('base (8453) is known but disabled: no RPC, no mainnet facilitator', () => {
    expect(table.get('base')).toEqual({
      id: 'base',
      kind: 'evm',
      chainId: 8453,
      caip2: 'eip155:8453',
      testnet: false,
      facilitator: undefined,
      usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      permit2: PERMIT2_CANONICAL_ADDRESS,
      exactPermit2Proxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
      uptoPermit2Proxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
      gatewayDomain: 6,
      cctpDomain: 6,
      stablecoin: 'USDC',
      bridgeMessenger: DEVNET_BRIDGE_MESSENGER_ADDRESS,
      bridgeTransmitter: DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
      bridgeFinality: 'standard',
      gatewayWallet: '0x77777777Dcc4d5A8B6E418Fd04D8997ef11000eE',
      permit2Only: false,
      sameChainOnly: false,
      permitOnly: false,
      rpcUrls: [],
      walletFactories: [DEVNET_WALLET_FACTORY_ADDRESS],
      minSettleAmount: 1000n,
      maxFeePerGas: 100_000_000_000n,
      confirmationDepth: 0,
      rpcRetryAfterMaxMs: 2000,
      enabled: false,
    });
  });

  test('smart-wallet factories: the devnet one by default, SMART_WALLET_FACTORIES_<NET> over it, none in production', () => {
    expect(table.get('optimism')!.walletFactories).toEqual([DEVNET_WALLET_FACTORY_ADDRESS]);
    const listed = buildNetworkTable({ SMART_WALLET_FACTORIES_BASE: ` ${OTHER_FACTORY}, ${DEVNET_WALLET_FACTORY_ADDRESS}` });
    expect(listed.get('base')!.walletFactories).toEqual([OTHER_FACTORY, DEVNET_WALLET_FACTORY_ADDRESS]);
    expect(listed.get('optimism')!.walletFactories).toEqual([DEVNET_WALLET_FACTORY_ADDRESS]);
    expect(buildNetworkTable({ NODE_ENV: 'production' }).get('base')!.walletFactories).toEqual([]);
    expect(() => buildNetworkTable({ SMART_WALLET_FACTORIES_BASE: 'not-an-address' })).toThrow('SMART_WALLET_FACTORIES_BASE');
  });

  test('only the two devnet chains are enabled', () => {
    expect(ids((n) => n.enabled)).toEqual(['base-sepolia', 'optimism-sepolia']);
  });

  test('testnets are arc-testnet, base-sepolia, bot-chain-testnet, fluent-testnet, optimism-sepolia', () => {
    expect(ids((n) => n.testnet)).toEqual(['arc-testnet', 'base-sepolia', 'bot-chain-testnet', 'fluent-testnet', 'optimism-sepolia']);
  });

  test('megaeth, bsc, tempo, bot-chain and bot-chain-testnet are permit2Only', () => {
    expect(ids((n) => n.permit2Only)).toEqual(['bot-chain', 'bot-chain-testnet', 'bsc', 'megaeth', 'tempo']);
  });

  test('avalanche, sei and arc-testnet are sameChainOnly', () => {
    expect(ids((n) => n.sameChainOnly)).toEqual(['arc-testnet', 'avalanche', 'sei']);
  });

  test('fluent-testnet is permitOnly', () => {
    expect(ids((n) => n.permitOnly)).toEqual(['fluent-testnet']);
  });

  test('caip2 is eip155:<chainId>, and absent without a chain id', () => {
    for (const n of table.values()) {
      expect(n.caip2).toBe(n.chainId === undefined ? undefined : `eip155:${n.chainId}`);
    }
    expect(table.get('bot-chain')!.chainId).toBeUndefined();
    expect(table.get('bot-chain')!.caip2).toBeUndefined();
  });

  // Issue 40: every network's public facts ship with the code (sources in src/chains/networks.ts).
  // A changed fact must be changed here too, against its source: a wrong token address is a money bug.
  test("ships each network's chain id, token and CCTP domain we could verify, and nothing else", () => {
    const prod = buildNetworkTable({ NODE_ENV: 'production' });
    const facts = Object.fromEntries([...prod.values()].map((n) => [n.id, [n.chainId, n.usdc, n.cctpDomain]]));
    expect(facts).toEqual({
      base: [8453, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 6],
      'base-sepolia': [84532, '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 6],
      optimism: [10, '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', 2],
      'optimism-sepolia': [11155420, '0x5fd84259d66Cd46123540766Be93DFE6D43130D7', 2],
      arbitrum: [42161, '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', 3],
      avalanche: [43114, '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E', 1],
      bsc: [56, undefined, undefined],
      'bot-chain': [undefined, undefined, undefined],
      'bot-chain-testnet': [undefined, undefined, undefined],
      'arc-testnet': [5042002, '0x3600000000000000000000000000000000000000', 26],
      polygon: [137, '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', 7],
      unichain: [130, '0x078D782b760474a361dDA0AF3839290b0EF57AD6', 10],
      ink: [57073, '0x2D270e6886d130D724215A266106e6832161EAEd', 21],
      worldchain: [480, '0x79A02482A880bCE3F13e09Da970dC34db4CD24d1', 14],
      sei: [1329, '0xe15fC38F6D8c56aF07bbCBe3BAf5708A2Bf42392', 16],
      hyperevm: [999, '0xb88339CB7199b77E23DB6E890353E22632Ba630f', 19],
      megaeth: [4326, undefined, undefined],
      tempo: [4217, undefined, undefined],
      monad: [143, '0x754704Bc059F8C67012fEd69BC8A327a5aafb603', 15],
      robinhood: [4663, '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168', undefined],
      'fluent-testnet': [20994, undefined, undefined],
      ethereum: [1, '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', 0],
      sonic: [146, '0x29219dd400f2Bf60E5a23d13Be72B486D4038894', 13],
    });
    // The devnet chains of `npm start` keep the devnet token; production gets Circle's testnet USDC.
    expect(table.get('base-sepolia')!.usdc).toBe(DEVNET_USDC_ADDRESS);
    expect(table.get('optimism-sepolia')!.usdc).toBe(DEVNET_USDC_ADDRESS);
  });

  test('testnet facilitator groups share the devnet facilitator', () => {
    for (const id of ['arc-testnet', 'bot-chain-testnet', 'base-sepolia', 'optimism-sepolia'] as EvmNetworkId[]) {
      expect(table.get(id)!.facilitator).toBe(DEVNET_FACILITATOR_ADDRESS);
    }
    expect(table.get('fluent-testnet')!.facilitator).toBeUndefined();
  });

  test('reads process.env when called without an argument', () => {
    const saved = process.env.CHAIN_ID_BASE_SEPOLIA;
    process.env.CHAIN_ID_BASE_SEPOLIA = '31337';
    try {
      expect(buildNetworkTable().get('base-sepolia')!.chainId).toBe(31337);
    } finally {
      if (saved === undefined) delete process.env.CHAIN_ID_BASE_SEPOLIA;
      else process.env.CHAIN_ID_BASE_SEPOLIA = saved;
    }
  });
});

describe('buildNetworkTable env overrides', () => {
  test('Permit2 and its proxies have one address on every network, overridable', () => {
    const permit2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
    const t = buildNetworkTable({ PERMIT2_ADDRESS: permit2 });
    expect(new Set([...t.values()].map((n) => n.permit2))).toEqual(new Set([permit2]));
    expect(new Set([...t.values()].map((n) => n.exactPermit2Proxy))).toEqual(new Set([X402_EXACT_PERMIT2_PROXY_ADDRESS]));
    expect(() => buildNetworkTable({ UPTO_PERMIT2_PROXY_ADDRESS: '0x12' })).toThrow(/UPTO_PERMIT2_PROXY_ADDRESS/);
  });

  test('RPC_URLS_BASE alone does not enable base; with FACILITATOR_ADDRESS_MAINNET it does', () => {
    const rpcOnly = buildNetworkTable({ RPC_URLS_BASE: 'https://base.example/rpc' }).get('base')!;
    expect(rpcOnly.rpcUrls).toEqual(['https://base.example/rpc']);
    expect(rpcOnly.enabled).toBe(false);

    const table = buildNetworkTable({ RPC_URLS_BASE: 'https://base.example/rpc', FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR });
    const base = table.get('base')!;
    expect(base.enabled).toBe(true);
    expect(base.facilitator).toBe(MAINNET_FACILITATOR);
    expect(base.chainId).toBe(8453);
    // Only base gained an RPC: other mainnets stay disabled.
    expect(
      [...table.values()]
        .filter((n) => n.enabled)
        .map((n) => n.id)
        .sort(),
    ).toEqual(['base', 'base-sepolia', 'optimism-sepolia']);
    expect(table.get('optimism')!.facilitator).toBe(MAINNET_FACILITATOR);
    expect(table.get('optimism')!.enabled).toBe(false);
  });

  test('FACILITATOR_ADDRESS_MAINNET without an RPC enables nothing', () => {
    const table = buildNetworkTable({ FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR });
    expect(
      [...table.values()]
        .filter((n) => n.enabled)
        .map((n) => n.id)
        .sort(),
    ).toEqual(['base-sepolia', 'optimism-sepolia']);
  });

  test('BRIDGE_FINALITY_<NET> is standard unless set to fast; anything else is refused by name', () => {
    const t = buildNetworkTable({ BRIDGE_FINALITY_BASE_SEPOLIA: 'fast', BRIDGE_FINALITY_OPTIMISM_SEPOLIA: 'standard' });
    expect(t.get('base-sepolia')!.bridgeFinality).toBe('fast');
    expect(t.get('optimism-sepolia')!.bridgeFinality).toBe('standard');
    expect(t.get('base')!.bridgeFinality).toBe('standard');
    expect(() => buildNetworkTable({ BRIDGE_FINALITY_BASE: 'FAST' })).toThrow('BRIDGE_FINALITY_BASE: "FAST" is not valid');
  });

  test('RPC_URLS is a comma-separated, trimmed list', () => {
    const n = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: 'https://a.example/rpc, https://b.example/rpc ,http://127.0.0.1:9545' }).get(
      'base-sepolia',
    )!;
    expect(n.rpcUrls).toEqual(['https://a.example/rpc', 'https://b.example/rpc', 'http://127.0.0.1:9545']);
    expect(n.enabled).toBe(true);
  });

  test('RPC_URLS_BASE_SEPOLIA=none disables base-sepolia only', () => {
    const table = buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: 'none' });
    expect(table.get('base-sepolia')!.rpcUrls).toEqual([]);
    expect(table.get('base-sepolia')!.enabled).toBe(false);
    expect(table.get('optimism-sepolia')!.enabled).toBe(true);
  });

  test('an empty RPC_URLS value counts as unset', () => {
    expect(buildNetworkTable({ RPC_URLS_BASE_SEPOLIA: '' }).get('base-sepolia')!.rpcUrls).toEqual(['http://127.0.0.1:8545']);
  });

  test('USDC_ADDRESS_<NET> overrides the token', () => {
    const usdc = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
    expect(buildNetworkTable({ USDC_ADDRESS_BASE_SEPOLIA: usdc }).get('base-sepolia')!.usdc).toBe(usdc);
  });

  test('CHAIN_ID_<NET> overrides or supplies the chain id', () => {
    const table = buildNetworkTable({
      CHAIN_ID_TEMPO: '4217',
      RPC_URLS_TEMPO: 'https://tempo.example/rpc',
      USDC_ADDRESS_TEMPO: '0x7777777777777777777777777777777777777777',
      FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR,
      CHAIN_ID_BASE_SEPOLIA: '31337',
    });
    expect(table.get('tempo')).toMatchObject({ chainId: 4217, caip2: 'eip155:4217', enabled: true, permit2Only: true });
    expect(table.get('base-sepolia')).toMatchObject({ chainId: 31337, caip2: 'eip155:31337' });
  });

  test('a network without chain id stays disabled even with RPC, token and facilitator', () => {
    const botChain = buildNetworkTable({
      RPC_URLS_BOT_CHAIN: 'https://bot.example/rpc',
      USDC_ADDRESS_BOT_CHAIN: '0x7777777777777777777777777777777777777777',
      FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR,
    }).get('bot-chain')!;
    expect(botChain.enabled).toBe(false);
  });

  test('missingFacts names a network given RPC URLs but not enabled, and the variables it still needs', () => {
    const table = buildNetworkTable({
      RPC_URLS_BOT_CHAIN: 'https://bot.example/rpc',
      RPC_URLS_TEMPO: 'https://tempo.example/rpc',
      RPC_URLS_BASE: 'https://base.example/rpc',
      RPC_URLS_SONIC: 'https://sonic.example/rpc',
      RPC_URLS_FLUENT_TESTNET: 'https://fluent.example/rpc',
    });
    expect([...table.values()].map(missingFacts).filter(Boolean)).toEqual([
      'base has RPC URLs but is not enabled: set FACILITATOR_ADDRESS_MAINNET',
      'bot-chain has RPC URLs but is not enabled: set CHAIN_ID_BOT_CHAIN (its chain id is not shipped), USDC_ADDRESS_BOT_CHAIN (its USDC address is not shipped), FACILITATOR_ADDRESS_MAINNET',
      'tempo has RPC URLs but is not enabled: set USDC_ADDRESS_TEMPO (its USDC address is not shipped), FACILITATOR_ADDRESS_MAINNET',
      'fluent-testnet has RPC URLs but is not enabled: set FACILITATOR_ADDRESS_FLUENT',
      'sonic has RPC URLs but is not enabled: the spec names no facilitator contract for it',
    ]);
    // Enabled networks (the devnet chains) and networks without RPC URLs say nothing.
    expect(missingFacts(table.get('base-sepolia')!)).toBeUndefined();
    expect(missingFacts(table.get('optimism')!)).toBeUndefined();
    const robinhood = buildNetworkTable({ RPC_URLS_ROBINHOOD: 'https://rh.example/rpc', USDC_ADDRESS_ROBINHOOD: '' }).get('robinhood')!;
    expect(missingFacts(robinhood)).toBe('robinhood has RPC URLs but is not enabled: set FACILITATOR_ADDRESS_MAINNET');
  });

  test('FACILITATOR_ADDRESS_TESTNET replaces the devnet facilitator on every testnet group network', () => {
    const table = buildNetworkTable({ FACILITATOR_ADDRESS_TESTNET: TESTNET_FACILITATOR });
    for (const id of ['arc-testnet', 'bot-chain-testnet', 'base-sepolia', 'optimism-sepolia'] as EvmNetworkId[]) {
      expect(table.get(id)!.facilitator).toBe(TESTNET_FACILITATOR);
    }
    expect(table.get('base')!.facilitator).toBeUndefined();
  });

  test('FACILITATOR_ADDRESS_FLUENT is fluent-testnet only', () => {
    const table = buildNetworkTable({ FACILITATOR_ADDRESS_FLUENT: FLUENT_FACILITATOR, RPC_URLS_FLUENT_TESTNET: 'https://fluent.example' });
    expect(table.get('fluent-testnet')).toMatchObject({ facilitator: FLUENT_FACILITATOR, enabled: true, permitOnly: true });
    expect([...table.values()].filter((n) => n.facilitator === FLUENT_FACILITATOR).map((n) => n.id)).toEqual(['fluent-testnet']);
  });

  test('ethereum and sonic have no facilitator and are never enabled', () => {
    const table = buildNetworkTable({
      FACILITATOR_ADDRESS_MAINNET: MAINNET_FACILITATOR,
      RPC_URLS_ETHEREUM: 'https://eth.example',
      RPC_URLS_SONIC: 'https://sonic.example',
    });
    for (const id of ['ethereum', 'sonic'] as EvmNetworkId[]) {
      expect(table.get(id)!.facilitator).toBeUndefined();
      expect(table.get(id)!.enabled).toBe(false);
    }
  });

  test.each<[string, string]>([
    ['USDC_ADDRESS_BASE_SEPOLIA', '0x1234'],
    ['USDC_ADDRESS_BASE_SEPOLIA', 'usdc'],
    ['FACILITATOR_ADDRESS_MAINNET', '0x12'],
    ['FACILITATOR_ADDRESS_TESTNET', '0xZZ44444444444444444444444444444444444444'],
    ['FACILITATOR_ADDRESS_FLUENT', 'fluent'],
    ['RPC_URLS_BASE', 'not a url'],
    ['RPC_URLS_BASE_SEPOLIA', 'http://127.0.0.1:8545,,'],
    ['CHAIN_ID_BASE', 'eight'],
    ['CHAIN_ID_BASE', '-1'],
    ['CHAIN_ID_BASE', '1.5'],
  ])('%s=%j throws a ConfigError naming it', (name, value) => {
    const err = configError({ [name]: value });
    expect(err.message).toBe(`Invalid configuration:\n  ${name}: ${JSON.stringify(value)} is not valid`);
  });
});

describe('network id helpers', () => {
  test('envSuffix upper-cases and replaces dashes', () => {
    expect(envSuffix('base-sepolia')).toBe('BASE_SEPOLIA');
    expect(envSuffix('bot-chain-testnet')).toBe('BOT_CHAIN_TESTNET');
    expect(envSuffix('base')).toBe('BASE');
  });

  test('isEvmNetworkId / isSolanaNetworkId', () => {
    expect(isEvmNetworkId('base-sepolia')).toBe(true);
    expect(isEvmNetworkId('solana')).toBe(false);
    expect(isEvmNetworkId('Base')).toBe(false);
    expect(isSolanaNetworkId('solana')).toBe(true);
    expect(isSolanaNetworkId('solana-devnet')).toBe(true);
    expect(isSolanaNetworkId('base')).toBe(false);
  });
});

describe('the token allow-list (isListedToken)', () => {
  test("a network's USDC, in any spelling, and nothing else; a network without USDC lists none", () => {
    const t = buildNetworkTable({});
    const baseSepolia = t.get('base-sepolia')!;
    expect(isListedToken(baseSepolia, DEVNET_USDC_ADDRESS)).toBe(true);
    expect(isListedToken(baseSepolia, DEVNET_USDC_ADDRESS.toLowerCase())).toBe(true);
    expect(isListedToken(baseSepolia, DEVNET_FACILITATOR_ADDRESS)).toBe(false);
    expect(isListedToken(t.get('base')!, DEVNET_USDC_ADDRESS)).toBe(false);
    expect(isListedToken(t.get('fluent-testnet')!, DEVNET_USDC_ADDRESS)).toBe(false);
    const configured = buildNetworkTable({ USDC_ADDRESS_FLUENT_TESTNET: DEVNET_USDC_ADDRESS }).get('fluent-testnet')!;
    expect(isListedToken(configured, DEVNET_USDC_ADDRESS)).toBe(true);
  });
});

describe('minimum settle amount (gas griefing)', () => {
  it('defaults to 0.001 USDC on mainnets and 1 unit on testnets, and MIN_SETTLE_AMOUNT_<NET> overrides it', () => {
    const table = buildNetworkTable({ MIN_SETTLE_AMOUNT_BASE: '25000' });
    expect(table.get('base')!.minSettleAmount).toBe(25_000n);
    expect(table.get('optimism')!.minSettleAmount).toBe(1000n);
    expect(table.get('base-sepolia')!.minSettleAmount).toBe(1n);
    expect(buildSolanaNetworkTable({ MIN_SETTLE_AMOUNT_SOLANA: '7' }).get('solana')!.minSettleAmount).toBe(7n);
    expect(buildSolanaNetworkTable({}).get('solana-devnet')!.minSettleAmount).toBe(1n);
  });

  it('refuses a value that is not a whole number of atomic units', () => {
    expect(configError({ MIN_SETTLE_AMOUNT_BASE: '0.5' }).message).toContain('MIN_SETTLE_AMOUNT_BASE');
  });
});

describe('the fee ceiling (MAX_FEE_PER_GAS_<NET>)', () => {
  it('defaults to 100 gwei, 500 on Ethereum and 5,000 on Polygon, and MAX_FEE_PER_GAS_<NET> (wei) overrides it', () => {
    const gwei = 1_000_000_000n;
    const table = buildNetworkTable({ MAX_FEE_PER_GAS_BASE: '2000000000' });
    expect(table.get('base')!.maxFeePerGas).toBe(2n * gwei);
    expect(table.get('optimism')!.maxFeePerGas).toBe(100n * gwei);
    expect(table.get('ethereum')!.maxFeePerGas).toBe(500n * gwei);
    expect(table.get('polygon')!.maxFeePerGas).toBe(5_000n * gwei);
  });

  it('refuses zero, a fraction and a word', () => {
    for (const v of ['0', '1.5', 'high']) expect(configError({ MAX_FEE_PER_GAS_BASE: v }).message).toContain('MAX_FEE_PER_GAS_BASE');
  });
});

describe('confirmation depths (CONFIRMATION_DEPTH_<NET>)', () => {
  it('are 0 on the devnet, by chain in production, and CONFIRMATION_DEPTH_<NET> overrides either', () => {
    const devnet = buildNetworkTable({ CONFIRMATION_DEPTH_BASE_SEPOLIA: '4' });
    expect(devnet.get('base-sepolia')!.confirmationDepth).toBe(4);
    expect(devnet.get('ethereum')!.confirmationDepth).toBe(0);
    const production = buildNetworkTable({ NODE_ENV: 'production', CONFIRMATION_DEPTH_BASE: '1' });
    expect(
      Object.fromEntries(
        ['base', 'optimism', 'arbitrum', 'avalanche', 'bsc', 'ethereum', 'polygon', 'monad'].map((id) => [
          id,
          production.get(id as never)!.confirmationDepth,
        ]),
      ),
    ).toEqual({ base: 1, optimism: 0, arbitrum: 0, avalanche: 0, bsc: 2, ethereum: 3, polygon: 5, monad: 2 });
  });

  it('refuses a value that is not a small whole number', () => {
    for (const v of ['-1', '1.5', 'deep', '1000'])
      expect(configError({ CONFIRMATION_DEPTH_BASE: v }).message).toContain('CONFIRMATION_DEPTH_BASE');
  });
});

describe('Permit2 addresses', () => {
  test('are the ones x402 v2 buyers sign for (@x402/evm), so SDK-signed Permit2 payments verify unchanged', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const sdk = require('@x402/evm');
    expect(PERMIT2_CANONICAL_ADDRESS).toBe(sdk.PERMIT2_ADDRESS);
    expect(X402_EXACT_PERMIT2_PROXY_ADDRESS).toBe(sdk.x402ExactPermit2ProxyAddress);
    expect(X402_UPTO_PERMIT2_PROXY_ADDRESS).toBe(sdk.x402UptoPermit2ProxyAddress);
  });
});
