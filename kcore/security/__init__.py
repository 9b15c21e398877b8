"""Authorization (ACLs and the authorizer) and client quotas.

Below handlers, above log: handlers ask ``broker.authorizer`` (None when
``authorizer.class.name`` is empty) and ``broker.quotas``; both keep their
state where the controller keeps cluster metadata (store.py).
"""
