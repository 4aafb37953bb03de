"""A local OpenAI-compatible chat server (127.0.0.1) that answers like
llama-cpp-python's server does for a small model: a named ``tool_choice`` and
``json_object`` output work; ``tool_choice="required"``/``"any"`` and
``json_schema`` fail with HTTP 500. ``tools=False`` makes every request with
tools fail (a server without tool calling). Replies come from ``script``: a
JSON-able object per request, or a function of the request body giving one
(``raw_text=True``: a string is sent as the reply's text as it is, not as JSON)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LocalChatServer:
    def __init__(self, script: list[Any], *, tools: bool = True, raw_text: bool = False) -> None:
        self.script = list(script)
        self.tools = tools
        self.raw_text = raw_text
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                status, reply = server.answer(body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> LocalChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        choice = body.get("tool_choice")
        fmt = (body.get("response_format") or {}).get("type")
        if choice in ("required", "any") or fmt == "json_schema":
            return 500, {"error": {"message": "Unsupported tool_choice / response_format"}}
        if body.get("tools") and not self.tools:
            return 500, {"error": {"message": "tools are not supported by this model"}}
        step = self.script.pop(0)
        value = step(body) if callable(step) else step
        payload = value if self.raw_text and isinstance(value, str) else json.dumps(value)
        if body.get("tools") and isinstance(choice, dict):
            name = choice["function"]["name"]
            call = {
                "id": "call-1",
                "type": "function",
                "function": {"name": name, "arguments": payload},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        else:
            message = {"role": "assistant", "content": payload}
        return 200, {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "local"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
