"""The schema registry built into the broker: Confluent Schema Registry's
REST API over a compacted ``_schemas`` topic, Avro, JSON Schema and
Protobuf with Confluent's compatibility rules, and the produce-path check
that records carry a registered schema id (docs/schema-registry.md)."""
