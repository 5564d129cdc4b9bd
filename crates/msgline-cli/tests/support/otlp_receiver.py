#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for msgline's tests: a real HTTP server in its own process.

It takes what an OpenTelemetry exporter posts to /v1/traces (Content-Type
application/x-protobuf, an ExportTraceServiceRequest) and decodes it with the
`opentelemetry-proto` package, code that has nothing to do with msgline's own.

    python3 otlp_receiver.py        prints {"listening": "127.0.0.1:PORT"}
                                    (or {"error": "..."} and exits 2 without the package)

    POST /v1/traces   an export; answered 200 with an empty ExportTraceServiceResponse
    GET  /spans       every span so far, oldest first: {"trace_id", "span_id", "parent_span_id",
                      "name", "service", "attributes": {key: value}}, ids in hex
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
except ImportError as error:
    print(json.dumps({"error": f"opentelemetry-proto is not installed ({error}): "
                      "python3 -m pip install opentelemetry-proto==1.45.2"}), flush=True)
    sys.exit(2)

lock = threading.Lock()
spans = []


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value_of(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def decoded(body):
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    out = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: value_of(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append({
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "service": resource.get("service.name"),
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "attributes": {kv.key: value_of(kv.value) for kv in span.attributes},
                })
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/traces":
            return self.answer(404, b"not found", "text/plain")
        if self.headers.get("Content-Type") != "application/x-protobuf":
            return self.answer(415, b"only application/x-protobuf", "text/plain")
        try:
            got = decoded(body)
        except Exception as error:  # a body that is not an export: the test sees it in /spans
            got = [{"error": str(error)}]
        with lock:
            spans.extend(got)
        self.answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

    def do_GET(self):
        if self.path != "/spans":
            return self.answer(404, b"not found", "text/plain")
        with lock:
            body = json.dumps(spans).encode()
        self.answer(200, body, "application/json")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(json.dumps({"listening": f"127.0.0.1:{server.server_address[1]}"}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
