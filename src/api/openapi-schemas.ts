import { z } from 'zod';
import type { ApiKeyRecord, CreatedApiKey } from '../auth/api-keys';
import type { OrganizationBody } from '../auth/organizations';
import type { PermitResponse } from '../permit/schema';
import type { SupportedKind } from '../schemes/scheme';
import type { SettleResponse } from '../x402/schemas';

/**
 * Zod schemas of what the routes answer, for the OpenAPI document (src/api/openapi.ts). Request
 * bodies are not defined here: the document uses the schemas the routes parse with. The routes
 * build their responses from TypeScript types, so each schema below is checked at compile time
 * against the type the code returns (`sameType`), and test/integration/openapi.test.ts validates
 * real responses against the document. Objects are strict (additionalProperties: false): the
 * document names every field the code sends, so a new field fails that test until it is documented.
 */

/** Compile-time check that a schema's output type and the code's type are mutually assignable. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Same value type and the same keys (mutual assignability alone ignores a missing optional key). */
type Same<A, B> = Mutual<A, B> extends true ? Mutual<keyof A, keyof B> : false;
function sameType<T>() {
  return <S extends z.ZodType>(schema: S, ..._proof: Same<z.output<S>, T> extends true ? [] : [never]): S => schema;
}

const isoDate = z.iso.datetime().describe('ISO 8601 timestamp (UTC)');

/** The generic error envelope (spec "Error envelope"). */
export const errorEnvelopeSchema = z
  .strictObject({
    type: z.literal('api_error'),
    code: z.number().int().describe('mirrors the HTTP status'),
    message: z.string(),
  })
  .describe('Generic error envelope');

const healthCheckSchema = z
  .looseObject({
    ok: z.boolean(),
    ms: z.number().int().describe('how long the check took'),
    error: z.string().optional().describe('why it is not ok'),
  })
  .describe(
    'One dependency; networks add chainId, blockNumber and relayer {address, balanceEther, minBalanceEther, ok} (EVM) or slot (Solana)',
  );
/** GET /healthz (src/observability/health.ts); the checks carry extra fields, so they are open objects. */
export const healthResponseSchema = z.strictObject({
  status: z
    .enum(['ok', 'low_balance', 'degraded'])
    .describe('degraded (503): something required does not answer; low_balance (200): a relayer is below RELAYER_MIN_BALANCE_ETHER'),
  checks: z
    .strictObject({
      temporal: healthCheckSchema,
      database: healthCheckSchema,
      networks: z.record(z.string(), healthCheckSchema).describe('every enabled network by id'),
    })
    .optional()
    .describe('only for a caller that may read /metrics (Bearer METRICS_TOKEN; from this host when none is set)'),
});

// --- sign-in -------------------------------------------------------------------------------------

export const nonceResponseSchema = z.strictObject({ nonce: z.string().describe('single-use SIWE nonce') });

/** POST /v1/auth/verify and GET /v1/auth/session. */
export const sessionResponseSchema = z.strictObject({
  address: z.string().describe('lower-case signer address'),
  organizationId: z.string(),
  expiresAt: isoDate,
});

// --- organization and API keys -------------------------------------------------------------------

export const organizationSchema = sameType<OrganizationBody>()(
  z.strictObject({
    id: z.string(),
    name: z.string(),
    ownerAddress: z.string().describe('lower-case owner address'),
    payoutWalletTest: z.string().nullable().describe('payout wallet of testnet settlements (lower case)'),
    payoutWalletLive: z.string().nullable().describe('payout wallet of mainnet settlements (lower case)'),
    payoutWalletSolanaTest: z.string().nullable().describe('Solana payout wallet (base58) of solana-devnet: payTo must be it when set'),
    payoutWalletSolanaLive: z.string().nullable().describe('Solana payout wallet (base58) of solana: payTo must be it when set'),
    platformFeeBps: z.number().int(),
    createdAt: isoDate,
    updatedAt: isoDate,
  }),
);

export const apiKeyRecordSchema = sameType<ApiKeyRecord>()(
  z.strictObject({
    id: z.string(),
    name: z.string(),
    organization: z.string().describe('organization id'),
    api_key: z.string().describe('non-secret hint of the public key (the full key is shown only on create)'),
    test_net: z.boolean(),
    created_at: isoDate,
    updated_at: isoDate,
    last_used_at: isoDate.nullable(),
    expires_at: isoDate.optional().describe('only for keys created with expires_in_days: after it the key answers 403'),
  }),
);

export const createdApiKeySchema = sameType<CreatedApiKey>()(
  z.strictObject({
    id: z.string(),
    name: z.string(),
    organization: z.string().describe('organization id'),
    api_key: z.string().describe('public key, pk_ or pk_test_: send it as Authorization: Bearer'),
    api_secret_key: z.string().describe('secret key, sk_ or sk_test_: returned by this response only, once'),
    test_net: z.boolean(),
    created_at: isoDate,
    updated_at: isoDate,
    expires_at: isoDate.optional().describe('when created with expires_in_days'),
  }),
);

export const apiKeyListSchema = z.strictObject({ apiKeys: z.array(apiKeyRecordSchema) });

export const revokedApiKeySchema = sameType<ApiKeyRecord & { revoked_at: string }>()(apiKeyRecordSchema.extend({ revoked_at: isoDate }));

// --- x402: settle, verify, supported -------------------------------------------------------------

export const settleResponseSchema = sameType<SettleResponse>()(
  z
    .strictObject({
      success: z.boolean(),
      transaction: z.string().describe('transaction hash; empty string on failure (and on pending until one is recorded)'),
      network: z.string(),
      payer: z.string().optional(),
      errorReason: z.string().optional().describe('present on failure; settlement_pending while the workflow still runs'),
      errorMessage: z.string().optional().describe('which value a refused request got wrong, e.g. an out-of-bounds extra.platformFeeBps'),
      authContext: z.record(z.string(), z.unknown()).optional(),
      amount: z.string().optional().describe('Permit2 upto only: the amount settled (base units), on success'),
    })
    .describe('Settle response'),
);

const authContextSchema = z.strictObject({
  organizationId: z.string(),
  authMethod: z.string(),
  timestamp: isoDate,
});

export const verifyResponseSchema = z
  .strictObject({
    isValid: z.boolean(),
    invalidReason: z.string().optional(),
    payer: z.string(),
    authContext: authContextSchema,
  })
  .describe('Verify response (deprecated endpoint)');

export const verifyErrorSchema = z.strictObject({ errorReason: z.string() });

export const supportedResponseSchema = z.strictObject({
  kinds: z.array(
    sameType<SupportedKind>()(
      z.strictObject({
        x402Version: z.union([z.literal(1), z.literal(2)]).describe('1: v1 network names; 2: the same kinds with CAIP-2 networks'),
        scheme: z.enum(['exact', 'upto']),
        network: z.string(),
        extra: z
          .strictObject({
            feePayer: z.string().optional().describe('Solana: our fee payer, which the transaction must name'),
            facilitatorAddress: z.string().optional().describe("v2 upto: the facilitator contract, the buyer's witness.facilitator"),
          })
          .optional(),
      }),
    ),
  ),
  extensions: z.array(z.string()).describe('x402 v2 extensions this facilitator supports'),
  signers: z.record(z.string(), z.array(z.string())).describe('x402 v2: the addresses that send our transactions, by CAIP-2 family'),
});

// --- permit ---------------------------------------------------------------------------------------

export const permitResponseSchema = sameType<PermitResponse>()(
  z
    .strictObject({
      success: z.boolean(),
      transaction: z.string().describe('transaction hash; empty string on every error'),
      network: z.string().describe('echo of the request (empty string if the body could not be parsed)'),
      errorReason: z.string().optional(),
      message: z.string().optional().describe('what went wrong, in words; branch on errorReason'),
    })
    .describe('Permit response'),
);

// --- the document itself --------------------------------------------------------------------------

export const openApiDocumentSchema = z.record(z.string(), z.unknown()).describe('This OpenAPI 3.1 document');
