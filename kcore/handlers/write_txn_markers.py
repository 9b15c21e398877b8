"""WriteTxnMarkers (key 27): a transaction coordinator asks this leader to
end a producer's transaction in some of its partitions with a COMMIT or
ABORT control batch (kcore.replication.txn_markers). Answered per
partition once the marker is on the ISR."""
from __future__ import annotations

import asyncio

from kcore.handlers.base import BrokerFacade


async def handle(broker: BrokerFacade, context, request):
    markers = request.body.markers
    writer = broker.replica_manager.txn_markers
    results = await asyncio.gather(*(writer.write_txn_markers(
        marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
        marker.transaction_result,
        [(topic.name, index) for topic in marker.topics for index in topic.partition_indexes])
        for marker in markers))
    return {"markers": [
        {"producer_id": marker.producer_id, "topics": [
            {"name": topic.name, "partitions": [
                {"partition_index": index, "error_code": errors[(topic.name, index)]}
                for index in topic.partition_indexes]}
            for topic in marker.topics]}
        for marker, errors in zip(markers, results, strict=True)]}
