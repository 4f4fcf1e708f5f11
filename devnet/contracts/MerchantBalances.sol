// SPDX-License-Identifier: UNLICENSED
pragma solidity ^0.8.24;

/// @dev The slice of an ERC-20 token the merchant contract uses.
interface IMerchantToken {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function transfer(address to, uint256 value) external returns (bool);
}

/// @title MerchantBalances
/// @notice The merchant side of the top-up gateway (DESIGN §3): per-buyer balances (available and
///         reserved) in one token, per-buyer credit limits (a default plus overrides) and a minimum
///         first deposit. Allow-listed relayers credit a buyer with `deposit(buyer, amount)`, which
///         pulls `amount` of the token from the relayer (the wallet that received the settled
///         payment), so a deposit either moves the funds and credits them, or reverts and moves
///         nothing (the relayer can then refund the payer).
contract MerchantBalances {
    error NotOwner(address caller);
    error NotRelayer(address caller);
    error ZeroAddress();
    error ZeroAmount();
    error CreditLimitExceeded(address buyer, uint256 balance, uint256 amount, uint256 creditLimit);
    error BelowMinimumDeposit(address buyer, uint256 amount, uint256 minimum);
    error InsufficientAvailable(address buyer, uint256 available, uint256 amount);
    error InsufficientReserved(address buyer, uint256 reserved, uint256 amount);
    error TokenCallFailed();

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event RelayerSet(address indexed relayer, bool allowed);
    event Deposited(address indexed buyer, address indexed relayer, uint256 amount, uint256 available);
    event Reserved(address indexed buyer, uint256 amount);
    event Released(address indexed buyer, uint256 amount);
    event Captured(address indexed buyer, uint256 amount, address to);
    event CreditLimitSet(address indexed buyer, uint256 limit);
    event DefaultCreditLimitSet(uint256 limit);
    event MinFirstDepositSet(uint256 minimum);

    IMerchantToken public immutable token;
    address public owner;
    uint256 public defaultCreditLimit;
    uint256 public minFirstDeposit;

    mapping(address => bool) private _relayers;
    mapping(address => uint256) public available;
    mapping(address => uint256) public reserved;
    /// @dev 0 means "use defaultCreditLimit"; a real limit of zero is set with `blocked`.
    mapping(address => uint256) private _creditLimit;
    mapping(address => bool) public blocked;

    constructor(address token_, address owner_, uint256 defaultCreditLimit_, uint256 minFirstDeposit_) {
        if (token_ == address(0) || owner_ == address(0)) revert ZeroAddress();
        token = IMerchantToken(token_);
        owner = owner_;
        defaultCreditLimit = defaultCreditLimit_;
        minFirstDeposit = minFirstDeposit_;
        emit OwnershipTransferred(address(0), owner_);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    modifier onlyRelayer() {
        if (!_relayers[msg.sender]) revert NotRelayer(msg.sender);
        _;
    }

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function setRelayer(address relayer, bool allowed) external onlyOwner {
        if (relayer == address(0)) revert ZeroAddress();
        _relayers[relayer] = allowed;
        emit RelayerSet(relayer, allowed);
    }

    function isRelayer(address account) external view returns (bool) {
        return _relayers[account];
    }

    function setDefaultCreditLimit(uint256 limit) external onlyOwner {
        defaultCreditLimit = limit;
        emit DefaultCreditLimitSet(limit);
    }

    /// @notice Per-buyer override; `limit` 0 returns the buyer to the default.
    function setCreditLimit(address buyer, uint256 limit) external onlyOwner {
        _creditLimit[buyer] = limit;
        emit CreditLimitSet(buyer, limit);
    }

    function setBlocked(address buyer, bool value) external onlyOwner {
        blocked[buyer] = value;
    }

    function setMinFirstDeposit(uint256 minimum) external onlyOwner {
        minFirstDeposit = minimum;
        emit MinFirstDepositSet(minimum);
    }

    function creditLimitOf(address buyer) public view returns (uint256) {
        if (blocked[buyer]) return 0;
        uint256 own = _creditLimit[buyer];
        return own == 0 ? defaultCreditLimit : own;
    }

    /// @notice Available plus reserved: what counts against the credit limit.
    function balanceOf(address buyer) public view returns (uint256) {
        return available[buyer] + reserved[buyer];
    }

    /// @notice The minimum of the next deposit: `minFirstDeposit` until the buyer has a balance.
    function minDepositOf(address buyer) public view returns (uint256) {
        return balanceOf(buyer) == 0 ? minFirstDeposit : 0;
    }

    /// @notice Credits `amount` to `buyer`, pulling it from the calling relayer (allowance needed).
    ///         Reverts, moving nothing, when the credit limit or the minimum first deposit forbids it.
    function deposit(address buyer, uint256 amount) external onlyRelayer {
        if (buyer == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        uint256 balance = balanceOf(buyer);
        uint256 limit = creditLimitOf(buyer);
        if (balance + amount > limit) revert CreditLimitExceeded(buyer, balance, amount, limit);
        if (balance == 0 && amount < minFirstDeposit) revert BelowMinimumDeposit(buyer, amount, minFirstDeposit);
        available[buyer] += amount;
        if (!token.transferFrom(msg.sender, address(this), amount)) revert TokenCallFailed();
        emit Deposited(buyer, msg.sender, amount, available[buyer]);
    }

    /// @notice Moves `amount` of the buyer's available balance to reserved (e.g. an order in flight).
    function reserve(address buyer, uint256 amount) external onlyRelayer {
        uint256 a = available[buyer];
        if (a < amount) revert InsufficientAvailable(buyer, a, amount);
        available[buyer] = a - amount;
        reserved[buyer] += amount;
        emit Reserved(buyer, amount);
    }

    /// @notice Returns reserved funds to available.
    function release(address buyer, uint256 amount) external onlyRelayer {
        uint256 r = reserved[buyer];
        if (r < amount) revert InsufficientReserved(buyer, r, amount);
        reserved[buyer] = r - amount;
        available[buyer] += amount;
        emit Released(buyer, amount);
    }

    /// @notice Spends reserved funds: they leave the buyer's balance and go to `to` (the merchant).
    function capture(address buyer, uint256 amount, address to) external onlyOwner {
        uint256 r = reserved[buyer];
        if (r < amount) revert InsufficientReserved(buyer, r, amount);
        reserved[buyer] = r - amount;
        if (!token.transfer(to, amount)) revert TokenCallFailed();
        emit Captured(buyer, amount, to);
    }
}
