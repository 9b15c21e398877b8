"""ListTransactions (key 66): the transactional ids this broker
coordinates, filtered by state names, producer ids and (v1) how long the
transaction has been open. Admin clients ask every broker."""
from __future__ import annotations

from kcore.coordinator.txn.state import TransactionState
from kcore.handlers.authz import txn_allowed
from kcore.handlers.base import BrokerFacade
from kcore.protocol.errors import ErrorCode
from kcore.security.acl import AclOperation

KNOWN_STATES = frozenset(state.kafka_name for state in TransactionState)


async def handle(broker: BrokerFacade, context, request):
    body = request.body
    states = set(body.state_filters)
    duration = body.duration_filter if request.api_version >= 1 else -1
    listed = broker.txn_coordinator.list_transactions(states & KNOWN_STATES,
                                                      set(body.producer_id_filters), duration)
    if states and not states & KNOWN_STATES:
        listed = []  # only unknown states asked for: nothing matches
    listed = [m for m in listed
              if txn_allowed(broker, context, AclOperation.DESCRIBE, m.transactional_id)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE,
            "unknown_state_filters": sorted(states - KNOWN_STATES),
            "transaction_states": [{"transactional_id": m.transactional_id,
                                    "producer_id": m.producer_id,
                                    "transaction_state": m.state.kafka_name}
                                   for m in sorted(listed, key=lambda m: m.transactional_id)]}
