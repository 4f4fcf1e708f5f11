import { encodeFunctionData, type Address, type Hex } from 'viem';
import { evmNetworkOf } from '../../settle/records';
import { evmSettlementBase, settlementNetwork } from '../../settle/evm-request';
import { contractPayout } from '../../settle/payout';
import { permit2SettleWorkflowId } from '../../temporal/workflow-ids';
import { paymentRequirementsSchema, permit2PayloadBodySchema } from '../../x402/schemas';
import { onChainSignature } from '../../chains/evm/buyer-signature';
import { FacilitatorCall } from '../facilitator-call';
import type { Parsed, Scheme } from '../scheme';
import { permit2PaymentPayloadSchema } from './payload';
import { permit2Reads } from './reads';
import type { Permit2Payment, Permit2SettleInput } from './types';
import { uptoSettleAmount, verifyPermit2 } from './verify';
import { facilitatorPermit2Abi } from '../../chains/evm/abi';

const ZERO32 = `0x${'0'.repeat(64)}` as Hex;

/** The settling call: `settlePermit2Exact` or `settlePermit2Upto` with the owner's signature (a counterfactual wallet deployed first). */
const settleCall = new FacilitatorCall<Permit2SettleInput>(
  settlePermit2CallData,
  (input) => ({ wallet: input.paymentPayload.payload.owner as Address, signature: input.paymentPayload.payload.signature as Hex }),
  // An upto settlement says how much it took.
  (input) => (input.paymentPayload.scheme === 'upto' ? { amount: input.amount } : {}),
);

/**
 * Permit2 `exact` and `upto` (spec routing step 3): the buyer signs a Permit2 witness transfer to
 * our proxy; the facilitator's `settlePermit2Exact` / `settlePermit2Upto` pulls it through the proxy
 * and pays out in one transaction (an EIP-2612 `permit2612` rides along when Permit2 lacks allowance).
 */
export const permit2: Scheme<Permit2Payment, Permit2SettleInput> = {
  route: 'permit2',
  // The spec words step 3 as "the payload parses as Permit2" (the full schema).
  claims: (body) => permit2PayloadBodySchema.safeParse(body.payload).success,

  parse(deps, auth, raw): Parsed<Permit2Payment> {
    const body = (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
    const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
    const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';
    const refuse = (refused: string, payer?: string) => ({ ok: false as const, refused, network: networkName, payer });

    const payload = permit2PaymentPayloadSchema.safeParse(body.paymentPayload);
    if (!payload.success) return refuse('invalid_payload');
    const payer = payload.data.payload.owner;
    const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
    if (!requirements.success) return refuse('invalid_payment_requirements', payer);

    const network = settlementNetwork(deps, auth, networkName);
    if ('refused' in network) return refuse(network.refused, payer);
    return {
      ok: true,
      network: network.id,
      payer,
      payment: { network: network.id, paymentPayload: payload.data, paymentRequirements: requirements.data },
    };
  },

  businessKey: (p) => permit2SettleWorkflowId(p.network, p.paymentPayload.payload.owner, p.paymentPayload.payload.permit.nonce),

  async input(deps, req, p) {
    const base = await evmSettlementBase(deps, req, {
      workflowId: permit2.businessKey(p),
      network: p.network,
      payer: p.paymentPayload.payload.owner,
      // The amount that moves; an invalid settleAmount is rejected by the workflow's verification.
      amount:
        p.paymentPayload.scheme === 'upto'
          ? uptoSettleAmount(p.paymentRequirements)
          : BigInt(p.paymentPayload.payload.permit.permitted.amount),
      extra: p.paymentRequirements.extra,
    });
    return 'refused' in base ? base : { ...p, ...base, route: 'permit2' };
  },

  verify(p, deps) {
    const network = evmNetworkOf(deps.networks, p.network);
    return verifyPermit2(p.paymentPayload, p.paymentRequirements, network, {
      nowSeconds: Math.floor(Date.now() / 1000),
      minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
      reads: permit2Reads(network),
    });
  },

  sent: (input, deps) => settleCall.sent(input, deps),
  simulate: (input, deps) => settleCall.simulate(input, deps),
  submit: (input, deps, record) => settleCall.submit(input, deps, record),
  confirm: (input, deps, record, waitMs) => settleCall.confirm(input, deps, record, waitMs),
};

/**
 * `settlePermit2Exact` / `settlePermit2Upto`: the payment through the scheme's proxy, the optional
 * `permit2612` (applied by the contract only while Permit2's allowance is short), and the payout.
 */
function settlePermit2CallData(input: Permit2SettleInput, network: { exactPermit2Proxy?: string; uptoPermit2Proxy?: string }): Hex {
  const p = input.paymentPayload.payload;
  const payment = {
    proxy: (input.paymentPayload.scheme === 'exact' ? network.exactPermit2Proxy : network.uptoPermit2Proxy) as Address,
    token: p.permit.permitted.token as Address,
    amount: BigInt(p.permit.permitted.amount),
    nonce: BigInt(p.permit.nonce),
    deadline: BigInt(p.permit.deadline),
    owner: p.owner as Address,
    validAfter: BigInt(p.witness.validAfter),
    // Permit2 asks a wallet with code (EIP-1271); an EIP-6492 wrapper's inner signature goes there once it is deployed.
    signature: onChainSignature(p.signature as Hex),
  };
  const e = p.permit2612;
  const permit2612 = e
    ? { value: BigInt(e.value), deadline: BigInt(e.deadline), v: e.v < 27 ? e.v + 27 : e.v, r: e.r as Hex, s: e.s as Hex }
    : { value: 0n, deadline: 0n, v: 0, r: ZERO32, s: ZERO32 };
  const out = contractPayout(input);
  return input.paymentPayload.scheme === 'exact'
    ? encodeFunctionData({ abi: facilitatorPermit2Abi, functionName: 'settlePermit2Exact', args: [payment, permit2612, out] })
    : encodeFunctionData({
        abi: facilitatorPermit2Abi,
        functionName: 'settlePermit2Upto',
        args: [payment, BigInt(input.amount), permit2612, out],
      });
}
