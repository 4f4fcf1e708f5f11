// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

import {Permit2} from "./Permit2.sol";

/// @title X402ExactPermit2Proxy
/// @notice The spender of x402 `exact` Permit2 payments. The buyer signs a PermitWitnessTransferFrom
///         with this contract as spender and the witness `Witness(address to,uint256 validAfter)`;
///         `settle` moves the full permitted amount from the buyer to `witness.to`, which must be
///         the facilitator contract given at construction (the x402 `payTo`). The payout to the
///         seller and the fee split happen in the facilitator afterwards.
///         Anyone may call `settle`: the signature binds token, amount, recipient, nonce and
///         deadline, so a third-party submission can only deliver the exact signed payment to the
///         facilitator contract (as with an EIP-3009 TransferWithAuthorization).
/// @dev Only immutables, no storage written by the constructor, so the devnet deploy may place
///      this runtime code at the configured address with `anvil_setCode`.
contract X402ExactPermit2Proxy {
    struct Witness {
        address to;
        uint256 validAfter;
    }

    error ZeroAddress();
    error PaymentNotYetValid(uint256 validAfter, uint256 timestamp);
    error RecipientNotFacilitator(address to, address facilitator);

    event Settled(address indexed token, address indexed owner, address indexed to, uint256 amount, uint256 nonce);

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,uint256 validAfter)");
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)";

    Permit2 public immutable PERMIT2;
    address public immutable FACILITATOR;

    constructor(Permit2 permit2, address facilitator) {
        if (address(permit2) == address(0) || facilitator == address(0)) revert ZeroAddress();
        PERMIT2 = permit2;
        FACILITATOR = facilitator;
    }

    /// @notice Transfers `permit.permitted.amount` of `permit.permitted.token` from `owner` to
    ///         `witness.to` (the facilitator contract) with `owner`'s Permit2 signature.
    function settle(
        Permit2.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (block.timestamp < witness.validAfter) revert PaymentNotYetValid(witness.validAfter, block.timestamp);
        if (witness.to != FACILITATOR) revert RecipientNotFacilitator(witness.to, FACILITATOR);

        PERMIT2.permitWitnessTransferFrom(
            permit,
            Permit2.SignatureTransferDetails({to: witness.to, requestedAmount: permit.permitted.amount}),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
        emit Settled(permit.permitted.token, owner, witness.to, permit.permitted.amount, permit.nonce);
    }
}
