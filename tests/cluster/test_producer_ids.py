"""Producer ids in a cluster come from blocks claimed in ZooKeeper: two
brokers never hand out the same id, however they interleave."""
import asyncio

from kcore.metadata_store.base import BLOCK_SIZE
from kcore.metadata_store.zk_client import ZkClient
from kcore.metadata_store.zookeeper import ZkProducerIdManager


def test_brokers_claim_distinct_blocks(zookeeper):
    async def main():
        clients = [ZkClient(zookeeper.connect_string + "/ids", session_timeout_s=5)
                   for _ in range(2)]
        for client in clients:
            await client.start()
        try:
            managers = [ZkProducerIdManager(client, broker_id)
                        for broker_id, client in enumerate(clients)]
            ids = await asyncio.gather(*[m.next_id() for _ in range(1500) for m in managers])
            assert len(set(ids)) == len(ids) == 3000
            assert sorted({i // BLOCK_SIZE for i in ids}) == [0, 1, 2, 3]
            later = ZkProducerIdManager(clients[0], 0)  # a restarted broker
            assert await later.next_id() == 4 * BLOCK_SIZE
        finally:
            for client in clients:
                await client.close()
    asyncio.run(main())
