// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IOnceDepositorToken {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function approve(address spender, uint256 value) external returns (bool);
}

interface IMerchantDeposit {
    function deposit(address buyer, uint256 amount) external;
}

/// @notice The top-up gateway's on-chain idempotency key for merchant deposits.
/// A listed caller (the top-up relayer) calls `depositOnce(id, merchant, buyer, amount)`; the contract
/// marks `id` used, pulls `amount` from the caller, and calls the merchant's `deposit(buyer, amount)`
/// as the merchant's allowed relayer. A second transaction with the same id reverts, whatever its
/// nonce or signer, so one top-up can never be credited twice. Merchant reverts bubble up unchanged,
/// so callers decode the merchant's custom errors.
contract OnceDepositor {
    error NotOwner(address caller);
    error NotCaller(address caller);
    error ZeroAddress();
    error DepositIdUsed(bytes32 id);
    error TokenCallFailed();

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event CallerSet(address indexed caller, bool allowed);
    event DepositedOnce(bytes32 indexed id, address indexed merchant, address indexed buyer, uint256 amount, address caller);

    IOnceDepositorToken public immutable token;
    address public owner;
    mapping(address => bool) public isCaller;
    mapping(bytes32 => bool) public used;

    constructor(address token_, address owner_) {
        if (token_ == address(0) || owner_ == address(0)) revert ZeroAddress();
        token = IOnceDepositorToken(token_);
        owner = owner_;
        emit OwnershipTransferred(address(0), owner_);
    }

    function transferOwnership(address newOwner) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function setCaller(address caller, bool allowed) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        if (caller == address(0)) revert ZeroAddress();
        isCaller[caller] = allowed;
        emit CallerSet(caller, allowed);
    }

    function depositOnce(bytes32 id, address merchant, address buyer, uint256 amount) external {
        if (!isCaller[msg.sender]) revert NotCaller(msg.sender);
        if (used[id]) revert DepositIdUsed(id);
        used[id] = true;
        if (!token.transferFrom(msg.sender, address(this), amount)) revert TokenCallFailed();
        if (!token.approve(merchant, amount)) revert TokenCallFailed();
        IMerchantDeposit(merchant).deposit(buyer, amount);
        emit DepositedOnce(id, merchant, buyer, amount, msg.sender);
    }
}
