"""kcore.replication"""
