"""Test support. The broker process, free ports, ZooKeeper and the cluster
are kcore.testing's (public, shipped with the package); the modules here
add what only this project's tests need."""
from kcore.testing.broker import BrokerProcess
from kcore.testing.ports import free_port, free_ports

__all__ = ["BrokerProcess", "free_port", "free_ports"]
