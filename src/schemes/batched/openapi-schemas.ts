import { z } from 'zod';
import { STATUS_NETWORK_IDS } from './gateway-networks';

/**
 * Response schemas of the batched path and the gateway-wallet endpoints, for the OpenAPI document
 * (src/api/openapi.ts). Batched settle/verify responses carry whatever fields the upstream gateway
 * sends, so they are open objects; our own records are strict.
 */

const isoDate = z.iso.datetime().describe('ISO 8601 timestamp (UTC)');

export const batchedSettleResponseSchema = z
  .looseObject({
    success: z.boolean(),
    transaction: z.string().describe('the upstream gateway transfer id; empty string on failure'),
    network: z.string().describe('our network id (the upstream CAIP-2 id is replaced)'),
    payer: z.string().optional(),
    errorReason: z.string().optional().describe('upstream reason (400) or gateway_not_enabled (403) / batched_settle_error (500)'),
    settlementMethod: z.literal('batched').optional().describe('present on forwarded results'),
    testnet: z.boolean().optional(),
    authContext: z
      .strictObject({ organizationId: z.string(), authMethod: z.literal('middleware_handled'), timestamp: isoDate })
      .optional()
      .describe('success only'),
  })
  .describe('Batched settle response: the upstream gateway result plus settlementMethod, network, testnet (and authContext on success)');

export const batchedVerifyResponseSchema = z
  .looseObject({
    isValid: z.boolean(),
    invalidReason: z.string().optional(),
    payer: z.string().optional(),
    verificationMethod: z.literal('batched'),
    testnet: z.boolean(),
  })
  .describe('Batched verify response: the upstream gateway verdict plus verificationMethod and testnet');

export const gatewayStatusResponseSchema = z.strictObject({
  success: z.literal(true),
  data: z.strictObject({
    message: z.string(),
    organization: z.string().describe('organization name, Unknown if unset'),
    organizationId: z.string(),
    gatewayMainnetEnabled: z.boolean(),
    networkStatus: z.strictObject(Object.fromEntries(STATUS_NETWORK_IDS.map((id) => [id, z.boolean()]))),
    gatewaySupported: z.unknown().describe('the upstream GET /v1/x402/supported answer as it came, or null if that call failed'),
    endpoints: z.record(z.string(), z.string()),
    usage: z.strictObject({ description: z.string(), note: z.string() }),
    timestamp: isoDate,
  }),
});

export const gatewayStatusErrorSchema = z.strictObject({ error: z.string(), message: z.string().optional() });

const units = z.string().regex(/^\d+$/).describe('token base units (USDC: 6 decimals)');

export const gatewayBalancesSchema = z.strictObject({
  network: z.string(),
  gatewayWallet: z.string(),
  token: z.string().describe("the network's USDC"),
  depositor: z.string().describe("the facilitator's account: its relayer address"),
  tokenSupported: z.boolean(),
  availableBalance: units.describe('spendable'),
  withdrawingBalance: units.describe('initiated, before withdrawalBlock'),
  withdrawableBalance: units.describe('initiated, withdrawalBlock reached'),
  totalBalance: units.describe('sum of the three'),
  withdrawalBlock: z.string().describe('first block in which withdraw succeeds (0: none pending)'),
  withdrawalDelayBlocks: z
    .string()
    .describe("the contract's withdrawalDelay(): blocks from initiation to withdrawalBlock (the spec's 7 days)"),
  blockNumber: z.string().describe('the chain head when read'),
});

export const withdrawalRecordSchema = z.strictObject({
  id: z.string().describe('withdrawal:<network>:<depositor>:<key>'),
  network: z.string(),
  gatewayWallet: z.string(),
  token: z.string(),
  depositor: z.string(),
  amount: units,
  state: z.enum(['initiating', 'waiting', 'withdrawing', 'withdrawn', 'failed']),
  initiateTransaction: z.string().nullable(),
  withdrawalDelayBlocks: z.string().nullable().describe("the contract's withdrawalDelay() in blocks, as last read from the chain"),
  withdrawalBlock: z.string().nullable(),
  withdrawTransaction: z.string().nullable(),
  errorReason: z.string().nullable().describe('withdrawal_rejected | withdrawal_failed'),
  message: z.string().nullable(),
});
