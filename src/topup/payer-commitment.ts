import { encodeAbiParameters, getAddress, keccak256, toBytes, type Address, type Hex } from 'viem';

/**
 * payer-commitment-v1: when the payer (the EIP-3009 signer) is not the buyer credited on the
 * merchant contract, the authorization's 32-byte nonce must be this derivation, so the payer's own
 * signature binds who is credited and where (docs/decisions/topup-gateway.md):
 *
 *   nonce = keccak256(abi.encode(
 *     keccak256("x402-topup/payer-commitment-v1"),  // bytes32 tag
 *     keccak256(utf8(merchantId)),                 // bytes32 merchant
 *     sourceChainId, destinationChainId,           // uint256, uint256
 *     creditedRecipient,                           // address: the merchant contract on the destination
 *     payer, buyer,                                // address, address
 *     salt))                                       // bytes32, random per payment
 *
 * The payer sends `salt` beside the payment (body `payerCommitment: {version, salt}`); the gateway
 * recomputes the nonce and refuses any other (400 buyer_mismatch). Pure: usable in browsers.
 */
export const PAYER_COMMITMENT_VERSION = 'payer-commitment-v1';
const TAG = keccak256(toBytes('x402-topup/payer-commitment-v1'));

export interface PayerCommitment {
  merchantId: string;
  sourceChainId: number;
  destinationChainId: number;
  creditedRecipient: Address;
  payer: Address;
  buyer: Address;
  salt: Hex;
}

export function payerCommitmentNonce(c: PayerCommitment): Hex {
  if (!/^0x[0-9a-fA-F]{64}$/.test(c.salt)) throw new Error('salt must be 32 bytes of hex');
  return keccak256(
    encodeAbiParameters(
      [
        { type: 'bytes32' },
        { type: 'bytes32' },
        { type: 'uint256' },
        { type: 'uint256' },
        { type: 'address' },
        { type: 'address' },
        { type: 'address' },
        { type: 'bytes32' },
      ],
      [
        TAG,
        keccak256(toBytes(c.merchantId)),
        BigInt(c.sourceChainId),
        BigInt(c.destinationChainId),
        getAddress(c.creditedRecipient.toLowerCase()),
        getAddress(c.payer.toLowerCase()),
        getAddress(c.buyer.toLowerCase()),
        c.salt,
      ],
    ),
  );
}

/** True when `nonce` is the payer-commitment-v1 derivation of `c` (case-insensitive hex). */
export const verifyPayerCommitment = (nonce: string, c: PayerCommitment): boolean =>
  payerCommitmentNonce(c).toLowerCase() === nonce.toLowerCase();
