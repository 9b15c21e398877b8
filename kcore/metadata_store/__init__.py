"""Where the cluster metadata is stored, one module per backend.

- node_file.py: a node's metadata file, ``__cluster_metadata.json``
  (topics, leader epochs, the node's processes, ACLs, quotas, dynamic
  broker configs), the store of a single node and of the processes of a
  node without ZooKeeper; file.py: the stores kept in it and beside it
  (SCRAM credentials, producer id blocks).
- zk_client.py: the ZooKeeper client of a cluster; zookeeper.py: the
  stores kept in Kafka's znodes (ACLs, quotas, dynamic broker configs,
  SCRAM credentials, producer id blocks).
- base.py: the seams the broker uses (SecurityStore, CredentialStore,
  ProducerIdSource), whatever the backend.

Layer: below controller/, whose controllers keep topics and partition
states in the same two backends, and above security/, whose pure models
(ACL bindings, quota entities, SCRAM credentials) it stores; it imports
nothing of client/, replication/ or anything higher. Kafka draws the same
line: ``kafka.zk`` (KafkaZkClient, ZkData) sits under both the controller
and the authorizer.
"""
