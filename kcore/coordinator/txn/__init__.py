"""The transaction coordinator (KIP-98): transactional producers'
state in ``__transaction_state``, and the markers that commit or abort."""
