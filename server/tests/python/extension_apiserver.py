"""An aggregated (extension) API server for the aggregation tests: HTTPS on 127.0.0.1 with
the certificate and key given, trusting client certificates of the CA given (the API
server's front-proxy CA). It serves `wardle.example.com/v1alpha1` with one namespaced
resource, `flunders` (and `flunders/status`):
- `GET /apis/wardle.example.com/v1alpha1`: the APIResourceList;
- `GET .../namespaces/<ns>/flunders[/<name>]`: objects that tell what the proxy sent: the
  user headers (`X-Remote-User`, `X-Remote-Group`), the client certificate's common name
  (verified by the CA), the request's User-Agent, method and query;
- `...?watch=true`: two ADDED events, streamed one at a time, then the end;
- `POST .../flunders`: the body sent back, 201;
- `GET /openapi/v3` (its index: the group version at `?hash=<SHA-512 of the document>`),
  `GET /openapi/v3/apis/wardle.example.com/v1alpha1` (the Flunder schema, with field
  descriptions; a stale `hash` is redirected) and `GET /openapi/v2` (the flunders path, a
  `/version/` path outside the group version, the Flunder definition and an `ObjectMeta`
  definition unlike the API server's).
Prints its port, then serves until its standard input closes."""

import hashlib
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


META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
FLUNDER = "com.example.wardle.v1alpha1.Flunder"
GVK = [{"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"}]


def flunder_schema(ref_prefix):
    return {
        "description": "Flunder is a test resource served by the wardle extension server.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of the flunder."},
            "kind": {"type": "string", "description": "Kind of the flunder."},
            "metadata": {"$ref": ref_prefix + META},
            "spec": {
                "description": "FlunderSpec is what a flunder should be.",
                "type": "object",
                "properties": {
                    "reference": {"type": "string",
                                  "description": "Reference names the flunder this one points at."},
                    "fischerReference": {"type": "string",
                                         "description": "FischerReference names a fischer."},
                },
            },
        },
        "x-kubernetes-group-version-kind": GVK,
    }


def v3_document():
    meta = {"description": "ObjectMeta of the wardle server.", "type": "object",
            "properties": {"name": {"type": "string", "description": "Name of the object."}}}
    return json.dumps({
        "openapi": "3.0.0",
        "info": {"title": "Wardle", "version": "v0"},
        "paths": {PREFIX + "/namespaces/{namespace}/flunders": {"get": {
            "operationId": "listWardleFlunders",
            "x-kubernetes-group-version-kind": GVK[0],
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/" + FLUNDER}}}}}}}},
        "components": {"schemas": {FLUNDER: flunder_schema("#/components/schemas/"), META: meta}},
    }, sort_keys=True).encode()


V3_DOC = v3_document()
V3_HASH = hashlib.sha512(V3_DOC).hexdigest().upper()


def v2_document():
    ok = lambda ref: {"200": {"description": "OK", "schema": {"$ref": "#/definitions/" + ref}}}
    return {
        "swagger": "2.0",
        "info": {"title": "Wardle", "version": "v0"},
        "paths": {
            PREFIX + "/namespaces/{namespace}/flunders": {"get": {
                "operationId": "listWardleFlunders", "responses": ok(FLUNDER)}},
            "/version/": {"get": {"operationId": "getWardleVersion", "responses": ok("wardle.Info")}},
        },
        "definitions": {
            FLUNDER: flunder_schema("#/definitions/"),
            META: {"description": "ObjectMeta of the wardle server.", "type": "object"},
            "wardle.Info": {"type": "object"},
        },
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
        if path.startswith("/openapi/"):
            return self.openapi(path, query)
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

    def openapi(self, path, query):
        if path == "/openapi/v3":
            url = "/openapi/v3" + PREFIX + "?hash=" + V3_HASH
            return self.send_json(200, {"paths": {PREFIX[1:]: {"serverRelativeURL": url}}})
        if path == "/openapi/v3" + PREFIX:
            if "hash=" in query and ("hash=" + V3_HASH) not in query:
                self.send_response(301)
                self.send_header("Location", path + "?hash=" + V3_HASH)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("ETag", '"%s"' % V3_HASH)
            self.send_header("Content-Length", str(len(V3_DOC)))
            self.end_headers()
            self.wfile.write(V3_DOC)
            return
        if path == "/openapi/v2":
            return self.send_json(200, v2_document())
        return self.send_json(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                    "reason": "NotFound", "code": 404})

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
