"""kcore.controller"""
