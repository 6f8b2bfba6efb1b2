#!/usr/bin/env python3
"""Writes the committed seed corpora (Fuzz/Corpus/<target>/) from the repository's Fixtures/ plus handcrafted
inputs. Deterministic: a re-run on unchanged fixtures gives no diff. Run from anywhere: python3 Fuzz/Corpus/make_seeds.py
Each seed starts with the target's mode byte(s) where the target has them (see each harness's doc comment)."""
import base64, json, os, shutil, hashlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, "Fixtures")


def read(path):
    with open(os.path.join(FIX, path), "rb") as f:
        return f.read()


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def payload(token):
    return json.loads(b64url_decode(token.split(".")[1]))


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


targets = {}


def seed(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    targets.setdefault(target, {})[name] = data


# --- json: small fixtures of every kind, plus handcrafted edge cases -----------------------------------------------
seed("json", "v1-synthetic-did-renew.json", read("v1-synthetic/did-renew.json"))
seed("json", "config-example.json", open(os.path.join(ROOT, "config/example.json"), "rb").read())
seed("json", "v2-payload-did-renew.json", compact(payload(json.loads(read("v2-synthetic/notif-did-renew.json"))["signedPayload"])))
for name, text in {
    "numbers.json": '[0,-0,1e5,-1.5E-3,9223372036854775807,-9223372036854775808,9223372036854775808,1.0e400,123456789012345678901234567890]',
    "escapes.json": '{"a":"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/","b":"caf\xc3\xa9"}',
    "nested.json": '{"a":{"b":{"c":[[[[{"d":null}]]]]}},"e":[true,false,null]}',
    "ranges.json": ' { "password" : "s3cret" , "x" : [ 1 , {"y":"z"} ] , "n" : -12.5e3 } ',
    "empty.json": '{}',
    "scalar.json": '"just a string"',
    "typed.json": '{"i64":1748736000000,"i32":-7,"int":42,"u64":18446744073709551615,"double":0.5,"string":"s","bool":true,'
    '"nested":[1,"x",{"string":"y"}],"map":{"k":{"int":1}},"value":{"any":[1,2]}}',
}.items():
    seed("json", name, text)

# --- v2: mode byte + bytes (see Fuzz/Sources/fuzz-v2/V2Harness.swift) ----------------------------------------------
def token_of(path, member="signedPayload"):
    return json.loads(read(path))[member]


for path in ["v2-synthetic/notif-did-renew.json", "v2-synthetic/notif-subscribed-initial-buy.json",
             "v2-synthetic/notif-test.json", "v2-synthetic/notif-did-change-renewal-pref.json",
             "v2-synthetic/notif-refund.json", "v2/notif-test-sandbox-2025.json", "v2/notif-did-renew-sandbox-2025.json"]:
    if not os.path.exists(os.path.join(FIX, path)):
        continue
    t = token_of(path)
    seed("v2", "raw-" + os.path.basename(path), b"\x00" + t.encode())
    # The payload with its nested tokens as JSON objects: the harness signs all of them (mode 4).
    p = payload(t)
    for outer in ("data", "appData"):
        for k in ("signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"):
            if isinstance(p.get(outer), dict) and isinstance(p[outer].get(k), str):
                p[outer][k] = payload(p[outer][k])
    if path.startswith("v2-synthetic"):
        seed("v2", "payload-" + os.path.basename(path), b"\x04" + compact(p))
        seed("v2", "payload-fresh-" + os.path.basename(path), b"\x0c" + compact(p))
    if path == "v2-synthetic/notif-refund.json":
        # A group subscription's shapes (mode 4): a seat refund, an unclaim, a member's assigned transaction.
        seats = json.loads(compact(p))
        seats["subtype"] = "SEATS"
        tx = seats["data"]["signedTransactionInfo"]
        tx.pop("revocationDate", None)
        tx.pop("revocationReason", None)
        tx["quantity"] = 8
        tx["multiSeatInfo"] = {"priceTiers": [{"price": 9990, "quantity": 5}, {"price": 7990, "quantity": 3}],
                               "revokedSeatQuantity": 3, "invitationManagement": "APPLE"}
        tx["additionalTransactionReason"] = "SEAT_ADDITION"
        seed("v2", "payload-multiseat-seat-refund.json", b"\x04" + compact(seats))
        unclaim = json.loads(compact(seats))
        unclaim["notificationType"] = "UNCLAIM_SEATS"
        unclaim.pop("subtype")
        unclaim["unclaimInfo"] = {"unclaimSeatIds": ["0f8fad5b-d9cb-469f-a165-70867728950e"]}
        unclaim["data"]["signedTransactionInfo"]["multiSeatInfo"]["invitationManagement"] = "DEVELOPER"
        seed("v2", "payload-multiseat-unclaim.json", b"\x04" + compact(unclaim))
        member = json.loads(compact(seats))
        member["notificationType"], member["subtype"] = "SUBSCRIBED", "INITIAL_BUY"
        member["data"]["signedTransactionInfo"]["inAppOwnershipType"] = "ASSIGNED"
        member["data"]["signedTransactionInfo"]["revokedSeatQuantity"] = 1
        seed("v2", "payload-multiseat-member.json", b"\x04" + compact(member))
for path, member, mode in [("v2-synthetic/tx-auto-renewable.json", "signedTransaction", 2),
                           ("v2-synthetic/renewal-info.json", "signedRenewalInfo", 3),
                           ("v2/tx-auto-renewable-sandbox-2022-gopay-order.json", "signedTransaction", 2),
                           ("v2/renewal-sandbox-2022-gopay.json", "signedRenewalInfo", 3)]:
    if not os.path.exists(os.path.join(FIX, path)):
        continue
    t = token_of(path, member)
    seed("v2", "raw-" + os.path.basename(path), bytes([mode]) + t.encode())
    if path.startswith("v2-synthetic"):
        seed("v2", "payload-" + os.path.basename(path), bytes([mode + 3]) + compact(payload(t)))
for name in ["leaf", "intermediate", "leaf-expired", "leaf-no-marker", "leaf-ca", "leaf-p384", "intermediate-not-ca"]:
    der = read("test-pki/%s.der" % name)
    seed("v2", "x5c-%s.der" % name, bytes([7, 0 if name.startswith("leaf") else 1]) + der)
hdr = json.loads(b64url_decode(token_of("v2-synthetic/notif-test.json").split(".")[0]))
seed("v2", "header-standard.json", b"\x0f" + compact(hdr))
for neg in ["alg-none", "header-missing-x5c", "jws-two-segments", "data-and-summary-both", "local-testing-environment"]:
    path = "v2-synthetic/negative/%s.json" % neg
    if os.path.exists(os.path.join(FIX, path)):
        seed("v2", "raw-negative-%s.json" % neg, b"\x00" + token_of(path).encode())

# --- v1: mode byte 0 + notification body, or mode byte (2k+1) + verifyReceipt answer ------------------------------
for name in ["did-renew", "cancel", "refund", "initial-buy", "did-change-renewal-status", "renewal"]:
    seed("v1", "body-%s.json" % name, b"\x00" + read("v1-synthetic/%s.json" % name))
for name in ["v1-notif-initial-buy-prod-2020-educreations", "v1-notif-refund-prod-2020-educreations",
             "v1-notif-did-change-renewal-status-prod-2019"]:
    seed("v1", "body-%s.json" % name, b"\x00" + read("v1/%s.json" % name))
seed("v1", "body-escaped-password.json",
     b'\x00{"notification_type":"DID_RENEW","bid":"com.example.gateway","environment":"PROD",'
     b'"password":"0123456789abcdef\\u0030123456789abcdef","auto_renew_status":"true"}')
for i, name in enumerate(["did-renew", "cancel", "refund", "did-fail-to-renew"]):
    mode = {"did-renew": 6, "cancel": 0, "refund": 10, "did-fail-to-renew": 4}[name]
    seed("v1", "receipt-%s.json" % name, bytes([mode * 2 + 1]) + read("v1-synthetic/%s.receipt.json" % name))
for name in ["verifyreceipt-21006-ios6-expired-2019-venice", "verifyreceipt-ios6-status0-prod-2019",
             "verifyreceipt-status0-sandbox-2022-omnimind", "verifyreceipt-21007"]:
    data = read("v1/%s.json" % name)
    if len(data) < 20000:
        seed("v1", "receipt-%s.json" % name, b"\x0d" + data)

# --- config: the repository's configs and handcrafted variants --------------------------------------------------------
seed("config", "example.json", open(os.path.join(ROOT, "config/example.json"), "rb").read())
seed("config", "simulator.json", open(os.path.join(ROOT, "config/simulator.json"), "rb").read())
seed("config", "synthetic-sandbox.json", read("config/synthetic-sandbox.json"))
seed("config", "full.json", compact({
    "listen": "0.0.0.0:8443", "listen_tls": {"cert_file": "tls/cert.pem", "key_file": "/etc/key.pem"},
    "admin": {"listen": "127.0.0.1:9", "token_env": "T"}, "store": {"sqlite": "db/x.db"},
    "app_store_api": {"production_url": "https://api.example/", "sandbox_url": "http://127.0.0.1:1/", "issuer_id": "i",
                      "key_id": "k", "private_key_env": "P"},
    "max_notification_age": "10d", "raw_body_retention": "180d", "silence_alert": "6h",
    "compare": {"tolerance": "10m", "grace": "1h", "confirm_delay": "30s", "concurrency": 2, "min_pairs": 5,
                "min_agreement_rate": 0.995, "window": "7d", "allow_one_sided": True},
    "limits": {"untrusted_quarantine": 10, "genuine_quarantine": 20, "http_threads": 8, "verify_receipt_concurrency": 3},
    "downstreams": [{"name": "a", "kind": "webhook", "url": "http://127.0.0.1:9000/", "secret_env": ["S1", "S2"],
                     "environments": ["sandbox"], "shadow": True, "include_raw": True, "max_attempts": 3, "concurrency": 2},
                    {"name": "b", "kind": "v1_passthrough", "url": "http://127.0.0.1:9100/"}],
    "apps": [{"bundle_id": "x", "app_apple_id": 1, "environments": ["production"], "shared_secret_env": ["EXAMPLE_APP_SHARED_SECRET"],
              "authority": {"production": "v2", "sandbox": "v1"}, "compare": True, "verify_receipt": False, "downstreams": ["a", "b"]},
             {"bundle_id": "y", "environments": ["sandbox"], "authority": "v2"}]}))

# --- time: durations, times and V1 text dates ------------------------------------------------------------------------
for i, text in enumerate(["10d", "12h", "30m", "45s", "500ms", "3600", "9223372036854775807ms", "7d", "1748736000000",
                          "2025-06-01", "2025-06-01T00:00:00Z", "2025-06-01T12:34:56.789Z", "2025-06-01T12:34:56+02:00",
                          "2019-11-24 17:42:49 Etc/GMT", "2019-11-24 17:42:49 GMT", "2019-11-24 17:42:49",
                          "512KiB", "16 MiB", "1GiB", "1000kB"]):
    seed("time", "t%02d.txt" % i, text)

# --- http: raw requests (mode byte 0 public, 1 admin) ----------------------------------------------------------------
def request(method, path, body=b"", headers=()):
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path)
    for h in headers:
        head += h + "\r\n"
    if body or method == "POST":
        head += "Content-Length: %d\r\n" % len(body)
    return head.encode() + b"\r\n" + body


v1body = read("v1-synthetic/did-renew.json")
v2body = compact({"signedPayload": token_of("v2-synthetic/notif-test.json")})
auth = "Authorization: Bearer fuzz-admin-token"
seed("http", "post-v1.http", b"\x00" + request("POST", "/notifications", v1body, ["Content-Type: application/json"]))
seed("http", "post-v2.http", b"\x00" + request("POST", "/notifications", v2body, ["Content-Type: application/json"]))
seed("http", "post-chunked.http", b"\x00" + b"POST /notifications HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"%x\r\n" % len(v1body[:100]) + v1body[:100] + b"\r\n%x\r\n" % len(v1body[100:]) + v1body[100:] + b"\r\n0\r\n\r\n")
seed("http", "post-expect.http", b"\x00" + request("POST", "/notifications", b'{"signedPayload":"a.b.c"}', ["Expect: 100-continue"]))
seed("http", "pipelined.http", b"\x00" + request("GET", "/healthz") + request("GET", "/metrics") + request("PUT", "/notifications", b"x"))
seed("http", "get-query.http", b"\x00" + request("GET", "/nothing?a=1&b=%20c&&d"))
seed("http", "too-large.http", b"\x00" + b"POST /notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n{")
seed("http", "admin-status.http", b"\x01" + request("GET", "/admin/status", headers=[auth]))
seed("http", "admin-replay.http", b"\x01" + request("POST", "/admin/replay?since=7d&until=2025-06-01T00:00:00Z", headers=[auth]))
seed("http", "admin-report.http", b"\x01" + request("GET", "/admin/report?format=html&since=2025-05-01&bundle=com.example.gateway", headers=[auth]))
seed("http", "admin-misc.http", b"\x01" + request("GET", "/admin/quarantine?limit=5", headers=[auth])
     + request("POST", "/admin/quarantine/replay", headers=[auth]) + request("GET", "/admin/subscriptions/1000000000000001", headers=[auth])
     + request("GET", "/admin/dead-letters?limit=2", headers=[auth]))
seed("http", "admin-unauthorized.http", b"\x01" + request("GET", "/admin/status", headers=["Authorization: Bearer nope"]))

# --- redact: mode byte (bit 0 hostile secrets, bit 1 password values too) + bytes -------------------------------------
v1renew = read("v1-synthetic/did-renew.json")
seed("redact", "v1-body.json", b"\x02" + v1renew)
seed("redact", "v1-trailing.json", b"\x02" + v1renew + b"}garbage")
seed("redact", "v1-duplicate-key.json", b"\x02" + v1renew.replace(b"{", b'{"bvrs":"1",', 1))
seed("redact", "v1-invalid-utf8.json", b"\x02" + v1renew.replace(b"{", b'{"note":"\xff",', 1))
seed("redact", "v1-escaped.json", b"\x00" + v1renew.replace(b"0123456789abcdef0123456789abcdef",
                                                           b"\\u0030123456789abcdef0123456789\\u0061bcdef"))
seed("redact", "v2-beside.json", b"\x00" + read("v2-synthetic/notif-did-renew.json").replace(
    b"{", b'{"note":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",', 1))
seed("redact", "unicode.json", b"\x01" + '{"a":"s\\u00e9cret-\u00fcn\u00efcode-v\u00e4lue-\\ud83d\\ude00-2025","b":"quote\\"and\\\\backslash\\/secret"}'.encode())

# --- deflate: mode byte (bits 0-1 the limit: 0, 64, 4096, 65536; bit 2 compress first) + bytes -----------------------
import zlib
v2renew = read("v2-synthetic/notif-did-renew.json")
seed("deflate", "v1-body.z", b"\x03" + zlib.compress(v1renew))
seed("deflate", "v2-body.z", b"\x03" + zlib.compress(v2renew))
seed("deflate", "v2-body-level9.z", b"\x03" + zlib.compress(v2renew, 9))
seed("deflate", "v2-body-over-limit.z", b"\x01" + zlib.compress(v2renew))
seed("deflate", "v1-body-truncated.z", b"\x02" + zlib.compress(v1renew)[:-7])
seed("deflate", "empty.z", b"\x00" + zlib.compress(b""))
seed("deflate", "zeros.z", b"\x03" + zlib.compress(bytes(200000), 9))
seed("deflate", "stored-block.z", b"\x02" + zlib.compress(b"{\"a\":1}", 0))
seed("deflate", "roundtrip.json", b"\x07" + v1renew)

# --- zstd: mode byte (bits 0-1 the limit as deflate's; bit 2 compress first; bit 3 the harness's dictionary) + bytes --
# Frames from Debian's `zstd` command (level 1, with the content checksum, as the store writes them).
import subprocess, tempfile
zstd_dictionary = (b'{"bundle_id":"com.example.app","product_id":"monthly","signedPayload":"eyJhbGciOiJFUzI1NiJ9"}' * 4)
def zstd(data, level=1, dictionary=None, piped=False):
    with tempfile.TemporaryDirectory() as t:
        src, dct = os.path.join(t, "in"), os.path.join(t, "dict")
        open(src, "wb").write(data)
        args = ["zstd", "-q", "-c", "--check", "-%d" % level]
        if dictionary is not None:
            open(dct, "wb").write(dictionary)
            args += ["-D", dct]
        if piped:
            return subprocess.run(args, input=data, capture_output=True, check=True).stdout
        return subprocess.run(args + [src], capture_output=True, check=True).stdout
seed("zstd", "v1-body.zst", b"\x03" + zstd(v1renew))
seed("zstd", "v2-body.zst", b"\x03" + zstd(v2renew))
seed("zstd", "v2-body-level19.zst", b"\x03" + zstd(v2renew, 19))
seed("zstd", "v2-body-over-limit.zst", b"\x01" + zstd(v2renew))
seed("zstd", "v1-body-truncated.zst", b"\x02" + zstd(v1renew)[:-7])
seed("zstd", "v1-body-unsized.zst", b"\x03" + zstd(v1renew, piped=True))
seed("zstd", "empty.zst", b"\x00" + zstd(b""))
seed("zstd", "zeros.zst", b"\x03" + zstd(bytes(200000), 19))
seed("zstd", "dictionary.zst", b"\x0b" + zstd(b'{"bundle_id":"com.example.app","product_id":"yearly"}', dictionary=zstd_dictionary))
seed("zstd", "roundtrip.json", b"\x07" + v1renew)
seed("zstd", "roundtrip-dictionary.json", b"\x0f" + v1renew)

# --- receipt: mode byte (bits 0-1: 0 text, 1 decoded bytes, 2 a payload the harness signs, 3 a property list;
# bit 2: the harness's test roots as extra sandbox roots; bit 3: mode 2 signs with SHA-1, mode 3 signs the property
# list as a transaction receipt's purchase-info; bit 4: mode 3 signs as version 3, else 2) + bytes -------------------
def der_header(b, i):
    """(tag, content start, content length or None) of the BER element at i."""
    tag = b[i]
    i += 1
    first = b[i]
    i += 1
    if first == 0x80:
        return tag, i, None
    if first & 0x80:
        n = first & 0x7F
        return tag, i + n, int.from_bytes(b[i:i + n], "big")
    return tag, i, first


def ber_end(b, i):
    tag, start, length = der_header(b, i)
    if length is not None:
        return start + length
    j = start
    while b[j:j + 2] != b"\x00\x00":
        j = ber_end(b, j)
    return j + 2


def ber_children(b, i):
    tag, start, length = der_header(b, i)
    end = start + length if length is not None else ber_end(b, i) - 2
    out, j = [], start
    while j < end:
        out.append(j)
        j = ber_end(b, j)
    return out


def receipt_payload(der):
    """The eContent of an app receipt (a constructed OCTET STRING flattened)."""
    signed = ber_children(der, ber_children(der, 0)[1])[0]
    encap = ber_children(der, signed)[2]
    octets = ber_children(der, ber_children(der, encap)[1])[0]
    def flatten(i):
        tag, start, length = der_header(der, i)
        if tag == 0x04:
            return der[start:start + length]
        return b"".join(flatten(k) for k in ber_children(der, i))
    return flatten(octets)


def der_tlv(tag, content):
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


def der_int(v):
    return der_tlv(0x02, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True))


def der_attribute(kind, value):
    return der_tlv(0x30, der_int(kind) + der_int(1) + der_tlv(0x04, value))


def der_set(items):
    return der_tlv(0x31, b"".join(sorted(items)))


receipt_names = ["apple-legacyTransaction", "apple-xcode-app-receipt-empty", "apple-xcode-app-receipt-with-transaction",
                 "jackywu-legacy-transaction-receipt-production-2019",
                 "revenuecat-legacy-transaction-receipt-sandbox-2015", "revenuecat-receiptsample1-sandbox-2020",
                 "tpinappreceipt-receipt-production-2024"]
for name in receipt_names:
    text = read("receipts/%s.b64" % name)
    decoded = base64.b64decode(text)
    seed("receipt", "text-%s.b64" % name, b"\x00" + text)
    seed("receipt", "decoded-%s.bin" % name, b"\x01" + decoded)
    if decoded[:1] == b"\x30":
        seed("receipt", "payload-%s.der" % name, b"\x06" + receipt_payload(decoded))
    else:
        outer = decoded.decode()
        info = base64.b64decode(outer.split('"purchase-info" = "')[1].split('"')[0])
        seed("receipt", "plist-%s.txt" % name, b"\x03" + outer.encode())
        seed("receipt", "purchase-info-%s.txt" % name, b"\x07" + info)
        # Signed by the harness (version 2 and 3, test roots trusted): Apple's purchase-info behind a genuine
        # signature, judged at its own purchase date (outside the test chains' validity: refused as expired).
        seed("receipt", "signed-v2-%s.txt" % name, b"\x0f" + info)
        seed("receipt", "signed-v3-%s.txt" % name, b"\x1f" + info)
# A small sandbox receipt as ReceiptBuilder writes it (created 2025-06-01, one subscription purchase): authenticated
# in mode 2 with the test root, so mutations start from a valid receipt.
purchase = der_set([der_attribute(1701, der_int(1)), der_attribute(1702, der_tlv(0x0C, b"com.example.monthly")),
                    der_attribute(1703, der_tlv(0x0C, b"2000000000000002")), der_attribute(1705, der_tlv(0x0C, b"2000000000000001")),
                    der_attribute(1704, der_tlv(0x16, b"2025-05-31T23:59:00Z")), der_attribute(1707, der_int(3)),
                    der_attribute(1708, der_tlv(0x16, b"2025-07-01T00:00:00Z")), der_attribute(1711, der_int(2000000000000100)),
                    der_attribute(1712, der_tlv(0x16, b"")), der_attribute(1713, der_int(0)), der_attribute(1719, der_int(1)),
                    der_attribute(1721, der_tlv(0x0C, b"com.example.offer"))])
def built_payload(receipt_type):
    return der_set([der_attribute(0, der_tlv(0x0C, receipt_type)), der_attribute(1, der_int(0)),
                    der_attribute(2, der_tlv(0x0C, b"com.example.gateway")), der_attribute(3, der_tlv(0x0C, b"7")),
                    der_attribute(12, der_tlv(0x16, b"2025-06-01T00:00:00Z")), der_attribute(15, der_int(0)),
                    der_attribute(16, der_int(0)), der_attribute(17, purchase),
                    der_attribute(18, der_tlv(0x16, b"2013-08-01T07:00:00Z")), der_attribute(19, der_tlv(0x0C, b"1.0")),
                    der_attribute(21, der_tlv(0x16, b"2026-06-01T00:00:00+0100"))])
seed("receipt", "payload-built-sandbox.der", b"\x06" + built_payload(b"ProductionSandbox"))
seed("receipt", "payload-built-sandbox-sha1.der", b"\x0e" + built_payload(b"ProductionSandbox"))
seed("receipt", "payload-built-production.der", b"\x06" + built_payload(b"Production"))
# A sandbox purchase-info as ReceiptBuilder writes it, bought 2025-06-01 (inside the test chains' validity):
# authenticated in mode 3 signed with the test roots, so mutations start from a valid transaction receipt.
built_info = ("{\n" + "".join('\t"%s" = "%s";\n' % kv for kv in [
    ("original-purchase-date-ms", "1748649600000"), ("purchase-date-ms", "1748736000000"),
    ("unique-identifier", "0000000000000000000000000000000000000000"), ("original-transaction-id", "2000000000000001"),
    ("expires-date", "1751328000000"), ("transaction-id", "2000000000000002"),
    ("web-order-line-item-id", "2000000000000100"), ("bvrs", "7"), ("item-id", "1000000001"),
    ("product-id", "com.example.monthly"), ("bid", "com.example.gateway"), ("quantity", "1")]) + "}").encode()
seed("receipt", "signed-v2-built.txt", b"\x0f" + built_info)
seed("receipt", "signed-v3-built.txt", b"\x1f" + built_info)
seed("receipt", "signed-v2-built-untrusted.txt", b"\x0b" + built_info)
# Hostile shapes: a nesting bomb, a huge declared length, a StoreKit 2 JWS, form-decoded and wrapped base64.
seed("receipt", "bomb.bin", b"\x01" + b"\x30\x80" * 64 + b"\x00\x00" * 64)
seed("receipt", "huge-length.bin", b"\x01" + b"\x30\x84\xff\xff\xff\xff\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x07\x02")
seed("receipt", "jws.txt", b"\x00" + b"eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln")
prod = read("receipts/tpinappreceipt-receipt-production-2024.b64")
seed("receipt", "text-wrapped-indented.txt", b"\x00" + b"\r\n  ".join(prod[i:i + 64] for i in range(0, len(prod), 64)))
seed("receipt", "text-form-decoded.txt", b"\x00" + prod.replace(b"+", b" "))

# --- write ----------------------------------------------------------------------------------------------------------
for target, files in targets.items():
    d = os.path.join(HERE, target)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    for name, data in sorted(files.items()):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    print("%-8s %3d seeds %7d bytes" % (target, len(files), sum(len(v) for v in files.values())))
