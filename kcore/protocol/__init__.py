"""kcore.protocol"""
