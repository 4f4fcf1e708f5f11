import {
  extendZodWithOpenApi,
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z, type ZodType } from 'zod';
import { createApiKeyBody } from '../auth/api-keys';
import { patchOrganizationBody } from '../auth/organizations';
import { verifyBody } from '../auth/siwe-sign-in';
import { permitRequestSchema } from '../permit/schema';
import { exactEvmPayloadSchema, paymentRequirementsSchema } from '../x402/schemas';
import {
  apiKeyListSchema,
  apiKeyRecordSchema,
  createdApiKeySchema,
  errorEnvelopeSchema,
  healthResponseSchema,
  nonceResponseSchema,
  openApiDocumentSchema,
  organizationSchema,
  permitResponseSchema,
  revokedApiKeySchema,
  sessionResponseSchema,
  settleResponseSchema,
  supportedResponseSchema,
  verifyErrorSchema,
  verifyResponseSchema,
} from './openapi-schemas';
import { registerInferenceOpenApi } from './openapi-inference';
import {
  batchedSettleResponseSchema,
  batchedVerifyResponseSchema,
  gatewayBalancesSchema,
  gatewayStatusErrorSchema,
  gatewayStatusResponseSchema,
  withdrawalRecordSchema,
} from '../schemes/batched/openapi-schemas';
import { withdrawalRequestSchema } from '../gateway/withdrawal-service';
import { registerMediaOpenApi } from './openapi-media';

/**
 * The OpenAPI 3.1 document of the API, generated from the zod schemas the routes parse with
 * (request bodies) and from src/api/openapi-schemas.ts (responses). Served at /v1/openapi.json and
 * rendered by Swagger UI at /docs (src/api/routes/docs.ts). test/integration/openapi.test.ts fails
 * when a route of the app is missing here.
 */

export const OPENAPI_PATH = '/v1/openapi.json';
export const API_TITLE = 'x402 durable facilitator';
export const API_VERSION = '1.0.0';

extendZodWithOpenApi(z);
/**
 * zod 4 copies prototype methods onto each schema when it is built, so schemas built before
 * extendZodWithOpenApi ran (the routes' own, imported above) have no `.openapi`. The prototype's
 * method returns a named copy (same definition, same validation) that the registry accepts.
 */
const named = (z.ZodType.prototype as unknown as { openapi(this: ZodType, refId: string): ZodType }).openapi;

const registry = new OpenAPIRegistry();
function component<T extends ZodType>(refId: string, schema: T): T {
  return registry.register(refId, named.call(schema, refId) as T);
}

// Request bodies: the routes' schemas.
const PaymentRequirements = component('PaymentRequirements', paymentRequirementsSchema);
const ExactEvmPaymentPayload = component('ExactEvmPaymentPayload', exactEvmPayloadSchema);
/**
 * POST /v1/settle and /v1/verify take any JSON object; the service then parses `paymentPayload`
 * and `paymentRequirements` with these two schemas (src/settle/parse-payment.ts) and answers
 * invalid_payload / invalid_payment_requirements when they do not match.
 */
const SettleRequest = component(
  'SettleRequest',
  z.object({ paymentPayload: ExactEvmPaymentPayload, paymentRequirements: PaymentRequirements }),
);
/**
 * The permit route's schema, field by field; `value` and `deadline` are preprocessed so that whole
 * JSON numbers are accepted too, which the generator cannot see, so the document adds that
 * alternative. (The cross-field rule "v, r, s or signature" is stated in the operation.)
 */
const wholeNumber = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const PermitRequest = component(
  'PermitRequest',
  z.object({
    ...permitRequestSchema.shape,
    value: z.union([permitRequestSchema.shape.value, wholeNumber]),
    deadline: z.union([permitRequestSchema.shape.deadline, wholeNumber]),
  }),
);
const CreateApiKeyRequest = component('CreateApiKeyRequest', createApiKeyBody);
const OrganizationPatch = component('OrganizationPatch', patchOrganizationBody);
const SiweVerifyRequest = component('SiweVerifyRequest', verifyBody);

// Responses.
const ErrorEnvelope = component('ErrorEnvelope', errorEnvelopeSchema);
const Session = component('Session', sessionResponseSchema);
const Organization = component('Organization', organizationSchema);
const ApiKey = component('ApiKey', apiKeyRecordSchema);
const CreatedApiKey = component('CreatedApiKey', createdApiKeySchema);
const ApiKeyList = component('ApiKeyList', apiKeyListSchema.extend({ apiKeys: z.array(ApiKey) }));
const RevokedApiKey = component('RevokedApiKey', revokedApiKeySchema);
const SettleResponse = component('SettleResponse', settleResponseSchema);
const VerifyResponse = component('VerifyResponse', verifyResponseSchema);
const VerifyError = component('VerifyError', verifyErrorSchema);
const SupportedResponse = component('SupportedResponse', supportedResponseSchema);
const PermitResponse = component('PermitResponse', permitResponseSchema);
const BatchedSettleResponse = component('BatchedSettleResponse', batchedSettleResponseSchema);
const BatchedVerifyResponse = component('BatchedVerifyResponse', batchedVerifyResponseSchema);

const bearer = registry.registerComponent('securitySchemes', 'apiKey', {
  type: 'http',
  scheme: 'bearer',
  description: 'Authorization: Bearer <public API key> (pk_ live, pk_test_ test). Never send the sk_ secret.',
});
const cookie = registry.registerComponent('securitySchemes', 'sessionCookie', {
  type: 'apiKey',
  in: 'cookie',
  name: 'siwe-session',
  description: 'Signed session cookie set by POST /v1/auth/verify (Sign-In with Ethereum).',
});
const requestIdParam = registry.registerComponent('parameters', 'RequestId', {
  name: 'X-Request-Id',
  in: 'header',
  required: false,
  description:
    'Your id for this request (1-64 of A-Z a-z 0-9 . _ -); otherwise the service makes one. It is echoed, logged and stored in the workflow memo.',
  schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
});
const requestIdHeader = registry.registerComponent('headers', 'X-Request-Id', {
  description: 'Id of this request in the service logs and in the memo of the workflow it started or attached to.',
  schema: { type: 'string' },
});

const API_KEY = [{ [bearer.name]: [] }];
const SESSION = [{ [cookie.name]: [] }];

const json = (schema: ZodType, description: string, headers: Record<string, object> = {}): ResponseConfig => ({
  description,
  headers: { 'X-Request-Id': requestIdHeader.ref, ...headers },
  content: { 'application/json': { schema } },
});
const envelope = (description: string) => json(ErrorEnvelope, description);
const body = (schema: ZodType, description?: string) => ({
  required: true,
  description,
  content: { 'application/json': { schema } },
});
const idParam = z.object({ id: z.string().describe('API key id') });

/** Registers a route; every operation takes the optional X-Request-Id header. */
function route(config: RouteConfig): void {
  registry.registerPath({ parameters: [requestIdParam.ref], ...config });
}

// --- service ---------------------------------------------------------------------------------------

route({
  method: 'get',
  path: '/healthz',
  tags: ['Service'],
  operationId: 'health',
  summary: 'Health: Temporal, the database and every enabled network (RPC, relayer gas); answers reused for 5 s',
  responses: {
    200: json(healthResponseSchema, 'Everything answers (status ok, or low_balance when a relayer is below the floor)'),
    503: json(healthResponseSchema, 'Something required does not answer (status degraded); the failing check has ok false and error'),
  },
});

route({
  method: 'get',
  path: OPENAPI_PATH,
  tags: ['Service'],
  operationId: 'openapi',
  summary: 'This OpenAPI 3.1 document (rendered at /docs)',
  responses: { 200: json(openApiDocumentSchema, 'The document') },
});

// --- sign-in ----------------------------------------------------------------------------------------

route({
  method: 'get',
  path: '/v1/auth/nonce',
  tags: ['Sign-in'],
  operationId: 'siweNonce',
  summary: 'A fresh single-use nonce for a SIWE (EIP-4361) message',
  responses: { 200: json(nonceResponseSchema, 'Nonce') },
});

route({
  method: 'post',
  path: '/v1/auth/verify',
  tags: ['Sign-in'],
  operationId: 'siweVerify',
  summary: 'Sign in with Ethereum: verify the signed message and set the siwe-session cookie',
  description: 'The message domain must be the host of the service public URL. The first sign-in of a wallet creates its organization.',
  request: { body: body(SiweVerifyRequest) },
  responses: {
    200: json(Session, 'Signed in; the signed siwe-session cookie is set', {
      'Set-Cookie': { description: 'siwe-session (HttpOnly, SameSite=Lax)', schema: { type: 'string' } },
    }),
    400: envelope('Malformed body or not an EIP-4361 message'),
    401: envelope('Wrong domain or scheme, bad signature, expired, or unknown/used nonce'),
    413: envelope('Body too large'),
    415: envelope('Content-Type is not application/json'),
  },
});

route({
  method: 'post',
  path: '/v1/auth/signout',
  tags: ['Sign-in'],
  operationId: 'signOut',
  summary: 'Revoke the session (if any) and clear the cookie; idempotent',
  responses: { 204: { description: 'Signed out', headers: { 'X-Request-Id': requestIdHeader.ref } } },
});

route({
  method: 'get',
  path: '/v1/auth/session',
  tags: ['Sign-in'],
  operationId: 'currentSession',
  summary: 'Who is signed in',
  security: SESSION,
  responses: { 200: json(Session, 'The session behind the cookie'), 401: envelope('No valid session') },
});

// --- organization -------------------------------------------------------------------------------------

route({
  method: 'get',
  path: '/v1/organization',
  tags: ['Organization'],
  operationId: 'getOrganization',
  summary: 'The signed-in owner organization',
  security: SESSION,
  responses: { 200: json(Organization, 'Organization'), 401: envelope('No valid session'), 404: envelope('Organization not found') },
});

route({
  method: 'patch',
  path: '/v1/organization',
  tags: ['Organization'],
  operationId: 'updateOrganization',
  summary: 'Change name, payout wallets or platform fee',
  security: SESSION,
  request: {
    body: body(
      OrganizationPatch,
      'At least one field. Payout wallets: any case, mixed case must be a valid EIP-55 checksum, never the zero address; null clears.',
    ),
  },
  responses: {
    200: json(Organization, 'Updated organization'),
    400: envelope('Invalid body'),
    401: envelope('No valid session'),
    404: envelope('Organization not found'),
    413: envelope('Body too large'),
    415: envelope('Content-Type is not application/json'),
  },
});

// --- API keys -------------------------------------------------------------------------------------------

route({
  method: 'post',
  path: '/v1/api_keys',
  tags: ['API keys'],
  operationId: 'createApiKey',
  summary: 'Create an API key; the only response that shows the secret',
  security: SESSION,
  request: { body: body(CreateApiKeyRequest) },
  responses: {
    201: json(CreatedApiKey, 'Created (Cache-Control: no-store)'),
    400: envelope('Invalid body'),
    401: envelope('No valid session'),
    413: envelope('Body too large'),
    415: envelope('Content-Type is not application/json'),
  },
});

route({
  method: 'get',
  path: '/v1/api_keys',
  tags: ['API keys'],
  operationId: 'listApiKeys',
  summary: 'Active keys of the organization, oldest first',
  security: SESSION,
  responses: { 200: json(ApiKeyList, 'Keys (no secrets)'), 401: envelope('No valid session') },
});

route({
  method: 'get',
  path: '/v1/api_keys/{id}',
  tags: ['API keys'],
  operationId: 'getApiKey',
  summary: 'One active key of the organization',
  security: SESSION,
  request: { params: idParam },
  responses: {
    200: json(ApiKey, 'Key (no secret)'),
    401: envelope('No valid session'),
    404: envelope('Unknown, revoked or another organization key'),
  },
});

route({
  method: 'delete',
  path: '/v1/api_keys/{id}',
  tags: ['API keys'],
  operationId: 'revokeApiKey',
  summary: 'Revoke a key (it then answers 403)',
  security: SESSION,
  request: { params: idParam },
  responses: {
    200: json(RevokedApiKey, 'Revoked key'),
    401: envelope('No valid session'),
    404: envelope('Unknown, already revoked or another organization key'),
  },
});

// --- x402 -------------------------------------------------------------------------------------------------

route({
  method: 'post',
  path: '/v1/settle',
  tags: ['x402'],
  operationId: 'settle',
  summary: 'Settle an x402 payment (EIP-3009 exact) on-chain, exactly once per (payer, nonce)',
  description:
    'Starts, or attaches to, the settlement workflow of this authorization and waits for it up to SETTLE_WAIT_MS. ' +
    'Repeating a request is safe: it answers the same result. Errors other than authentication answer in the settle shape; ' +
    'see docs/decisions/settle-eip3009-same-chain.md for the errorReason of each check.',
  security: API_KEY,
  request: { body: body(SettleRequest) },
  responses: {
    200: json(
      z.union([SettleResponse, BatchedSettleResponse]),
      'Settled (batched: accepted by the upstream gateway, which settles it in its next batch)',
    ),
    202: json(
      z.union([SettleResponse, BatchedSettleResponse]),
      'Still settling (errorReason settlement_pending, transaction once known); repeat the same request',
    ),
    400: json(
      z.union([SettleResponse, BatchedSettleResponse]),
      'Rejected before any transaction (invalid payload, requirements, network, signature, ...); batched: the upstream failure',
    ),
    401: envelope('Missing, malformed or unknown API key'),
    402: json(SettleResponse, 'insufficient_funds'),
    403: json(
      z.union([ErrorEnvelope, BatchedSettleResponse]),
      'Revoked key, or key mode (test/live) does not match the network; batched: gateway_not_enabled',
    ),
    409: json(
      SettleResponse,
      'Nonce already used, or the transaction failed (invalid_transaction_state); batched: accepted for another organization',
    ),
    413: json(SettleResponse, 'Body too large (invalid_payload)'),
    415: json(SettleResponse, 'Content-Type is not application/json (invalid_payload)'),
    500: json(
      z.union([SettleResponse, BatchedSettleResponse]),
      'unexpected_settle_error; batched: batched_settle_error (upstream gateway unreachable)',
    ),
  },
});

route({
  method: 'post',
  path: '/v1/verify',
  tags: ['x402'],
  operationId: 'verify',
  deprecated: true,
  summary: 'Verify an x402 payment without settling (deprecated: use /v1/settle)',
  security: API_KEY,
  request: { body: body(SettleRequest) },
  responses: {
    200: json(
      z.union([VerifyResponse, BatchedVerifyResponse]),
      'Verdict (isValid false with invalidReason when a rule fails); batched: the upstream verdict',
      {
        Deprecation: { description: 'RFC 9745 deprecation date', schema: { type: 'string' } },
        Link: { description: 'successor-version: /v1/settle', schema: { type: 'string' } },
      },
    ),
    400: json(VerifyError, 'invalid_payload or invalid_payment_requirements'),
    401: envelope('Missing, malformed or unknown API key'),
    403: json(z.union([ErrorEnvelope, VerifyError]), 'Revoked key, or key mode does not match the network; batched: gateway_not_enabled'),
    500: json(VerifyError, 'unexpected_verify_error; batched: batched_verify_error'),
  },
});

route({
  method: 'get',
  path: '/v1/supported',
  tags: ['x402'],
  operationId: 'supported',
  summary: 'Payment kinds this service settles (no key needed)',
  responses: { 200: json(SupportedResponse, 'Supported kinds') },
});

// --- permit ------------------------------------------------------------------------------------------------

route({
  method: 'post',
  path: '/v1/permit',
  tags: ['Permit'],
  operationId: 'permit',
  summary: 'Execute an ERC-2612 permit and transfer (the service pays gas)',
  description:
    'value and deadline also accept whole JSON numbers (coerced to decimal strings); null or empty optional fields count as absent; ' +
    'send v, r and s or a 65-byte signature, not both. Errors other than authentication answer in the permit shape.',
  security: [...API_KEY, ...SESSION],
  request: { body: body(PermitRequest) },
  responses: {
    200: json(PermitResponse, 'Submitted: the transaction is sent (a repeat of the request reports a later revert)'),
    202: json(PermitResponse, 'Not yet sent (errorReason permit_pending); repeat the same request'),
    400: json(PermitResponse, 'invalid_request, unsupported_network, network_not_configured or invalid_signature'),
    401: envelope('Missing, malformed or unknown API key (or no valid session)'),
    403: envelope('Revoked key, or key mode does not match the network'),
    413: json(PermitResponse, 'Body too large (invalid_request)'),
    415: json(PermitResponse, 'Content-Type is not application/json (invalid_request)'),
    500: json(
      PermitResponse,
      "permit_execution_failed: a bad permit (expired, not the owner's, stale nonce, other spender), a revert or an RPC error",
    ),
  },
});

registerInferenceOpenApi({ component, route, json });
// --- batched nanopayments and the gateway wallet ---------------------------------------------------------

route({
  method: 'get',
  path: '/v1/batched-sample',
  tags: ['Batched'],
  operationId: 'batchedSample',
  summary: 'Gateway status record: batched nanopayments configuration and the upstream supported kinds',
  security: API_KEY,
  responses: {
    200: json(component('GatewayStatus', gatewayStatusResponseSchema), 'Status record'),
    401: json(
      component('GatewayStatusError', gatewayStatusErrorSchema),
      'No organization (missing, malformed or unknown API key): {error}',
    ),
    403: json(gatewayStatusErrorSchema, 'Revoked key: {error}'),
    500: json(gatewayStatusErrorSchema, 'Internal server error: {error, message}'),
  },
});

route({
  method: 'get',
  path: '/v1/gateway/balances',
  tags: ['Batched'],
  operationId: 'gatewayBalances',
  summary: "The facilitator's own USDC balances in the gateway wallet (available, withdrawing, withdrawable, total); operators only",
  security: API_KEY,
  request: { query: z.object({ network: z.string().describe('EVM network id, e.g. base-sepolia') }) },
  responses: {
    200: json(component('GatewayBalances', gatewayBalancesSchema), 'Balance views, read from the contract'),
    400: envelope('Unknown or unconfigured network'),
    401: envelope('Missing, malformed or unknown API key'),
    403: envelope('Revoked key, key mode does not match the network, or not an operator (OPERATOR_ADDRESSES)'),
  },
});

const WithdrawalRecord = component('GatewayWithdrawal', withdrawalRecordSchema);

route({
  method: 'post',
  path: '/v1/gateway/withdrawals',
  tags: ['Batched'],
  operationId: 'gatewayWithdraw',
  summary: 'Withdraw from the facilitator gateway-wallet balance to its wallet, as a durable workflow; operators only',
  description:
    'Starts a WithdrawalWorkflow: initiateWithdrawal, wait until withdrawalBlock, withdraw. Answers at once with the record; ' +
    'poll GET /v1/gateway/withdrawals/{id}. One withdrawal at a time per network (409 while one is in progress).',
  security: API_KEY,
  request: { body: body(component('GatewayWithdrawalRequest', withdrawalRequestSchema)) },
  responses: {
    202: json(WithdrawalRecord, 'Started (or the existing withdrawal of this idempotencyKey)'),
    400: envelope('Bad body, unknown network, or amount above the available balance'),
    401: envelope('Missing, malformed or unknown API key'),
    403: envelope('Revoked key, key mode does not match the network, or not an operator (OPERATOR_ADDRESSES)'),
    409: envelope('A withdrawal is in progress, or the idempotencyKey belongs to a different withdrawal'),
    413: envelope('Body too large'),
    415: envelope('Content-Type is not application/json'),
  },
});

route({
  method: 'get',
  path: '/v1/gateway/withdrawals/{id}',
  tags: ['Batched'],
  operationId: 'gatewayWithdrawal',
  summary: 'A withdrawal this organization started',
  security: API_KEY,
  request: { params: z.object({ id: z.string().describe('withdrawal id from POST /v1/gateway/withdrawals') }) },
  responses: {
    200: json(WithdrawalRecord, 'The withdrawal record'),
    401: envelope('Missing, malformed or unknown API key'),
    403: envelope('Revoked key, or not an operator (OPERATOR_ADDRESSES)'),
    404: envelope('No such withdrawal for this organization'),
  },
});
registerMediaOpenApi({ component, route, json });

const metricsRoute: RouteConfig = {
  method: 'get',
  path: '/metrics',
  tags: ['Service'],
  operationId: 'metrics',
  summary: 'Prometheus metrics (text exposition format); absent when METRICS_ENABLED=false',
  parameters: [requestIdParam.ref],
  responses: {
    200: {
      description: 'Metrics',
      headers: { 'X-Request-Id': requestIdHeader.ref },
      content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: z.string() } },
    },
  },
};

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

/** The document for a service reachable at `publicUrl`; /metrics is listed when it is served. */
export function buildOpenApiDocument(opts: { publicUrl: string; metrics: boolean }): OpenApiDocument {
  const definitions = opts.metrics ? [...registry.definitions, { type: 'route' as const, route: metricsRoute }] : registry.definitions;
  return new OpenApiGeneratorV31(definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description:
        'Durable x402 payment facilitator: every money movement is a Temporal workflow keyed by its business key ' +
        '(payer and nonce), so a payment settles exactly once however often it is sent.',
    },
    servers: [{ url: opts.publicUrl }],
  });
}
