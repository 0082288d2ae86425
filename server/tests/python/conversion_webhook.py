"""A conversion webhook for the custom resource tests: HTTPS on 127.0.0.1 with the
certificate and key given, converting `Shaft` objects between v1 (`spec.size`) and v2
(`spec.length`). An object labelled `convert: refuse` is refused (result Failure); one
labelled `convert: bad-label` comes back with an invalid label key added. Prints
its port, then serves until its standard input closes."""

import http.server
import json
import ssl
import sys
import threading


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        to = request["desiredAPIVersion"]
        converted, refused = [], False
        for obj in request["objects"]:
            labels = obj.get("metadata", {}).get("labels", {})
            refused |= labels.get("convert") == "refuse"
            if labels.get("convert") == "bad-label":
                obj["metadata"]["labels"]["bad key!"] = "x"
            spec = obj.setdefault("spec", {})
            if to.endswith("/v2") and "size" in spec:
                spec["length"] = spec.pop("size")
            elif to.endswith("/v1") and "length" in spec:
                spec["size"] = spec.pop("length")
            obj["apiVersion"] = to
            converted.append(obj)
        result = {"status": "Success"}
        if refused:
            result = {"status": "Failure", "message": "refused by the test webhook"}
            converted = []
        body = json.dumps({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": result,
                         "convertedObjects": converted},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    cert, key = sys.argv[1], sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
