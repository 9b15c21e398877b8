"""kcore.log"""
