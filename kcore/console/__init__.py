"""The web console served on ``http.listeners``: JSON endpoints over the
broker's own state (api.py routes them) and the static page that reads
them (static/). Nothing here goes through a Kafka client: topic changes
take the handlers' paths (kcore.handlers.topics), groups the coordinator's,
messages the log's read API, rates the counters /metrics exports."""
