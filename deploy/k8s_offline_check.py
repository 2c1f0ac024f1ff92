#!/usr/bin/env python3
"""Offline checks of dcl's Kubernetes manifests, for deploy/verify-manifests.

Subcommands (each reads the rendered manifests, "kubectl kustomize" output, from a file):
  rules FILE              dcl's own deployment rules (below); exit 1 on any violation
  crd FILE CRD_DIR        CloudNativePG objects against the CRD schemas in CRD_DIR (unknown
                          fields, types, enums, required fields); exit 1 on any violation
  discovery PORT_FILE     serve a minimal Kubernetes discovery API on 127.0.0.1 (a free
                          port, written to PORT_FILE) so that "kubectl apply --dry-run=client"
                          can map kinds to resources without a cluster; every object GET
                          answers 404, so kubectl treats each object as new

Without a cluster there is no Kubernetes schema to validate against (kubectl's validation
downloads it from the API server), so "rules" checks what this project promises instead.
"""
import http.server
import json
import socketserver
import sys

import yaml

SERVER_PORTS = {"dcl-reservation": 50051, "dcl-occupancy": 50052, "dcl-moves": 50053}
# Secrets the CloudNativePG operator creates for the Cluster "dcl-pg" (not in the manifests).
OPERATOR_SECRETS = {"dcl-pg-app", "dcl-pg-ca"}
WORKLOAD_KINDS = {"Deployment", "Job"}

# The API groups, versions and resources the manifests may use (Kubernetes 1.25+, where
# policy/v1 and batch/v1 exist; CloudNativePG postgresql.cnpg.io/v1).
DISCOVERY = {
    "v1": [("namespaces", "Namespace", False), ("secrets", "Secret", True),
           ("services", "Service", True), ("configmaps", "ConfigMap", True)],
    "apps/v1": [("deployments", "Deployment", True)],
    "batch/v1": [("jobs", "Job", True), ("cronjobs", "CronJob", True)],
    "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    "networking.k8s.io/v1": [("networkpolicies", "NetworkPolicy", True)],
    "postgresql.cnpg.io/v1": [("clusters", "Cluster", True), ("poolers", "Pooler", True),
                              ("scheduledbackups", "ScheduledBackup", True)],
}


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def check_rules(docs):
    errors = []

    def fail(obj, message):
        errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {message}")

    by_kind = {}
    for d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            if key not in d:
                errors.append(f"a document without {key}: {str(d)[:80]}")
        by_kind.setdefault(d.get("kind"), []).append(d)
    if errors:
        return errors
    secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}
    deployments = by_kind.get("Deployment", [])

    for obj in [o for kind in WORKLOAD_KINDS for o in by_kind.get(kind, [])]:
        spec = pod_spec(obj)
        labels = obj["spec"]["template"]["metadata"].get("labels", {})
        if labels.get("app.kubernetes.io/part-of") != "dcl":
            fail(obj, "pod template lacks app.kubernetes.io/part-of=dcl (NetworkPolicies)")
        pod_sc = spec.get("securityContext", {})
        if pod_sc.get("runAsNonRoot") is not True:
            fail(obj, "pod securityContext.runAsNonRoot is not true")
        if spec.get("automountServiceAccountToken") is not False:
            fail(obj, "mounts a service account token it does not use")
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec["containers"]:
            sc = c.get("securityContext", {})
            if sc.get("readOnlyRootFilesystem") is not True:
                fail(obj, f"container {c['name']}: root filesystem not read-only")
            if sc.get("allowPrivilegeEscalation") is not False:
                fail(obj, f"container {c['name']}: privilege escalation allowed")
            if sc.get("capabilities", {}).get("drop") != ["ALL"]:
                fail(obj, f"container {c['name']}: capabilities not dropped (ALL)")
            res = c.get("resources", {})
            if not res.get("requests", {}).get("cpu") or not res.get("requests", {}).get("memory"):
                fail(obj, f"container {c['name']}: no cpu/memory request")
            if not res.get("limits", {}).get("memory"):
                fail(obj, f"container {c['name']}: no memory limit")
            if not c.get("command", [""])[0].startswith("/opt/dcl/bin/"):
                fail(obj, f"container {c['name']}: command is not a dcl binary")
            for env in c.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if not ref:
                    continue
                name, key = ref["name"], ref["key"]
                if name in OPERATOR_SECRETS:
                    continue
                data = {**secrets.get(name, {}).get("data", {}),
                        **secrets.get(name, {}).get("stringData", {})}
                if key not in data:
                    fail(obj, f"env {env['name']}: Secret {name} has no key {key}")
            for mount in c.get("volumeMounts", []):
                volume = volumes.get(mount["name"])
                if volume is None:
                    fail(obj, f"mounts undefined volume {mount['name']}")
                    continue
                secret = volume.get("secret", {}).get("secretName")
                if secret and secret not in secrets and secret not in OPERATOR_SECRETS:
                    fail(obj, f"volume {mount['name']}: no Secret {secret} in the manifests")
            # Sessions the pooler cannot keep: migrate's advisory lock (its whole URL) and the
            # moves server's LISTEN (its watch URL, which it must have).
            name = obj["metadata"]["name"]
            session_vars = {"dcl-migrate": "DCL_DATABASE_URL",
                            "dcl-moves": "DCL_WATCH_DATABASE_URL"}.get(name)
            env_keys = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef", {}).get("key")
                        for e in c.get("env", [])}
            if session_vars and env_keys.get(session_vars) != "direct-url":
                fail(obj, f"{session_vars} must be the direct URL, not the pooler")
            # Each server's token cache listens for revocations on a session of its own.
            if name in SERVER_PORTS and env_keys.get("DCL_TOKEN_CACHE_DATABASE_URL") != "direct-url":
                fail(obj, "DCL_TOKEN_CACHE_DATABASE_URL must be the direct URL (the token "
                          "cache's LISTEN), not the pooler")
            # Behind the transaction pooler a session-level SET does not stay with the client:
            # the pool must send its timeouts per transaction.
            values = {e["name"]: e.get("value") for e in c.get("env", [])}
            if env_keys.get("DCL_DATABASE_URL") == "pooled-url" and \
                    values.get("DCL_DATABASE_POOLER") != "transaction":
                fail(obj, "DCL_DATABASE_URL is the pooler, but DCL_DATABASE_POOLER is not "
                          "transaction")

    for name, port in SERVER_PORTS.items():
        deployment = next((d for d in deployments if d["metadata"]["name"] == name), None)
        if deployment is None:
            errors.append(f"Deployment/{name} is missing")
            continue
        if deployment["spec"].get("replicas", 1) < 2:
            fail(deployment, "fewer than 2 replicas")
        c = pod_spec(deployment)["containers"][0]
        if [p["containerPort"] for p in c.get("ports", [])
                if p.get("name") not in ("metrics", "http")] != [port]:
            fail(deployment, f"container port is not {port}")
        if f"--listen=0.0.0.0:{port}" not in c.get("args", []):
            fail(deployment, f"does not listen on 0.0.0.0:{port}")
        for probe in ("readinessProbe", "livenessProbe"):
            handler = c.get(probe, {})
            ok = handler.get("grpc", {}).get("port") == port or \
                handler.get("tcpSocket", {}).get("port") in (port, "grpc")
            if not ok:
                fail(deployment, f"{probe} does not check port {port}")
        tls_args = [a for a in c.get("args", []) if a.startswith("--tls_")]
        if tls_args and "grpc" in c.get("readinessProbe", {}):
            fail(deployment, "TLS on the port, but the kubelet's gRPC probe speaks plaintext")
        grace = pod_spec(deployment).get("terminationGracePeriodSeconds", 30)
        drain = next((int(a.split("=")[1]) for a in c.get("args", [])
                      if a.startswith("--shutdown_grace_seconds=")), 10)
        if grace <= drain:
            fail(deployment, f"terminationGracePeriodSeconds {grace} <= drain grace {drain}")
        template_labels = deployment["spec"]["template"]["metadata"]["labels"]
        if not any(matches(s["spec"]["selector"], template_labels)
                   for s in by_kind.get("Service", [])):
            fail(deployment, "no Service selects its pods")
        if not any(matches(p["spec"]["selector"].get("matchLabels"), template_labels)
                   for p in by_kind.get("PodDisruptionBudget", [])):
            fail(deployment, "no PodDisruptionBudget selects its pods")
        allowed = [n for n in by_kind.get("NetworkPolicy", [])
                   if matches(n["spec"]["podSelector"].get("matchLabels"), template_labels)
                   and any(p.get("port") == port for rule in n["spec"].get("ingress", [])
                           for p in rule.get("ports", []))]
        if not allowed:
            fail(deployment, f"no NetworkPolicy admits its port {port}")

    # Metrics: a Deployment whose binary serves them names the port "metrics", announces it to
    # Prometheus' pod discovery, and has a NetworkPolicy that admits it.
    for deployment in deployments:
        c = pod_spec(deployment)["containers"][0]
        listen = [a.split("=", 1)[1] for a in c.get("args", [])
                  if a.startswith("--metrics_listen=")]
        if not listen:
            continue
        metrics_port = int(listen[0].rsplit(":", 1)[1])
        if not listen[0].startswith("0.0.0.0:"):
            fail(deployment, "metrics listen on an address other than 0.0.0.0: not scrapable")
        if [p["containerPort"] for p in c.get("ports", []) if p.get("name") == "metrics"] \
                != [metrics_port]:
            fail(deployment, f"no container port named metrics on {metrics_port}")
        annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
        if annotations.get("prometheus.io/port") != str(metrics_port):
            fail(deployment, f"prometheus.io/port annotation is not {metrics_port}")
        template_labels = deployment["spec"]["template"]["metadata"]["labels"]
        if not any(matches(n["spec"]["podSelector"].get("matchLabels"), template_labels)
                   and any(p.get("port") == metrics_port
                           for rule in n["spec"].get("ingress", [])
                           for p in rule.get("ports", []))
                   for n in by_kind.get("NetworkPolicy", [])):
            fail(deployment, f"no NetworkPolicy admits its metrics port {metrics_port}")

    # HTTP/JSON (the Connect protocol, and the console): a Deployment whose binary serves it
    # names the port "http", its Service exposes it, and a NetworkPolicy admits it.
    for deployment in deployments:
        c = pod_spec(deployment)["containers"][0]
        listen = [a.split("=", 1)[1] for a in c.get("args", [])
                  if a.startswith("--http_listen=")]
        if not listen:
            continue
        http_port = int(listen[0].rsplit(":", 1)[1])
        if not listen[0].startswith("0.0.0.0:"):
            fail(deployment, "HTTP listens on an address other than 0.0.0.0: unreachable")
        if [p["containerPort"] for p in c.get("ports", []) if p.get("name") == "http"] \
                != [http_port]:
            fail(deployment, f"no container port named http on {http_port}")
        template_labels = deployment["spec"]["template"]["metadata"]["labels"]
        if not any(matches(s["spec"]["selector"], template_labels)
                   and any(p.get("name") == "http" and p.get("port") == http_port
                           for p in s["spec"].get("ports", []))
                   for s in by_kind.get("Service", [])):
            fail(deployment, f"no Service exposes its HTTP port {http_port} (named http)")
        if not any(matches(n["spec"]["podSelector"].get("matchLabels"), template_labels)
                   and any(p.get("port") == http_port
                           for rule in n["spec"].get("ingress", [])
                           for p in rule.get("ports", []))
                   for n in by_kind.get("NetworkPolicy", [])):
            fail(deployment, f"no NetworkPolicy admits its HTTP port {http_port}")

    for kind in ("Cluster", "Pooler", "Job"):
        if not by_kind.get(kind):
            errors.append(f"no {kind} in the manifests")
    for cluster in by_kind.get("Cluster", []):
        if cluster["spec"].get("instances") != 3:
            fail(cluster, "not three instances")
    for pooler in by_kind.get("Pooler", []):
        if pooler["spec"]["pgbouncer"].get("poolMode") != "transaction":
            fail(pooler, "pool mode is not transaction")
    return errors


def check_crd(docs, crd_dir):
    """Checks CloudNativePG objects against the openAPIV3Schema of their CRD."""
    import glob
    schemas = {}
    for path in glob.glob(f"{crd_dir}/*.yaml"):
        crd = load(path)[0]
        for version in crd["spec"]["versions"]:
            schemas[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = \
                version["schema"]["openAPIV3Schema"]
    errors = []

    def walk(value, schema, where):
        if schema.get("x-kubernetes-int-or-string"):
            if not isinstance(value, (int, str)):
                errors.append(f"{where}: not an int or string")
            return
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            return
        kind = schema.get("type")
        if "enum" in schema and value not in schema["enum"]:
            errors.append(f"{where}: {value!r} not one of {schema['enum']}")
        if kind == "object" or "properties" in schema:
            if not isinstance(value, dict):
                errors.append(f"{where}: not an object")
                return
            for required in schema.get("required", []):
                if required not in value:
                    errors.append(f"{where}: missing required field {required}")
            props = schema.get("properties")
            extra = schema.get("additionalProperties")
            for key, item in value.items():
                if props is not None and key in props:
                    walk(item, props[key], f"{where}.{key}")
                elif isinstance(extra, dict):
                    walk(item, extra, f"{where}.{key}")
                elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                    errors.append(f"{where}: unknown field {key}")
        elif kind == "array":
            if not isinstance(value, list):
                errors.append(f"{where}: not an array")
                return
            for i, item in enumerate(value):
                walk(item, schema.get("items", {}), f"{where}[{i}]")
        elif kind == "string" and not isinstance(value, str):
            errors.append(f"{where}: not a string")
        elif kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
            errors.append(f"{where}: not an integer")
        elif kind == "boolean" and not isinstance(value, bool):
            errors.append(f"{where}: not a boolean")

    checked = 0
    for d in docs:
        if not d["apiVersion"].startswith("postgresql.cnpg.io/"):
            continue
        schema = schemas.get((d["apiVersion"], d["kind"]))
        if schema is None:
            errors.append(f"{d['kind']}/{d['metadata']['name']}: no CRD for {d['apiVersion']}")
            continue
        body = {k: v for k, v in d.items() if k not in ("apiVersion", "kind", "metadata")}
        top = {**schema,
               "properties": {k: v for k, v in schema["properties"].items()
                              if k not in ("apiVersion", "kind", "metadata")},
               "required": [r for r in schema.get("required", []) if r != "metadata"]}
        walk(body, top, f"{d['kind']}/{d['metadata']['name']}")
        checked += 1
    if checked == 0:
        errors.append("no CloudNativePG object found to check")
    return errors


def serve_discovery(port_file):
    groups = {}
    for group_version in DISCOVERY:
        if "/" in group_version:
            group, version = group_version.split("/")
            groups.setdefault(group, []).append(version)

    def resource_list(group_version):
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
                "resources": [{"name": name, "singularName": kind.lower(), "namespaced": ns,
                               "kind": kind, "verbs": ["create", "get", "list", "patch"]}
                              for name, kind, ns in DISCOVERY[group_version]]}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?")[0].rstrip("/")
            body, status = None, 200
            if path == "/api":
                body = {"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                        "serverAddress": "127.0.0.1"}]}
            elif path == "/apis":
                body = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                    {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}
                                             for v in vs],
                     "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                    for g, vs in groups.items()]}
            elif path == "/api/v1":
                body = resource_list("v1")
            elif path.startswith("/apis/") and path[len("/apis/"):] in DISCOVERY:
                body = resource_list(path[len("/apis/"):])
            elif path == "/version":
                body = {"major": "1", "minor": "30", "gitVersion": "v1.30.0-offline-discovery"}
            else:
                status = 404
                body = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "NotFound", "code": 404, "message": "offline: nothing exists"}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    with socketserver.TCPServer(("127.0.0.1", 0), Handler) as server:
        with open(port_file, "w") as f:
            f.write(str(server.server_address[1]))
        server.serve_forever()


def main(argv):
    if len(argv) == 3 and argv[1] == "rules":
        errors = check_rules(load(argv[2]))
    elif len(argv) == 4 and argv[1] == "crd":
        errors = check_crd(load(argv[2]), argv[3])
    elif len(argv) == 3 and argv[1] == "discovery":
        serve_discovery(argv[2])
        return 0
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for e in errors:
        print(f"  {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
