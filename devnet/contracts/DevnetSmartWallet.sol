// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @title DevnetSmartWallet
/// @notice The devnet's smart-contract wallet for x402 buyers: one owner key, EIP-1271 signatures.
///         `isValidSignature(hash, sig)` accepts a 65-byte low-s ECDSA signature by the owner over
///         `keccak256(abi.encode(address(this), block.chainid, hash))`, so a signature made for one
///         wallet is never valid for another wallet (or the owner's own account) with the same key.
///         The owner moves funds with `execute`. Devnet only: it stands in for the embedded smart
///         wallets buyers pay from (no ERC-4337 entry point, no upgrades).
contract DevnetSmartWallet {
    error NotOwner(address caller);
    error CallFailed(bytes returnData);

    bytes4 private constant MAGIC = 0x1626ba7e; // bytes4(keccak256("isValidSignature(bytes32,bytes)"))
    uint256 private constant MAX_S = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    /// @notice The digest the owner signs for `hash` on this wallet.
    function replaySafeHash(bytes32 hash) public view returns (bytes32) {
        return keccak256(abi.encode(address(this), block.chainid, hash));
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > MAX_S || (v != 27 && v != 28)) return 0xffffffff;
        address signer = ecrecover(replaySafeHash(hash), v, r, s);
        return signer != address(0) && signer == owner ? MAGIC : bytes4(0xffffffff);
    }

    /// @notice The owner's call from this wallet (approvals, transfers).
    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        (bool ok, bytes memory ret) = to.call{value: value}(data);
        if (!ok) revert CallFailed(ret);
        return ret;
    }

    receive() external payable {}
}

/// @title DevnetSmartWalletFactory
/// @notice Deploys DevnetSmartWallet at a CREATE2 address fixed by (owner, salt), so a wallet has its
///         address before it exists (EIP-6492 counterfactual signatures name this factory and the
///         `createAccount` calldata). A repeated `createAccount` returns the existing wallet.
contract DevnetSmartWalletFactory {
    event AccountCreated(address indexed account, address indexed owner, uint256 salt);

    function createAccount(address owner, uint256 salt) external returns (address account) {
        account = getAddress(owner, salt);
        if (account.code.length > 0) return account;
        new DevnetSmartWallet{salt: bytes32(salt)}(owner);
        emit AccountCreated(account, owner, salt);
    }

    function getAddress(address owner, uint256 salt) public view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(DevnetSmartWallet).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), bytes32(salt), codeHash)))));
    }
}
