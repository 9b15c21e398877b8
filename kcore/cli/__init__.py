"""kcore.cli"""
