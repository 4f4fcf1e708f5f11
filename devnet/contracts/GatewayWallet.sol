// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

interface IERC20Minimal {
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// @title GatewayWallet
/// @notice Devnet gateway wallet for batched nanopayments, written for this project. Depositors
///         hold a per-token balance here; buyers pay sellers by signing EIP-3009-shaped
///         `TransferWithAuthorization` messages whose EIP-712 domain is this contract
///         (name `GatewayWalletBatched`, version `1`); an operator (the upstream gateway) applies
///         accepted authorizations in batches. Withdrawals are trustless but delayed: initiate,
///         wait until `withdrawalBlock`, withdraw.
/// @dev Balances per (token, depositor): `available` (spendable) and a pending withdrawal amount
///      that counts as `withdrawing` before its `withdrawalBlock` and as `withdrawable` from then
///      on, so `totalBalance` is always the sum of the three views. A batch may draw on a payer's
///      pending withdrawal after its available balance: the gateway accepted the payment before the
///      withdrawal started, and the delay exists so accepted payments still settle.
contract GatewayWallet {
    error NotOwner(address caller);
    error NotOperator(address caller);
    error UnsupportedToken(address token);
    error ZeroAmount();
    error InsufficientAvailable(uint256 available, uint256 needed);
    error NothingToWithdraw();
    error WithdrawalNotReady(uint256 withdrawalBlock, uint256 blockNumber);
    error TokenTransferFailed();

    event Deposited(address indexed token, address indexed depositor, address indexed sender, uint256 value);
    event WithdrawalInitiated(address indexed token, address indexed depositor, uint256 value, uint256 totalWithdrawing, uint256 withdrawalBlock);
    event Withdrawn(address indexed token, address indexed depositor, uint256 value);
    event PaymentSettled(address indexed token, address indexed from, address indexed to, uint256 value, bytes32 nonce);
    /// @dev Reasons: 1 bad signature, 2 not yet valid, 3 expired, 4 nonce used, 5 insufficient balance.
    event PaymentRejected(address indexed token, address indexed from, bytes32 indexed nonce, uint8 reason);
    event OperatorConfigured(address indexed operator, bool allowed);
    event TokenConfigured(address indexed token, bool supported);
    event WithdrawalDelayChanged(uint256 blocks);

    struct Payment {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        bytes signature;
    }

    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    uint256 private constant SECP256K1N_HALF = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public owner;
    /// @notice Blocks between `initiateWithdrawal` and the first block `withdraw` succeeds in.
    uint256 public withdrawalDelay;

    mapping(address => bool) public isOperator;
    mapping(address => bool) private supported;
    mapping(address => mapping(address => uint256)) private available;
    mapping(address => mapping(address => uint256)) private pendingWithdrawal;
    mapping(address => mapping(address => uint256)) private withdrawalBlocks;
    /// @notice Single-use payment nonces per payer.
    mapping(address => mapping(bytes32 => bool)) public authorizationState;

    constructor(address owner_, uint256 withdrawalDelay_) {
        owner = owner_;
        withdrawalDelay = withdrawalDelay_;
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    // ---- administration ----------------------------------------------------------------------

    function setOperator(address operator, bool allowed) external onlyOwner {
        isOperator[operator] = allowed;
        emit OperatorConfigured(operator, allowed);
    }

    function setTokenSupported(address token, bool allowed) external onlyOwner {
        supported[token] = allowed;
        emit TokenConfigured(token, allowed);
    }

    function setWithdrawalDelay(uint256 blocks) external onlyOwner {
        withdrawalDelay = blocks;
        emit WithdrawalDelayChanged(blocks);
    }

    // ---- deposits and withdrawals --------------------------------------------------------------

    function deposit(address token, uint256 value) external {
        _deposit(token, msg.sender, value);
    }

    /// @notice Deposits the caller's tokens into `depositor`'s balance.
    function depositFor(address token, address depositor, uint256 value) external {
        _deposit(token, depositor, value);
    }

    /// @notice Moves `value` from available to withdrawing; the whole pending amount becomes
    ///         withdrawable at block.number + withdrawalDelay (a later initiation restarts the wait).
    function initiateWithdrawal(address token, uint256 value) external {
        if (value == 0) revert ZeroAmount();
        uint256 have = available[token][msg.sender];
        if (have < value) revert InsufficientAvailable(have, value);
        available[token][msg.sender] = have - value;
        uint256 pending = pendingWithdrawal[token][msg.sender] + value;
        pendingWithdrawal[token][msg.sender] = pending;
        uint256 at = block.number + withdrawalDelay;
        withdrawalBlocks[token][msg.sender] = at;
        emit WithdrawalInitiated(token, msg.sender, value, pending, at);
    }

    /// @notice Sends the caller's whole withdrawable balance to the caller.
    function withdraw(address token) external {
        uint256 pending = pendingWithdrawal[token][msg.sender];
        if (pending == 0) revert NothingToWithdraw();
        uint256 at = withdrawalBlocks[token][msg.sender];
        if (block.number < at) revert WithdrawalNotReady(at, block.number);
        pendingWithdrawal[token][msg.sender] = 0;
        withdrawalBlocks[token][msg.sender] = 0;
        if (!IERC20Minimal(token).transfer(msg.sender, pending)) revert TokenTransferFailed();
        emit Withdrawn(token, msg.sender, pending);
    }

    // ---- views ----------------------------------------------------------------------------------

    function isTokenSupported(address token) external view returns (bool) {
        return supported[token];
    }

    function availableBalance(address token, address depositor) external view returns (uint256) {
        return available[token][depositor];
    }

    function withdrawingBalance(address token, address depositor) public view returns (uint256) {
        return block.number < withdrawalBlocks[token][depositor] ? pendingWithdrawal[token][depositor] : 0;
    }

    function withdrawableBalance(address token, address depositor) public view returns (uint256) {
        return block.number >= withdrawalBlocks[token][depositor] ? pendingWithdrawal[token][depositor] : 0;
    }

    function totalBalance(address token, address depositor) external view returns (uint256) {
        return available[token][depositor] + pendingWithdrawal[token][depositor];
    }

    function withdrawalBlock(address token, address depositor) external view returns (uint256) {
        return withdrawalBlocks[token][depositor];
    }

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(EIP712_DOMAIN_TYPEHASH, keccak256("GatewayWalletBatched"), keccak256("1"), block.chainid, address(this))
        );
    }

    // ---- batched settlement ----------------------------------------------------------------------

    /// @notice Applies buyer-signed payments in `token`, each moving balance from payer to payee
    ///         inside this wallet. An invalid payment is skipped with `PaymentRejected` so that one
    ///         bad entry never blocks the rest of the batch. Returns how many settled.
    function settleBatch(address token, Payment[] calldata payments) external returns (uint256 settled) {
        if (!isOperator[msg.sender]) revert NotOperator(msg.sender);
        if (!supported[token]) revert UnsupportedToken(token);
        for (uint256 i = 0; i < payments.length; i++) {
            uint8 reason = _settleOne(token, payments[i]);
            if (reason == 0) settled++;
            else emit PaymentRejected(token, payments[i].from, payments[i].nonce, reason);
        }
    }

    function _settleOne(address token, Payment calldata p) private returns (uint8) {
        if (_signer(p) != p.from || p.from == address(0)) return 1;
        if (block.timestamp <= p.validAfter) return 2;
        if (block.timestamp >= p.validBefore) return 3;
        if (authorizationState[p.from][p.nonce]) return 4;
        uint256 have = available[token][p.from];
        uint256 pending = pendingWithdrawal[token][p.from];
        if (have + pending < p.value) return 5;
        authorizationState[p.from][p.nonce] = true;
        if (have >= p.value) {
            available[token][p.from] = have - p.value;
        } else {
            available[token][p.from] = 0;
            pendingWithdrawal[token][p.from] = pending - (p.value - have);
        }
        available[token][p.to] += p.value;
        emit PaymentSettled(token, p.from, p.to, p.value, p.nonce);
        return 0;
    }

    function _signer(Payment calldata p) private view returns (address) {
        if (p.signature.length != 65) return address(0);
        bytes32 structHash = keccak256(
            abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, p.from, p.to, p.value, p.validAfter, p.validBefore, p.nonce)
        );
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        bytes32 r = bytes32(p.signature[0:32]);
        bytes32 s = bytes32(p.signature[32:64]);
        uint8 v = uint8(p.signature[64]);
        if (v < 27) v += 27;
        if (uint256(s) > SECP256K1N_HALF || (v != 27 && v != 28)) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function _deposit(address token, address depositor, uint256 value) private {
        if (!supported[token]) revert UnsupportedToken(token);
        if (value == 0) revert ZeroAmount();
        if (!IERC20Minimal(token).transferFrom(msg.sender, address(this), value)) revert TokenTransferFailed();
        available[token][depositor] += value;
        emit Deposited(token, depositor, msg.sender, value);
    }
}
