"""Apple's own App Store Server API client against the simulator's fake Apple (run by scripts/try-apple-client).

Usage: python try_apple_client.py IAP_GATEWAY_BINARY WORK_DIR

Uses the official Python library (`app-store-server-library`) exactly as an app developer would, with one change:
the library hard-codes Apple's hosts, so the client's base URL is pointed at the fake. It

- creates the simulator's PKI in WORK_DIR/sim and starts `iap-gateway simulate serve-apple` on a port the kernel
  picks (127.0.0.1), with test notifications going to a small receiver of its own;
- plays two lifecycles into that receiver with `simulate lifecycle`: `auto-renew`, and `refund` with
  `--outage 2..2`, so the REFUND notification never arrives while the fake Apple still knows about it;
- calls get_all_subscription_statuses (status filter), get_transaction_history (v2 and the default v1 path, sort
  DESCENDING, productType filters), get_transaction_info, get_notification_history (onlyFailures, notificationType,
  pagination), request_test_notification and get_test_notification_status, and checks each answer, verifying the
  signed items with the library's SignedDataVerifier trusting the simulator's root (sandbox, offline);
- restarts the fake with `--rate-limit 2/h` and checks the third call is refused 429 (4290000) with Retry-After.

Every process it starts is stopped before it returns. Prints one line per check; exits 1 on the first failure.
"""

import base64
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from appstoreserverlibrary.api_client import APIError, APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserverlibrary.models.SendAttemptResult import SendAttemptResult
from appstoreserverlibrary.models.Status import Status
from appstoreserverlibrary.models.TransactionHistoryRequest import Order, ProductType, TransactionHistoryRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

BUNDLE_ID = "com.example.sim"
SHARED_SECRET = "5f1b0c2d3e4f5a6b7c8d9e0f1a2b3c4d"  # a demo secret, used only on loopback


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)
    print(f"ok    {what}", flush=True)


class Receiver:
    """Stands in for the gateway: answers 200 to every POST and keeps the bodies."""

    def __init__(self):
        bodies = self.bodies = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                bodies.append(self.rfile.read(length))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/notifications"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class FakeApple:
    """`iap-gateway simulate serve-apple` on a port the kernel picks; stopped by stop() (or the context's end)."""

    def __init__(self, gw, pki, *flags):
        self.process = subprocess.Popen(
            [gw, "simulate", "serve-apple", "--listen", "127.0.0.1:0", "--pki", pki, *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()  # "iap-gateway: fake Apple on http://127.0.0.1:PORT — …"
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not found:
            self.stop()
            raise Failure(f"serve-apple did not start: {line.strip()}")
        self.base_url = f"http://127.0.0.1:{found.group(1)}"
        threading.Thread(target=self.process.stderr.read, daemon=True).start()  # keep draining its log

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def payload(jws):
    """A compact JWS's payload, decoded without verification (for notifications whose signedDate is all we need)."""
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def lifecycle(gw, pki, name, to, *flags):
    out = subprocess.run(
        [gw, "simulate", "lifecycle", name, "--to", to, "--pki", pki, "--bundle-id", BUNDLE_ID,
         "--shared-secret-env", "SIM_SHARED_SECRET", *flags],
        env={**os.environ, "SIM_SHARED_SECRET": SHARED_SECRET}, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise Failure(f"simulate lifecycle {name} exited {out.returncode}: {out.stderr.strip()}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def client_for(base_url, key, key_id, issuer_id):
    client = AppStoreServerAPIClient(key, key_id, issuer_id, BUNDLE_ID, Environment.SANDBOX)
    client._base_url = base_url  # the library knows only Apple's hosts
    return client


def main(gw, work):
    pki_dir = f"{work}/sim"
    pki = json.loads(subprocess.run([gw, "simulate", "pki", "--out", pki_dir], capture_output=True, text=True, check=True).stdout)
    with open(pki["api_key"], "rb") as f:
        key = f.read()
    with open(pki["root"], "rb") as f:
        root = f.read()
    verifier = SignedDataVerifier([root], False, Environment.SANDBOX, BUNDLE_ID)

    receiver = Receiver()
    try:
        with FakeApple(gw, pki_dir, "--notify", receiver.url) as apple:
            # The traffic: auto-renew sent whole, refund with its second step (the REFUND) lost in an outage.
            renew = lifecycle(gw, pki_dir, "auto-renew", receiver.url, "--version", "v2")
            renew_otid = renew[0]["original_transaction_id"]
            refund = lifecycle(gw, pki_dir, "refund", receiver.url, "--version", "v2", "--outage", "2..2")
            refund_otid = refund[0]["original_transaction_id"]
            dropped = refund[-1]["dropped"]
            check(dropped["steps"] == 1 and dropped["items"][0]["v2"]["type"] == "REFUND",
                  "simulate lifecycle --outage 2..2 withheld the REFUND notification and said so")
            check(len(receiver.bodies) == 4, "the receiver got the other 4 V2 notifications")

            client = client_for(apple.base_url, key, pki["key_id"], pki["issuer_id"])

            # get_all_subscription_statuses with a status filter (?status=1 / ?status=5)
            active = client.get_all_subscription_statuses(refund_otid, [Status.ACTIVE])
            check(active.data == [], "get_all_subscription_statuses(refund, [ACTIVE]): no entry for the refunded subscription")
            revoked = client.get_all_subscription_statuses(refund_otid, [Status.ACTIVE, Status.REVOKED])
            item = revoked.data[0].lastTransactions[0]
            check(item.status == Status.REVOKED and item.originalTransactionId == refund_otid,
                  "get_all_subscription_statuses(refund, [ACTIVE, REVOKED]): the revoked entry")
            t = verifier.verify_and_decode_signed_transaction(item.signedTransactionInfo)
            check(t.revocationDate is not None and t.bundleId == BUNDLE_ID,
                  "SignedDataVerifier (simulator root, sandbox) verifies it: revoked")
            live = client.get_all_subscription_statuses(renew_otid, [Status.ACTIVE])
            check([i.status for g in live.data for i in g.lastTransactions] == [Status.ACTIVE],
                  "get_all_subscription_statuses(auto-renew, [ACTIVE]): active")

            # get_transaction_history: v2 sorted DESCENDING with productType filters, and the default (v1) path
            newest_first = client.get_transaction_history(
                renew_otid, None, TransactionHistoryRequest(sort=Order.DESCENDING, productTypes=[ProductType.AUTO_RENEWABLE]),
                GetTransactionHistoryVersion.V2)
            dates = [verifier.verify_and_decode_signed_transaction(s).purchaseDate for s in newest_first.signedTransactions]
            check(len(dates) == 3 and dates == sorted(dates, reverse=True),
                  "get_transaction_history(v2, sort=DESCENDING, productTypes=[AUTO_RENEWABLE]): 3, newest first")
            none = client.get_transaction_history(
                renew_otid, None, TransactionHistoryRequest(productTypes=[ProductType.CONSUMABLE, ProductType.NON_RENEWABLE]),
                GetTransactionHistoryVersion.V2)
            check(none.signedTransactions == [] and not none.hasMore,
                  "get_transaction_history(v2, productTypes=[CONSUMABLE, NON_RENEWABLE]): none")
            oldest_first = client.get_transaction_history(renew_otid, None, TransactionHistoryRequest())
            check([verifier.verify_and_decode_signed_transaction(s).purchaseDate for s in oldest_first.signedTransactions]
                  == sorted(dates), "get_transaction_history (default v1 path, default sort): ascending")
            info = client.get_transaction_info(renew_otid)
            check(verifier.verify_and_decode_signed_transaction(info.signedTransactionInfo).originalTransactionId == renew_otid,
                  "get_transaction_info")
            try:
                client.get_transaction_info("2999999999999999")
                check(False, "get_transaction_info(unknown) is refused")
            except APIException as e:
                check(e.http_status_code == 404 and e.api_error == APIError.TRANSACTION_ID_NOT_FOUND,
                      "get_transaction_info(unknown): 404 TransactionIdNotFoundError")

            # get_notification_history: the lost REFUND is the one failure
            now = int(time.time() * 1000)
            window = dict(startDate=now - 86_400_000, endDate=now + 3_600_000)
            failures = client.get_notification_history(None, NotificationHistoryRequest(onlyFailures=True, **window))
            check(len(failures.notificationHistory) == 1 and not failures.hasMore,
                  "get_notification_history(onlyFailures=True): exactly one")
            lost = failures.notificationHistory[0]
            check(verifier.verify_and_decode_notification(lost.signedPayload).notificationType == NotificationTypeV2.REFUND
                  and lost.sendAttempts[0].sendAttemptResult == SendAttemptResult.NO_RESPONSE,
                  "… the REFUND, its send attempt NO_RESPONSE")
            renewals = client.get_notification_history(
                None, NotificationHistoryRequest(notificationType=NotificationTypeV2.DID_RENEW, **window))
            check([payload(n.signedPayload)["notificationType"] for n in renewals.notificationHistory] == ["DID_RENEW"] * 2,
                  "get_notification_history(notificationType=DID_RENEW): the two renewals")
            everything, token, pages = [], None, 0
            while True:
                page = client.get_notification_history(token, NotificationHistoryRequest(transactionId=refund_otid, **window))
                everything += page.notificationHistory
                pages += 1
                if not page.hasMore or pages > 5:
                    break
                token = page.paginationToken
            check(len(everything) == 2, "get_notification_history(transactionId=refund): both, lost one included")

            # request_test_notification / get_test_notification_status. Apple sends test notifications in V2 only: the
            # simulated App Store Connect is set to V2 for the app's sandbox first (it starts on V1).
            urllib.request.urlopen(urllib.request.Request(
                f"{apple.base_url}/fake/asc/version?bundle_id={BUNDLE_ID}&environment=sandbox&version=V2&immediately=true",
                method="POST"), timeout=10).read()
            test_token = client.request_test_notification().testNotificationToken
            status = None
            for _ in range(100):  # the fake sends it to the receiver in the background
                status = client.get_test_notification_status(test_token)
                if status.sendAttempts:
                    break
                time.sleep(0.05)
            check(verifier.verify_and_decode_notification(status.signedPayload).notificationType == NotificationTypeV2.TEST
                  and [a.sendAttemptResult for a in status.sendAttempts] == [SendAttemptResult.SUCCESS],
                  "request_test_notification + get_test_notification_status: TEST, delivered (SUCCESS)")

        # The rate limit: two calls an hour.
        with FakeApple(gw, pki_dir, "--rate-limit", "2/h") as apple:
            client = client_for(apple.base_url, key, pki["key_id"], pki["issuer_id"])
            client.get_transaction_info(renew_otid)
            client.get_transaction_info(renew_otid)
            try:
                client.get_transaction_info(renew_otid)
                check(False, "the third call in an hour is refused")
            except APIException as e:
                check(e.http_status_code == 429 and e.raw_api_error == 4290000 and e.api_error == APIError.RATE_LIMIT_EXCEEDED,
                      "--rate-limit 2/h: the third call is 429 RateLimitExceededError")
            request = urllib.request.Request(f"{apple.base_url}/inApps/v1/transactions/{renew_otid}",
                                             headers={"Authorization": "Bearer " + client._generate_token()})
            try:
                urllib.request.urlopen(request, timeout=10)
                check(False, "a raw fourth call is refused")
            except urllib.error.HTTPError as e:
                retry = int(e.headers.get("Retry-After", "0"))
                check(e.code == 429 and 0 < retry <= 3600, f"… with Retry-After: {retry} seconds")
    finally:
        receiver.stop()


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2])
    except (Failure, APIException, subprocess.CalledProcessError) as e:
        detail = f"HTTP {e.http_status_code} {e.raw_api_error} {e.error_message}" if isinstance(e, APIException) else str(e)
        print(f"FAIL  {detail}", file=sys.stderr)
        sys.exit(1)
    print("passed: Apple's Python client works against the fake Apple")
