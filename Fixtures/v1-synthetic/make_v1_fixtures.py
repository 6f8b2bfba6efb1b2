#!/usr/bin/env python3
"""Writes Fixtures/v1-synthetic: one V1 notification body per Apple V1 notification_type (13), each with the
verifyReceipt answer Apple would give for its receipt (<name>.receipt.json). Deterministic; test tooling only.
Dates are relative to T = 2025-06-01T00:00:00Z. The shared secret is the test placeholder SECRET below."""
import json, os

T = 1748736000000
DAY = 86400000
HOUR = 3600000
MIN = 60000
SECRET = "0123456789abcdef0123456789abcdef"
BUNDLE = "com.example.gateway"
APP_ID = "1234567890"
OUT = os.path.dirname(os.path.abspath(__file__))
RECEIPT = "c3ludGhldGljLXJlY2VpcHQtZm9yLXRlc3Rz"  # base64("synthetic-receipt-for-tests")


def gmt(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S Etc/GMT")


def tx(n, otid, product, purchase, expires=None, **extra):
    t = {
        "quantity": "1", "product_id": product, "transaction_id": str(otid + n), "original_transaction_id": str(otid),
        "purchase_date": gmt(purchase), "purchase_date_ms": str(purchase),
        "original_purchase_date": gmt(extra.pop("original", purchase)),
        "is_trial_period": extra.pop("trial", "false"), "is_in_intro_offer_period": extra.pop("intro", "false"),
        "in_app_ownership_type": extra.pop("ownership", "PURCHASED"),
    }
    t["original_purchase_date_ms"] = str(int(__import__("calendar").timegm(
        __import__("time").strptime(t["original_purchase_date"], "%Y-%m-%d %H:%M:%S Etc/GMT")) * 1000))
    if expires is not None:
        t.update({"expires_date": gmt(expires), "expires_date_ms": str(expires), "web_order_line_item_id": str(otid + 500 + n),
                  "subscription_group_identifier": "21000001"})
    t.update({k: v for k, v in extra.items()})
    return t


def renewal(otid, product, auto="1", next_product=None, **extra):
    r = {"auto_renew_product_id": next_product or product, "original_transaction_id": str(otid), "product_id": product,
         "auto_renew_status": auto}
    r.update(extra)
    return r


def write(name, ntype, txs, pending, top=None, environment="PROD"):
    txs_desc = sorted(txs, key=lambda t: int(t["purchase_date_ms"]), reverse=True)  # Apple: newest first
    unified = {"environment": "Production" if environment == "PROD" else "Sandbox", "latest_receipt": RECEIPT,
               "latest_receipt_info": txs_desc, "pending_renewal_info": pending, "status": 0}
    body = {"notification_type": ntype, "password": SECRET, "environment": environment, "bid": BUNDLE, "bvrs": "42",
            "unified_receipt": unified}
    latest = txs_desc[0]
    body["original_transaction_id"] = latest["original_transaction_id"]
    if pending:
        body["auto_renew_product_id"] = pending[0]["auto_renew_product_id"]
        body["auto_renew_status"] = "true" if pending[0]["auto_renew_status"] == "1" else "false"
    body.update(top or {})
    receipt = {"status": 0, "environment": unified["environment"],
               "receipt": {"receipt_type": "Production" if environment == "PROD" else "ProductionSandbox",
                           "adam_id": int(APP_ID), "bundle_id": BUNDLE, "application_version": "42",
                           "request_date_ms": str(T), "in_app": txs_desc},
               "latest_receipt_info": txs_desc, "latest_receipt": RECEIPT, "pending_renewal_info": pending}
    body = {"source": "synthetic: scripts/make_v1_fixtures.py", **body}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(body, f, indent=1)
        f.write("\n")
    with open(os.path.join(OUT, name + ".receipt.json"), "w") as f:
        json.dump(receipt, f, indent=1)
        f.write("\n")


os.makedirs(OUT, exist_ok=True)
M, Y, C, L = BUNDLE + ".monthly", BUNDLE + ".yearly", BUNDLE + ".coins100", BUNDLE + ".lifetime"

o = 2000000800010000
write("initial-buy", "INITIAL_BUY", [tx(0, o, M, T - MIN, T + 7 * DAY, trial="true", intro="false")], [renewal(o, M)])
o = 2000000800020000
write("did-renew", "DID_RENEW", [tx(0, o, M, T - 30 * DAY, T, original=T - 30 * DAY),
                                 tx(1, o, M, T, T + 30 * DAY, original=T - 30 * DAY)], [renewal(o, M)])
o = 2000000800030000
write("did-recover", "DID_RECOVER", [tx(0, o, M, T - 40 * DAY, T - 10 * DAY, original=T - 40 * DAY),
                                     tx(1, o, M, T - HOUR, T + 30 * DAY, original=T - 40 * DAY)],
      [renewal(o, M, is_in_billing_retry_period="0")])
o = 2000000800040000
write("renewal", "RENEWAL", [tx(0, o, M, T - 40 * DAY, T - 10 * DAY, original=T - 40 * DAY),
                             tx(1, o, M, T - HOUR, T + 30 * DAY, original=T - 40 * DAY)],
      [renewal(o, M, is_in_billing_retry_period="0")], environment="Sandbox")
o = 2000000800050000
write("interactive-renewal", "INTERACTIVE_RENEWAL", [tx(0, o, M, T - 60 * DAY, T - 30 * DAY, original=T - 60 * DAY),
                                                     tx(1, o, Y, T - MIN, T + 365 * DAY, original=T - 60 * DAY)],
      [renewal(o, Y)])
o = 2000000800060000
write("did-change-renewal-pref", "DID_CHANGE_RENEWAL_PREF", [tx(0, o, Y, T - 10 * DAY, T + 355 * DAY)],
      [renewal(o, Y, next_product=M)])
o = 2000000800070000
write("did-change-renewal-status", "DID_CHANGE_RENEWAL_STATUS", [tx(0, o, M, T - 10 * DAY, T + 20 * DAY)],
      [renewal(o, M, auto="0", expiration_intent="1")],
      top={"auto_renew_status_change_date": gmt(T), "auto_renew_status_change_date_ms": str(T)})
o = 2000000800080000
write("did-fail-to-renew", "DID_FAIL_TO_RENEW", [tx(0, o, M, T - 30 * DAY - HOUR, T - HOUR)],
      [renewal(o, M, is_in_billing_retry_period="1", expiration_intent="2",
               grace_period_expires_date=gmt(T + 6 * DAY), grace_period_expires_date_ms=str(T + 6 * DAY))])
o = 2000000800090000
write("cancel", "CANCEL", [tx(0, o, M, T - 10 * DAY, T + 20 * DAY, cancellation_date=gmt(T - 5 * MIN),
                              cancellation_date_ms=str(T - 5 * MIN), cancellation_reason="1")],
      [renewal(o, M, auto="0")])
o = 2000000800100000
write("refund", "REFUND", [tx(0, o, L, T - 20 * DAY, None, cancellation_date=gmt(T - 5 * MIN),
                              cancellation_date_ms=str(T - 5 * MIN), cancellation_reason="0")], [])
o = 2000000800110000
write("revoke", "REVOKE", [tx(0, o, M, T - 10 * DAY, T + 20 * DAY, ownership="FAMILY_SHARED",
                              cancellation_date=gmt(T - MIN), cancellation_date_ms=str(T - MIN))],
      [renewal(o, M)])
o = 2000000800120000
write("price-increase-consent", "PRICE_INCREASE_CONSENT", [tx(0, o, M, T - 10 * DAY, T + 20 * DAY)],
      [renewal(o, M, price_consent_status="0")])
o = 2000000800130000
write("consumption-request", "CONSUMPTION_REQUEST", [tx(0, o, C, T - 2 * DAY, None)], [])
print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT))
