"""Process helpers: the port a server is told to bind a moment later."""

from __future__ import annotations

import socket
from pathlib import Path

from models.process import free_port


def test_a_free_port_is_below_the_ephemeral_range_and_bindable():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= port < low for port in ports)
    assert len(ports) > 1  # not one fixed port that two servers would share
    for port in ports:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
