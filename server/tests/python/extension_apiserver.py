"""An aggregated (extension) API server for the aggregation tests: HTTPS on 127.0.0.1 with
the certificate and key given, trusting client certificates of the CA given (the API
server's front-proxy CA). It serves `wardle.example.com/v1alpha1` with one namespaced
resource, `flunders` (and `flunders/status`):
- `GET /apis/wardle.example.com/v1alpha1`: the APIResourceList;
- `GET .../namespaces/<ns>/flunders[/<name>]`: objects that tell what the proxy sent: the
  user headers (`X-Remote-User`, `X-Remote-Group`), the client certificate's common name
  (verified by the CA), the request's User-Agent, method and query;
- `...?watch=true`: two ADDED events, streamed one at a time, then the end;
- `POST .../flunders`: the body sent back, 201.
Prints its port, then serves until its standard input closes."""

import http.server
import json
import ssl
import sys
import threading
import time

GV = "wardle.example.com/v1alpha1"
PREFIX = "/apis/" + GV


def resource_list():
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GV,
        "resources": [
            {"name": "flunders", "singularName": "flunder", "namespaced": True,
             "kind": "Flunder", "verbs": ["create", "get", "list", "watch"],
             "shortNames": ["fl"], "categories": ["all"]},
            {"name": "flunders/status", "singularName": "", "namespaced": True,
             "kind": "Flunder", "verbs": ["get"]},
        ],
    }


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def seen(self):
        cert = self.connection.getpeercert() or {}
        cn = ""
        for rdn in cert.get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    cn = v
        path, _, query = self.path.partition("?")
        return {
            "user": self.headers.get("X-Remote-User", ""),
            "uid": self.headers.get("X-Remote-Uid", ""),
            "groups": ",".join(self.headers.get_all("X-Remote-Group") or []),
            "clientCert": cn,
            "userAgent": self.headers.get("User-Agent", ""),
            "authorization": self.headers.get("Authorization", ""),
            "method": self.command,
            "query": query,
        }

    def flunder(self, ns, name):
        return {"apiVersion": GV, "kind": "Flunder",
                "metadata": {"name": name, "namespace": ns,
                             "annotations": {"seen": json.dumps(self.seen(), sort_keys=True)}}}

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path in (PREFIX, PREFIX + "/"):
            return self.send_json(200, resource_list())
        parts = path[len(PREFIX):].strip("/").split("/")
        if not path.startswith(PREFIX + "/") or len(parts) < 3 or parts[0] != "namespaces" \
                or parts[2] != "flunders":
            return self.send_json(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                        "reason": "NotFound", "code": 404,
                                        "message": "the server could not find the requested resource"})
        ns = parts[1]
        if len(parts) >= 4:
            return self.send_json(200, self.flunder(ns, parts[3]))
        if "watch=true" in query or "watch=1" in query:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for name in ("w1", "w2"):
                line = json.dumps({"type": "ADDED", "object": self.flunder(ns, name)}).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_json(200, {"apiVersion": GV, "kind": "FlunderList", "metadata": {},
                             "items": [self.flunder(ns, "one")]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        body.setdefault("metadata", {}).setdefault("annotations", {})["seen"] = \
            json.dumps(self.seen(), sort_keys=True)
        self.send_json(201, body)

    def log_message(self, *args):
        pass


def main():
    cert, key, client_ca = sys.argv[1], sys.argv[2], sys.argv[3]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    tls.load_verify_locations(client_ca)
    tls.verify_mode = ssl.CERT_OPTIONAL
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
