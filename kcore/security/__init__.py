"""Security's pure model: neither socket, handler nor store.

Authentication: JAAS config parsing, the SASL mechanisms as sans-io state
machines (bytes in, bytes out), and SCRAM credentials (jaas.py, plain.py,
scram.py). Authorization and quotas: the ACL model and authorizer (acl.py,
authorizer.py) and client quotas (quotas.py).

Layer: below client/ (which speaks SASL and builds ACL and quota
requests) and everything above it; it imports nothing of kcore outside
security/, so any layer may use it. Handlers ask
``broker.authorizer`` (None when ``authorizer.class.name`` is empty) and
``broker.quotas``; where their state is kept, beside the cluster metadata,
is kcore/metadata_store/.
"""
