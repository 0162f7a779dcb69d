"""A Docker Engine API stand-in on a free local port, answering /version and /info
with the fields the doctor reads, in the engine's JSON shape."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def info(runtimes=("runc", "io.containerd.runc.v2"), version="24.0.7") -> dict:
    return {"ServerVersion": version, "Containers": 2, "OperatingSystem": "Ubuntu 22.04.4 LTS",
            "DefaultRuntime": "runc", "Runtimes": {r: {"path": r} for r in runtimes}}


class FakeDocker:
    def __init__(self, info_doc: dict):
        doc = info_doc

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                if self.path.endswith("/version"):
                    body = {"ApiVersion": "1.43", "Version": doc["ServerVersion"], "MinAPIVersion": "1.12"}
                elif self.path.endswith("/info"):
                    body = doc
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"tcp://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
