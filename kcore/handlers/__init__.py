"""kcore.handlers"""
