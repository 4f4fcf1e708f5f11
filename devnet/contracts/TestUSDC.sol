// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @title TestUSDC
/// @notice Devnet-only stand-in for USDC: a 6-decimal ERC-20 with EIP-2612 permits and EIP-3009
///         transfer/receive authorizations. Written for this project's local chains; never deploy
///         it anywhere that holds value.
/// @dev The EIP-712 domain uses the token name and a constructor-supplied version, so one build
///      can impersonate the domain of any USDC deployment (name "USDC", version "2" on Base).
contract TestUSDC {
    // --------------------------------------------------------------------------------------------
    // Errors
    // --------------------------------------------------------------------------------------------

    error NotOwner(address caller);
    error NotMinter(address caller);
    error ZeroAddress();
    error InsufficientBalance(address account, uint256 balance, uint256 needed);
    error InsufficientAllowance(address owner, address spender, uint256 allowance, uint256 needed);
    error PermitExpired(uint256 deadline, uint256 timestamp);
    error InvalidSignature();
    error AuthorizationNotYetValid(uint256 validAfter, uint256 timestamp);
    error AuthorizationExpired(uint256 validBefore, uint256 timestamp);
    error AuthorizationAlreadyUsed(address authorizer, bytes32 nonce);
    error CallerMustBePayee(address caller, address payee);

    // --------------------------------------------------------------------------------------------
    // Events
    // --------------------------------------------------------------------------------------------

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event MinterConfigured(address indexed minter, bool allowed);

    // --------------------------------------------------------------------------------------------
    // EIP-712 type hashes
    // --------------------------------------------------------------------------------------------

    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");

    bytes32 public constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    /// @dev secp256k1 group order divided by two; signatures with a larger `s` are malleable twins.
    uint256 private constant SECP256K1N_HALF = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @dev ERC-1271 `isValidSignature(bytes32,bytes)` magic value.
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;

    // --------------------------------------------------------------------------------------------
    // Storage
    // --------------------------------------------------------------------------------------------

    string public name;
    string public symbol;
    /// @notice EIP-712 domain version.
    string public version;
    uint8 public constant decimals = 6;

    uint256 public totalSupply;
    address public owner;

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    /// @notice EIP-2612 permit nonces.
    mapping(address => uint256) public nonces;

    mapping(address => bool) private _minters;
    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;

    bytes32 private immutable _nameHash;
    bytes32 private immutable _versionHash;
    uint256 private immutable _deployChainId;
    bytes32 private immutable _deployDomainSeparator;

    constructor(string memory name_, string memory symbol_, string memory version_) {
        name = name_;
        symbol = symbol_;
        version = version_;
        _nameHash = keccak256(bytes(name_));
        _versionHash = keccak256(bytes(version_));
        _deployChainId = block.chainid;
        _deployDomainSeparator = _buildDomainSeparator(keccak256(bytes(name_)), keccak256(bytes(version_)));
        owner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    // --------------------------------------------------------------------------------------------
    // Administration (devnet conveniences)
    // --------------------------------------------------------------------------------------------

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    /// @notice Lets another contract (e.g. a devnet bridge) mint as well as the owner.
    function configureMinter(address minter, bool allowed) external onlyOwner {
        if (minter == address(0)) revert ZeroAddress();
        _minters[minter] = allowed;
        emit MinterConfigured(minter, allowed);
    }

    function isMinter(address account) external view returns (bool) {
        return account == owner || _minters[account];
    }

    function mint(address to, uint256 amount) external {
        if (msg.sender != owner && !_minters[msg.sender]) revert NotMinter(msg.sender);
        if (to == address(0)) revert ZeroAddress();
        totalSupply += amount;
        unchecked {
            balanceOf[to] += amount; // cannot overflow: bounded by totalSupply
        }
        emit Transfer(address(0), to, amount);
    }

    /// @notice Burns the caller's own tokens.
    function burn(uint256 amount) external {
        uint256 balance = balanceOf[msg.sender];
        if (balance < amount) revert InsufficientBalance(msg.sender, balance, amount);
        unchecked {
            balanceOf[msg.sender] = balance - amount;
            totalSupply -= amount;
        }
        emit Transfer(msg.sender, address(0), amount);
    }

    // --------------------------------------------------------------------------------------------
    // ERC-20
    // --------------------------------------------------------------------------------------------

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        _approve(msg.sender, spender, value);
        return true;
    }

    /// @notice Adds `increment` to the allowance (as USDC's FiatToken does): concurrent exact approvals add up instead of overwriting each other.
    function increaseAllowance(address spender, uint256 increment) external returns (bool) {
        _approve(msg.sender, spender, allowance[msg.sender][spender] + increment);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < value) revert InsufficientAllowance(from, msg.sender, allowed, value);
            unchecked {
                allowance[from][msg.sender] = allowed - value;
            }
        }
        _transfer(from, to, value);
        return true;
    }

    // --------------------------------------------------------------------------------------------
    // EIP-712 / EIP-2612
    // --------------------------------------------------------------------------------------------

    // solhint-disable-next-line func-name-mixedcase
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        if (block.chainid == _deployChainId) return _deployDomainSeparator;
        return _buildDomainSeparator(_nameHash, _versionHash);
    }

    function permit(
        address owner_,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        if (block.timestamp > deadline) revert PermitExpired(deadline, block.timestamp);
        bytes32 structHash;
        unchecked {
            structHash = keccak256(abi.encode(PERMIT_TYPEHASH, owner_, spender, value, nonces[owner_]++, deadline));
        }
        _requireSignedBy(owner_, _digest(structHash), v, r, s);
        _approve(owner_, spender, value);
    }

    // --------------------------------------------------------------------------------------------
    // EIP-3009
    // --------------------------------------------------------------------------------------------

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        bytes32 digest = _authorizationDigest(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce
        );
        _requireSignedBy(from, digest, v, r, s);
        _consumeAuthorization(from, to, value, nonce);
    }

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        bytes32 digest = _authorizationDigest(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce
        );
        _requireSignedBy(from, digest, signature);
        _consumeAuthorization(from, to, value, nonce);
    }

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        if (msg.sender != to) revert CallerMustBePayee(msg.sender, to);
        bytes32 digest = _authorizationDigest(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce
        );
        _requireSignedBy(from, digest, v, r, s);
        _consumeAuthorization(from, to, value, nonce);
    }

    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes calldata signature
    ) external {
        if (msg.sender != to) revert CallerMustBePayee(msg.sender, to);
        bytes32 digest = _authorizationDigest(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce
        );
        _requireSignedBy(from, digest, signature);
        _consumeAuthorization(from, to, value, nonce);
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _requireUnused(authorizer, nonce);
        _requireSignedBy(authorizer, _cancelDigest(authorizer, nonce), v, r, s);
        _markCanceled(authorizer, nonce);
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, bytes calldata signature) external {
        _requireUnused(authorizer, nonce);
        _requireSignedBy(authorizer, _cancelDigest(authorizer, nonce), signature);
        _markCanceled(authorizer, nonce);
    }

    // --------------------------------------------------------------------------------------------
    // Internals
    // --------------------------------------------------------------------------------------------

    function _transfer(address from, address to, uint256 value) private {
        if (to == address(0)) revert ZeroAddress();
        uint256 balance = balanceOf[from];
        if (balance < value) revert InsufficientBalance(from, balance, value);
        unchecked {
            balanceOf[from] = balance - value;
            balanceOf[to] += value; // cannot overflow: bounded by totalSupply
        }
        emit Transfer(from, to, value);
    }

    function _approve(address owner_, address spender, uint256 value) private {
        if (owner_ == address(0) || spender == address(0)) revert ZeroAddress();
        allowance[owner_][spender] = value;
        emit Approval(owner_, spender, value);
    }

    function _buildDomainSeparator(bytes32 nameHash, bytes32 versionHash) private view returns (bytes32) {
        return keccak256(abi.encode(EIP712_DOMAIN_TYPEHASH, nameHash, versionHash, block.chainid, address(this)));
    }

    function _digest(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked(hex"1901", DOMAIN_SEPARATOR(), structHash));
    }

    /// @dev Checks the time window and nonce, and returns the EIP-712 digest of the authorization.
    function _authorizationDigest(
        bytes32 typeHash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce
    ) private view returns (bytes32) {
        if (block.timestamp <= validAfter) revert AuthorizationNotYetValid(validAfter, block.timestamp);
        if (block.timestamp >= validBefore) revert AuthorizationExpired(validBefore, block.timestamp);
        _requireUnused(from, nonce);
        return _digest(keccak256(abi.encode(typeHash, from, to, value, validAfter, validBefore, nonce)));
    }

    function _cancelDigest(address authorizer, bytes32 nonce) private view returns (bytes32) {
        return _digest(keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)));
    }

    function _requireUnused(address authorizer, bytes32 nonce) private view {
        if (_authorizationStates[authorizer][nonce]) revert AuthorizationAlreadyUsed(authorizer, nonce);
    }

    function _consumeAuthorization(address from, address to, uint256 value, bytes32 nonce) private {
        _authorizationStates[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _markCanceled(address authorizer, bytes32 nonce) private {
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    /// @dev ecrecover with the usual hardening: low-s only, v in {27, 28}, never the zero address.
    ///      Returns address(0) for anything unacceptable.
    function _recover(bytes32 digest, uint8 v, bytes32 r, bytes32 s) private pure returns (address) {
        if (uint256(s) > SECP256K1N_HALF) return address(0);
        if (v < 27) v += 27;
        if (v != 27 && v != 28) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function _requireSignedBy(address signer, bytes32 digest, uint8 v, bytes32 r, bytes32 s) private pure {
        address recovered = _recover(digest, v, r, s);
        if (recovered == address(0) || recovered != signer) revert InvalidSignature();
    }

    /// @dev Accepts a 65-byte (r,s,v) or 64-byte EIP-2098 (r,vs) ECDSA signature by `signer`, or, when
    ///      `signer` has code and ECDSA does not match, whatever its ERC-1271 `isValidSignature` accepts.
    function _requireSignedBy(address signer, bytes32 digest, bytes calldata signature) private view {
        if (signer == address(0)) revert InvalidSignature();
        if (signature.length == 65 || signature.length == 64) {
            bytes32 r;
            bytes32 s;
            uint8 v;
            if (signature.length == 65) {
                assembly ("memory-safe") {
                    r := calldataload(signature.offset)
                    s := calldataload(add(signature.offset, 32))
                    v := byte(0, calldataload(add(signature.offset, 64)))
                }
            } else {
                bytes32 vs;
                assembly ("memory-safe") {
                    r := calldataload(signature.offset)
                    vs := calldataload(add(signature.offset, 32))
                }
                s = vs & bytes32(0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff);
                v = uint8(uint256(vs) >> 255) + 27;
            }
            if (_recover(digest, v, r, s) == signer) return;
        }
        if (signer.code.length > 0) {
            (bool ok, bytes memory ret) =
                signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, digest, signature));
            if (ok && ret.length >= 32 && abi.decode(ret, (bytes32)) == bytes32(ERC1271_MAGIC)) return;
        }
        revert InvalidSignature();
    }
}
