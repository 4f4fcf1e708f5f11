// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

import {Permit2} from "./Permit2.sol";

/// @dev The slice of the X402Facilitator the upto proxy reads: its relayer allow-list.
interface IRelayerRegistry {
    function isRelayer(address account) external view returns (bool);
}

/// @title X402UptoPermit2Proxy
/// @notice The spender of x402 `upto` Permit2 payments (usage-based: the buyer signs a maximum, the
///         seller's actual usage is settled). The buyer signs a PermitWitnessTransferFrom with this
///         contract as spender and the witness
///         `Witness(address to,address facilitator,uint256 validAfter)`; `settle` moves `amount`
///         (0 < amount <= permitted maximum) from the buyer to `witness.to`. Both `witness.to` and
///         `witness.facilitator` must be the facilitator contract given at construction; the payout
///         to the seller and the fee split happen in the facilitator afterwards.
/// @notice Caller restriction: the settled `amount` is chosen by the caller, not by the signature,
///         so an open entry point would let anyone who sees a signed payment settle the full
///         maximum (or a dust amount that burns the nonce). Only the facilitator contract itself or
///         one of its allow-listed relayers (`X402Facilitator.isRelayer`) may call `settle`; the
///         relayer list is administered in one place, on the facilitator.
/// @dev Only immutables, no storage written by the constructor, so the devnet deploy may place
///      this runtime code at the configured address with `anvil_setCode`.
contract X402UptoPermit2Proxy {
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    error ZeroAddress();
    error UnauthorizedCaller(address caller);
    error InvalidSettleAmount(uint256 amount, uint256 maxAmount);
    error PaymentNotYetValid(uint256 validAfter, uint256 timestamp);
    error RecipientNotFacilitator(address to, address facilitator);
    error FacilitatorMismatch(address witnessFacilitator, address facilitator);

    event Settled(
        address indexed token,
        address indexed owner,
        address indexed to,
        uint256 amount,
        uint256 maxAmount,
        uint256 nonce
    );

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    Permit2 public immutable PERMIT2;
    address public immutable FACILITATOR;

    constructor(Permit2 permit2, address facilitator) {
        if (address(permit2) == address(0) || facilitator == address(0)) revert ZeroAddress();
        PERMIT2 = permit2;
        FACILITATOR = facilitator;
    }

    /// @notice Transfers `amount` (at most the signed `permit.permitted.amount`) of
    ///         `permit.permitted.token` from `owner` to `witness.to` (the facilitator contract).
    function settle(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (msg.sender != FACILITATOR && !IRelayerRegistry(FACILITATOR).isRelayer(msg.sender)) {
            revert UnauthorizedCaller(msg.sender);
        }
        if (amount == 0 || amount > permit.permitted.amount) revert InvalidSettleAmount(amount, permit.permitted.amount);
        if (block.timestamp < witness.validAfter) revert PaymentNotYetValid(witness.validAfter, block.timestamp);
        if (witness.to != FACILITATOR) revert RecipientNotFacilitator(witness.to, FACILITATOR);
        if (witness.facilitator != FACILITATOR) revert FacilitatorMismatch(witness.facilitator, FACILITATOR);

        PERMIT2.permitWitnessTransferFrom(
            permit,
            Permit2.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
        emit Settled(permit.permitted.token, owner, witness.to, amount, permit.permitted.amount, permit.nonce);
    }
}
