"""The fake model servers that drive real hosts offline (``conformance/fakes.py``).

A host may hang up in the middle of a streamed reply (it exits, or cancels the
request): the fake must go on serving and say nothing, since anything it prints lands
in a conformance run's output, where a traceback reads as a failure of the run.
"""

from __future__ import annotations

import json
import socket
import struct
import time
import urllib.error
import urllib.request

import pytest

from conformance.fakes import FakeChat, FakeGemini, FakeMessages, FakeResponses


def _post(port: int, path: str, body: dict) -> bytes:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def _hang_up_mid_stream(port: int, path: str, body: dict) -> None:
    """Send a streamed request, read nothing, then reset the connection."""
    payload = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        time.sleep(0.3)  # the fake has filled the socket's buffers and waits to write more
        # Linger 0: close sends a reset, as the kernel does for a host killed mid-stream.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_a_host_that_hangs_up_mid_reply_is_not_reported_and_the_fake_serves_on(capsys):
    # 16 MB of text: more than loopback's socket buffers hold, so the fake is still
    # writing the reply when the reset comes, whatever the machine's speed.
    long_text = "word " * (16 * 1024 * 1024 // 5)
    cases = [
        (FakeMessages, "/v1/messages", {"stream": True, "model": "m", "messages": []}),
        (FakeResponses, "/v1/responses", {"stream": True, "model": "m", "input": []}),
        (FakeChat, "/v1/chat/completions", {"stream": True, "model": "m", "messages": []}),
        (FakeGemini, f"{GEMINI}:streamGenerateContent?alt=sse", {"contents": []}),
    ]
    for fake_class, path, body in cases:
        with fake_class() as fake:
            fake.reply(long_text, "after the hang-up")
            _hang_up_mid_stream(fake.port, path, body)
            time.sleep(0.3)  # the fake's handler meets the reset
            answer = _post(fake.port, path, {**body, "stream": False})
            assert b"after the hang-up" in answer, fake_class.__name__
            assert len(fake.requests) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "ConnectionResetError" not in captured.err


GEMINI = "/v1beta/models/fake-model"


def sse_data(raw: bytes) -> list[dict]:
    return [json.loads(line[5:]) for line in raw.decode().splitlines() if line.startswith("data:")]


def test_the_gemini_fake_answers_a_turn_from_the_queue_and_side_calls_apart():
    """Gemini CLI's own side questions (``:generateContent``) and token counts take no
    reply meant for the Turn; a queued int is that HTTP error, a dict a function call."""
    with FakeGemini() as fake:
        fake.reply("the answer", {"tool": "record", "arguments": {"a": 1}}, 429)
        assert json.loads(_post(fake.port, f"{GEMINI}:countTokens", {})) == {"totalTokens": 1}
        side = json.loads(_post(fake.port, f"{GEMINI}:generateContent", {"contents": ["x"]}))
        assert side["candidates"][0]["finishReason"] == "STOP"
        stream = f"{GEMINI}:streamGenerateContent?alt=sse"
        [chunk] = sse_data(_post(fake.port, stream, {"contents": ["turn"]}))
        assert chunk["candidates"][0]["content"]["parts"] == [{"text": "the answer"}]
        [chunk] = sse_data(_post(fake.port, stream, {"contents": ["turn"]}))
        call = {"functionCall": {"name": "record", "args": {"a": 1}}}
        assert chunk["candidates"][0]["content"]["parts"] == [call]
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(fake.port, stream, {"contents": ["turn"]})
        assert refused.value.code == 429
        assert json.loads(refused.value.read())["error"]["status"] == "RESOURCE_EXHAUSTED"
        assert fake.requests == [{"contents": ["turn"]}] * 3
        assert fake.side_requests == [{"contents": ["x"]}]


def test_a_fault_of_the_fake_itself_is_still_printed(capsys):
    with FakeMessages() as fake:
        try:
            raise ValueError("a bug in the fake")
        except ValueError:
            fake._server.handle_error(None, ("127.0.0.1", 0))
    assert "ValueError: a bug in the fake" in capsys.readouterr().err
