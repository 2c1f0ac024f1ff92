#!/usr/bin/env python3
"""A stand-in for NetBox's REST API, for dclctl's import tests and the import benchmark.

Serves GET /api/dcim/{sites,racks,device-types,devices,rack-reservations,power-panels,power-feeds,
power-ports}/ as NetBox 4.x does:
offset paging (`limit`, default PAGINATE_COUNT 50; `offset`), capped at MAX_PAGE_SIZE 1000 also
for `limit=0`, `count`, absolute `next`/`previous` URLs; the filters the importer sends
(`site=<slug>` on racks, devices, rack reservations and the power lists, `slug=<slug>` on
sites); a token check
(`Authorization: Token <t>` for v1 tokens, `Bearer nbt_<key>.<t>` for v2 tokens — an invalid
token answers 403 as NetBox does).

The lists come from a directory of saved list responses (`--dir`, one page each) or are
generated (`--generate RACKS,DEVICES`: one site, racks of 42 U, full- and half-depth devices).
Faults for the tests: `--fail LIST:STATUS:TIMES` answers STATUS to the first TIMES requests of
LIST (e.g. devices:503:2, racks:429:1, device-types:404:99); `--drop-after-page LIST:N` deletes
one row of LIST once N pages were read (a list that changed while it was read);
`--max-page-size N` lowers MAX_PAGE_SIZE as a NetBox administrator can.

`--tls-cert`/`--tls-key` serve HTTPS. Prints "port N" on stdout once it listens (`--port 0` picks a free port). Python 3 standard
library only (Debian's python3).
"""
import argparse
import json
import os
import ssl
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LISTS = ["sites", "racks", "device-types", "devices", "rack-reservations", "power-panels",
         "power-feeds", "power-ports"]
# A directory saved before the power lists were read has none: they are served empty.
OPTIONAL = {"power-panels", "power-feeds", "power-ports"}
PAGINATE_COUNT = 50
MAX_PAGE_SIZE = 1000


def load_dir(path):
    lists = {}
    for name in LISTS:
        if name in OPTIONAL and not os.path.exists(os.path.join(path, name + ".json")):
            lists[name] = []
            continue
        with open(os.path.join(path, name + ".json"), encoding="utf-8") as f:
            lists[name] = json.load(f)["results"]
    return lists


def generate(racks, devices, site_slug="gen1"):
    site = {"id": 1, "name": "Generated 1", "slug": site_slug}
    nested_site = dict(site, display=site["name"])
    out = {name: [] for name in LISTS}
    out["sites"] = [site]
    out["device-types"] = [
        {"id": 1, "manufacturer": {"id": 1, "name": "Dell"}, "model": "R650", "u_height": 1.0,
         "is_full_depth": True, "subdevice_role": None},
        {"id": 2, "manufacturer": {"id": 1, "name": "Dell"}, "model": "R750", "u_height": 2.0,
         "is_full_depth": True, "subdevice_role": None},
        {"id": 3, "manufacturer": {"id": 2, "name": "Juniper"}, "model": "EX4300", "u_height": 1.0,
         "is_full_depth": False, "subdevice_role": None},
    ]
    for r in range(racks):
        out["racks"].append({
            "id": r + 1, "name": "R%03d" % (r + 1), "site": nested_site, "u_height": 42,
            "starting_unit": 1, "desc_units": False,
            "form_factor": {"value": "4-post-cabinet", "label": "4-post cabinet"}})
    # Devices fill each rack from U1 up: 1U servers, 2U servers, and half-depth switches in
    # pairs (front and rear of one unit).
    per_rack = (devices + racks - 1) // racks if racks else 0
    device_id = 0
    for r in range(racks):
        unit = 1
        placed = 0
        while placed < per_rack and device_id < devices:
            kind = device_id % 10
            if kind < 5:
                type_id, height, faces = 1, 1, ["front"]
            elif kind == 5:
                type_id, height, faces = 2, 2, ["front"]
            else:
                type_id, height, faces = 3, 1, ["front", "rear"]
            if unit + height - 1 > 42:
                break
            for face in faces:
                if placed >= per_rack or device_id >= devices:
                    break
                device_id += 1
                placed += 1
                out["devices"].append({
                    "id": device_id, "name": "dev-%05d" % device_id, "site": nested_site,
                    "device_type": {"id": type_id}, "rack": {"id": r + 1, "name": "R%03d" % (r + 1)},
                    "position": float(unit), "face": {"value": face, "label": face.title()},
                    "parent_device": None, "serial": "SN%06d" % device_id,
                    "status": {"value": "active", "label": "Active"}})
            unit += height
    if device_id < devices:
        sys.exit("--generate: %d devices do not fit in %d racks of 42 U" % (devices, racks))
    return out


def site_slug_of(obj, rack_sites, device_sites=None):
    site = obj.get("site")
    if isinstance(site, dict) and "slug" in site:
        return site["slug"]
    rack = obj.get("rack")
    rack_id = rack.get("id") if isinstance(rack, dict) else rack
    if rack_id is not None or device_sites is None:
        return rack_sites.get(rack_id)
    device = obj.get("device")  # a power port: its device's site
    return device_sites.get(device.get("id") if isinstance(device, dict) else device)


class Handler(BaseHTTPRequestHandler):
    server_version = "netbox-standin/1"

    def log_message(self, fmt, *args):  # quiet: the tests read stdout for the port only
        if self.server.verbose:
            sys.stderr.write(fmt % args + "\n")

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        srv = self.server
        with srv.lock:
            srv.requests.append(self.path)
        auth = self.headers.get("Authorization", "")
        expected = ("Bearer " if srv.token.startswith("nbt_") else "Token ") + srv.token
        if auth != expected:
            return self.answer(403, {"detail": "Invalid token"})
        url = urllib.parse.urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        if len(parts) != 3 or parts[:2] != ["api", "dcim"] or parts[2] not in srv.lists:
            return self.answer(404, {"detail": "Not found."})
        name = parts[2]
        with srv.lock:
            fail = srv.failures.get(name)
            if fail and fail[1] > 0:
                fail[1] -= 1
                return self.answer(fail[0], {"detail": "injected failure"})
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        rows = srv.lists[name]
        if name == "sites" and "slug" in query:
            rows = [r for r in rows if r.get("slug") in query["slug"]]
        elif name != "sites" and name != "device-types" and "site" in query:
            rows = [r for r in rows
                    if site_slug_of(r, srv.rack_sites, srv.device_sites) in query["site"]]
        try:
            limit = int(query.get("limit", [PAGINATE_COUNT])[0])
            offset = int(query.get("offset", ["0"])[0])
            if limit < 0 or offset < 0:
                raise ValueError
        except ValueError:
            return self.answer(400, {"detail": "bad limit or offset"})
        limit = srv.max_page_size if limit == 0 else min(limit, srv.max_page_size)
        count = len(rows)
        drop = srv.drop_after.get(name)
        if drop is not None and offset >= drop * limit:
            count -= 1  # one row deleted after the first pages were read
            rows = rows[:offset] + rows[offset + 1:]
        page = rows[offset:offset + limit]
        base = "%s://%s%s" % (srv.scheme, self.headers.get("Host", "127.0.0.1"), url.path)

        def link(new_offset):
            q = {k: v for k, v in query.items() if k not in ("limit", "offset")}
            q["limit"] = [str(limit)]
            if new_offset:
                q["offset"] = [str(new_offset)]
            return base + "?" + urllib.parse.urlencode(q, doseq=True)

        nxt = link(offset + limit) if offset + limit < count else None
        prev = link(max(0, offset - limit)) if offset > 0 else None
        self.answer(200, {"count": count, "next": nxt, "previous": prev, "results": page})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", required=True)
    ap.add_argument("--dir")
    ap.add_argument("--generate", help="RACKS,DEVICES")
    ap.add_argument("--fail", action="append", default=[], help="LIST:STATUS:TIMES")
    ap.add_argument("--drop-after-page", action="append", default=[], help="LIST:N")
    ap.add_argument("--max-page-size", type=int, default=MAX_PAGE_SIZE,
                    help="NetBox's MAX_PAGE_SIZE (1000 unless an administrator lowered it)")
    ap.add_argument("--tls-cert", help="PEM certificate chain: serve HTTPS")
    ap.add_argument("--tls-key", help="its PEM private key")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if bool(args.dir) == bool(args.generate):
        sys.exit("one of --dir and --generate")
    if args.dir:
        lists = load_dir(args.dir)
    else:
        racks, devices = (int(x) for x in args.generate.split(","))
        lists = generate(racks, devices)
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.lists = lists
    srv.token = args.token
    srv.verbose = args.verbose
    srv.scheme = "http"
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        srv.socket = context.wrap_socket(srv.socket, server_side=True)
        srv.scheme = "https"
    srv.max_page_size = args.max_page_size
    srv.lock = threading.Lock()
    srv.requests = []
    srv.rack_sites = {r["id"]: site_slug_of(r, {}) for r in lists["racks"]}
    srv.device_sites = {d["id"]: site_slug_of(d, srv.rack_sites) for d in lists["devices"]}
    srv.failures = {}
    for f in args.fail:
        name, status, times = f.split(":")
        srv.failures[name] = [int(status), int(times)]
    srv.drop_after = {}
    for d in args.drop_after_page:
        name, n = d.split(":")
        srv.drop_after[name] = int(n)
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
