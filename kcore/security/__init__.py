"""Security that is neither socket nor handler.

Authentication: JAAS config parsing, the SASL mechanisms as sans-io state
machines (bytes in, bytes out), and SCRAM credentials (jaas.py, plain.py,
scram.py); they import nothing of kcore but protocol error codes and the
controller's credential seam, so both handlers and server use them.

Authorization and quotas: the ACL model and authorizer (acl.py,
authorizer.py) and client quotas (quotas.py), below handlers, above log:
handlers ask ``broker.authorizer`` (None when ``authorizer.class.name`` is
empty) and ``broker.quotas``; both keep their state where the controller
keeps cluster metadata (store.py, zk_store.py).
"""
