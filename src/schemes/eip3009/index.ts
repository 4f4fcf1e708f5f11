import { encodeFunctionData, type Address, type Hex } from 'viem';
import { onChainSignature } from '../../chains/evm/buyer-signature';
import { evmNetworkOf } from '../../settle/records';
import { evmSettlementBase, settlementNetwork } from '../../settle/evm-request';
import { contractPayout } from '../../settle/payout';
import { settleWorkflowId } from '../../temporal/workflow-ids';
import { exactEvmPayloadSchema, paymentPayloadEnvelopeSchema, paymentRequirementsSchema } from '../../x402/schemas';
import { FacilitatorCall } from '../facilitator-call';
import type { Parsed, Scheme, VerifyDeps } from '../scheme';
import { balanceAndNonceUnread, readsUnlessSimulated, tokenReads } from './reads';
import type { Eip3009Payment, Eip3009SettleInput } from './types';
import { verifyExactEvm } from './verify';
import { facilitatorAbi } from '../../chains/evm/abi';

const bodyOf = (raw: unknown) => (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;

/** The settling call: the facilitator's `settleSplit` with the buyer's authorization (a counterfactual wallet deployed first). */
const settleCall = new FacilitatorCall<Eip3009SettleInput>(settleCallData, (input) => ({
  wallet: input.paymentPayload.payload.authorization.from as Address,
  signature: input.paymentPayload.payload.signature as Hex,
}));

/**
 * EIP-3009 `exact` (spec routing step 4): the buyer signs `TransferWithAuthorization` to our
 * facilitator contract, whose `settle` pulls it and pays the payout and fee in one transaction.
 */
export const eip3009: Scheme<Eip3009Payment, Eip3009SettleInput> = {
  route: 'eip3009',
  claims: () => true, // the last routing step takes every payment the earlier ones did not

  /**
   * The request checks settle and verify share, in order (docs/decisions/settle-eip3009-same-chain.md, rules 2-8): both objects
   * parse, the network is known, allowed for the key's mode (403 ApiError) and enabled.
   */
  parse(deps, auth, raw): Parsed<Eip3009Payment> {
    const body = bodyOf(raw);
    const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
    const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';
    const refuse = (refused: string, payer?: string) => ({ ok: false as const, refused, network: networkName, payer });

    if (!paymentPayloadEnvelopeSchema.safeParse(body.paymentPayload).success) return refuse('invalid_payload');
    const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
    if (!requirements.success) return refuse('invalid_payment_requirements');
    const payload = exactEvmPayloadSchema.safeParse(body.paymentPayload);
    if (!payload.success) return refuse('invalid_payload');
    const payer = payload.data.payload.authorization.from;

    const network = settlementNetwork(deps, auth, payload.data.network);
    if ('refused' in network) return refuse(network.refused, payer);
    return {
      ok: true,
      network: network.id,
      payer,
      payment: { network: network.id, paymentPayload: payload.data, paymentRequirements: requirements.data },
    };
  },

  businessKey: (p) =>
    settleWorkflowId(p.network, p.paymentPayload.payload.authorization.from, p.paymentPayload.payload.authorization.nonce),

  async input(deps, req, p) {
    const base = await evmSettlementBase(deps, req, {
      workflowId: eip3009.businessKey(p),
      network: p.network,
      payer: p.paymentPayload.payload.authorization.from,
      amount: BigInt(p.paymentPayload.payload.authorization.value),
      extra: p.paymentRequirements.extra,
    });
    return 'refused' in base ? base : { ...p, ...base, route: 'eip3009' };
  },

  verify(p, deps, simulated) {
    const network = evmNetworkOf(deps.networks, p.network);
    const reads = tokenReads(network);
    return verifyExactEvm(p.paymentPayload, p.paymentRequirements, network, {
      nowSeconds: Math.floor(Date.now() / 1000),
      minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
      reads: simulated ? readsUnlessSimulated(simulated, reads) : reads,
    });
  },

  sent: (input, deps) => settleCall.sent(input, deps),
  simulate: (input, deps) => settleCall.simulate(input, deps),
  submit: (input, deps, record) => settleCall.submit(input, deps, record),
  confirm: (input, deps, record, waitMs) => settleCall.confirm(input, deps, record, waitMs),
};

/**
 * The EIP-3009 rules that need no chain: network, scheme, recipients, asset, signature (a smart
 * wallet's is asked of the chain), window, amount. Our own paid routes (chat, media) run them before any row or workflow exists, so an
 * unverified payment costs us nothing; the settlement workflow then runs every rule.
 */
export function checkWithoutChain(p: Eip3009Payment, deps: Pick<VerifyDeps, 'config' | 'networks'>) {
  const network = evmNetworkOf(deps.networks, p.network);
  return verifyExactEvm(p.paymentPayload, p.paymentRequirements, network, {
    nowSeconds: Math.floor(Date.now() / 1000),
    minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
    reads: balanceAndNonceUnread(network),
  });
}

/**
 * The facilitator's `settleSplit`: pull the authorization, pay the fees and `payout` the rest. It calls
 * FiatToken's `bytes signature` overload, which asks a wallet with code (EIP-1271); an EIP-6492
 * wrapper's inner signature goes there, once the wallet is deployed.
 */
export function settleCallData(input: Eip3009SettleInput): Hex {
  const a = input.paymentPayload.payload.authorization;
  return encodeFunctionData({
    abi: facilitatorAbi,
    functionName: 'settleSplit',
    args: [
      input.paymentRequirements.asset as Address,
      a.from as Address,
      BigInt(a.value),
      BigInt(a.validAfter),
      BigInt(a.validBefore),
      a.nonce as Hex,
      onChainSignature(input.paymentPayload.payload.signature as Hex),
      contractPayout(input),
    ],
  });
}
