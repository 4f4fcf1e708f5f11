import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { API_TITLE, API_VERSION, buildOpenApiDocument } from '../../src/api/openapi';
import { createApiKeyBody } from '../../src/auth/api-keys';
import { permitRequestSchema } from '../../src/permit/schema';
import { exactEvmPayloadSchema, paymentRequirementsSchema } from '../../src/x402/schemas';

/**
 * The generated OpenAPI 3.1 document on its own: metadata, security schemes, every schema a valid
 * JSON Schema 2020-12, and the spec's request shapes validating against it (JSON Schema validation
 * with ajv, the 2020-12 dialect OpenAPI 3.1 uses) exactly when the routes' zod schemas accept them.
 * (ajv and ajv-formats are not our dependencies: they come with @temporalio/worker's webpack.)
 */

const doc = buildOpenApiDocument({ publicUrl: 'https://facilitator.example', metrics: true }) as any;
const DOC_ID = 'https://x402.invalid/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, DOC_ID);

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
/** A validator of the JSON request body of an operation, refs resolved inside the document. */
const requestBody = (method: string, path: string) =>
  ajv.compile({ $ref: `${DOC_ID}#/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}` });
const errorsOf = (v: ReturnType<typeof requestBody>, data: unknown) =>
  v(data) ? [] : v.errors!.map((e) => `${e.instancePath} ${e.message}`);

// Spec shapes ("PaymentPayload, EIP-3009", "PaymentRequirements", "API keys", "POST /v1/permit").
const ADDR = (c: string) => `0x${c.repeat(40)}`;
const settleSample = {
  paymentPayload: {
    x402Version: 1,
    scheme: 'exact',
    network: 'base-sepolia',
    payload: {
      signature: `0x${'ab'.repeat(65)}`,
      authorization: {
        from: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
        to: ADDR('1'),
        value: '10000',
        validAfter: '1740672089',
        validBefore: '1740672154',
        nonce: `0x${'f3'.repeat(32)}`,
      },
    },
  },
  paymentRequirements: {
    scheme: 'exact',
    network: 'base-sepolia',
    maxAmountRequired: '10000',
    resource: 'https://api.example.com/premium-data',
    description: 'Access to premium market data',
    mimeType: 'application/json',
    payTo: ADDR('1'),
    maxTimeoutSeconds: 60,
    asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    extra: { name: 'USDC', version: '2' },
  },
};
const apiKeySample = { name: 'seller backend', test_net: true };
const permitSample = {
  network: 'base-sepolia',
  tokenAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  owner: ADDR('2'),
  spender: ADDR('1'),
  value: '1000000',
  deadline: '1900000000',
  v: 27,
  r: `0x${'1a'.repeat(32)}`,
  s: `0x${'2b'.repeat(32)}`,
  recipient: ADDR('3'),
};

describe('OpenAPI document', () => {
  test('is OpenAPI 3.1 with our title, version, server and security schemes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: API_TITLE, version: API_VERSION });
    expect(API_TITLE).toBe('x402 durable facilitator');
    expect(API_VERSION).toBe('1.0.0');
    expect(doc.servers).toEqual([{ url: 'https://facilitator.example' }]);
    expect(doc.components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      sessionCookie: expect.objectContaining({ type: 'apiKey', in: 'cookie', name: 'siwe-session' }),
    });
    expect(doc.paths['/v1/settle'].post.security).toEqual([{ apiKey: [] }]);
    expect(doc.paths['/v1/api_keys'].post.security).toEqual([{ sessionCookie: [] }]);
    expect(doc.paths['/v1/permit'].post.security).toEqual([{ apiKey: [] }, { sessionCookie: [] }]);
    expect(doc.paths['/v1/verify'].post.deprecated).toBe(true);
  });

  test('lists /metrics only when it is served', () => {
    expect(doc.paths['/metrics']).toBeDefined();
    expect(buildOpenApiDocument({ publicUrl: 'http://x', metrics: false }).paths!['/metrics']).toBeUndefined();
  });

  test('every component schema compiles as JSON Schema 2020-12 and every $ref resolves', () => {
    for (const name of Object.keys(doc.components.schemas)) {
      expect(typeof ajv.getSchema(`${DOC_ID}#/${pointer('components', 'schemas', name)}`)).toBe('function'); // compiled, or threw
    }
    const refs = new Set<string>();
    JSON.stringify(doc, (key, value) => {
      if (key === '$ref') refs.add(value);
      return value;
    });
    for (const ref of refs) {
      const target = ref
        .slice(2)
        .split('/')
        .reduce((node: any, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
      expect({ ref, found: target !== undefined }).toEqual({ ref, found: true });
    }
  });

  test('request bodies are the routes’ schemas, by reference', () => {
    const bodyRef = (method: string, path: string) => doc.paths[path][method].requestBody.content['application/json'].schema;
    expect(bodyRef('post', '/v1/settle')).toEqual({ $ref: '#/components/schemas/SettleRequest' });
    expect(bodyRef('post', '/v1/verify')).toEqual({ $ref: '#/components/schemas/SettleRequest' });
    expect(doc.components.schemas.SettleRequest.properties).toEqual({
      paymentPayload: { $ref: '#/components/schemas/ExactEvmPaymentPayload' },
      paymentRequirements: { $ref: '#/components/schemas/PaymentRequirements' },
    });
    expect(bodyRef('post', '/v1/api_keys')).toEqual({ $ref: '#/components/schemas/CreateApiKeyRequest' });
    expect(bodyRef('post', '/v1/permit')).toEqual({ $ref: '#/components/schemas/PermitRequest' });
    expect(bodyRef('patch', '/v1/organization')).toEqual({ $ref: '#/components/schemas/OrganizationPatch' });
    expect(bodyRef('post', '/v1/auth/verify')).toEqual({ $ref: '#/components/schemas/SiweVerifyRequest' });
  });

  test('the spec’s settle request (EIP-3009 payload and requirements) validates, as with the route’s zod schemas', () => {
    expect(errorsOf(requestBody('post', '/v1/settle'), settleSample)).toEqual([]);
    expect(errorsOf(requestBody('post', '/v1/verify'), settleSample)).toEqual([]);
    expect(exactEvmPayloadSchema.safeParse(settleSample.paymentPayload).success).toBe(true);
    expect(paymentRequirementsSchema.safeParse(settleSample.paymentRequirements).success).toBe(true);
    // Without `extra` too (the spec marks it optional).
    const { extra: _extra, ...noExtra } = settleSample.paymentRequirements;
    expect(errorsOf(requestBody('post', '/v1/settle'), { ...settleSample, paymentRequirements: noExtra })).toEqual([]);
  });

  test('the spec’s API key create body validates, as with the route’s zod schema', () => {
    expect(errorsOf(requestBody('post', '/v1/api_keys'), apiKeySample)).toEqual([]);
    expect(createApiKeyBody.safeParse(apiKeySample).success).toBe(true);
  });

  test('the spec’s permit bodies validate (v/r/s, r/s without 0x, numbers, signature), as with the route’s zod schema', () => {
    const { v: _v, r: _r, s: _s, ...noSplit } = permitSample;
    const samples = [
      permitSample,
      { ...permitSample, r: permitSample.r.slice(2), s: permitSample.s.slice(2) },
      { ...permitSample, value: 1000000, deadline: 1900000000 },
      { ...noSplit, signature: `0x${'cd'.repeat(65)}` },
    ];
    for (const sample of samples) {
      expect(errorsOf(requestBody('post', '/v1/permit'), sample)).toEqual([]);
      expect(permitRequestSchema.safeParse(sample).success).toBe(true);
    }
  });

  test('bodies the routes refuse are refused by the document too', () => {
    const settle = requestBody('post', '/v1/settle');
    const badNonce = structuredClone(settleSample);
    badNonce.paymentPayload.payload.authorization.nonce = '0x1234';
    const badAmount = structuredClone(settleSample);
    badAmount.paymentRequirements.maxAmountRequired = '1e6';
    for (const bad of [badNonce, badAmount]) {
      expect(settle(bad)).toBe(false);
      const parsed =
        exactEvmPayloadSchema.safeParse(bad.paymentPayload).success && paymentRequirementsSchema.safeParse(bad.paymentRequirements).success;
      expect(parsed).toBe(false);
    }
    const apiKeys = requestBody('post', '/v1/api_keys');
    for (const bad of [{ name: 'x' }, { name: 'x', test_net: 'yes' }, { ...apiKeySample, api_secret_key: 'sk_x' }]) {
      expect(apiKeys(bad)).toBe(false);
      expect(createApiKeyBody.safeParse(bad).success).toBe(false);
    }
    const permit = requestBody('post', '/v1/permit');
    for (const bad of [
      { ...permitSample, owner: '0x12' },
      { ...permitSample, value: '-1' },
      { ...permitSample, v: 300 },
    ]) {
      expect(permit(bad)).toBe(false);
      expect(permitRequestSchema.safeParse(bad).success).toBe(false);
    }
  });
});
