import { Keypair } from '@solana/web3.js';
import { loadConfig } from '../../src/config';
import { buildSolanaNetworkTable } from '../../src/chains/networks';
import { base58Encode } from '../../src/chains/solana/base58';
import { solanaNetworks } from '../../src/chains/solana/context';
import { DEVNET_SOLANA_FEE_PAYER, parseSolanaSecretKey, solanaFeePayerFor } from '../../src/chains/solana/fee-payer';
import { routeOf } from '../../src/settle/routes';
import { buildNetworkTable } from '../../src/chains/networks';

const settleRouteOf = (body: unknown) => routeOf(buildNetworkTable({}), body)?.route;
import { solanaSupportedKinds } from '../../src/schemes/solana/supported';

describe('Solana network table and fee payer', () => {
  test('defaults: solana-devnet on the local node with Circle devnet USDC; solana off without an RPC URL', () => {
    const t = buildSolanaNetworkTable({});
    expect(t.get('solana-devnet')).toEqual({
      id: 'solana-devnet',
      kind: 'solana',
      caip2: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      testnet: true,
      usdc: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
      rpcUrl: 'http://127.0.0.1:8899',
      minSettleAmount: 1n,
      enabled: true,
    });
    expect(t.get('solana')).toMatchObject({
      testnet: false,
      usdc: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      rpcUrl: undefined,
      enabled: false,
    });
  });

  test('env overrides: SOLANA_RPC_URL_<NET> (none disables), USDC_MINT_<NET>; bad values name the variable', () => {
    const mint = Keypair.generate().publicKey.toBase58();
    const t = buildSolanaNetworkTable({
      SOLANA_RPC_URL_SOLANA: 'https://rpc.example',
      SOLANA_RPC_URL_SOLANA_DEVNET: 'none',
      USDC_MINT_SOLANA: mint,
    });
    expect(t.get('solana')).toMatchObject({ rpcUrl: 'https://rpc.example', usdc: mint, enabled: true });
    expect(t.get('solana-devnet')).toMatchObject({ rpcUrl: undefined, enabled: false });
    expect(() => buildSolanaNetworkTable({ USDC_MINT_SOLANA: '0xabc' })).toThrow(/USDC_MINT_SOLANA/);
  });

  test('fee payer key: base58 or JSON array; a bad key never echoes its value; devnet-only default', () => {
    const k = Keypair.generate();
    expect(parseSolanaSecretKey(base58Encode(k.secretKey)).publicKey.equals(k.publicKey)).toBe(true);
    expect(parseSolanaSecretKey(JSON.stringify([...k.secretKey])).publicKey.equals(k.publicKey)).toBe(true);
    const bad = base58Encode(k.secretKey.slice(0, 63)) + 'zz';
    expect(() => parseSolanaSecretKey(bad)).toThrow(/SOLANA_FEE_PAYER_KEY/);
    try {
      parseSolanaSecretKey(bad);
    } catch (e) {
      expect((e as Error).message).not.toContain(bad);
    }
    expect(solanaFeePayerFor({ testnet: true }, undefined)).toBe(DEVNET_SOLANA_FEE_PAYER);
    expect(solanaFeePayerFor({ testnet: false }, undefined)).toBeUndefined();
    expect(solanaFeePayerFor({ testnet: false }, base58Encode(k.secretKey))!.publicKey.equals(k.publicKey)).toBe(true);
    expect(() => loadConfig({ SOLANA_FEE_PAYER_KEY: 'not-a-key' })).toThrow(/SOLANA_FEE_PAYER_KEY/);
  });

  test('supported kinds: solana-devnet with extra.feePayer; mainnet only with MAINNETS_ENABLED and a key', () => {
    const k = Keypair.generate();
    const env = { SOLANA_RPC_URL_SOLANA: 'https://rpc.example', SOLANA_FEE_PAYER_KEY: base58Encode(k.secretKey) };
    const config = { ...loadConfig(env) };
    expect(solanaSupportedKinds(config)).toEqual([
      { x402Version: 1, scheme: 'exact', network: 'solana-devnet', extra: { feePayer: k.publicKey.toBase58() } },
    ]);
    expect(solanaSupportedKinds({ ...config, MAINNETS_ENABLED: true }).map((x) => x.network)).toEqual(['solana', 'solana-devnet']);
    expect([...solanaNetworks(loadConfig({})).keys()]).toEqual(['solana-devnet']);
  });

  test('routing step 1 takes Solana bodies whose requirements are base58 (not EVM addresses)', () => {
    const body = {
      paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: { transaction: 'AQID' } },
      paymentRequirements: { scheme: 'exact', network: 'solana-devnet', payTo: 'BjL9nE5fh5G3YreUsgNb5BV5TtxoQcvF116aapszCtHc' },
    };
    expect(settleRouteOf(body)).toBe('solana');
    expect(settleRouteOf({ ...body, paymentPayload: { ...body.paymentPayload, network: 'base-sepolia' } })).toBeUndefined();
  });
});
