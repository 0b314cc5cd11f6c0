"""A small OTLP/HTTP receiver for airlock's telemetry tests.

Listens on a random loopback port (printed first, as `port N`), decodes
every POST to /v1/traces and /v1/metrics with the official OpenTelemetry
protobuf definitions (the `opentelemetry-proto` package, pinned in
tests/clients/requirements.txt), and prints one JSON line per span and per
metric data point on stdout. Never a grep of bytes: what is not a valid
export request fails to decode and answers 400.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def spans(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "span": span.name,
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "kind": span.kind,
                    "attributes": attributes(span.attributes),
                    "events": [
                        {"name": e.name, "attributes": attributes(e.attributes)}
                        for e in span.events
                    ],
                    "links": [l.trace_id.hex() for l in span.links],
                    "status": span.status.code,
                    "service": resource.get("service.name"),
                }


def points(request):
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                data = getattr(metric, metric.WhichOneof("data"))
                for point in data.data_points:
                    yield {
                        "metric": metric.name,
                        "unit": metric.unit,
                        "count": getattr(point, "count", None),
                        "attributes": attributes(point.attributes),
                    }


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        try:
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                lines, answer = spans(request), ExportTraceServiceResponse()
            elif self.path == "/v1/metrics":
                request = ExportMetricsServiceRequest()
                request.ParseFromString(body)
                lines, answer = points(request), ExportMetricsServiceResponse()
            else:
                self.send_response(404)
                self.end_headers()
                return
            for line in lines:
                print(json.dumps(line), flush=True)
        except Exception as err:  # a body that is not an export request
            print(json.dumps({"undecodable": self.path, "error": str(err)}), flush=True)
            self.send_response(400)
            self.end_headers()
            return
        out = answer.SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    print(f"port {server.server_address[1]}", flush=True)
    sys.stdout.flush()
    server.serve_forever()
