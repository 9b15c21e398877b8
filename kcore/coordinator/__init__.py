"""kcore.coordinator"""
