"""Loopback ports: find a free one, see whether something answers on one."""
import socket

LOOPBACK = "127.0.0.1"


def is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def free_port(preferred: int, avoid: set[int] = frozenset(), span: int = 200) -> int:
    """The preferred port if it is free, else the next free one after it."""
    for port in range(preferred, preferred + span):
        if port not in avoid and is_free(port):
            return port
    raise RuntimeError(f"no free loopback port in {preferred}..{preferred + span - 1}")


def answers(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout):
            return True
    except OSError:
        return False
