"""A local HTTPS server for trying the `webfetch` example: it answers every GET
with the headers of the request, one `Name: value` line each (so you can see
what airlock sent, and what it redacts from the tool's result).

    python3 components/webfetch/echo_server.py CERT KEY [PORT]

CERT and KEY are the server's certificate and key in PEM (docs/policy.md,
"Credentials the tool never sees", makes a throwaway CA and both with
openssl). It listens on 127.0.0.1, port 8443 unless PORT says otherwise.
"""

import http.server
import ssl
import sys


class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = "".join(f"{name}: {value}\n" for name, value in self.headers.items()).encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    cert, key = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 8443
    server = http.server.HTTPServer(("127.0.0.1", port), Echo)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"echoing request headers on https://127.0.0.1:{port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
