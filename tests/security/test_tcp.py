"""`gpulens serve --tcp` opens no port: a socket would let any local process run code as the
user through `gpulens.profileCell`, and every client starts the server over stdio."""

from __future__ import annotations

import socket
import subprocess

from security_helpers import GPULENS


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_serve_tcp_is_refused_with_one_line_and_listens_nowhere() -> None:
    port = _free_port()
    process = subprocess.Popen(
        [GPULENS, "serve", "--tcp", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        listening = _listening(port)
        process.kill()
        process.communicate()
        raise AssertionError(f"`serve --tcp` kept running (listening: {listening})") from None
    assert process.returncode == 2
    assert stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "--tcp" in lines[0] and "stdio" in lines[0], stderr
    assert not _listening(port)


def test_serve_help_offers_no_socket() -> None:
    done = subprocess.run(
        [GPULENS, "serve", "--help"], capture_output=True, text=True, timeout=30, check=True
    )
    assert "--tcp" not in done.stdout
    assert "stdio" in done.stdout
