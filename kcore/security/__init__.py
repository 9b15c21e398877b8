"""Authentication that is neither socket nor handler: JAAS config parsing,
the SASL mechanisms as sans-io state machines (bytes in, bytes out), and
SCRAM credentials. Imports nothing of kcore but protocol error codes and
the controller's credential seam, so both handlers and server use it.
"""
