#!/usr/bin/env python3
"""The gateway's contracts (docs/contracts.md) checked by tools this project did not write: PyPI's `jsonschema`
validates JSON against the JSON Schemas of schemas/, `openapi-spec-validator` the OpenAPI document, and
`schemathesis` exercises a real `serve` against it. Run through scripts/check-contracts, which makes the virtualenv.

  contracts.py check --bin BIN [--samples DIR]   every schema, the bundled ones BIN prints, the OpenAPI document,
                                                 the golden events of Fixtures/, the examples of
                                                 Fixtures/contracts/, and the samples the tests left in DIR
  contracts.py validate --as NAME [FILE...]      JSON documents (one a line, or one per file; `-` or nothing:
                                                 standard input) against one contract: `envelope`, `bench/ingest`,
                                                 `database-rows/events`, … (the sample folders' names)
  contracts.py fuzz --bin BIN [--examples N] [--seconds S]
                                                 Schemathesis against `serve` (both listeners, SQLite) with the
                                                 simulator's fake Apple behind it, bounded in examples and time

Validation is strict: every `"additionalProperties": true` of schemas/ — which tells a consumer to ignore keys it
does not know — is read as `false`, so a key the gateway sends that its contract does not name fails here.
"""
import argparse
import copy
import glob
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

REPO = pathlib.Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"

# Sample folder (or --as name) → the schema and, for a part of one, the JSON pointer in it.
CONTRACTS = {
    "event": ("event.schema.json", ""),
    "state": ("state.schema.json", ""),
    "envelope": ("envelope.schema.json", ""),
    "alert": ("alert.schema.json", ""),
    "refund-request": ("refund-request.schema.json", ""),
    "refund-answer": ("refund-answer.schema.json", ""),
    "error": ("error.schema.json", ""),
    "database-rows/events": ("database-rows.schema.json", "/$defs/events"),
    "database-rows/subscriptions": ("database-rows.schema.json", "/$defs/subscriptions"),
    "database-rows/schema_version": ("database-rows.schema.json", "/$defs/schema_version"),
    "migrate": ("migrate.schema.json", ""),
    "backfill": ("backfill.schema.json", ""),
    "migrate-store": ("migrate-store.schema.json", ""),
    "receipts-prefetch": ("receipts-prefetch.schema.json", ""),
}
BENCHMARKS = ["verify", "receipts", "receipt-history", "receipt-scale", "ingest", "soak", "flood", "fsync",
              "delivery-rate", "isolation", "scale"]
for _name in BENCHMARKS:
    CONTRACTS["bench/" + _name] = ("bench.schema.json", "/$defs/" + _name)

# What the tests must have left, at least: every contract the gateway sends or writes, each alert type, each
# database table from both databases, and deliveries of both generations.
REQUIRED_SAMPLES = ["envelope", "alert", "refund-request", "database-rows/events", "database-rows/subscriptions",
                    "database-rows/schema_version", "migrate", "backfill", "migrate-store", "receipts-prefetch"]
REQUIRED_ALERTS = {"delivery.dead_lettered", "deliveries.unconfigured", "consumption.dead_lettered"}
REQUIRED_SOURCES = {"v1", "v1-receipt", "v2"}


def fail(message):
    print("contracts: " + message, file=sys.stderr)
    sys.exit(1)


def closed(schema):
    """`schema` with every `additionalProperties: true` made false: the gateway's own output names no key its
    contract does not."""
    if isinstance(schema, dict):
        return {k: (False if k == "additionalProperties" and v is True else closed(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


def load_schemas():
    schemas = {}
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        with open(path, encoding="utf-8") as f:
            schemas[path.name] = json.load(f)
    return schemas


def registry(schemas, strict=True):
    return Registry().with_resources(
        (name, Resource.from_contents(closed(s) if strict else s, default_specification=DRAFT202012))
        for name, s in schemas.items())


class Checker:
    """Validates documents against the contracts of schemas/ (by reference, the files as they are) and, when given,
    against the bundled documents the binary prints: both must hold."""

    def __init__(self, binary=None):
        self.schemas = load_schemas()
        self.registry = registry(self.schemas)
        self.validators = {}
        self.bundled = {}
        if binary:
            for name in sorted({file for file, _ in CONTRACTS.values()}):
                cli = name.replace(".schema.json", "")
                out = subprocess.run([binary, "schema", cli], capture_output=True, check=True).stdout
                self.bundled[name] = closed(json.loads(out))
        self.count = 0

    def validator(self, contract):
        if contract not in self.validators:
            if contract not in CONTRACTS:
                fail("no contract named %s (known: %s)" % (contract, ", ".join(sorted(CONTRACTS))))
            file, pointer = CONTRACTS[contract]
            pair = [Draft202012Validator({"$ref": file + ("#" + pointer if pointer else "")}, registry=self.registry)]
            if file in self.bundled:
                bundled = self.bundled[file]
                # The bundled document is self-contained: a part of it is reached through a reference into it, beside
                # the definitions the part's own references point to.
                root = bundled if not pointer else {"$schema": bundled["$schema"], "$defs": bundled["$defs"],
                                                    "$ref": "#" + pointer}
                pair.append(Draft202012Validator(root))
            self.validators[contract] = pair
        return self.validators[contract]

    def errors(self, contract, document):
        """Every error, each a line naming where in the document it is."""
        found = []
        for i, v in enumerate(self.validator(contract)):
            for e in sorted(v.iter_errors(document), key=lambda e: list(e.absolute_path)):
                where = "/".join(str(p) for p in e.absolute_path) or "(root)"
                found.append("%s%s: %s" % ("[bundled] " if i else "", where, e.message[:300]))
        # SQLite's `event` column is the event's JSON as text (`contentSchema`, which validators only annotate).
        if contract == "database-rows/events" and isinstance(document, dict) and isinstance(document.get("event"), str):
            try:
                event = json.loads(document["event"])
            except ValueError as e:
                found.append("event: not JSON (%s)" % e)
            else:
                found += ["event/" + line for line in self.errors("event", event)]
        self.count += 1
        return found


def check_schemas(checker, binary):
    """Every schema is a valid 2020-12 schema, as a file and as the binary bundles it; the OpenAPI document too."""
    from openapi_spec_validator import validate as validate_openapi
    from openapi_spec_validator.readers import read_from_filename

    for name, schema in checker.schemas.items():
        Draft202012Validator.check_schema(schema)
        assert schema.get("$schema") == "https://json-schema.org/draft/2020-12/schema", name
    for name, schema in checker.bundled.items():
        Draft202012Validator.check_schema(schema)
        refs = [r for r in refs_in(schema) if not r.startswith("#")]
        if refs:
            fail("`iap-gateway schema %s` refers outside itself: %s" % (name, refs))
    print("schemas: %d files valid JSON Schema 2020-12; %d bundled by the binary, self-contained"
          % (len(checker.schemas), len(checker.bundled)))
    spec, base = read_from_filename(str(SCHEMAS / "openapi.json"))
    validate_openapi(spec, base_uri=base)
    bundled = json.loads(subprocess.run([binary, "schema", "openapi"], capture_output=True, check=True).stdout)
    validate_openapi(bundled)
    refs = [r for r in refs_in(bundled) if not r.startswith("#")]
    if refs:
        fail("`iap-gateway schema openapi` refers outside itself: %s" % refs)
    operations = sum(1 for p in bundled["paths"].values() for m in p if m in ("get", "post", "put", "delete", "patch"))
    print("openapi: schemas/openapi.json and its bundle valid OpenAPI %s (openapi-spec-validator), %d operations"
          % (bundled["openapi"], operations))
    # Every schema the OpenAPI document embeds must still validate what its file validates: the refund answer's
    # examples below go through the OpenAPI copy too by way of the bundle above.
    return bundled


def refs_in(value):
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from refs_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from refs_in(v)


def check_goldens(checker):
    """Every canonical event in the golden outputs of Fixtures/ (`verify`'s JSON beside each sample)."""
    problems, events = [], 0
    for path in sorted(glob.glob(str(REPO / "Fixtures" / "**" / "*.expected.json"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            golden = json.load(f)
        for i, event in enumerate(golden.get("events", []) if isinstance(golden, dict) else []):
            events += 1
            problems += ["%s events[%d] %s" % (os.path.relpath(path, REPO), i, e) for e in checker.errors("event", event)]
    if problems:
        fail("golden events that break event.schema.json:\n  " + "\n  ".join(problems[:40]))
    if events < 50:
        fail("only %d golden events found under Fixtures/" % events)
    print("goldens: %d canonical events of Fixtures/*/*.expected.json valid" % events)


def check_examples(checker):
    """Fixtures/contracts/NAME/{valid,invalid}/*.json: hand-made examples each contract must accept or refuse (the
    Swift tests hold the gateway to the same: what it reads, it reads exactly as its contract says)."""
    root = REPO / "Fixtures" / "contracts"
    total = 0
    for contract_dir in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        for verdict in ("valid", "invalid"):
            for path in sorted((contract_dir / verdict).glob("*.json")):
                with open(path, encoding="utf-8") as f:
                    document = json.load(f)
                errors = checker.errors(contract_dir.name, document)
                total += 1
                if verdict == "valid" and errors:
                    fail("%s must be valid: %s" % (path.relative_to(REPO), errors[:3]))
                if verdict == "invalid" and not errors:
                    fail("%s must be invalid, and is valid" % path.relative_to(REPO))
    print("examples: %d of Fixtures/contracts accepted or refused as they say" % total)


def check_samples(checker, folder):
    folder = pathlib.Path(folder)
    counts, problems = {}, []
    alerts, sources, kinds, backends = set(), set(), set(), set()
    for contract in sorted(CONTRACTS):
        for path in sorted((folder / contract).glob("*.json")):
            with open(path, encoding="utf-8") as f:
                document = json.load(f)
            counts[contract] = counts.get(contract, 0) + 1
            problems += ["%s/%s %s" % (contract, path.name, e) for e in checker.errors(contract, document)]
            if contract == "alert":
                alerts.add(document.get("type"))
            if contract == "envelope":
                sources.add(document["event"].get("source"))
                kinds.add(document["event"].get("kind"))
            if contract == "database-rows/events":
                # SQLite keeps the event as text, PostgreSQL as jsonb.
                backends.add("sqlite" if isinstance(document.get("event"), str) else "postgres")
    unknown = [p.name for p in folder.iterdir() if p.is_dir() and p.name not in {c.split("/")[0] for c in CONTRACTS}]
    if unknown:
        fail("sample folders no contract names: %s" % unknown)
    if problems:
        fail("%d samples break their contract:\n  %s" % (len(problems), "\n  ".join(problems[:60])))
    missing = [c for c in REQUIRED_SAMPLES if not counts.get(c)]
    missing += ["alert " + t for t in sorted(REQUIRED_ALERTS - alerts)]
    missing += ["envelope of source " + s for s in sorted(REQUIRED_SOURCES - sources)]
    missing += ["database rows from " + b for b in sorted({"sqlite", "postgres"} - backends)]
    if missing:
        fail("the tests left no sample of: %s (were they run with IAPGW_CONTRACT_SAMPLES=%s?)"
             % (", ".join(missing), folder))
    print("samples: %d valid — %s" % (sum(counts.values()), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    print("samples: envelopes of sources %s; %d kinds: %s" % (sorted(sources), len(kinds), " ".join(sorted(kinds))))
    print("samples: database rows from %s" % " and ".join(sorted(backends)))


def read_documents(files):
    """JSON documents: a file holding one, or JSON lines (standard input when no file, or `-`)."""
    for name in files or ["-"]:
        text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
        try:
            yield name, json.loads(text)
        except ValueError:
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    yield "%s:%d" % (name, n), json.loads(line)


def command_validate(args):
    checker = Checker(args.bin)
    n = 0
    for where, document in read_documents(args.files):
        errors = checker.errors(getattr(args, "as"), document)
        if errors:
            fail("%s breaks %s:\n  %s" % (where, getattr(args, "as"), "\n  ".join(errors[:20])))
        n += 1
    if n == 0:
        fail("nothing to validate")
    print("contracts: %d document%s valid against %s" % (n, "" if n == 1 else "s", getattr(args, "as")))


def command_check(args):
    checker = Checker(args.bin)
    check_schemas(checker, args.bin)
    check_goldens(checker)
    check_examples(checker)
    if args.samples:
        check_samples(checker, args.samples)
    print("contracts: %d documents validated" % checker.count)


# MARK: fuzz


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, seconds, headers=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=2) as r:
                return r.status
        except Exception:
            time.sleep(0.2)
    fail("nothing answered %s within %d s" % (url, seconds))


def command_fuzz(args):
    work = pathlib.Path(tempfile.mkdtemp(prefix="iapgw-contracts-"))
    binary = os.path.abspath(args.bin)
    processes = []

    def stop():
        for p in reversed(processes):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    try:
        pki = json.loads(subprocess.run([binary, "simulate", "pki", "--out", str(work / "pki")], check=True,
                                        capture_output=True).stdout)
        apple_port, public_port, admin_port, receiver_port = free_port(), free_port(), free_port(), free_port()
        log = open(work / "processes.log", "w")
        processes.append(subprocess.Popen(
            [binary, "simulate", "serve-apple", "--listen", "127.0.0.1:%d" % apple_port, "--pki", str(work / "pki"),
             "--rate-limit", "off"], stdout=log, stderr=log))
        processes.append(subprocess.Popen(
            [binary, "receive", "--listen", "127.0.0.1:%d" % receiver_port], stdout=subprocess.DEVNULL, stderr=log))
        token = "contracts-admin-token-0123456789abcdef"
        secret = "5f1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d"
        key = pathlib.Path(pki["api_key"]).read_text()
        config = {
            "listen": "127.0.0.1:%d" % public_port,
            "admin": {"listen": "127.0.0.1:%d" % admin_port, "token_env": "CONTRACTS_ADMIN_TOKEN"},
            "store": {"sqlite": str(work / "gateway.db")},
            "trust": {"extra_roots": [pki["root"]]},
            "verify_receipt": {"production_url": "http://127.0.0.1:%d/verifyReceipt" % apple_port,
                               "sandbox_url": "http://127.0.0.1:%d/sandbox/verifyReceipt" % apple_port},
            "app_store_api": {"production_url": "http://127.0.0.1:%d" % apple_port,
                              "sandbox_url": "http://127.0.0.1:%d" % apple_port,
                              "issuer_id": pki["issuer_id"], "key_id": pki["key_id"],
                              "private_key_env": "CONTRACTS_API_KEY"},
            "apps": [{"bundle_id": "com.example.contracts", "environments": ["sandbox"],
                      "shared_secret_env": ["CONTRACTS_SECRET"], "authority": "v2", "downstreams": ["main"]}],
            "downstreams": [{"name": "main", "url": "http://127.0.0.1:%d/events" % receiver_port,
                             "environments": ["sandbox"], "secret_env": "CONTRACTS_WEBHOOK_SECRET"}],
        }
        (work / "gateway.json").write_text(json.dumps(config, indent=2))
        env = dict(os.environ, CONTRACTS_ADMIN_TOKEN=token, CONTRACTS_SECRET=secret, CONTRACTS_API_KEY=key,
                   CONTRACTS_WEBHOOK_SECRET="whsec_" + "Y29udHJhY3RzLXdlYmhvb2stc2VjcmV0LTAxMjM0NTY3")
        processes.append(subprocess.Popen([binary, "serve", "--config", str(work / "gateway.json")],
                                          stdout=log, stderr=log, env=env))
        wait_for("http://127.0.0.1:%d/healthz" % public_port, 60)
        wait_for("http://127.0.0.1:%d/admin/status" % admin_port, 30, {"Authorization": "Bearer " + token})
        # A story first, so that the admin API has subscriptions, deliveries and a report to answer with.
        subprocess.run([binary, "simulate", "lifecycle", "auto-renew", "--pki", str(work / "pki"),
                        "--bundle-id", "com.example.contracts", "--shared-secret-env", "CONTRACTS_SECRET",
                        "--to", "http://127.0.0.1:%d/notifications" % public_port, "--version", "v2",
                        "--speed", "max"], check=True, env=env, stdout=subprocess.DEVNULL)
        spec = work / "openapi.json"
        with urllib.request.urlopen(urllib.request.Request(
                "http://127.0.0.1:%d/admin/openapi.json" % admin_port,
                headers={"Authorization": "Bearer " + token}), timeout=10) as r:
            spec.write_bytes(r.read())
        if spec.read_bytes() != subprocess.run([binary, "schema", "openapi"], capture_output=True, check=True).stdout:
            fail("GET /admin/openapi.json differs from `iap-gateway schema openapi`")
        st = str(pathlib.Path(sys.executable).parent / "schemathesis")
        common = [st, "--config-file", str(REPO / "scripts" / "schemathesis.toml"), "run", str(spec),
                  "--max-examples", str(args.examples), "--max-time", str(args.seconds), "--request-timeout", "10",
                  "--max-response-time", "10", "--seed", str(args.seed), "--workers", "1",
                  "--suppress-health-check", "all", "--report", "junit", "--report-dir", str(work / "report")]
        hooks = dict(env, SCHEMATHESIS_HOOKS="contracts_hooks", PYTHONPATH=str(REPO / "scripts"))
        status = 0
        figures = {"operations": 0, "cases": 0, "failures": 0}
        for tag, port, extra in (("public", public_port, []),
                                 ("admin", admin_port, ["-H", "Authorization: Bearer " + token])):
            print("schemathesis: the %s listener (127.0.0.1:%d)" % (tag, port), flush=True)
            run = subprocess.Popen(common + ["--url", "http://127.0.0.1:%d" % port, "--include-tag", tag] + extra,
                                   env=hooks, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in run.stdout:
                print(line, end="", flush=True)
                found = re.search(r"Operations:\s+(\d+) selected", line)
                if found:
                    figures["operations"] += int(found.group(1))
                found = re.search(r"(\d+) generated", line)
                if found:
                    figures["cases"] += int(found.group(1))
                found = re.search(r"found (\d+) unique failures", line)
                if found:
                    figures["failures"] += int(found.group(1))
            status = status or run.wait(timeout=args.seconds + 240)
        for p in processes:
            if p.poll() is not None:
                fail("a process of the run stopped by itself (exit %s): see %s" % (p.returncode, work / "processes.log"))
        print("schemathesis: %(operations)d operations, %(cases)d test cases, %(failures)d failures" % figures)
        if status:
            fail("schemathesis found failures (above)")
    finally:
        stop()
        if not args.keep:
            subprocess.run(["rm", "-rf", str(work)])
        else:
            print("kept: %s" % work)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("--bin", required=True)
    c.add_argument("--samples")
    v = sub.add_parser("validate")
    v.add_argument("--as", required=True)
    v.add_argument("--bin")
    v.add_argument("files", nargs="*")
    f = sub.add_parser("fuzz")
    f.add_argument("--bin", required=True)
    f.add_argument("--examples", type=int, default=50)
    f.add_argument("--seconds", type=int, default=90)
    f.add_argument("--seed", type=int, default=52)
    f.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    {"check": command_check, "validate": command_validate, "fuzz": command_fuzz}[args.command](args)


if __name__ == "__main__":
    main()
