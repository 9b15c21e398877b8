"""kcore.server"""
