#!/usr/bin/env python3
"""FROZEN: kept only as the record of how the committed vectors were made. Do not run it to add or change tests.

Its output -- Fixtures/test-pki and Fixtures/v2-synthetic (negative/ included) -- is a set of frozen test
vectors: never regenerated, never edited. New certificate and V2 token cases are written in Swift, with the
project's own CertificateBuilder and AppleJWSSigner, through Tests/TestSupport/TestChain.swift (TestCA,
TestChain.Profile, TestSigner, V2Failure) and Tests/TestSupport/TestNotification.swift (TestNotification);
Tests/V2AdapterTests/CodeBuiltChainTests.swift re-creates the negative cases that way. Nothing in the test
command or CI (scripts/test, scripts/check.sh, .ci/run) runs this script.

What follows is the script's original description.

Generate the synthetic App Store Server Notification V2 test fixtures.

    python3 Fixtures/test-pki/make_test_fixtures.py

Writes (and first deletes the previously generated *.der / *.pem / *.json in):
  Fixtures/test-pki/             Apple-shaped test PKI (DER certs, PKCS#8 PEM keys)
  Fixtures/v2-synthetic/         positive V2 notifications / bare tokens signed with it
  Fixtures/v2-synthetic/negative negative cases + <name>.expected.json

Everything is reproducible byte for byte: private keys are derived from fixed labels,
certificates and JWS signatures use deterministic ECDSA (RFC 6979), the RS256 key is
generated from a seeded PRNG and UUIDs are uuid5 of the file name.

At the end the script
  * runs `openssl verify -x509_strict` on the main chain at 2025-06-01 (must pass) and on
    leaf-expired (must fail), and
  * re-reads every written fixture from disk and runs an independent reference check
    (chain, markers, validity, raw R||S ES256, app/environment rules, nested JWS) that
    collects *all* defects: positives must have none, every negative exactly its expected one.
It exits non-zero if anything is off.

Test tooling only: requires Python >= 3.11, `cryptography` >= 44 and the `openssl` CLI.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import random
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.x509.oid import NameOID

REPO = Path(__file__).resolve().parent.parent.parent
PKI_DIR = REPO / "Fixtures" / "test-pki"
SYN_DIR = REPO / "Fixtures" / "v2-synthetic"
NEG_DIR = SYN_DIR / "negative"

SOURCE = "synthetic: scripts/make_test_fixtures.py (test PKI)"

# ---------------------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------------------
T = 1748736000000  # 2025-06-01T00:00:00Z, the signedDate of (almost) everything
SEC = 1000
MIN = 60 * SEC
HOUR = 60 * MIN
DAY = 24 * HOUR

BUNDLE = "com.example.gateway"
APP_ID = 1234567890
PROD_ONLY_BUNDLE = "com.example.prodonly"
PROD_ONLY_APP_ID = 2222222222
BUNDLE_VERSION = "42"
GROUP = "21000001"

MONTHLY = "com.example.gateway.monthly"
YEARLY = "com.example.gateway.yearly"
COINS = "com.example.gateway.coins100"
LIFETIME = "com.example.gateway.lifetime"
PRICES = {MONTHLY: 9990, YEARLY: 99990, COINS: 4990, LIFETIME: 199990}
NEW_MONTHLY_PRICE = 12990  # after a price increase

AUTO = "Auto-Renewable Subscription"
CONSUMABLE = "Consumable"
NON_CONSUMABLE = "Non-Consumable"

OID_MARKER_INTERMEDIATE = "1.2.840.113635.100.6.2.1"
OID_MARKER_LEAF = "1.2.840.113635.100.6.11.1"

UUID_NS = uuid.uuid5(uuid.NAMESPACE_URL, "https://example.invalid/iap-gateway/test-fixtures")


def fixed_uuid(label: str) -> str:
    return str(uuid.uuid5(UUID_NS, label))


def utc(y, m, d) -> dt.datetime:
    return dt.datetime(y, m, d, tzinfo=dt.timezone.utc)


# ---------------------------------------------------------------------------------------
# encoding helpers
# ---------------------------------------------------------------------------------------
def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(seg: str) -> bytes:
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))


def b64std(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def cjson(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------------------------
# test PKI
# ---------------------------------------------------------------------------------------
def derive_ec_key(label: str, curve: ec.EllipticCurve) -> ec.EllipticCurvePrivateKey:
    order = {
        "secp256r1": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
        "secp384r1": int(
            "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF581A0DB248B0A77AECEC196ACCC52973",
            16,
        ),
    }[curve.name]
    seed = hashlib.sha512(b"iap-gateway test-pki key v1\x00" + label.encode()).digest()
    return ec.derive_private_key(int.from_bytes(seed, "big") % (order - 1) + 1, curve)


def serial_for(label: str) -> int:
    return (int.from_bytes(hashlib.sha256(b"serial:" + label.encode()).digest()[:16], "big") >> 1) | 1


ROOT_CN = "iap-gateway Test Root CA"
INTERMEDIATE_CN = "iap-gateway Test WWDR CA"
LEAF_CN = "iap-gateway Test Receipt Signing"


def dn(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "iap-gateway test PKI (not Apple)"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "iap-gateway"),
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        ]
    )


# label -> spec. role: root | intermediate | leaf. Identical DNs per role on purpose: the
# "other" chain and the variants are look-alikes that only differ by key / the stated defect.
PKI_SPEC = [
    # label, role, issuer, curve, not_before, not_after, overrides
    ("root", "root", None, ec.SECP384R1(), utc(2020, 1, 1), utc(2045, 1, 1), {}),
    ("intermediate", "intermediate", "root", ec.SECP384R1(), utc(2020, 1, 1), utc(2040, 1, 1), {}),
    ("leaf", "leaf", "intermediate", ec.SECP256R1(), utc(2024, 1, 1), utc(2030, 1, 1), {}),
    ("other-root", "root", None, ec.SECP384R1(), utc(2020, 1, 1), utc(2045, 1, 1), {}),
    ("other-intermediate", "intermediate", "other-root", ec.SECP384R1(), utc(2020, 1, 1), utc(2040, 1, 1), {}),
    ("other-leaf", "leaf", "other-intermediate", ec.SECP256R1(), utc(2024, 1, 1), utc(2030, 1, 1), {}),
    ("leaf-expired", "leaf", "intermediate", ec.SECP256R1(), utc(2020, 1, 1), utc(2021, 1, 1), {}),
    ("leaf-no-marker", "leaf", "intermediate", ec.SECP256R1(), utc(2024, 1, 1), utc(2030, 1, 1), {"marker": False}),
    ("intermediate-no-marker", "intermediate", "root", ec.SECP384R1(), utc(2020, 1, 1), utc(2040, 1, 1), {"marker": False}),
    ("leaf-under-intermediate-no-marker", "leaf", "intermediate-no-marker", ec.SECP256R1(), utc(2024, 1, 1), utc(2030, 1, 1), {}),
    ("leaf-p384", "leaf", "intermediate", ec.SECP384R1(), utc(2024, 1, 1), utc(2030, 1, 1), {}),
    ("leaf-ca", "leaf", "intermediate", ec.SECP256R1(), utc(2024, 1, 1), utc(2030, 1, 1), {"ca": True}),
    ("intermediate-not-ca", "intermediate", "root", ec.SECP384R1(), utc(2020, 1, 1), utc(2040, 1, 1), {"ca": False}),
    ("leaf-under-intermediate-not-ca", "leaf", "intermediate-not-ca", ec.SECP256R1(), utc(2024, 1, 1), utc(2030, 1, 1), {}),
]

CERTS: dict[str, x509.Certificate] = {}
KEYS: dict[str, ec.EllipticCurvePrivateKey] = {}
DER: dict[str, bytes] = {}


def build_pki() -> None:
    for label, role, issuer, curve, nb, na, ov in PKI_SPEC:
        key = derive_ec_key(label, curve)
        subject = dn({"root": ROOT_CN, "intermediate": INTERMEDIATE_CN, "leaf": LEAF_CN}[role])
        if issuer is None:
            issuer_name, issuer_key, issuer_cert = subject, key, None
        else:
            issuer_cert, issuer_key = CERTS[issuer], KEYS[issuer]
            issuer_name = issuer_cert.subject
        is_ca = ov.get("ca", role != "leaf")
        b = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer_name)
            .public_key(key.public_key())
            .serial_number(serial_for(label))
            .not_valid_before(nb)
            .not_valid_after(na)
        )
        pathlen = 0 if (role == "intermediate" and is_ca) else None
        b = b.add_extension(x509.BasicConstraints(ca=is_ca, path_length=pathlen), critical=True)
        if role == "leaf":
            ku = x509.KeyUsage(True, False, False, False, False, False, False, False, False)
        else:
            ku = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
        b = b.add_extension(ku, critical=True)
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        if issuer_cert is not None:
            ski = issuer_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            b = b.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
            )
        if role != "root" and ov.get("marker", True):
            oid = OID_MARKER_LEAF if role == "leaf" else OID_MARKER_INTERMEDIATE
            b = b.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), b"\x05\x00"), critical=False)
        cert = b.sign(issuer_key, hashes.SHA384(), ecdsa_deterministic=True)
        CERTS[label], KEYS[label] = cert, key
        DER[label] = cert.public_bytes(serialization.Encoding.DER)


def write_pki() -> None:
    for label in CERTS:
        (PKI_DIR / f"{label}.der").write_bytes(DER[label])
        (PKI_DIR / f"{label}.key.pem").write_bytes(
            KEYS[label].private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )


def openssl_check() -> None:
    attime = str(T // 1000)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for label in CERTS:
            (tmp / f"{label}.pem").write_bytes(CERTS[label].public_bytes(serialization.Encoding.PEM))

        def verify(root, inter, leaf):
            cmd = ["openssl", "verify", "-x509_strict", "-attime", attime,
                   "-CAfile", str(tmp / f"{root}.pem"), "-untrusted", str(tmp / f"{inter}.pem"),
                   str(tmp / f"{leaf}.pem")]
            p = subprocess.run(cmd, capture_output=True, text=True)
            return p.returncode, (p.stdout + p.stderr).strip().replace("\n", " | ")

        expectations = [
            # root, intermediate, leaf, must_pass, required text in a failure
            ("root", "intermediate", "leaf", True, None),
            ("other-root", "other-intermediate", "other-leaf", True, None),
            ("root", "intermediate", "leaf-no-marker", True, None),  # openssl knows nothing of markers
            ("root", "intermediate", "leaf-p384", True, None),
            ("root", "intermediate", "leaf-expired", False, "certificate has expired"),
            ("root", "other-intermediate", "other-leaf", False, None),
            ("root", "intermediate-not-ca", "leaf-under-intermediate-not-ca", False, None),
        ]
        for root, inter, leaf, must_pass, needle in expectations:
            rc, out = verify(root, inter, leaf)
            ok = (rc == 0) == must_pass and (needle is None or needle in out)
            print(f"  openssl verify -x509_strict -attime {attime} {root} <- {inter} <- {leaf}: rc={rc} "
                  f"{'(expected pass)' if must_pass else '(expected fail)'} {'OK' if ok else 'UNEXPECTED'}: {out}")
            if not ok:
                sys.exit(f"openssl chain check failed for {leaf}")


# ---------------------------------------------------------------------------------------
# signing
# ---------------------------------------------------------------------------------------
MAIN_CHAIN = ("leaf", "intermediate", "root")


def x5c_of(labels) -> list[str]:
    return [b64std(DER[l]) for l in labels]


def es256_raw(key: ec.EllipticCurvePrivateKey, msg: bytes) -> bytes:
    der = key.sign(msg, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    r, s = decode_dss_signature(der)
    size = (key.curve.key_size + 7) // 8
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def jws(payload, *, chain=MAIN_CHAIN, signer="leaf", header=None, header_seg=None, payload_seg=None) -> str:
    """Compact JWS, header {"alg":"ES256","x5c":[...]} unless given, raw R||S ES256 signature."""
    if header is None:
        header = {"alg": "ES256", "x5c": x5c_of(chain)}
    hs = header_seg if header_seg is not None else b64u(cjson(header))
    if payload_seg is not None:
        ps = payload_seg
    elif isinstance(payload, bytes):
        ps = b64u(payload)
    else:
        ps = b64u(cjson(payload))
    key = KEYS[signer] if isinstance(signer, str) else signer
    sig = es256_raw(key, f"{hs}.{ps}".encode("ascii"))
    return f"{hs}.{ps}.{b64u(sig)}"


# --- pure-python P-256 ECDSA with a chosen nonce (only for the 63-byte signature case) ---
_P = 2**256 - 2**224 + 2**192 + 2**96 - 1
_A = _P - 3
_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_G = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
      0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)


def _ec_add(p1, p2):
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    if p1[0] == p2[0] and (p1[1] + p2[1]) % _P == 0:
        return None
    if p1 == p2:
        lam = (3 * p1[0] * p1[0] + _A) * pow(2 * p1[1], -1, _P) % _P
    else:
        lam = (p2[1] - p1[1]) * pow(p2[0] - p1[0], -1, _P) % _P
    x = (lam * lam - p1[0] - p2[0]) % _P
    return x, (lam * (p1[0] - x) - p1[1]) % _P


def _ec_mul(k, pt):
    acc = None
    while k:
        if k & 1:
            acc = _ec_add(acc, pt)
        pt = _ec_add(pt, pt)
        k >>= 1
    return acc


def es256_raw_short_r(key: ec.EllipticCurvePrivateKey, msg: bytes) -> bytes:
    """A valid P-256/SHA-256 signature whose r < 2^248, encoded as r (31 bytes) || s (32 bytes)."""
    d = key.private_numbers().private_value
    z = int.from_bytes(hashlib.sha256(msg).digest(), "big")
    for counter in range(100000):
        k = int.from_bytes(hashlib.sha256(b"short-r nonce\x00" + msg + counter.to_bytes(4, "big")).digest(), "big") % _N
        if k == 0:
            continue
        r = _ec_mul(k, _G)[0] % _N
        if r == 0 or r >= 2**248:
            continue
        s = pow(k, -1, _N) * (z + r * d) % _N
        if s == 0:
            continue
        key.public_key().verify(encode_dss_signature(r, s), msg, ec.ECDSA(hashes.SHA256()))
        return r.to_bytes(31, "big") + s.to_bytes(32, "big")
    raise RuntimeError("no short-r signature found")


# --- deterministic RSA key for the RS256 case ---
def _is_probable_prime(n: int, rng: random.Random) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for _ in range(40):
        a = rng.randrange(2, n - 2)
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def deterministic_rsa_key(label: str, bits: int = 2048) -> rsa.RSAPrivateKey:
    rng = random.Random(hashlib.sha256(label.encode()).digest())
    e = 65537

    def prime():
        while True:
            c = rng.getrandbits(bits // 2) | (3 << (bits // 2 - 2)) | 1
            if (c - 1) % e != 0 and _is_probable_prime(c, rng):
                return c

    p = prime()
    q = prime()
    while q == p:
        q = prime()
    d = pow(e, -1, (p - 1) * (q - 1))
    pub = rsa.RSAPublicNumbers(e, p * q)
    return rsa.RSAPrivateNumbers(
        p, q, d, rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q), rsa.rsa_crt_iqmp(p, q), pub
    ).private_key()


# ---------------------------------------------------------------------------------------
# payload builders
# ---------------------------------------------------------------------------------------
TX_ORDER = [
    "transactionId", "originalTransactionId", "webOrderLineItemId", "bundleId", "productId",
    "subscriptionGroupIdentifier", "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity",
    "type", "appAccountToken", "inAppOwnershipType", "signedDate", "revocationReason", "revocationDate",
    "isUpgraded", "offerType", "offerIdentifier", "environment", "transactionReason", "storefront",
    "storefrontId", "price", "currency", "offerDiscountType", "appTransactionId", "offerPeriod",
    "revocationType", "revocationPercentage",
]
RENEWAL_ORDER = [
    "expirationIntent", "originalTransactionId", "autoRenewProductId", "productId", "autoRenewStatus",
    "isInBillingRetryPeriod", "priceIncreaseStatus", "gracePeriodExpiresDate", "offerType",
    "offerIdentifier", "renewalPrice", "currency", "signedDate", "environment",
    "recentSubscriptionStartDate", "renewalDate", "offerDiscountType", "offerPeriod",
    "appAccountToken", "appTransactionId",
]
DATA_ORDER = [
    "appAppleId", "bundleId", "bundleVersion", "environment", "signedTransactionInfo",
    "signedRenewalInfo", "status", "consumptionRequestReason",
]


def ordered(d: dict, order: list[str]) -> dict:
    unknown = set(d) - set(order)
    assert not unknown, unknown
    return {k: d[k] for k in order if k in d and d[k] is not None}


def ids(idx: int, seq: int) -> dict:
    return {
        "originalTransactionId": f"2000000900{idx:03d}001",
        "transactionId": f"2000000900{idx:03d}{seq:03d}",
        "webOrderLineItemId": f"2000000090{idx:03d}{seq:03d}",
        "appTransactionId": f"7040000000000{idx:05d}",
        "appAccountToken": fixed_uuid(f"app-account-token-{idx}"),
    }


def sub_tx(idx, *, seq, purchase, expires, opd, reason, product=MONTHLY, env="Sandbox", bundle=BUNDLE,
           signed=T, ownership="PURCHASED", **extra) -> dict:
    i = ids(idx, seq)
    tx = {
        "transactionId": i["transactionId"],
        "originalTransactionId": i["originalTransactionId"],
        "webOrderLineItemId": i["webOrderLineItemId"],
        "bundleId": bundle,
        "productId": product,
        "subscriptionGroupIdentifier": GROUP,
        "purchaseDate": purchase,
        "originalPurchaseDate": opd,
        "expiresDate": expires,
        "quantity": 1,
        "type": AUTO,
        "appAccountToken": i["appAccountToken"],
        "inAppOwnershipType": ownership,
        "signedDate": signed,
        "environment": env,
        "transactionReason": reason,
        "storefront": "USA",
        "storefrontId": "143441",
        "price": PRICES[product],
        "currency": "USD",
        "appTransactionId": i["appTransactionId"],
    }
    tx.update(extra)
    return ordered(tx, TX_ORDER)


def one_time_tx(idx, *, product, ptype, purchase, env="Sandbox", bundle=BUNDLE, signed=T, **extra) -> dict:
    i = ids(idx, 1)
    tx = {
        "transactionId": i["originalTransactionId"],
        "originalTransactionId": i["originalTransactionId"],
        "bundleId": bundle,
        "productId": product,
        "purchaseDate": purchase,
        "originalPurchaseDate": purchase,
        "quantity": 1,
        "type": ptype,
        "appAccountToken": i["appAccountToken"],
        "inAppOwnershipType": "PURCHASED",
        "signedDate": signed,
        "environment": env,
        "transactionReason": "PURCHASE",
        "storefront": "USA",
        "storefrontId": "143441",
        "price": PRICES[product],
        "currency": "USD",
        "appTransactionId": i["appTransactionId"],
    }
    tx.update(extra)
    return ordered(tx, TX_ORDER)


def renewal(idx, *, recent_start, renewal_date=None, product=MONTHLY, auto_product=None, auto=1,
            env="Sandbox", signed=T, **extra) -> dict:
    i = ids(idx, 1)
    auto_product = auto_product or product
    r = {
        "originalTransactionId": i["originalTransactionId"],
        "autoRenewProductId": auto_product,
        "productId": product,
        "autoRenewStatus": auto,
        "signedDate": signed,
        "environment": env,
        "recentSubscriptionStartDate": recent_start,
        "renewalDate": renewal_date,
        "appAccountToken": i["appAccountToken"],
        "appTransactionId": i["appTransactionId"],
    }
    if auto == 1:
        r["renewalPrice"] = PRICES[auto_product]
        r["currency"] = "USD"
    r.update(extra)
    return ordered(r, RENEWAL_ORDER)


def data_obj(*, env="Sandbox", tx=None, ren=None, status=None, bundle=BUNDLE, app_id=APP_ID, **extra) -> dict:
    d = {
        "appAppleId": app_id,
        "bundleId": bundle,
        "bundleVersion": BUNDLE_VERSION,
        "environment": env,
        "signedTransactionInfo": jws(tx) if isinstance(tx, dict) else tx,
        "signedRenewalInfo": jws(ren) if isinstance(ren, dict) else ren,
        "status": status,
    }
    d.update(extra)
    return ordered(d, DATA_ORDER)


def notification(fname: str, ntype: str, subtype: str | None, *, data=None, summary=None, ept=None,
                 app_data=None, signed=T) -> dict:
    p = {"notificationType": ntype}
    if subtype is not None:
        p["subtype"] = subtype
    p["notificationUUID"] = fixed_uuid(fname)
    for k, v in (("data", data), ("summary", summary), ("externalPurchaseToken", ept), ("appData", app_data)):
        if v is not None:
            p[k] = v
    p["version"] = "2.0"
    if signed is not None:
        p["signedDate"] = signed
    return p


def write_fixture(path: Path, notes: str, key: str, value) -> None:
    obj = {"source": SOURCE, "notes": notes, key: value}
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------------
# positive fixtures
# ---------------------------------------------------------------------------------------
POSITIVES: list[tuple[str, str]] = []  # (file name, notes)


def pos(fname: str, notes: str, payload: dict, key: str = "signedPayload") -> None:
    write_fixture(SYN_DIR / fname, notes, key, jws(payload))
    POSITIVES.append((fname, notes))


def kebab(s: str) -> str:
    return s.lower().replace("_", "-")


def notif_name(ntype, subtype=None) -> str:
    return f"notif-{kebab(ntype)}" + (f"-{kebab(subtype)}" if subtype else "") + ".json"


def active_monthly(idx, env="Sandbox", signed=T, **extra):
    """Mid-period monthly subscription: renewed T-10d, expires T+20d."""
    opd = T - 90 * DAY
    tx = sub_tx(idx, seq=4, purchase=T - 10 * DAY, expires=T + 20 * DAY, opd=opd, reason="RENEWAL",
                env=env, signed=signed, **extra)
    return tx, opd


def make_positives() -> None:
    idx = 0

    def nxt():
        nonlocal idx
        idx += 1
        return idx

    def std(ntype, subtype, story, tx, ren, status, **kw):
        fname = notif_name(ntype, subtype)
        label = ntype + (f"/{subtype}" if subtype else " (no subtype)")
        notes = f"{label}, Sandbox, signedDate T=2025-06-01T00:00:00Z. {story}"
        pos(fname, notes, notification(fname, ntype, subtype, data=data_obj(tx=tx, ren=ren, status=status, **kw)))

    # SUBSCRIBED/INITIAL_BUY: 1-week introductory free trial
    i = nxt()
    p = T - 30 * SEC
    tx = sub_tx(i, seq=1, purchase=p, expires=p + 7 * DAY, opd=p, reason="PURCHASE", price=0,
                offerType=1, offerDiscountType="FREE_TRIAL", offerPeriod="P1W")
    ren = renewal(i, recent_start=p, renewal_date=p + 7 * DAY)
    std("SUBSCRIBED", "INITIAL_BUY",
        "First purchase of the monthly product with an introductory free trial (offerType 1, FREE_TRIAL, P1W, "
        "price 0): purchased T-30s, expires T-30s+7d; transactionId == originalTransactionId; auto-renew on. "
        "status 1 (active).", tx, ren, 1)

    # SUBSCRIBED/RESUBSCRIBE
    i = nxt()
    opd, p = T - 200 * DAY, T - MIN
    tx = sub_tx(i, seq=5, purchase=p, expires=p + 30 * DAY, opd=opd, reason="PURCHASE")
    ren = renewal(i, recent_start=p, renewal_date=p + 30 * DAY)
    std("SUBSCRIBED", "RESUBSCRIBE",
        "Lapsed subscriber (originalPurchaseDate T-200d) buys the monthly product again: purchased T-60s, "
        "expires T-60s+30d; auto-renew on. status 1 (active).", tx, ren, 1)

    # DID_CHANGE_RENEWAL_PREF/UPGRADE
    i = nxt()
    opd, p = T - 90 * DAY, T - 10 * SEC
    tx = sub_tx(i, seq=4, product=YEARLY, purchase=p, expires=p + 365 * DAY, opd=opd, reason="PURCHASE")
    ren = renewal(i, product=YEARLY, recent_start=opd, renewal_date=p + 365 * DAY)
    std("DID_CHANGE_RENEWAL_PREF", "UPGRADE",
        "Upgrade monthly -> yearly, effective immediately: the notification carries the NEW yearly transaction "
        "(purchased T-10s, expires T-10s+365d, transactionReason PURCHASE); isUpgraded=true would only be on the "
        "old monthly transaction, which is not included. Renewal productId == autoRenewProductId == yearly. "
        "status 1 (active).", tx, ren, 1)

    # DID_CHANGE_RENEWAL_PREF/DOWNGRADE
    i = nxt()
    p = T - 100 * DAY
    tx = sub_tx(i, seq=1, product=YEARLY, purchase=p, expires=p + 365 * DAY, opd=p, reason="PURCHASE")
    ren = renewal(i, product=YEARLY, auto_product=MONTHLY, recent_start=p, renewal_date=p + 365 * DAY)
    std("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE",
        "Downgrade yearly -> monthly at next renewal: current yearly transaction (T-100d .. T+265d) unchanged and "
        "still active; renewal productId yearly, autoRenewProductId monthly (cheaper), renewalPrice 9990. "
        "status 1 (active).", tx, ren, 1)

    # DID_CHANGE_RENEWAL_PREF (none)
    i = nxt()
    tx, opd = active_monthly(i)
    ren = renewal(i, recent_start=opd, renewal_date=T + 20 * DAY)
    std("DID_CHANGE_RENEWAL_PREF", None,
        "Customer cancelled a pending downgrade: autoRenewProductId == productId == monthly. Current monthly "
        "period T-10d .. T+20d. status 1 (active).", tx, ren, 1)

    # DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED
    i = nxt()
    tx, opd = active_monthly(i)
    ren = renewal(i, auto=1, recent_start=opd, renewal_date=T + 20 * DAY)
    std("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED",
        "Auto-renew switched back on: renewal autoRenewStatus 1. Current monthly period T-10d .. T+20d. "
        "status 1 (active).", tx, ren, 1)

    # DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED
    i = nxt()
    tx, opd = active_monthly(i)
    ren = renewal(i, auto=0, recent_start=opd, renewal_date=T + 20 * DAY)
    std("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED",
        "Auto-renew switched off: renewal autoRenewStatus 0 (no expirationIntent yet, no renewalPrice, like "
        "Apple's). Still entitled until expiresDate T+20d. status 1 (active).", tx, ren, 1)

    # OFFER_REDEEMED/INITIAL_BUY
    i = nxt()
    p = T - 30 * SEC
    tx = sub_tx(i, seq=1, purchase=p, expires=p + 30 * DAY, opd=p, reason="PURCHASE", price=0, offerType=3,
                offerIdentifier="GATEWAY_FREE_MONTH", offerDiscountType="FREE_TRIAL", offerPeriod="P1M")
    ren = renewal(i, recent_start=p, renewal_date=p + 30 * DAY)
    std("OFFER_REDEEMED", "INITIAL_BUY",
        "New subscriber redeems an offer code (offerType 3, offerIdentifier GATEWAY_FREE_MONTH, FREE_TRIAL P1M, "
        "price 0) for the monthly product: purchased T-30s, expires T-30s+30d. status 1 (active).", tx, ren, 1)

    # OFFER_REDEEMED/RESUBSCRIBE
    i = nxt()
    opd, p = T - 200 * DAY, T - MIN
    offer = dict(offerType=3, offerIdentifier="GATEWAY_WINBACK_50", offerDiscountType="PAY_AS_YOU_GO",
                 offerPeriod="P3M")
    tx = sub_tx(i, seq=5, purchase=p, expires=p + 30 * DAY, opd=opd, reason="PURCHASE", price=4990, **offer)
    ren = renewal(i, recent_start=p, renewal_date=p + 30 * DAY, renewalPrice=4990, **offer)
    std("OFFER_REDEEMED", "RESUBSCRIBE",
        "Lapsed subscriber returns through an offer code (offerType 3, GATEWAY_WINBACK_50, PAY_AS_YOU_GO P3M, "
        "price 4990): purchased T-60s, expires T-60s+30d; the renewal info carries the same offer for the next "
        "period. status 1 (active).", tx, ren, 1)

    # OFFER_REDEEMED/UPGRADE
    i = nxt()
    opd, p = T - 90 * DAY, T - 10 * SEC
    tx = sub_tx(i, seq=4, product=YEARLY, purchase=p, expires=p + 365 * DAY, opd=opd, reason="PURCHASE",
                price=49990, offerType=3, offerIdentifier="GATEWAY_YEARLY_UPGRADE",
                offerDiscountType="PAY_UP_FRONT", offerPeriod="P1Y")
    ren = renewal(i, product=YEARLY, recent_start=opd, renewal_date=p + 365 * DAY)
    std("OFFER_REDEEMED", "UPGRADE",
        "Offer code for the yearly product redeemed by a monthly subscriber, effective immediately: new yearly "
        "transaction (offerType 3, GATEWAY_YEARLY_UPGRADE, PAY_UP_FRONT P1Y, price 49990) purchased T-10s, "
        "expires T-10s+365d. status 1 (active).", tx, ren, 1)

    # OFFER_REDEEMED/DOWNGRADE
    i = nxt()
    p = T - 100 * DAY
    tx = sub_tx(i, seq=1, product=YEARLY, purchase=p, expires=p + 365 * DAY, opd=p, reason="PURCHASE")
    ren = renewal(i, product=YEARLY, auto_product=MONTHLY, recent_start=p, renewal_date=p + 365 * DAY,
                  renewalPrice=4990, offerType=3, offerIdentifier="GATEWAY_MONTHLY_CODE",
                  offerDiscountType="PAY_AS_YOU_GO", offerPeriod="P3M")
    std("OFFER_REDEEMED", "DOWNGRADE",
        "Yearly subscriber redeems an offer code for the cheaper monthly product, effective at next renewal: "
        "the current yearly transaction (T-100d .. T+265d) has no offer; the offer (offerType 3, "
        "GATEWAY_MONTHLY_CODE, PAY_AS_YOU_GO P3M) is in the renewal info with autoRenewProductId monthly. "
        "status 1 (active).", tx, ren, 1)

    # OFFER_REDEEMED (none)
    i = nxt()
    tx, opd = active_monthly(i)
    ren = renewal(i, recent_start=opd, renewal_date=T + 20 * DAY, renewalPrice=4990, offerType=3,
                  offerIdentifier="GATEWAY_LOYALTY_CODE", offerDiscountType="PAY_AS_YOU_GO", offerPeriod="P3M")
    std("OFFER_REDEEMED", None,
        "Active monthly subscriber (T-10d .. T+20d) redeems an offer code for the same product; it applies from "
        "the next renewal, so the offer (offerType 3, GATEWAY_LOYALTY_CODE, PAY_AS_YOU_GO P3M, renewalPrice "
        "4990) is in the renewal info only. status 1 (active).", tx, ren, 1)

    # DID_RENEW (none) and /BILLING_RECOVERY
    for subtype, story in (
        (None, "Monthly subscription renewed: new transaction (transactionReason RENEWAL) purchased T-60s, "
               "expires T-60s+30d; originalPurchaseDate T-90d; auto-renew on. status 1 (active)."),
        ("BILLING_RECOVERY", "Renewal succeeded after a billing-retry period: new RENEWAL transaction purchased "
                             "T-60s, expires T-60s+30d; renewal isInBillingRetryPeriod false. status 1 (active)."),
    ):
        i = nxt()
        opd, p = T - 90 * DAY, T - MIN
        tx = sub_tx(i, seq=4, purchase=p, expires=p + 30 * DAY, opd=opd, reason="RENEWAL")
        extra = {"isInBillingRetryPeriod": False} if subtype else {}
        ren = renewal(i, recent_start=opd, renewal_date=p + 30 * DAY, **extra)
        std("DID_RENEW", subtype, story, tx, ren, 1)

    # EXPIRED/*
    for subtype, intent, extra, why in (
        ("VOLUNTARY", 1, {}, "customer turned auto-renew off"),
        ("BILLING_RETRY", 2, {}, "billing retry period ended without a successful charge"),
        ("PRICE_INCREASE", 3, {"priceIncreaseStatus": 0}, "customer never consented to the price increase "
                                                         "(priceIncreaseStatus 0)"),
        ("PRODUCT_NOT_FOR_SALE", 4, {}, "product no longer for sale"),
    ):
        i = nxt()
        opd = T - 120 * DAY
        tx = sub_tx(i, seq=4, purchase=T - 31 * DAY, expires=T - DAY, opd=opd, reason="RENEWAL")
        ren = renewal(i, auto=0, recent_start=opd, expirationIntent=intent, isInBillingRetryPeriod=False, **extra)
        std("EXPIRED", subtype,
            f"Subscription expired ({why}): last transaction T-31d .. T-1d; renewal autoRenewStatus 0, "
            f"expirationIntent {intent}, isInBillingRetryPeriod false. status 2 (expired).", tx, ren, 2)

    # DID_FAIL_TO_RENEW (none) / GRACE_PERIOD
    for subtype, status, grace, story in (
        (None, 3, None, "Renewal charge failed, no grace period: last transaction expired T-1h; renewal "
                        "isInBillingRetryPeriod true, expirationIntent 2, auto-renew still on, no "
                        "gracePeriodExpiresDate. status 3 (billing retry, not entitled)."),
        ("GRACE_PERIOD", 4, T + 6 * DAY, "Renewal charge failed, billing grace period: last transaction expired "
                                         "T-1h; renewal isInBillingRetryPeriod true, gracePeriodExpiresDate T+6d. "
                                         "status 4 (grace period, still entitled)."),
    ):
        i = nxt()
        opd, exp = T - 90 * DAY, T - HOUR
        tx = sub_tx(i, seq=3, purchase=exp - 30 * DAY, expires=exp, opd=opd, reason="RENEWAL")
        ren = renewal(i, recent_start=opd, renewal_date=exp, expirationIntent=2, isInBillingRetryPeriod=True,
                      gracePeriodExpiresDate=grace)
        std("DID_FAIL_TO_RENEW", subtype, story, tx, ren, status)

    # GRACE_PERIOD_EXPIRED
    i = nxt()
    opd, exp = T - 90 * DAY, T - 7 * DAY
    tx = sub_tx(i, seq=3, purchase=exp - 30 * DAY, expires=exp, opd=opd, reason="RENEWAL")
    ren = renewal(i, recent_start=opd, renewal_date=exp, expirationIntent=2, isInBillingRetryPeriod=True,
                  gracePeriodExpiresDate=T - HOUR)
    std("GRACE_PERIOD_EXPIRED", None,
        "Grace period ended without recovery: last transaction expired T-7d, gracePeriodExpiresDate T-1h, still "
        "isInBillingRetryPeriod true (Apple keeps retrying). status 3 (billing retry, not entitled).", tx, ren, 3)

    # PRICE_INCREASE/PENDING, /ACCEPTED
    for subtype, pis, story in (
        ("PENDING", 0, "customer has not responded yet (priceIncreaseStatus 0)"),
        ("ACCEPTED", 1, "customer consented (priceIncreaseStatus 1)"),
    ):
        i = nxt()
        tx, opd = active_monthly(i)
        ren = renewal(i, recent_start=opd, renewal_date=T + 20 * DAY, priceIncreaseStatus=pis,
                      renewalPrice=NEW_MONTHLY_PRICE)
        std("PRICE_INCREASE", subtype,
            f"Price increase 9990 -> {NEW_MONTHLY_PRICE} for the next period, {story}. Current monthly period "
            f"T-10d .. T+20d at 9990. status 1 (active).", tx, ren, 1)

    # REFUND
    refund_idx = nxt()
    p = T - 3 * DAY
    refund_common = dict(seq=1, purchase=p, expires=p + 30 * DAY, opd=p, reason="PURCHASE")
    tx = sub_tx(refund_idx, **refund_common, revocationReason=1, revocationDate=T - 5 * MIN,
                revocationType="REFUND_FULL")
    ren_refund = lambda signed: renewal(refund_idx, auto=0, recent_start=p, renewal_date=p + 30 * DAY,
                                        signed=signed)
    std("REFUND", None,
        "Full refund of the only monthly transaction (purchased T-3d, would expire T+27d): revocationDate "
        "T-5min, revocationReason 1, revocationType REFUND_FULL; renewal autoRenewStatus 0. status 5 (revoked, "
        "no entitlement). Same ids as notif-refund-reversed.json.", tx, ren_refund(T), 5)

    # REFUND_DECLINED (non-consumable)
    i = nxt()
    tx = one_time_tx(i, product=LIFETIME, ptype=NON_CONSUMABLE, purchase=T - 2 * DAY)
    fname = notif_name("REFUND_DECLINED")
    pos(fname,
        "REFUND_DECLINED (no subtype), Sandbox, signedDate T. Refund request for a Non-Consumable "
        f"({LIFETIME}, price 199990, purchased T-2d) was declined; transaction has no revocation fields. "
        "No signedRenewalInfo and no status (not an auto-renewable subscription).",
        notification(fname, "REFUND_DECLINED", None, data=data_obj(tx=tx)))

    # REFUND_REVERSED: the REFUND transaction again, without revocation, one day later
    t2 = T + DAY
    tx = sub_tx(refund_idx, **refund_common, signed=t2)
    fname = notif_name("REFUND_REVERSED")
    pos(fname,
        "REFUND_REVERSED (no subtype), Sandbox, signedDate T+1d = 2025-06-02T00:00:00Z (one day after the "
        "REFUND fixture so the two can be applied in order). Same transaction as notif-refund.json (same ids) "
        "now without revocationDate/revocationReason/revocationType: access restored until T+27d; renewal "
        "autoRenewStatus still 0. status 1 (active).",
        notification(fname, "REFUND_REVERSED", None,
                     data=data_obj(tx=tx, ren=ren_refund(t2), status=1), signed=t2))

    # CONSUMPTION_REQUEST (consumable)
    i = nxt()
    tx = one_time_tx(i, product=COINS, ptype=CONSUMABLE, purchase=T - 2 * DAY)
    fname = notif_name("CONSUMPTION_REQUEST")
    pos(fname,
        "CONSUMPTION_REQUEST (no subtype), Sandbox, signedDate T. Customer asked for a refund of a Consumable "
        f"({COINS}, price 4990, purchased T-2d); data.consumptionRequestReason UNINTENDED_PURCHASE. No "
        "signedRenewalInfo and no status.",
        notification(fname, "CONSUMPTION_REQUEST", None,
                     data=data_obj(tx=tx, consumptionRequestReason="UNINTENDED_PURCHASE")))

    # RENEWAL_EXTENDED
    i = nxt()
    opd = T - 60 * DAY
    tx = sub_tx(i, seq=3, purchase=T - 20 * DAY, expires=T + 40 * DAY, opd=opd, reason="RENEWAL")
    ren = renewal(i, recent_start=opd, renewal_date=T + 40 * DAY)
    std("RENEWAL_EXTENDED", None,
        "Renewal date extended by 30 days: period purchased T-20d would have expired T+10d, expiresDate moved "
        "out to T+40d (renewalDate too). status 1 (active).", tx, ren, 1)

    # RENEWAL_EXTENSION/SUMMARY
    fname = notif_name("RENEWAL_EXTENSION", "SUMMARY")
    summary = {
        "requestIdentifier": fixed_uuid("renewal-extension-request"),
        "environment": "Sandbox",
        "appAppleId": APP_ID,
        "bundleId": BUNDLE,
        "productId": MONTHLY,
        "storefrontCountryCodes": ["USA", "CAN"],
        "succeededCount": 120,
        "failedCount": 2,
    }
    pos(fname,
        "RENEWAL_EXTENSION/SUMMARY, Sandbox, signedDate T. Mass renewal-date extension finished: `summary` "
        "(not `data`) with requestIdentifier, productId monthly, storefrontCountryCodes [USA, CAN], "
        "succeededCount 120, failedCount 2. No transaction, no renewal info, no status.",
        notification(fname, "RENEWAL_EXTENSION", "SUMMARY", summary=summary))

    # RENEWAL_EXTENSION/FAILURE
    i = nxt()
    opd = T - 60 * DAY
    tx = sub_tx(i, seq=3, purchase=T - 20 * DAY, expires=T + 10 * DAY, opd=opd, reason="RENEWAL")
    ren = renewal(i, recent_start=opd, renewal_date=T + 10 * DAY)
    std("RENEWAL_EXTENSION", "FAILURE",
        "The mass extension did not apply to this subscription: expiresDate unchanged at T+10d (period from "
        "T-20d). status 1 (active).", tx, ren, 1)

    # REVOKE (family sharing)
    i = nxt()
    tx, opd = active_monthly(i, ownership="FAMILY_SHARED", revocationReason=0, revocationDate=T - 5 * MIN,
                             revocationType="FAMILY_REVOKE")
    ren = renewal(i, recent_start=opd, renewal_date=T + 20 * DAY)
    std("REVOKE", None,
        "Family Sharing access revoked: FAMILY_SHARED monthly transaction (T-10d .. T+20d) with revocationDate "
        "T-5min, revocationReason 0, revocationType FAMILY_REVOKE. status 5 (revoked, no entitlement).",
        tx, ren, 5)

    # TEST
    fname = notif_name("TEST")
    pos(fname,
        "TEST (no subtype), Sandbox, signedDate T. Like real TEST notifications, data has only bundleId and "
        "environment (no appAppleId, no transaction).",
        notification(fname, "TEST", None, data={"bundleId": BUNDLE, "environment": "Sandbox"}))

    # EXTERNAL_PURCHASE_TOKEN/*
    for subtype, created, story in (
        ("UNREPORTED", T - 2 * DAY, "token created T-2d and never reported"),
        ("ACTIVE_TOKEN_REMINDER", T - 30 * DAY, "reminder for a token created T-30d that is still active"),
        ("CREATED", T - MIN, "token created T-60s"),
    ):
        fname = notif_name("EXTERNAL_PURCHASE_TOKEN", subtype)
        ept = {
            "externalPurchaseId": "SANDBOX_" + fixed_uuid(f"external-purchase-{subtype}"),
            "tokenCreationDate": created,
            "appAppleId": APP_ID,
            "bundleId": BUNDLE,
        }
        pos(fname,
            f"EXTERNAL_PURCHASE_TOKEN/{subtype}, signedDate T: {story}. `externalPurchaseToken` (not `data`) has "
            "no environment field: Sandbox is inferred from the SANDBOX_ prefix of externalPurchaseId.",
            notification(fname, "EXTERNAL_PURCHASE_TOKEN", subtype, ept=ept))

    # ONE_TIME_CHARGE
    i = nxt()
    tx = one_time_tx(i, product=COINS, ptype=CONSUMABLE, purchase=T - 30 * SEC)
    fname = notif_name("ONE_TIME_CHARGE")
    pos(fname,
        f"ONE_TIME_CHARGE (no subtype), Sandbox, signedDate T. Consumable purchase ({COINS}, price 4990, "
        "purchased T-30s). No signedRenewalInfo and no status.",
        notification(fname, "ONE_TIME_CHARGE", None, data=data_obj(tx=tx)))

    # RESCIND_CONSENT
    i = nxt()
    fname = notif_name("RESCIND_CONSENT")
    app_tx = {
        "receiptType": "Sandbox",
        "appAppleId": APP_ID,
        "bundleId": BUNDLE,
        "applicationVersion": BUNDLE_VERSION,
        "receiptCreationDate": T - DAY,
        "originalPurchaseDate": T - 365 * DAY,
        "originalApplicationVersion": "1",
        "appTransactionId": ids(i, 1)["appTransactionId"],
        "originalPlatform": "iOS",
        "signedDate": T,
    }
    app_data = {"appAppleId": APP_ID, "bundleId": BUNDLE, "environment": "Sandbox",
                "signedAppTransactionInfo": jws(app_tx)}
    pos(fname,
        "RESCIND_CONSENT (no subtype), Sandbox, signedDate T. `appData` (not `data`) with "
        "signedAppTransactionInfo: a JWS (same x5c, leaf key) whose payload is an AppTransaction "
        "(receiptType Sandbox, applicationVersion 42, receiptCreationDate T-1d, originalPurchaseDate T-365d, "
        "originalPlatform iOS, signedDate T).",
        notification(fname, "RESCIND_CONSENT", None, app_data=app_data))

    # METADATA_UPDATE, MIGRATION, PRICE_CHANGE (Advanced Commerce; shape only)
    for ntype, story, extra in (
        ("METADATA_UPDATE", "subscription metadata changed", {}),
        ("MIGRATION", "subscription migrated", {}),
        ("PRICE_CHANGE", f"price change, renewalPrice {NEW_MONTHLY_PRICE} from the next period",
         {"renewalPrice": NEW_MONTHLY_PRICE}),
    ):
        i = nxt()
        tx, opd = active_monthly(i)
        ren = renewal(i, recent_start=opd, renewal_date=T + 20 * DAY, **extra)
        std(ntype, None,
            f"Advanced Commerce-era type ({story}); shape only, no advancedCommerceInfo. Active monthly "
            "subscription T-10d .. T+20d. status 1 (active).", tx, ren, 1)

    # future type
    i = nxt()
    opd, p = T - 90 * DAY, T - MIN
    tx = sub_tx(i, seq=4, purchase=p, expires=p + 30 * DAY, opd=opd, reason="RENEWAL")
    ren = renewal(i, recent_start=opd, renewal_date=p + 30 * DAY)
    fname = "notif-future-type.json"
    pos(fname,
        "notificationType FUTURE_EVENT_TYPE, subtype SOMETHING_NEW (both unknown to the enums), Sandbox, "
        "signedDate T, otherwise a normal DID_RENEW-like data block (status 1). Must verify: unknown types and "
        "subtypes are kept as raw strings, not rejected.",
        notification(fname, "FUTURE_EVENT_TYPE", "SOMETHING_NEW", data=data_obj(tx=tx, ren=ren, status=1)))

    # SUBSCRIBED/INITIAL_BUY in Production
    i = nxt()
    p = T - 30 * SEC
    tx = sub_tx(i, seq=1, purchase=p, expires=p + 30 * DAY, opd=p, reason="PURCHASE", env="Production")
    ren = renewal(i, recent_start=p, renewal_date=p + 30 * DAY, env="Production")
    fname = "notif-subscribed-initial-buy-production.json"
    pos(fname,
        "SUBSCRIBED/INITIAL_BUY, environment Production (data, transaction and renewal info), data.appAppleId "
        "1234567890 (required for Production), signedDate T. Paid monthly purchase (9990, no offer) T-30s .. "
        "T-30s+30d. status 1 (active).",
        notification(fname, "SUBSCRIBED", "INITIAL_BUY",
                     data=data_obj(env="Production", tx=tx, ren=ren, status=1)))

    # DID_RENEW without top-level signedDate
    i = nxt()
    opd, p = T - 90 * DAY, T - MIN
    tx = sub_tx(i, seq=4, purchase=p, expires=p + 30 * DAY, opd=opd, reason="RENEWAL")
    ren = renewal(i, recent_start=opd, renewal_date=p + 30 * DAY)
    fname = "notif-did-renew-no-signeddate.json"
    pos(fname,
        "DID_RENEW, Sandbox, WITHOUT top-level signedDate (like older real notifications); the nested "
        "transaction and renewal info have signedDate 1748736000000 (T). Renewal purchased T-60s, expires "
        "T-60s+30d. status 1 (active).",
        notification(fname, "DID_RENEW", None, data=data_obj(tx=tx, ren=ren, status=1), signed=None))

    # bare transaction / renewal info
    i = nxt()
    opd, p = T - 90 * DAY, T - MIN
    tx = sub_tx(i, seq=4, purchase=p, expires=p + 30 * DAY, opd=opd, reason="RENEWAL")
    pos("tx-auto-renewable.json",
        "Bare signedTransaction (JWSTransaction), Sandbox, signedDate T: monthly auto-renewable renewal "
        "purchased T-60s, expires T-60s+30d.", tx, key="signedTransaction")
    pos("renewal-info.json",
        "Bare signedRenewalInfo (JWSRenewalInfo), Sandbox, signedDate T: same subscription as "
        "tx-auto-renewable.json, auto-renew on, renewalDate T-60s+30d.",
        renewal(i, recent_start=opd, renewal_date=p + 30 * DAY), key="signedRenewalInfo")


# ---------------------------------------------------------------------------------------
# negative fixtures
# ---------------------------------------------------------------------------------------
NEGATIVES: list[tuple[str, str, str | None, str]] = []  # (name, code, cause, notes)


def neg(name: str, code: str, cause: str | None, notes: str, *, token: str | None = None,
        body: dict | None = None, raw: str | None = None) -> None:
    path = NEG_DIR / f"{name}.json"
    if raw is not None:
        path.write_text(raw)
    elif body is not None:
        path.write_text(json.dumps({"source": SOURCE, "notes": notes, **body}, indent=2) + "\n")
    else:
        write_fixture(path, notes, "signedPayload", token)
    err = {"code": code}
    if cause:
        err["cause"] = cause
    (NEG_DIR / f"{name}.expected.json").write_text(json.dumps({"ok": False, "error": err}, indent=2) + "\n")
    NEGATIVES.append((name, code, cause, notes))


def make_negatives() -> None:
    idx = 100

    def renew_payload(name, *, env="Sandbox", app_id=APP_ID, tx_over=None, tx_token=None, ren_token=None):
        """A valid DID_RENEW payload (fresh ids) for negative `name`; tx_token / ren_token optionally turn
        the transaction / renewal dict into a (defective) token instead of the normal jws()."""
        nonlocal idx
        idx += 1
        opd, p = T - 90 * DAY, T - MIN
        kw = dict(seq=4, purchase=p, expires=p + 30 * DAY, opd=opd, reason="RENEWAL", env=env)
        kw.update(tx_over or {})
        tx = sub_tx(idx, **kw)
        ren = renewal(idx, recent_start=opd, renewal_date=p + 30 * DAY, env=env)
        data = data_obj(env=env, app_id=app_id, tx=(tx_token or jws)(tx), ren=(ren_token or jws)(ren), status=1)
        return notification(f"negative/{name}.json", "DID_RENEW", None, data=data)

    def test_payload(name, *, bundle=BUNDLE, env="Sandbox"):
        return notification(f"negative/{name}.json", "TEST", None, data={"bundleId": bundle, "environment": env})

    BASE = "Base: a valid DID_RENEW notification (Sandbox, com.example.gateway, signedDate T, nested tokens valid)."

    # --- signature / tampering -----------------------------------------------------------
    payload = renew_payload("tampered-payload")
    good = jws(payload)
    h, _, s = good.split(".")
    tampered = json.loads(json.dumps(payload))
    tampered["data"]["status"] = 2
    neg("tampered-payload", "bad_signature", None,
        f"{BASE} After signing, the payload segment was re-encoded with data.status changed 1 -> 2; header and "
        "signature segments kept (the signature covers the original payload).",
        token=f"{h}.{b64u(cjson(tampered))}.{s}")

    # header still carries the valid main x5c chain, but the signer is other-leaf
    payload = renew_payload("nested-transaction-other-key", tx_token=lambda tx: jws(tx, signer="other-leaf"))
    neg("nested-transaction-other-key", "nested_jws_invalid", "bad_signature",
        f"{BASE} data.signedTransactionInfo has the valid main x5c header (leaf, intermediate, root) but is "
        "signed with other-leaf's private key, so its signature does not verify with the x5c leaf key. "
        "The outer token is valid.", token=jws(payload))

    def tamper_renewal(ren):
        rh, _, rs = jws(ren).split(".")
        ren_t = dict(ren)
        ren_t["autoRenewStatus"] = 0
        ren_t.pop("renewalPrice")
        ren_t.pop("currency")
        return f"{rh}.{b64u(cjson(ren_t))}.{rs}"

    payload = renew_payload("nested-renewal-tampered", ren_token=tamper_renewal)
    neg("nested-renewal-tampered", "nested_jws_invalid", "bad_signature",
        f"{BASE} data.signedRenewalInfo was signed correctly, then its payload segment was re-encoded with "
        "autoRenewStatus 1 -> 0 (renewalPrice/currency dropped); header and signature kept. The outer token is "
        "valid.", token=jws(payload))

    # --- x5c shape / trust -------------------------------------------------------------
    for name, chain, what in (
        ("x5c-two-certs", ("leaf", "intermediate"), "[leaf, intermediate] (root omitted)"),
        ("x5c-four-certs", ("leaf", "intermediate", "root", "root"), "[leaf, intermediate, root, root]"),
        ("x5c-one-cert", ("leaf",), "[leaf] only"),
    ):
        payload = renew_payload(name)
        neg(name, "invalid_chain_length", None,
            f"{BASE} Outer header x5c is {what}; every certificate is the valid test-PKI one and the token is "
            "correctly signed with the leaf key. Exactly 3 entries are required.",
            token=jws(payload, chain=chain))

    payload = renew_payload("x5c-root-not-pinned")
    neg("x5c-root-not-pinned", "untrusted_root", None,
        f"{BASE} Outer x5c is [leaf, intermediate, other-root]: leaf and intermediate are ours and valid, the "
        "signature is good, but x5c[2] is other-root.der (same subject DN as root.der, different key), which is "
        "not the pinned root.", token=jws(payload, chain=("leaf", "intermediate", "other-root")))

    payload = renew_payload("chain-to-other-root")
    neg("chain-to-other-root", "untrusted_root", None,
        f"{BASE} Outer x5c is [other-leaf, other-intermediate, root.der] and the token is signed with "
        "other-leaf's key. x5c[2] is the pinned root byte for byte, but other-intermediate was issued by "
        "other-root (a look-alike with the same DN as root.der), so its signature does not verify under the "
        "pinned root. Markers, validity and the JWS signature are all fine.",
        token=jws(payload, chain=("other-leaf", "other-intermediate", "root"), signer="other-leaf"))

    payload = renew_payload("leaf-missing-marker")
    neg("leaf-missing-marker", "missing_apple_marker", None,
        f"{BASE} Outer x5c is [leaf-no-marker, intermediate, root], signed with leaf-no-marker's key; the leaf "
        "lacks extension 1.2.840.113635.100.6.11.1 and is otherwise valid.",
        token=jws(payload, chain=("leaf-no-marker", "intermediate", "root"), signer="leaf-no-marker"))

    payload = renew_payload("intermediate-missing-marker")
    neg("intermediate-missing-marker", "missing_apple_marker", None,
        f"{BASE} Outer x5c is [leaf-under-intermediate-no-marker, intermediate-no-marker, root], signed with "
        "that leaf's key; the intermediate lacks extension 1.2.840.113635.100.6.2.1 and is otherwise valid.",
        token=jws(payload, chain=("leaf-under-intermediate-no-marker", "intermediate-no-marker", "root"),
                  signer="leaf-under-intermediate-no-marker"))

    # --- algorithm / signature encoding --------------------------------------------------
    main_x5c = x5c_of(MAIN_CHAIN)

    payload = renew_payload("alg-none")
    hs = b64u(cjson({"alg": "none", "x5c": main_x5c}))
    neg("alg-none", "unsupported_algorithm", None,
        f'{BASE} Outer header is {{"alg":"none","x5c":[valid main chain]}} and the signature segment is empty '
        '("header.payload.").', token=f"{hs}.{b64u(cjson(payload))}.")

    payload = renew_payload("alg-hs256")
    hs = b64u(cjson({"alg": "HS256", "x5c": main_x5c}))
    ps = b64u(cjson(payload))
    hkey = CERTS["leaf"].public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
    mac = hmac.new(hkey, f"{hs}.{ps}".encode(), hashlib.sha256).digest()
    neg("alg-hs256", "unsupported_algorithm", None,
        f'{BASE} Outer header is {{"alg":"HS256","x5c":[valid main chain]}}; the signature is HMAC-SHA256 '
        "keyed with the leaf certificate's public key in PEM (SubjectPublicKeyInfo) form - the classic "
        "algorithm-confusion forgery.", token=f"{hs}.{ps}.{b64u(mac)}")

    payload = renew_payload("alg-rs256")
    hs = b64u(cjson({"alg": "RS256", "x5c": main_x5c}))
    ps = b64u(cjson(payload))
    rkey = deterministic_rsa_key("iap-gateway alg-rs256 fixture")
    rsig = rkey.sign(f"{hs}.{ps}".encode(), padding.PKCS1v15(), hashes.SHA256())
    neg("alg-rs256", "unsupported_algorithm", None,
        f'{BASE} Outer header is {{"alg":"RS256","x5c":[valid main chain]}}; the signature is a 256-byte '
        "RSASSA-PKCS1-v1_5/SHA-256 signature by a throw-away RSA-2048 key (not in the test PKI).",
        token=f"{hs}.{ps}.{b64u(rsig)}")

    payload = renew_payload("alg-es256-lowercase")
    neg("alg-es256-lowercase", "unsupported_algorithm", None,
        f'{BASE} Outer header is {{"alg":"es256","x5c":[valid main chain]}} (lowercase alg); the signature is '
        "a valid raw R||S ES256 signature by the leaf key. alg must be exactly \"ES256\".",
        token=jws(payload, header={"alg": "es256", "x5c": main_x5c}))

    payload = renew_payload("der-signature")
    hs, ps = b64u(cjson({"alg": "ES256", "x5c": main_x5c})), b64u(cjson(payload))
    der_sig = KEYS["leaf"].sign(f"{hs}.{ps}".encode(), ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    neg("der-signature", "bad_signature", None,
        f"{BASE} The outer signature is a valid ECDSA P-256/SHA-256 signature by the leaf key, but encoded as "
        f"ASN.1 DER ({len(der_sig)} bytes) instead of JOSE raw R||S (64 bytes).",
        token=f"{hs}.{ps}.{b64u(der_sig)}")

    payload = renew_payload("signature-wrong-length")
    hs, ps = b64u(cjson({"alg": "ES256", "x5c": main_x5c})), b64u(cjson(payload))
    short = es256_raw_short_r(KEYS["leaf"], f"{hs}.{ps}".encode())
    neg("signature-wrong-length", "bad_signature", None,
        f"{BASE} The outer signature segment decodes to 63 bytes: a valid leaf-key signature whose r has a "
        "leading 0x00 byte, written as r (31 bytes, leading zero stripped) || s (32 bytes). Raw ES256 "
        "signatures must be exactly 64 bytes; a verifier that left-pads r would wrongly accept it.",
        token=f"{hs}.{ps}.{b64u(short)}")

    # --- certificate validity / profile --------------------------------------------------
    payload = renew_payload("leaf-expired-at-signeddate")
    neg("leaf-expired-at-signeddate", "certificate_expired", None,
        f"{BASE} Outer x5c is [leaf-expired, intermediate, root], signed with leaf-expired's key; leaf-expired is "
        "valid 2020-01-01 .. 2021-01-01 but signedDate is 2025-06-01, so it is expired at the validation time. "
        "Nested tokens use the normal leaf.",
        token=jws(payload, chain=("leaf-expired", "intermediate", "root"), signer="leaf-expired"))

    payload = renew_payload("leaf-p384-key")
    neg("leaf-p384-key", "invalid_certificate", None,
        f"{BASE} Outer x5c is [leaf-p384, intermediate, root]; the leaf has a P-384 key (ES256 needs P-256). "
        "The signature is ECDSA P-384 over SHA-256 by that key, raw R||S (96 bytes).",
        token=jws(payload, chain=("leaf-p384", "intermediate", "root"), signer="leaf-p384"))

    payload = renew_payload("leaf-is-ca")
    neg("leaf-is-ca", "invalid_certificate", None,
        f"{BASE} Outer x5c is [leaf-ca, intermediate, root], signed with leaf-ca's key; the leaf has "
        "basicConstraints CA:TRUE (otherwise the normal leaf profile, marker present).",
        token=jws(payload, chain=("leaf-ca", "intermediate", "root"), signer="leaf-ca"))

    payload = renew_payload("intermediate-not-ca")
    neg("intermediate-not-ca", "invalid_certificate", None,
        f"{BASE} Outer x5c is [leaf-under-intermediate-not-ca, intermediate-not-ca, root], signed with that "
        "leaf's key; the intermediate has basicConstraints CA:FALSE (otherwise the normal intermediate "
        "profile, marker present), so it may not issue certificates.",
        token=jws(payload, chain=("leaf-under-intermediate-not-ca", "intermediate-not-ca", "root"),
                  signer="leaf-under-intermediate-not-ca"))

    payload = renew_payload("x5c-base64url")
    for l in MAIN_CHAIN:
        assert re.search(r"[+/]", b64std(DER[l])), f"{l}: base64 has no + or /, pick another cert"
    url_x5c = [b64std(DER[l]).replace("+", "-").replace("/", "_") for l in MAIN_CHAIN]
    neg("x5c-base64url", "invalid_certificate", None,
        f"{BASE} Outer x5c holds the valid main chain, but each entry is written in the base64url alphabet "
        "('-' and '_' instead of '+' and '/', padding kept); every entry contains at least one such character. "
        "x5c must be standard base64 (RFC 7515 4.1.6). Signed correctly with the leaf key.",
        token=jws(payload, header={"alg": "ES256", "x5c": url_x5c}))

    payload = renew_payload("x5c-garbage-der")
    garbage = b""
    while len(garbage) < 512:
        garbage += hashlib.sha256(b"x5c-garbage-der" + len(garbage).to_bytes(4, "big")).digest()
    garbage = b"\x5a" + garbage[1:512]  # not even a SEQUENCE tag
    neg("x5c-garbage-der", "invalid_certificate", None,
        f"{BASE} Outer x5c[0] is valid standard base64 of 512 pseudo-random bytes (not DER); x5c[1], x5c[2] "
        "are the valid intermediate and root. Signed with the real leaf key.",
        token=jws(payload, header={"alg": "ES256", "x5c": [b64std(garbage)] + main_x5c[1:]}))

    # --- app / environment rules ---------------------------------------------------------
    neg("wrong-bundle", "unknown_bundle", None,
        "TEST notification (data has only bundleId + environment, so no nested token can carry a second "
        "defect), correctly signed, Sandbox, signedDate T, but data.bundleId is com.example.unknown, which is "
        "not configured.", token=jws(test_payload("wrong-bundle", bundle="com.example.unknown")))

    neg("wrong-environment", "environment_mismatch", None,
        "TEST notification (data: bundleId + environment only), correctly signed, signedDate T, for "
        "com.example.prodonly (configured for Production only) with environment Sandbox.",
        token=jws(test_payload("wrong-environment", bundle=PROD_ONLY_BUNDLE)))

    payload = renew_payload("wrong-app-apple-id-production", env="Production", app_id=999)
    neg("wrong-app-apple-id-production", "app_apple_id_mismatch", None,
        "Valid DID_RENEW for com.example.gateway in Production (data, transaction and renewal info all "
        "Production, all correctly signed), but data.appAppleId is 999 instead of the configured 1234567890.",
        token=jws(payload))

    payload = renew_payload("production-missing-app-apple-id", env="Production", app_id=None)
    neg("production-missing-app-apple-id", "app_apple_id_mismatch", None,
        "Valid DID_RENEW for com.example.gateway in Production (all nested tokens Production, correctly "
        "signed), but data has no appAppleId at all; Production requires it to equal 1234567890.",
        token=jws(payload))

    payload = renew_payload("nested-transaction-wrong-bundle", tx_over={"bundle": "com.example.other"})
    neg("nested-transaction-wrong-bundle", "nested_jws_invalid", "unknown_bundle",
        f"{BASE} The outer data is for com.example.gateway, but the (correctly signed) signedTransactionInfo "
        "has bundleId com.example.other (not configured).", token=jws(payload))

    payload = renew_payload("nested-transaction-wrong-environment", tx_over={"env": "Production"})
    neg("nested-transaction-wrong-environment", "nested_jws_invalid", "environment_mismatch",
        f"{BASE} The outer data and the renewal info are Sandbox, but the (correctly signed) "
        "signedTransactionInfo has environment Production. com.example.gateway allows Production, so this is "
        "only detectable by comparing the nested environment with the notification's environment.",
        token=jws(payload))

    # Xcode: one self-signed P-256 cert, kid Apple_Xcode_Key, like StoreKit Testing in Xcode
    xkey = derive_ec_key("xcode-storekit-testing", ec.SECP256R1())
    xname = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "StoreKit Testing in Xcode"),
                       x509.NameAttribute(NameOID.ORGANIZATION_NAME, "StoreKit Testing in Xcode")])
    xcert = (x509.CertificateBuilder().subject_name(xname).issuer_name(xname).public_key(xkey.public_key())
             .serial_number(1).not_valid_before(utc(2025, 5, 31)).not_valid_after(utc(2026, 5, 31))
             .sign(xkey, hashes.SHA256(), ecdsa_deterministic=True))
    xheader = {"alg": "ES256", "kid": "Apple_Xcode_Key", "typ": "JWT",
               "x5c": [b64std(xcert.public_bytes(serialization.Encoding.DER))]}
    idx += 1
    p = T - 30 * SEC
    xtx = sub_tx(idx, seq=1, purchase=p, expires=p + 30 * DAY, opd=p, reason="PURCHASE", env="Xcode")
    xren = renewal(idx, recent_start=p, renewal_date=p + 30 * DAY, env="Xcode")
    xdata = data_obj(env="Xcode", app_id=None, status=1,
                     tx=jws(xtx, header=xheader, signer=xkey), ren=jws(xren, header=xheader, signer=xkey))
    xpayload = notification("negative/xcode-environment.json", "SUBSCRIBED", "INITIAL_BUY", data=xdata)
    neg("xcode-environment", "unsupported_environment", None,
        "StoreKit-Testing-in-Xcode style: outer and nested headers are "
        '{"alg":"ES256","kid":"Apple_Xcode_Key","typ":"JWT","x5c":[one self-signed P-256 cert "StoreKit '
        'Testing in Xcode"]}, signed (validly) with that cert\'s key; SUBSCRIBED/INITIAL_BUY with data, '
        "transaction and renewal environment Xcode (no appAppleId, integer ms timestamps). It cannot chain to "
        "the pinned root (length 1, self-signed, no markers) - the expected code assumes the environment is "
        "recognised (from the unverified payload or kid) before chain validation and rejected as unsupported.",
        token=jws(xpayload, header=xheader, signer=xkey))

    neg("local-testing-environment", "unsupported_environment", None,
        "TEST notification (data: bundleId com.example.gateway + environment only), properly signed with the "
        "test PKI (valid chain, markers, signature), signedDate T, but environment is LocalTesting.",
        token=jws(test_payload("local-testing-environment", env="LocalTesting")))

    # --- body / JWS structure ------------------------------------------------------------
    neg("body-not-json", "malformed_body", None, "", raw="not json {")
    neg("body-unknown-version", "unknown_version", None,
        'JSON object without signedPayload (besides source/notes the body is {"hello": "world"}): neither a '
        "V2 body nor a V1 one.", body={"hello": "world"})
    neg("signedpayload-not-string", "malformed_body", None,
        "V2-looking body whose signedPayload is the number 42 instead of a string.", body={"signedPayload": 42})

    payload = renew_payload("jws-two-segments")
    h, p_, _ = jws(payload).split(".")
    neg("jws-two-segments", "malformed", None,
        f"{BASE} The outer token is only \"header.payload\" (valid segments, signature segment and its dot "
        "removed).", token=f"{h}.{p_}")

    payload = renew_payload("jws-four-segments")
    neg("jws-four-segments", "malformed", None,
        f"{BASE} The outer token is the valid 3-segment JWS followed by a 4th segment (\".\" + "
        "base64url(\"extra\")).", token=jws(payload) + "." + b64u(b"extra"))

    payload = renew_payload("header-bad-base64")
    hs = b64u(cjson({"alg": "ES256", "x5c": main_x5c}))
    hs = hs[:20] + "*" + hs[20:]
    neg("header-bad-base64", "malformed", None,
        f"{BASE} A '*' was inserted at offset 20 of the (otherwise valid) header segment; the signature is the "
        "leaf key's valid signature over the literal segments.", token=jws(payload, header_seg=hs))

    payload = renew_payload("header-not-json")
    neg("header-not-json", "malformed", None,
        f"{BASE} The header segment is valid base64url of the text '{{not json'; signed with the leaf key over "
        "the literal segments.", token=jws(payload, header_seg=b64u(b"{not json")))

    payload = renew_payload("header-missing-x5c")
    neg("header-missing-x5c", "malformed", None,
        f'{BASE} The header is {{"alg":"ES256"}} (no x5c); signed with the leaf key.',
        token=jws(payload, header={"alg": "ES256"}))

    payload = renew_payload("payload-bad-base64")
    ps = b64u(cjson(payload))
    ps = ps[:40] + "*" + ps[40:]
    neg("payload-bad-base64", "malformed", None,
        f"{BASE} A '*' was inserted at offset 40 of the payload segment; signed with the leaf key over the "
        "literal segments.", token=jws(None, payload_seg=ps))

    neg("payload-not-json", "malformed", None,
        "The payload segment is valid base64url of the text '[1,2' (not JSON); header is the valid main chain "
        "and the signature is valid over the literal segments.", token=jws(b"[1,2"))

    neg("payload-not-object", "malformed", None,
        "The payload is the JSON array '[]' (not an object); header is the valid main chain and the signature "
        "is valid.", token=jws(b"[]"))

    payload = renew_payload("signature-bad-base64")
    h, p_, s = jws(payload).split(".")
    neg("signature-bad-base64", "malformed", None,
        f"{BASE} A '*' was inserted at offset 10 of the (otherwise valid) signature segment.",
        token=f"{h}.{p_}.{s[:10]}*{s[10:]}")

    def star_payload(tx):
        tps = b64u(cjson(tx))
        return jws(None, payload_seg=tps[:40] + "*" + tps[40:])

    payload = renew_payload("nested-transaction-bad-base64", tx_token=star_payload)
    neg("nested-transaction-bad-base64", "nested_jws_invalid", "malformed",
        f"{BASE} In data.signedTransactionInfo a '*' was inserted at offset 40 of the payload segment (signed "
        "over the literal segments, valid header). The outer token is valid.", token=jws(payload))

    payload = renew_payload("nested-transaction-not-json",
                            tx_token=lambda tx: jws(b'{"transactionId":"2000000'))
    neg("nested-transaction-not-json", "nested_jws_invalid", "malformed",
        f"{BASE} data.signedTransactionInfo is a correctly signed JWS (valid main chain) whose payload decodes "
        "to the truncated text '{\"transactionId\":\"2000000' (not JSON). The outer token is valid.",
        token=jws(payload))

    payload = renew_payload("nested-renewal-two-segments",
                            ren_token=lambda ren: ".".join(jws(ren).split(".")[:2]))
    neg("nested-renewal-two-segments", "nested_jws_invalid", "malformed",
        f"{BASE} data.signedRenewalInfo is only \"header.payload\" (signature segment removed). The outer token "
        "is valid.", token=jws(payload))

    payload = renew_payload("data-and-summary-both")
    payload = dict(payload)
    summary = {"requestIdentifier": fixed_uuid("negative/data-and-summary-both"), "environment": "Sandbox",
               "appAppleId": APP_ID, "bundleId": BUNDLE, "productId": MONTHLY,
               "storefrontCountryCodes": ["USA"], "succeededCount": 1, "failedCount": 0}
    payload = {k: payload[k] for k in ("notificationType", "notificationUUID", "data")} | \
              {"summary": summary, "version": "2.0", "signedDate": T}
    neg("data-and-summary-both", "malformed", None,
        f"{BASE} The payload carries both `data` and a (valid) `summary`; they are mutually exclusive.",
        token=jws(payload))

    neg("no-data-summary-or-token", "malformed", None,
        "Correctly signed TEST notification (signedDate T) with none of data / summary / externalPurchaseToken "
        "/ appData.", token=jws(notification("negative/no-data-summary-or-token.json", "TEST", None)))

    p = notification("negative/data-not-object.json", "TEST", None)
    p = {"notificationType": "TEST", "notificationUUID": p["notificationUUID"], "data": "x", "version": "2.0",
         "signedDate": T}
    neg("data-not-object", "malformed", None,
        'Correctly signed TEST notification whose data is the string "x" instead of an object.', token=jws(p))

    ept = {"externalPurchaseId": fixed_uuid("negative/external-token-production"), "tokenCreationDate": T - MIN,
           "appAppleId": 999, "bundleId": BUNDLE}
    neg("external-token-production-wrong-app-apple-id", "app_apple_id_mismatch", None,
        "Correctly signed EXTERNAL_PURCHASE_TOKEN/CREATED for com.example.gateway; externalPurchaseId has no "
        "SANDBOX_ prefix, so the environment is Production (allowed for this bundle), and Production requires "
        "appAppleId 1234567890 but it is 999.",
        token=jws(notification("negative/external-token-production-wrong-app-apple-id.json",
                               "EXTERNAL_PURCHASE_TOKEN", "CREATED", ept=ept)))


# =======================================================================================
# independent reference check (reads only the files on disk + root.der)
# =======================================================================================
CONFIG = {
    BUNDLE: {"appAppleId": APP_ID, "envs": {"Production", "Sandbox"}},
    PROD_ONLY_BUNDLE: {"appAppleId": PROD_ONLY_APP_ID, "envs": {"Production"}},
}
UNSUPPORTED_ENVS = {"Xcode", "LocalTesting"}
B64URL_RE = re.compile(r"^[A-Za-z0-9_-]*$")
B64STD_RE = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")


class Check:
    def __init__(self, pinned_root_der: bytes):
        self.root_der = pinned_root_der
        self.root = x509.load_der_x509_certificate(pinned_root_der)

    @staticmethod
    def _seg(seg: str):
        if not B64URL_RE.match(seg) or len(seg) % 4 == 1:
            return None
        return b64u_decode(seg)

    @staticmethod
    def _has_ext(cert, oid) -> bool:
        return any(e.oid.dotted_string == oid for e in cert.extensions)

    @staticmethod
    def _bc_ca(cert):
        try:
            return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            return False

    @staticmethod
    def _ku(cert):
        try:
            return cert.extensions.get_extension_for_class(x509.KeyUsage).value
        except x509.ExtensionNotFound:
            return None

    @staticmethod
    def _signed_by(cert, issuer) -> bool:
        if cert.issuer != issuer.subject:
            return False
        try:
            cert.verify_directly_issued_by(issuer)
            return True
        except (ValueError, TypeError, InvalidSignature):
            return False

    def jws(self, token: str):
        """Returns (errors, info, header, payload). Collects every defect it can see; errors are codes."""
        errors, info = set(), []
        parts = token.split(".")
        if len(parts) != 3:
            return {"malformed"}, [f"{len(parts)} segments"], None, None
        hb, pb, sb = (self._seg(x) for x in parts)
        header = payload = None
        if hb is None:
            errors.add("malformed"); info.append("header segment not base64url")
        else:
            try:
                header = json.loads(hb)
                assert isinstance(header, dict)
            except Exception:
                header = None
                errors.add("malformed"); info.append("header not a JSON object")
        if pb is None:
            errors.add("malformed"); info.append("payload segment not base64url")
        else:
            try:
                payload = json.loads(pb)
            except Exception:
                errors.add("malformed"); info.append("payload not JSON")
            else:
                if not isinstance(payload, dict):
                    errors.add("malformed"); info.append("payload not an object")
                    payload = None
        if sb is None:
            errors.add("malformed"); info.append("signature segment not base64url")
        if header is None:
            return errors, info, header, payload

        alg = header.get("alg")
        if alg != "ES256":
            errors.add("unsupported_algorithm"); info.append(f"alg={alg!r}")
        x5c = header.get("x5c")
        if not (isinstance(x5c, list) and x5c and all(isinstance(c, str) for c in x5c)):
            errors.add("malformed"); info.append("x5c missing/invalid")
            return errors, info, header, payload
        if len(x5c) != 3:
            errors.add("invalid_chain_length"); info.append(f"x5c has {len(x5c)} entries")

        certs, ders = [], []
        for i, c in enumerate(x5c):
            der = None
            if B64STD_RE.match(c):
                der = base64.b64decode(c, validate=True)
            else:
                errors.add("invalid_certificate"); info.append(f"x5c[{i}] not standard base64")
                try:  # lenient decode, only to keep checking the rest
                    der = base64.urlsafe_b64decode(c + "=" * (-len(c) % 4))
                except (binascii.Error, ValueError):
                    der = None
            cert = None
            if der is not None:
                try:
                    cert = x509.load_der_x509_certificate(der)
                except ValueError:
                    errors.add("invalid_certificate"); info.append(f"x5c[{i}] not a DER certificate")
            certs.append(cert); ders.append(der)

        leaf = certs[0]
        inter = certs[1] if len(certs) > 1 else None
        if len(ders) >= 3 and ders[2] is not None and ders[2] != self.root_der:
            errors.add("untrusted_root"); info.append("x5c[2] is not the pinned root")
        if inter is not None and not self._signed_by(inter, self.root):
            errors.add("untrusted_root"); info.append("intermediate not issued by the pinned root")
        if leaf is not None and inter is not None and not self._signed_by(leaf, inter):
            errors.add("invalid_certificate"); info.append("leaf not issued by intermediate")

        vt = None
        if payload is not None:
            vt = payload.get("signedDate", payload.get("receiptCreationDate"))
        if isinstance(vt, int):
            when = dt.datetime.fromtimestamp(vt // 1000, dt.timezone.utc)
        else:
            when = dt.datetime.now(dt.timezone.utc)
            info.append("no signedDate: validated at now")
        for name, c in (("leaf", leaf), ("intermediate", inter), ("root", self.root)):
            if c is not None and not (c.not_valid_before_utc <= when <= c.not_valid_after_utc):
                errors.add("certificate_expired"); info.append(f"{name} not valid at {when:%Y-%m-%d}")

        if inter is not None:
            ku = self._ku(inter)
            if not self._bc_ca(inter) or ku is None or not ku.key_cert_sign:
                errors.add("invalid_certificate"); info.append("intermediate is not a CA")
            if not self._has_ext(inter, OID_MARKER_INTERMEDIATE):
                errors.add("missing_apple_marker"); info.append("intermediate marker 1.2.840.113635.100.6.2.1 missing")
        if leaf is not None:
            pk = leaf.public_key()
            if self._bc_ca(leaf):
                errors.add("invalid_certificate"); info.append("leaf is a CA")
            if not (isinstance(pk, ec.EllipticCurvePublicKey) and pk.curve.name == "secp256r1"):
                errors.add("invalid_certificate"); info.append(f"leaf key is not P-256 ({getattr(pk, 'curve', pk).name})")
            if self._ku(leaf) is None or not self._ku(leaf).digital_signature:
                errors.add("invalid_certificate"); info.append("leaf lacks digitalSignature")
            if not self._has_ext(leaf, OID_MARKER_LEAF):
                errors.add("missing_apple_marker"); info.append("leaf marker 1.2.840.113635.100.6.11.1 missing")

            msg = f"{parts[0]}.{parts[1]}".encode("ascii")
            if sb is not None and isinstance(pk, ec.EllipticCurvePublicKey):
                size = (pk.curve.key_size + 7) // 8
                if isinstance(alg, str) and alg.upper() == "ES256":
                    ok = False
                    if len(sb) == 2 * size:
                        r, s = int.from_bytes(sb[:size], "big"), int.from_bytes(sb[size:], "big")
                        try:
                            pk.verify(encode_dss_signature(r, s), msg, ec.ECDSA(hashes.SHA256()))
                            ok = True
                        except InvalidSignature:
                            pass
                    if not ok:
                        errors.add("bad_signature"); info.append(f"ES256 signature ({len(sb)} bytes) does not verify")
                    if not ok:  # diagnose the known encodings
                        try:
                            pk.verify(sb, msg, ec.ECDSA(hashes.SHA256()))
                            info.append("(it is a valid DER-encoded ECDSA signature)")
                        except (InvalidSignature, ValueError):
                            pass
                        if len(sb) == 2 * size - 1:
                            r = int.from_bytes(sb[: size - 1], "big"); s = int.from_bytes(sb[size - 1:], "big")
                            try:
                                pk.verify(encode_dss_signature(r, s), msg, ec.ECDSA(hashes.SHA256()))
                                info.append("(valid once r is left-padded to 32 bytes)")
                            except InvalidSignature:
                                pass
                elif alg == "none":
                    info.append(f"alg none, signature segment {'empty' if sb == b'' else 'NOT empty'}")
                elif alg == "HS256":
                    k = pk.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
                    same = hmac.compare_digest(hmac.new(k, msg, hashlib.sha256).digest(), sb)
                    info.append(f"HS256 with leaf SPKI PEM as secret: {'matches' if same else 'NO MATCH'}")
                else:
                    info.append(f"{len(sb)}-byte {alg} signature not checked")
        return errors, info, header, payload

    # ----- app / environment rules -------------------------------------------------------
    @staticmethod
    def identity(payload: dict):
        """(section, bundleId, appAppleId, environment) or raises ValueError('malformed')."""
        present = [k for k in ("data", "summary", "externalPurchaseToken", "appData") if k in payload]
        if len(present) != 1 or not isinstance(payload[present[0]], dict):
            raise ValueError(f"sections present: {present}")
        sec = present[0]
        obj = payload[sec]
        if sec == "externalPurchaseToken":
            env = "Sandbox" if str(obj.get("externalPurchaseId", "")).startswith("SANDBOX") else "Production"
        else:
            env = obj.get("environment")
        return sec, obj.get("bundleId"), obj.get("appAppleId"), env

    @staticmethod
    def app_errors(bundle, app_id, env) -> set:
        errs = set()
        if env in UNSUPPORTED_ENVS:
            return {"unsupported_environment"}
        cfg = CONFIG.get(bundle)
        if cfg is None:
            return {"unknown_bundle"}
        if env == "Production" and app_id != cfg["appAppleId"]:
            errs.add("app_apple_id_mismatch")
        if env not in cfg["envs"]:
            errs.add("environment_mismatch")
        return errs

    def nested(self, kind, token, bundle, app_id, env):
        """Errors (as 'nested_jws_invalid/<cause>') of one nested token + its decoded payload."""
        if not isinstance(token, str):
            return {"nested_jws_invalid/malformed"}, ["not a string"], None
        errs, info, _, p = self.jws(token)
        if p is not None:
            if kind == "signedTransactionInfo":
                if p.get("bundleId") not in CONFIG or p.get("bundleId") != bundle:
                    errs.add("unknown_bundle"); info.append(f"transaction bundleId {p.get('bundleId')}")
                if p.get("environment") != env:
                    errs.add("environment_mismatch"); info.append(f"transaction environment {p.get('environment')}")
            elif kind == "signedRenewalInfo":
                if p.get("environment") != env:
                    errs.add("environment_mismatch"); info.append(f"renewal environment {p.get('environment')}")
            elif kind == "signedAppTransactionInfo":
                if p.get("bundleId") != bundle:
                    errs.add("unknown_bundle")
                if p.get("receiptType") != env:
                    errs.add("environment_mismatch")
                if env == "Production" and p.get("appAppleId") != CONFIG[bundle]["appAppleId"]:
                    errs.add("app_apple_id_mismatch")
        return {f"nested_jws_invalid/{e}" for e in errs}, [f"{kind}: {x}" for x in info], p

    def body(self, raw: bytes):
        """Returns (errors, info, decoded payload or None, nested payloads)."""
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return {"malformed_body"}, ["body is not JSON"], None, {}
        if not isinstance(obj, dict):
            return {"malformed_body"}, ["body is not an object"], None, {}
        if "signedPayload" not in obj:
            return {"unknown_version"}, ["no signedPayload"], None, {}
        if not isinstance(obj["signedPayload"], str):
            return {"malformed_body"}, ["signedPayload is not a string"], None, {}
        errs, info, _, payload = self.jws(obj["signedPayload"])
        nested_payloads = {}
        if payload is None:
            return errs, info, None, {}
        try:
            sec, bundle, app_id, env = self.identity(payload)
        except ValueError as e:
            return errs | {"malformed"}, info + [str(e)], payload, {}
        app = self.app_errors(bundle, app_id, env)
        if "unsupported_environment" in app:
            # such tokens are rejected on their declared environment; crypto findings are informational
            return {"unsupported_environment"} | (errs & {"malformed"}), \
                [f"environment {env}"] + [f"(info) {x}" for x in info] + [f"(info) crypto: {sorted(errs)}"], payload, {}
        errs |= app
        if app:
            info.append(f"app rules: bundle={bundle} appAppleId={app_id} env={env}")
        for kind in ("signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"):
            if kind in payload[sec]:
                e, i, p = self.nested(kind, payload[sec][kind], bundle, app_id, env)
                errs |= e
                info += i
                nested_payloads[kind] = p
        return errs, info, payload, nested_payloads


def story_check(name, payload, nested) -> list[str]:
    """Sanity of the entitlement story at signedDate (positives only)."""
    problems = []
    data = payload.get("data") if payload else None
    if not isinstance(data, dict) or "status" not in data:
        return problems
    t = payload.get("signedDate") or nested["signedTransactionInfo"]["signedDate"]
    tx, ren, st = nested.get("signedTransactionInfo"), nested.get("signedRenewalInfo"), data["status"]
    exp, revoked = tx.get("expiresDate"), "revocationDate" in tx
    grace = (ren or {}).get("gracePeriodExpiresDate")
    retry = (ren or {}).get("isInBillingRetryPeriod")
    expect = {
        1: exp > t and not revoked and not retry,
        2: exp < t and not revoked and ren["autoRenewStatus"] == 0 and retry is False and "expirationIntent" in ren,
        3: exp < t and retry is True and (grace is None or grace < t),
        4: exp < t and retry is True and grace is not None and grace > t,
        5: revoked and tx["revocationDate"] < t,
    }[st]
    if not expect:
        problems.append(f"status {st} does not match the dates")
    for k in ("signedTransactionInfo", "signedRenewalInfo"):
        if k in nested and nested[k].get("signedDate") != t:
            problems.append(f"{k}.signedDate != {t}")
    return problems


def self_check() -> bool:
    chk = Check((PKI_DIR / "root.der").read_bytes())
    main_x5c = [b64std((PKI_DIR / f"{l}.der").read_bytes()) for l in MAIN_CHAIN]
    all_ok = True
    rows = []

    def header_shape_ok(token):
        h = json.loads(b64u_decode(token.split(".")[0]))
        return list(h) == ["alg", "x5c"] and h["x5c"] == main_x5c

    for f in sorted(SYN_DIR.glob("*.json")):
        obj = json.loads(f.read_text())
        problems = []
        if "signedPayload" in obj:
            errs, info, payload, nested = chk.body(f.read_bytes())
            tokens = [obj["signedPayload"]]
            if payload:
                sec = next(k for k in ("data", "summary", "externalPurchaseToken", "appData") if k in payload)
                tokens += [payload[sec][k] for k in ("signedTransactionInfo", "signedRenewalInfo",
                                                      "signedAppTransactionInfo") if k in payload[sec]]
                kind = payload["notificationType"] + ("/" + payload["subtype"] if "subtype" in payload else "")
                problems += story_check(f.name, payload, nested)
        else:
            key = "signedTransaction" if "signedTransaction" in obj else "signedRenewalInfo"
            errs, info, _, p = chk.jws(obj[key])
            if p is not None:
                if key == "signedTransaction" and p.get("bundleId") not in CONFIG:
                    errs.add("unknown_bundle")
                if p.get("environment") not in CONFIG[BUNDLE]["envs"]:
                    errs.add("environment_mismatch")
            tokens, kind = [obj[key]], f"bare {key}"
        for tok in tokens:
            if not header_shape_ok(tok):
                problems.append("header is not exactly {alg, x5c=[leaf, intermediate, root]}")
            seg = tok.split(".")[1]
            if b64u_decode(seg) != cjson(json.loads(b64u_decode(seg))):
                problems.append("payload JSON not compact")
        ok = not errs and not problems
        all_ok &= ok
        rows.append((f.name, kind, f"{len(tokens)} JWS", "yes" if ok else "NO", "; ".join(sorted(errs) + problems + (info if errs else []))))

    print(f"\nPositive fixtures ({len(rows)}):")
    w = max(len(r[0]) for r in rows)
    w2 = max(len(r[1]) for r in rows)
    print(f"  {'file':<{w}}  {'type/subtype':<{w2}}  tokens  verified")
    for r in rows:
        print(f"  {r[0]:<{w}}  {r[1]:<{w2}}  {r[2]:<6}  {r[3]}" + (f"   <-- {r[4]}" if r[3] != "yes" else ""))

    nrows = []
    for f in sorted(NEG_DIR.glob("*.expected.json")):
        name = f.name[: -len(".expected.json")]
        exp = json.loads(f.read_text())["error"]
        want = exp["code"] + (f"/{exp['cause']}" if "cause" in exp else "")
        errs, info, _, _ = chk.body((NEG_DIR / f"{name}.json").read_bytes())
        ok = errs == {want}
        all_ok &= ok
        nrows.append((name, want, ",".join(sorted(errs)), "yes" if ok else "NO", "; ".join(info)))
    print(f"\nNegative fixtures ({len(nrows)}): expected code == the single defect found")
    w = max(len(r[0]) for r in nrows)
    w2 = max(len(r[1]) for r in nrows)
    print(f"  {'name':<{w}}  {'expected':<{w2}}  ok   details")
    for r in nrows:
        print(f"  {r[0]:<{w}}  {r[1]:<{w2}}  {r[3]:<3}  " + (f"found {r[2]} | " if r[3] != "yes" else "") + r[4])
    return all_ok


# ---------------------------------------------------------------------------------------
def clean_outputs() -> None:
    for d in (PKI_DIR, SYN_DIR, NEG_DIR):
        d.mkdir(parents=True, exist_ok=True)
        for f in d.iterdir():
            if f.is_file() and f.suffix in {".der", ".pem", ".json"}:
                f.unlink()


def main() -> int:
    clean_outputs()
    build_pki()
    write_pki()
    make_positives()
    make_negatives()
    print(f"wrote {len(CERTS)} certificates (+keys) to {PKI_DIR.relative_to(REPO)}, "
          f"{len(POSITIVES)} positives to {SYN_DIR.relative_to(REPO)}, "
          f"{len(NEGATIVES)} negatives to {NEG_DIR.relative_to(REPO)}")
    print("openssl chain checks:")
    openssl_check()
    if not self_check():
        print("\nSELF-CHECK FAILED", file=sys.stderr)
        return 1
    print("\nself-check OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
