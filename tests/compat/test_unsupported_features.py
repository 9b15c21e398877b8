"""A feature kcore does not implement is named as missing, not as a
permissions problem: transactions (UNSUPPORTED_VERSION from InitProducerId
with a transactional id; their APIs absent from ApiVersions)."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.error import KafkaError
from kafka import KafkaProducer
from kafka import errors as kafka_errors

from kcore.protocol.api_keys import ApiKey
from kcore.protocol.errors import ErrorCode
from tests.support.wire import WireClient

TRANSACTION_APIS = {ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
                    ApiKey.TXN_OFFSET_COMMIT}
# librdkafka retries InitProducerId until init_transactions' timeout.
INIT_TIMEOUT_S = 3.0


def test_transactional_init_producer_id_is_unsupported_and_transaction_apis_are_not_advertised(
        shared_broker):
    client = WireClient(shared_broker.port)
    advertised = {key.api_key for key in client.request(ApiKey.API_VERSIONS, 3, {
        "client_software_name": "kcore-tests", "client_software_version": "1"}).api_keys}
    assert ApiKey.INIT_PRODUCER_ID in advertised and not TRANSACTION_APIS & advertised
    response = client.request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": "tx",
                                                           "transaction_timeout_ms": 60000})
    assert (response.error_code, response.producer_id) == (ErrorCode.UNSUPPORTED_VERSION, -1)
    idempotent = client.request(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                             "transaction_timeout_ms": 60000})
    assert idempotent.error_code == ErrorCode.NONE and idempotent.producer_id >= 0


def test_librdkafka_init_transactions_reports_unsupported_version(shared_broker):
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "transactional.id": "cf-tx"})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(INIT_TIMEOUT_S)
    assert raised.value.args[0].code() == KafkaError.UNSUPPORTED_VERSION


def test_kafka_python_init_transactions_fails_at_once_naming_unsupported_version(shared_broker):
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, transactional_id="kp-tx")
    try:
        with pytest.raises(kafka_errors.KafkaError, match="UnsupportedVersionError"):
            producer.init_transactions()
    finally:
        producer.close(timeout=5)
