import { buildNetworkTable } from '../../src/chains/networks';
import { withdrawalRequestSchema } from '../../src/gateway/withdrawal-service';
import { batchedWorkflowId, withdrawalWorkflowId } from '../../src/temporal/workflow-ids';
import { gatewayNetwork, networkStatus, verifyTestnetFlag } from '../../src/schemes/batched/gateway-networks';
import {
  batchedSettleFailure,
  batchedSettleReply,
  batchedVerifyFailure,
  batchedVerifyReply,
  forwardedBody,
} from '../../src/schemes/batched/responses';

const now = new Date('2026-01-02T03:04:05.000Z');
const auth = { organizationId: 'org-1' };

describe('batched settle mapping', () => {
  test('success: 200, forwarded fields plus settlementMethod, our network id, testnet and authContext', () => {
    const upstream = { success: true, transaction: 'b3c1', network: 'eip155:84532', payer: '0xabc', extraField: 1 };
    expect(batchedSettleReply(upstream, 'base-sepolia', true, auth, now)).toEqual({
      status: 200,
      body: {
        success: true,
        transaction: 'b3c1',
        network: 'base-sepolia',
        payer: '0xabc',
        extraField: 1,
        settlementMethod: 'batched',
        testnet: true,
        authContext: { organizationId: 'org-1', authMethod: 'middleware_handled', timestamp: '2026-01-02T03:04:05.000Z' },
      },
    });
  });

  test('failure: 400, forwarded plus settlementMethod/network/testnet, never an authContext', () => {
    const upstream = { success: false, errorReason: 'insufficient_balance', transaction: '', network: 'eip155:10', authContext: { x: 1 } };
    expect(batchedSettleReply(upstream, 'optimism', false, auth, now)).toEqual({
      status: 400,
      body: {
        success: false,
        errorReason: 'insufficient_balance',
        transaction: '',
        network: 'optimism',
        settlementMethod: 'batched',
        testnet: false,
      },
    });
    // Anything but success === true is a failure.
    expect(batchedSettleReply({ success: 'true' }, 'base', false, auth, now).status).toBe(400);
  });

  test('our own failures: 403 gateway_not_enabled, 500 batched_settle_error, in the settle error shape', () => {
    expect(batchedSettleFailure('gateway_not_enabled', 'base')).toEqual({
      status: 403,
      body: { success: false, errorReason: 'gateway_not_enabled', transaction: '', network: 'base' },
    });
    expect(batchedSettleFailure('batched_settle_error', 'base-sepolia').status).toBe(500);
  });

  test('forwarded body: the CAIP-2 network in both objects, asset swapped for USDC, everything else as sent', () => {
    const payload = { x402Version: 1, network: 'base' };
    const requirements = { network: 'base', asset: '0xgateway', payTo: '0xseller', extra: { name: 'GatewayWalletBatched' } };
    expect(forwardedBody(payload, requirements, { caip2: 'eip155:8453', usdc: '0xusdc' })).toEqual({
      paymentPayload: { x402Version: 1, network: 'eip155:8453' },
      paymentRequirements: { network: 'eip155:8453', asset: '0xusdc', payTo: '0xseller', extra: { name: 'GatewayWalletBatched' } },
    });
    // No USDC known: the asset stays; no chain id (tempo): the name stays and the upstream refuses it.
    expect(forwardedBody(payload, requirements, { caip2: 'eip155:8453', usdc: undefined }).paymentRequirements.asset).toBe('0xgateway');
    expect(forwardedBody({ network: 'tempo' }, { network: 'tempo' }, { caip2: undefined, usdc: undefined })).toEqual({
      paymentPayload: { network: 'tempo' },
      paymentRequirements: { network: 'tempo' },
    });
  });
});

describe('batched verify mapping', () => {
  test('forwarded verdict plus verificationMethod and testnet, always 200', () => {
    expect(batchedVerifyReply({ isValid: false, invalidReason: 'invalid_signature', payer: '0xabc' }, true)).toEqual({
      status: 200,
      body: { isValid: false, invalidReason: 'invalid_signature', payer: '0xabc', verificationMethod: 'batched', testnet: true },
    });
    expect(batchedVerifyFailure('gateway_not_enabled')).toEqual({ status: 403, body: { errorReason: 'gateway_not_enabled' } });
    expect(batchedVerifyFailure('batched_verify_error')).toEqual({ status: 500, body: { errorReason: 'batched_verify_error' } });
  });

  test('testnet on the verify path: arc-testnet, base-sepolia, optimism-sepolia only', () => {
    expect(['arc-testnet', 'base-sepolia', 'optimism-sepolia', 'fluent-testnet', 'base'].map(verifyTestnetFlag)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});

describe('gateway-enabled networks', () => {
  const networks = buildNetworkTable({});

  test('testnets always; mainnets while the flag is on; other networks never', () => {
    const enabled = (id: string, flag: boolean) => gatewayNetwork(networks, id, flag)?.id;
    expect(enabled('fluent-testnet', false)).toBe('fluent-testnet');
    expect(enabled('base-sepolia', false)).toBe('base-sepolia');
    expect(enabled('base', false)).toBeUndefined();
    expect(enabled('base', true)).toBe('base');
    expect(enabled('tempo', true)).toBe('tempo'); // configured locally, unsupported upstream: forwarded and refused there
    expect(enabled('monad', true)).toBeUndefined();
    expect(enabled('bot-chain-testnet', true)).toBeUndefined();
    expect(enabled('solana', true)).toBeUndefined();
    expect(enabled('nope', true)).toBeUndefined();
  });

  test('networkStatus reports the spec networks', () => {
    expect(networkStatus(networks, false)).toEqual({
      'arc-testnet': true,
      'base-sepolia': true,
      'optimism-sepolia': true,
      'fluent-testnet': true,
      base: false,
      optimism: false,
      polygon: false,
      unichain: false,
      ink: false,
      hyperevm: false,
      megaeth: false,
    });
    expect(Object.values(networkStatus(networks, true)).every(Boolean)).toBe(true);
  });

  test('gateway wallet addresses: one for testnets, one for mainnets, env-overridable', () => {
    const t = buildNetworkTable({ GATEWAY_WALLET_TESTNET: '0x1111111111111111111111111111111111111111' });
    expect(t.get('base-sepolia')!.gatewayWallet).toBe('0x1111111111111111111111111111111111111111');
    expect(t.get('optimism-sepolia')!.gatewayWallet).toBe('0x1111111111111111111111111111111111111111');
    expect(t.get('base')!.gatewayWallet).toBe('0x77777777Dcc4d5A8B6E418Fd04D8997ef11000eE');
    expect(networks.get('base-sepolia')!.gatewayWallet).not.toBe(networks.get('base')!.gatewayWallet);
  });
});

describe('batched and withdrawal business keys and requests', () => {
  test('keys are lower-case, with their own prefixes', () => {
    expect(batchedWorkflowId('base-sepolia', '0xAbC', '0xDeF')).toBe('batched:base-sepolia:0xabc:0xdef');
    expect(withdrawalWorkflowId('base-sepolia', '0xAbC', 'Key-1')).toBe('withdrawal:base-sepolia:0xabc:Key-1');
  });

  test('withdrawal request: positive base units, optional idempotency key of safe characters', () => {
    expect(withdrawalRequestSchema.safeParse({ network: 'base-sepolia', amount: '1' }).success).toBe(true);
    expect(withdrawalRequestSchema.safeParse({ network: 'base-sepolia', amount: '10', idempotencyKey: 'a.b_c-1' }).success).toBe(true);
    for (const bad of [
      { network: 'base-sepolia', amount: '0' },
      { network: 'base-sepolia', amount: '01' },
      { network: 'base-sepolia', amount: 5 },
      { network: 'base-sepolia', amount: '1.5' },
      { network: 'base-sepolia', amount: '1', idempotencyKey: 'a/b' },
      { network: 'base-sepolia', amount: '1', idempotencyKey: '' },
      { amount: '1' },
    ]) {
      expect(withdrawalRequestSchema.safeParse(bad).success).toBe(false);
    }
  });
});
