// swift-format-ignore-file
// Generated from schemas/ by ContractFilesTests (`IAPGW_UPDATE_CONTRACTS=1 swift test --filter ContractFilesTests`):
// do not edit; edit the files in schemas/ and run that.

/// Every file of `schemas/`, by name, in name order (docs/contracts.md).
public enum ContractFiles {
    /// The text of the file named `file`, as it is in `schemas/`.
    public static func text(of file: String) -> String? { files.first { $0.name == file }?.text }

    public static let files: [(name: String, text: String)] = [
        (
            "alert.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Alert webhook body",
              "description": "What `alerts.webhook` receives, one JSON per operational event (docs/operations.md, \"Alerts\"), signed like a webhook delivery (Standard Webhooks headers; `webhook-id` is `alert-…`, the same on each of the three tries). `type` says which; a type added later is listed in CHANGELOG.md, so a receiver ignores a type it does not know, and keys it does not know. The dead letters themselves stay in the store (`GET /admin/dead-letters`, `GET /admin/refund-requests`): this is the nudge, not the record.",
              "oneOf": [
                { "$ref": "#/$defs/delivery_dead_lettered" },
                { "$ref": "#/$defs/deliveries_unconfigured" },
                { "$ref": "#/$defs/consumption_dead_lettered" }
              ],
              "$defs": {
                "at": { "description": "When it happened (ms since the epoch).", "type": "integer" },
                "delivery_dead_lettered": {
                  "description": "A delivery gave up after its downstream's `max_attempts` (or a `410`).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["type", "at", "downstream", "attempts", "error"],
                  "properties": {
                    "type": { "const": "delivery.dead_lettered" },
                    "at": { "$ref": "#/$defs/at" },
                    "downstream": { "description": "The downstream's name.", "type": "string" },
                    "event_id": { "description": "The event; absent for a pass-through delivery of a notification's body.", "type": "string" },
                    "attempts": { "type": "integer", "minimum": 1 },
                    "error": { "description": "The last attempt's failure as a code (`http_500`, `timeout`, `downstream_unconfigured`, …; docs/operations.md, \"What `last_error` says\").", "type": "string" }
                  }
                },
                "deliveries_unconfigured": {
                  "description": "A start dead-lettered the deliveries queued for downstreams the config no longer has (replayable once the downstream is back).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["type", "at", "count", "error"],
                  "properties": {
                    "type": { "const": "deliveries.unconfigured" },
                    "at": { "$ref": "#/$defs/at" },
                    "count": { "description": "How many were dead-lettered.", "type": "integer", "minimum": 1 },
                    "error": { "type": "string" }
                  }
                },
                "consumption_dead_lettered": {
                  "description": "A refund request left unanswered: Apple refused the answer (`rejected`), the gateway would not send it (`gateway_refused`), or the deadline passed (`dead`, `expired`) (docs/operations.md, \"Refund requests\").",
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["type", "at", "event_id", "bundle_id", "transaction_id", "attempts", "error"],
                  "properties": {
                    "type": { "const": "consumption.dead_lettered" },
                    "at": { "$ref": "#/$defs/at" },
                    "event_id": { "description": "The CONSUMPTION_REQUEST event's id.", "type": "string" },
                    "bundle_id": { "type": "string" },
                    "transaction_id": { "type": "string" },
                    "attempts": { "description": "Sends to Apple (0 when nothing was sent).", "type": "integer", "minimum": 0 },
                    "error": { "description": "The last failure's stable code, else the request's final state.", "type": "string" }
                  }
                }
              }
            }
            """##
        ),
        (
            "backfill.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "backfill: one listing",
              "description": "One JSON line of `iap-gateway backfill` per app and environment it walked (docs/operations.md, \"Reconciliation\"). Exit status 1 when a line's `stopped_by` is a failure rather than a cap. Keys may be added: a script reads the ones it needs.",
              "type": "object",
              "additionalProperties": true,
              "required": ["bundle_id", "environment", "since", "until", "listed", "added", "duplicates", "refused", "pages", "bytes", "complete"],
              "properties": {
                "bundle_id": { "type": "string" },
                "environment": { "enum": ["production", "sandbox"] },
                "since": { "description": "The window asked for (ms): a run resumed with `--resume-token` asks for the same.", "type": "integer" },
                "until": { "type": "integer" },
                "listed": { "description": "Notifications of Apple's listing this run went through.", "type": "integer", "minimum": 0 },
                "added": { "description": "Journaled now: they had been missed.", "type": "integer", "minimum": 0 },
                "duplicates": { "description": "Already journaled.", "type": "integer", "minimum": 0 },
                "refused": {
                  "description": "Refused by the pipeline and gone past, by error code (quarantined once).",
                  "type": "object",
                  "additionalProperties": { "type": "integer", "minimum": 1 }
                },
                "pages": { "type": "integer", "minimum": 0 },
                "bytes": { "description": "Bytes of Apple's answers read.", "type": "integer", "minimum": 0 },
                "complete": { "description": "Whether Apple's listing was read to its end.", "type": "boolean" },
                "stopped_by": {
                  "description": "Why not complete: a cap of the run (`max_pages`, `max_bytes`), or the failure's code (the store's or Apple's).",
                  "type": "string"
                },
                "resume_token": {
                  "description": "Where to go on from (`--resume-token`); absent when the listing is complete or must start again.",
                  "type": "string"
                }
              }
            }
            """##
        ),
        (
            "bench.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "bench: the result line",
              "description": "The one JSON line each `iap-gateway bench` prints (docs/performance.md): one shape per benchmark, under `$defs` by its name. Scripts (.ci/run) read the keys each shape requires; the figures beside them may be added to (a script ignores keys it does not read).",
              "anyOf": [
                {
                  "$ref": "#/$defs/verify"
                },
                {
                  "$ref": "#/$defs/receipts"
                },
                {
                  "$ref": "#/$defs/receipt-history"
                },
                {
                  "$ref": "#/$defs/receipt-scale"
                },
                {
                  "$ref": "#/$defs/ingest"
                },
                {
                  "$ref": "#/$defs/soak"
                },
                {
                  "$ref": "#/$defs/flood"
                },
                {
                  "$ref": "#/$defs/fsync"
                },
                {
                  "$ref": "#/$defs/delivery-rate"
                },
                {
                  "$ref": "#/$defs/isolation"
                },
                {
                  "$ref": "#/$defs/scale"
                }
              ],
              "$defs": {
                "verify": {
                  "description": "`bench verify`: V2 verification throughput beside libcrypto's own P-256 bound.",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "notifications_per_second",
                    "openssl_p256_verifies_per_second",
                    "fraction_of_bound"
                  ],
                  "properties": {
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "cold_notifications_per_second": {
                      "type": "number"
                    },
                    "fraction_of_bound": {
                      "type": "number"
                    },
                    "notifications_per_second": {
                      "type": "number"
                    },
                    "openssl_p256_verifies_per_second": {
                      "type": "number"
                    },
                    "sample": {
                      "type": "string"
                    },
                    "seconds": {
                      "type": "number"
                    }
                  }
                },
                "receipts": {
                  "description": "`bench receipts`: receipts read and judged per second, then POST /verifyReceipt answered by the real service (`verify_receipt.failures` must be 0).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "receipts_per_second_10kb",
                    "receipts_per_second_100kb",
                    "meets_target",
                    "verify_receipt"
                  ],
                  "properties": {
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "bytes_100kb": {
                      "type": "integer"
                    },
                    "bytes_10kb": {
                      "type": "integer"
                    },
                    "libcrypto_rsa2048_verifies_per_second": {
                      "type": "number"
                    },
                    "meets_target": {
                      "type": "boolean"
                    },
                    "ms_per_receipt_100kb": {
                      "type": "number"
                    },
                    "ms_per_receipt_10kb": {
                      "type": "number"
                    },
                    "openssl_speed_rsa2048_verifies_per_second": {
                      "type": "number"
                    },
                    "purchases_100kb": {
                      "type": "integer"
                    },
                    "receipts_per_second_100kb": {
                      "type": "number"
                    },
                    "receipts_per_second_10kb": {
                      "type": "number"
                    },
                    "rsa_bound_receipts_per_second": {
                      "type": "number"
                    },
                    "samples": {
                      "type": "string"
                    },
                    "seconds": {
                      "type": "number"
                    },
                    "target_ms_per_receipt_100kb": {
                      "type": "number"
                    },
                    "verify_receipt": {
                      "description": "POST /verifyReceipt of the real service in api mode.",
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "answers_per_second",
                        "failures",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "answers_per_second": {
                          "type": "number"
                        },
                        "concurrency": {
                          "type": "integer"
                        },
                        "cpu_ms_per_answer": {
                          "type": "number"
                        },
                        "customers": {
                          "type": "integer"
                        },
                        "failures": {
                          "type": "integer",
                          "minimum": 0
                        },
                        "failures_by_answer": {
                          "type": "object",
                          "additionalProperties": {
                            "type": "integer"
                          }
                        },
                        "first_read_answers_per_second": {
                          "type": "number"
                        },
                        "first_read_cpu_ms_per_answer": {
                          "type": "number"
                        },
                        "first_reads": {
                          "type": "integer"
                        },
                        "fraction_of_http_baseline": {
                          "type": "number"
                        },
                        "http_baseline_per_second": {
                          "type": "number"
                        },
                        "latency_samples": {
                          "type": "integer"
                        },
                        "meets_target": {
                          "type": "boolean"
                        },
                        "offered_rate_per_second": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "peak_rss_mb": {
                          "type": "number"
                        },
                        "receipt_bytes": {
                          "type": "integer"
                        },
                        "seconds": {
                          "type": "number"
                        }
                      }
                    }
                  }
                },
                "receipt-history": {
                  "description": "`bench receipt-history`: a customer of 1,200 transactions asked through POST /verifyReceipt against a slow App Store Server API.",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "customers"
                  ],
                  "properties": {
                    "customers": {
                      "type": "array",
                      "items": {
                        "type": "object"
                      }
                    },
                    "apple_latency_ms": {
                      "type": "integer"
                    },
                    "fetch_timeout_ms": {
                      "type": "integer"
                    },
                    "retry_ms": {
                      "type": "integer"
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    }
                  }
                },
                "receipt-scale": {
                  "description": "`bench receipt-scale`: POST /verifyReceipt in api mode for a base of customers against an App Store Server API fake under Apple's rate limits, V2 notifications meanwhile. The `invariants` are reported, not required to hold.",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "customers",
                    "seconds",
                    "apple_rate",
                    "clients",
                    "requests",
                    "answers_by_status",
                    "warm",
                    "cold",
                    "apple_429",
                    "apple_calls_total",
                    "apple_max_calls_per_second",
                    "apple_limit_per_second",
                    "projected_prefetch_hours",
                    "notifications",
                    "serve_peak_rss_mb",
                    "invariants"
                  ],
                  "properties": {
                    "customers": {
                      "type": "integer"
                    },
                    "seconds": {
                      "type": "number"
                    },
                    "apple_rate": {
                      "description": "`production`, `sandbox`, or requests per second per endpoint.",
                      "type": "string"
                    },
                    "clients": {
                      "type": "integer"
                    },
                    "hang_seconds": {
                      "type": "number"
                    },
                    "elapsed_seconds": {
                      "type": "number"
                    },
                    "requests": {
                      "type": "integer"
                    },
                    "answers_by_status": {
                      "description": "Requests by verifyReceipt status (`0`, `21005`, …), `http_<status>` when not HTTP 200, `transport` without an answer.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "history_by_result": {
                      "description": "The gateway's `iapgw_receipt_history_total` by `result`.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "refused_by_reason": {
                      "description": "The gateway's `iapgw_receipt_refused_total` by `reason`.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "gateway_apple_calls": {
                      "description": "The gateway's `iapgw_receipt_history_calls_total` by `endpoint/outcome`.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "warm": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "requests",
                        "answered",
                        "answers_per_second",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "requests": {
                          "type": "integer"
                        },
                        "answered": {
                          "type": "integer"
                        },
                        "answers_per_second": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "max_ms": {
                          "type": "number"
                        }
                      }
                    },
                    "cold": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "requests",
                        "answered",
                        "answers_per_second",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "requests": {
                          "type": "integer"
                        },
                        "answered": {
                          "type": "integer"
                        },
                        "answers_per_second": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "max_ms": {
                          "type": "number"
                        }
                      }
                    },
                    "customers_asked": {
                      "type": "integer"
                    },
                    "customers_answered": {
                      "type": "integer"
                    },
                    "customers_given_up": {
                      "type": "integer"
                    },
                    "purchases": {
                      "type": "integer"
                    },
                    "apple_429": {
                      "type": "integer"
                    },
                    "apple_calls_total": {
                      "type": "integer"
                    },
                    "apple_max_calls_per_second": {
                      "description": "Per endpoint, the most calls the fake received in one second of the clock.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "apple_limit_per_second": {
                      "type": "integer"
                    },
                    "apple": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "object",
                        "additionalProperties": true,
                        "required": [
                          "calls",
                          "rate_limited",
                          "max_calls_per_second",
                          "limit_per_second"
                        ],
                        "properties": {
                          "calls": {
                            "type": "integer"
                          },
                          "ok": {
                            "type": "integer"
                          },
                          "rate_limited": {
                            "type": "integer"
                          },
                          "max_calls_per_second": {
                            "type": "integer"
                          },
                          "limit_per_second": {
                            "type": "integer"
                          },
                          "limit_per_hour": {
                            "type": "integer"
                          },
                          "customers": {
                            "type": "integer"
                          },
                          "calls_per_customer": {
                            "type": "number"
                          }
                        }
                      }
                    },
                    "calls_per_customer": {
                      "type": "number"
                    },
                    "projected_prefetch_hours": {
                      "type": "number"
                    },
                    "notifications": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "sent",
                        "answered_200",
                        "answered_200_fraction",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "sent": {
                          "type": "integer"
                        },
                        "answered_200": {
                          "type": "integer"
                        },
                        "answered_200_fraction": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "max_ms": {
                          "type": "number"
                        }
                      }
                    },
                    "serve_peak_rss_mb": {
                      "type": "number"
                    },
                    "receipts_signed": {
                      "type": "integer"
                    },
                    "receipt_signing_ms_mean": {
                      "type": "number"
                    },
                    "load_average": {
                      "type": "number"
                    },
                    "store": {
                      "description": "`sqlite`, or `postgres`: the gateways on one fresh schema.",
                      "type": "string"
                    },
                    "instances": {
                      "description": "Gateways sharing the store, and so the budget of calls to Apple.",
                      "type": "integer"
                    },
                    "apple_calls_per_second": {
                      "description": "Apple's calls a second over the run, all instances together, by endpoint.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "number"
                      }
                    },
                    "warm_only": {
                      "description": "The warm-only clients' requests (customers already answered once), apart from the closed loop's.",
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "requests",
                        "answered",
                        "answers_per_second",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "requests": {
                          "type": "integer"
                        },
                        "answered": {
                          "type": "integer"
                        },
                        "answers_per_second": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "max_ms": {
                          "type": "number"
                        }
                      }
                    },
                    "warm_only_by_status": {
                      "description": "The warm-only clients' answers by verifyReceipt status.",
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "budget_per_second": {
                      "description": "The gateway's budget of calls a second per endpoint (Apple's limit times the margin), for all instances together.",
                      "type": "number"
                    },
                    "invariants": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "zero_429",
                        "calls_within_budget",
                        "notifications_unaffected"
                      ],
                      "properties": {
                        "zero_429": {
                          "type": "boolean"
                        },
                        "calls_within_budget": {
                          "type": "boolean"
                        },
                        "notifications_unaffected": {
                          "type": "boolean"
                        }
                      }
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    }
                  }
                },
                "ingest": {
                  "description": "`bench ingest`: the whole service on loopback (`failures` must be 0).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "notifications_per_second",
                    "failures",
                    "p50_ms",
                    "p99_ms",
                    "peak_rss_mb"
                  ],
                  "properties": {
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "concurrency": {
                      "type": "integer"
                    },
                    "delivery": {
                      "type": "boolean"
                    },
                    "drain_seconds_before_open_loop": {
                      "type": "number"
                    },
                    "failures": {
                      "type": "integer",
                      "minimum": 0
                    },
                    "failures_by_answer": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "fraction_of_http_baseline": {
                      "type": "number"
                    },
                    "gateway_cpu_ms_per_notification": {
                      "type": "number"
                    },
                    "gateway_cpu_ms_per_notification_by_thread": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "number"
                      }
                    },
                    "gateway_cpu_per_notification_in_p256_verifies": {
                      "type": "number"
                    },
                    "http_baseline_per_second": {
                      "type": "number"
                    },
                    "instances": {
                      "type": "integer"
                    },
                    "latency_samples": {
                      "type": "integer"
                    },
                    "machine_cpu_ms_per_notification": {
                      "type": "number"
                    },
                    "notifications_per_second": {
                      "type": "number"
                    },
                    "offered_rate_per_second": {
                      "type": "number"
                    },
                    "open_loop_fsync_max_ms": {
                      "type": "number"
                    },
                    "open_loop_fsync_p50_ms": {
                      "type": "number"
                    },
                    "open_loop_gateway_cpu_ms_per_notification": {
                      "type": "number"
                    },
                    "open_loop_gateway_cpu_ms_per_notification_by_thread": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "number"
                      }
                    },
                    "open_loop_gateway_cpu_per_notification_in_p256_verifies": {
                      "type": "number"
                    },
                    "open_loop_machine_busy": {
                      "type": "number"
                    },
                    "open_loop_machine_steal": {
                      "type": "number"
                    },
                    "p256_verify_ms": {
                      "type": "number"
                    },
                    "p50_ms": {
                      "type": "number"
                    },
                    "p99_ms": {
                      "type": "number"
                    },
                    "peak_rss_mb": {
                      "type": "number"
                    },
                    "peak_rss_mb_per_instance": {
                      "type": "array",
                      "items": {
                        "type": "number"
                      }
                    },
                    "seconds": {
                      "type": "number"
                    },
                    "store": {
                      "enum": [
                        "sqlite",
                        "postgres"
                      ]
                    },
                    "v1_share": {
                      "type": "number"
                    },
                    "writes_per_commit": {
                      "type": "number"
                    }
                  }
                },
                "soak": {
                  "description": "`bench soak`: a long run against a failing downstream (`lost` must be 0).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "sent",
                    "accepted",
                    "delivered",
                    "lost",
                    "p99_ms",
                    "rss_slope_mb_per_minute"
                  ],
                  "properties": {
                    "minutes": {
                      "type": "number"
                    },
                    "offered_rate_per_second": {
                      "type": "number"
                    },
                    "sent": {
                      "type": "integer"
                    },
                    "accepted": {
                      "type": "integer"
                    },
                    "refused": {
                      "type": "integer"
                    },
                    "delivered": {
                      "type": "integer"
                    },
                    "lost": {
                      "type": "integer"
                    },
                    "redeliveries": {
                      "type": "integer"
                    },
                    "downstream_failures_injected": {
                      "type": "integer"
                    },
                    "outage_start_second": {
                      "type": "integer"
                    },
                    "outage_seconds": {
                      "type": "integer"
                    },
                    "drain_seconds": {
                      "type": "number"
                    },
                    "p50_ms": {
                      "type": "number"
                    },
                    "p99_ms": {
                      "type": "number"
                    },
                    "rss_start_mb": {
                      "type": "number"
                    },
                    "rss_end_mb": {
                      "type": "number"
                    },
                    "rss_max_mb": {
                      "type": "number"
                    },
                    "rss_slope_mb_per_minute": {
                      "type": "number"
                    },
                    "samples": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "additionalProperties": true,
                        "required": [
                          "second",
                          "rss_mb",
                          "accepted_not_yet_delivered"
                        ],
                        "properties": {
                          "second": {
                            "type": "integer"
                          },
                          "rss_mb": {
                            "type": "number"
                          },
                          "accepted_not_yet_delivered": {
                            "type": "integer"
                          }
                        }
                      }
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    }
                  }
                },
                "flood": {
                  "description": "`bench flood`: 1 MiB bodies without a secret (`within_cap` must be true).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "bodies",
                    "store_growth_bytes",
                    "untrusted_lane_cap_bytes",
                    "within_cap"
                  ],
                  "properties": {
                    "bodies": {
                      "type": "integer"
                    },
                    "body_bytes": {
                      "type": "integer"
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "database_growth_bytes": {
                      "type": "integer"
                    },
                    "log_growth_bytes": {
                      "type": "integer"
                    },
                    "seconds": {
                      "type": "number"
                    },
                    "statuses": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "integer"
                      }
                    },
                    "store_growth_bytes": {
                      "type": "integer"
                    },
                    "untrusted_lane_cap_bytes": {
                      "type": "integer"
                    },
                    "wal_bound_bytes": {
                      "type": "integer"
                    },
                    "wal_bytes_at_end": {
                      "type": "integer"
                    },
                    "within_cap": {
                      "type": "boolean"
                    }
                  }
                },
                "fsync": {
                  "description": "`bench fsync`: how long the disk takes to make 8 KiB durable.",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "p50_ms",
                    "p99_ms",
                    "max_ms",
                    "samples"
                  ],
                  "properties": {
                    "folder": {
                      "type": "string"
                    },
                    "max_ms": {
                      "type": "number"
                    },
                    "over_100_ms": {
                      "type": "integer"
                    },
                    "over_10_ms": {
                      "type": "integer"
                    },
                    "over_25_ms": {
                      "type": "integer"
                    },
                    "p50_ms": {
                      "type": "number"
                    },
                    "p99_ms": {
                      "type": "number"
                    },
                    "samples": {
                      "type": "integer"
                    },
                    "seconds": {
                      "type": "number"
                    }
                  }
                },
                "delivery-rate": {
                  "description": "`bench delivery-rate`: a downstream's pace after an outage (`within_10_percent` must be true).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "max_per_second",
                    "per_second",
                    "within_10_percent"
                  ],
                  "properties": {
                    "backlog": {
                      "type": "integer"
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "concurrency": {
                      "type": "integer"
                    },
                    "delivered": {
                      "type": "integer"
                    },
                    "max_per_second": {
                      "type": "number"
                    },
                    "measured_seconds": {
                      "type": "number"
                    },
                    "outage_seconds": {
                      "type": "number"
                    },
                    "per_second": {
                      "type": "array",
                      "items": {
                        "type": "number"
                      }
                    },
                    "rate_per_second": {
                      "type": "number"
                    },
                    "ratio": {
                      "type": "number"
                    },
                    "within_10_percent": {
                      "type": "boolean"
                    }
                  }
                },
                "isolation": {
                  "description": "`bench isolation`: notifications and deliveries while Apple and the alert webhook hang (`all_answered_and_delivered` must be true).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "all_answered_and_delivered",
                    "notification_p99_ratio",
                    "delivery_p99_ratio_under_flood"
                  ],
                  "properties": {
                    "all_answered_and_delivered": {
                      "type": "boolean"
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "dead_letters_before": {
                      "type": "integer"
                    },
                    "delivery_p99_ratio_under_flood": {
                      "type": "number"
                    },
                    "delivery_p99_ratio_with_alerts_hanging": {
                      "type": "number"
                    },
                    "delivery_quiet": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "failures",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "failures": {
                          "type": "integer"
                        },
                        "max_ms": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "samples": {
                          "type": "integer"
                        }
                      }
                    },
                    "delivery_under_flood": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "failures",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "failures": {
                          "type": "integer"
                        },
                        "max_ms": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "samples": {
                          "type": "integer"
                        }
                      }
                    },
                    "delivery_with_alerts_hanging": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "failures",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "failures": {
                          "type": "integer"
                        },
                        "max_ms": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "samples": {
                          "type": "integer"
                        }
                      }
                    },
                    "flood_clients": {
                      "type": "integer"
                    },
                    "notification_p99_ratio": {
                      "type": "number"
                    },
                    "notification_quiet": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "failures",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "failures": {
                          "type": "integer"
                        },
                        "max_ms": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "samples": {
                          "type": "integer"
                        }
                      }
                    },
                    "notification_under_flood": {
                      "type": "object",
                      "additionalProperties": true,
                      "required": [
                        "failures",
                        "p50_ms",
                        "p99_ms"
                      ],
                      "properties": {
                        "failures": {
                          "type": "integer"
                        },
                        "max_ms": {
                          "type": "number"
                        },
                        "p50_ms": {
                          "type": "number"
                        },
                        "p99_ms": {
                          "type": "number"
                        },
                        "samples": {
                          "type": "integer"
                        }
                      }
                    },
                    "receipts_forwarded": {
                      "type": "integer"
                    },
                    "receipts_refused_at_once": {
                      "type": "integer"
                    }
                  }
                },
                "scale": {
                  "description": "`bench scale`: a store of the size asked, then every step timed (each step's `exit_status` must be 0).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "store",
                    "notifications",
                    "pairs",
                    "subscriptions",
                    "steps",
                    "serve"
                  ],
                  "properties": {
                    "store": {
                      "enum": [
                        "sqlite",
                        "postgres"
                      ]
                    },
                    "build": {
                      "description": "`release`, or a warning that the numbers of a debug build mean nothing.",
                      "type": "string"
                    },
                    "notifications": {
                      "type": "integer"
                    },
                    "pairs": {
                      "type": "integer"
                    },
                    "subscriptions": {
                      "type": "integer"
                    },
                    "out": {
                      "type": "string"
                    },
                    "config": {
                      "type": "string"
                    },
                    "env": {
                      "type": "object",
                      "additionalProperties": {
                        "type": "string"
                      }
                    },
                    "kept": {
                      "type": "boolean"
                    },
                    "build_seconds": {
                      "type": "number"
                    },
                    "rows": {
                      "type": "object"
                    },
                    "store_bytes": {
                      "type": "integer"
                    },
                    "bytes_per_notification": {
                      "type": "number"
                    },
                    "steps": {
                      "description": "Per step (`report_table`, `report_json`, `report_html`, `admin_status`, …): how long it took, and how it ended where it ran as a process (`exit_status`, 0) or a request (`http_status`).",
                      "type": "object",
                      "additionalProperties": {
                        "type": "object",
                        "additionalProperties": true,
                        "required": [
                          "seconds"
                        ],
                        "properties": {
                          "seconds": {
                            "type": "number"
                          },
                          "peak_rss_mb": {
                            "type": "number"
                          },
                          "exit_status": {
                            "type": "integer"
                          },
                          "http_status": {
                            "type": "integer"
                          },
                          "output_bytes": {
                            "type": "integer"
                          },
                          "rows": {
                            "type": "integer"
                          },
                          "in_process": {
                            "type": "boolean"
                          },
                          "skipped": {
                            "type": "string"
                          }
                        }
                      }
                    },
                    "serve": {
                      "type": "object"
                    },
                    "ingest_big_store": {
                      "type": "object"
                    },
                    "ingest_empty_store": {
                      "type": "object"
                    }
                  }
                }
              }
            }
            """##
        ),
        (
            "database-rows.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Database downstream rows",
              "description": "One row of the tables a `database` downstream writes (docs/database-downstream.md), as JSON: column names as keys, as PostgreSQL's `to_jsonb(row)` or SQLite's `json_object(…)` (or `sqlite3 -json`) give it. Booleans are `boolean` in PostgreSQL and 0/1 in SQLite; `event` is `jsonb` (an object) in PostgreSQL and text holding the same JSON in SQLite. Table versions are in `schema_version`: a new version only adds (tables, columns with defaults, indexes), so a reader names the columns it reads and ignores the others. Values are the canonical event's (event.schema.json): strings such as `kind` and `entitlement_state` are open sets.",
              "oneOf": [
                { "$ref": "#/$defs/events" },
                { "$ref": "#/$defs/subscriptions" },
                { "$ref": "#/$defs/schema_version" }
              ],
              "$defs": {
                "flag": { "description": "PostgreSQL boolean, SQLite 0/1.", "oneOf": [{ "type": "boolean" }, { "enum": [0, 1] }] },
                "optional_flag": { "oneOf": [{ "type": ["boolean", "null"] }, { "enum": [0, 1] }] },
                "events": {
                  "description": "`events`: one row per canonical event, keyed by its id, written once.",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "id", "source", "kind", "reason", "raw_type", "raw_subtype", "bundle_id", "environment", "original_transaction_id",
                    "transaction_id", "product_id", "product_type", "purchase_date", "expires_date", "revocation_date",
                    "grace_period_expires_date", "event_date", "entitlement_state", "entitlement_until", "auto_renew",
                    "auto_renew_product_id", "in_billing_retry", "verified", "authoritative", "event", "delivered_at"
                  ],
                  "properties": {
                    "id": { "type": "string" },
                    "source": { "type": "string", "examples": ["v1", "v2", "v2-api", "v1-receipt"] },
                    "kind": { "type": "string", "examples": ["purchase", "renewal", "expiration", "refund"] },
                    "reason": { "type": ["string", "null"] },
                    "raw_type": { "type": "string" },
                    "raw_subtype": { "type": ["string", "null"] },
                    "bundle_id": { "type": ["string", "null"] },
                    "environment": { "type": ["string", "null"], "examples": ["production", "sandbox"] },
                    "original_transaction_id": { "type": ["string", "null"] },
                    "transaction_id": { "type": ["string", "null"] },
                    "product_id": { "type": ["string", "null"] },
                    "product_type": { "type": ["string", "null"] },
                    "purchase_date": { "type": ["integer", "null"] },
                    "expires_date": { "type": ["integer", "null"] },
                    "revocation_date": { "type": ["integer", "null"] },
                    "grace_period_expires_date": { "type": ["integer", "null"] },
                    "event_date": { "type": "integer" },
                    "entitlement_state": { "type": ["string", "null"], "examples": ["active", "grace_period", "billing_retry", "expired", "revoked"] },
                    "entitlement_until": { "type": ["integer", "null"] },
                    "auto_renew": { "$ref": "#/$defs/optional_flag" },
                    "auto_renew_product_id": { "type": ["string", "null"] },
                    "in_billing_retry": { "$ref": "#/$defs/optional_flag" },
                    "verified": { "$ref": "#/$defs/flag" },
                    "authoritative": { "$ref": "#/$defs/flag" },
                    "event": {
                      "description": "The whole canonical event: an object in PostgreSQL (jsonb), its JSON text in SQLite.",
                      "oneOf": [
                        { "$ref": "event.schema.json" },
                        { "type": "string", "contentMediaType": "application/json", "contentSchema": { "$ref": "event.schema.json" } }
                      ]
                    },
                    "delivered_at": { "description": "When the gateway first wrote the row (ms).", "type": "integer" }
                  }
                },
                "subscriptions": {
                  "description": "`subscriptions`: one row per original transaction id and environment, the subscription as of its newest authoritative event.",
                  "type": "object",
                  "additionalProperties": true,
                  "required": [
                    "original_transaction_id", "environment", "bundle_id", "product_id", "entitlement_state", "entitlement_until",
                    "expires_date", "auto_renew", "auto_renew_product_id", "last_event_id", "last_event_kind", "last_event_date", "updated_at"
                  ],
                  "properties": {
                    "original_transaction_id": { "type": "string" },
                    "environment": { "type": "string" },
                    "bundle_id": { "type": ["string", "null"] },
                    "product_id": { "type": ["string", "null"] },
                    "entitlement_state": { "type": ["string", "null"] },
                    "entitlement_until": { "type": ["integer", "null"] },
                    "expires_date": { "type": ["integer", "null"] },
                    "auto_renew": { "$ref": "#/$defs/optional_flag" },
                    "auto_renew_product_id": { "type": ["string", "null"] },
                    "last_event_id": { "description": "Joins `events.id`.", "type": "string" },
                    "last_event_kind": { "type": "string" },
                    "last_event_date": { "type": "integer" },
                    "updated_at": { "type": "integer" }
                  }
                },
                "schema_version": {
                  "description": "`schema_version`: one row per version of the tables applied (the current version is 1).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["version", "applied_at"],
                  "properties": {
                    "version": { "type": "integer", "minimum": 1 },
                    "applied_at": { "type": "integer" }
                  }
                }
              }
            }
            """##
        ),
        (
            "envelope.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Webhook delivery: subscription.event",
              "description": "The body a webhook downstream receives for each event (docs/configuration.md, \"downstreams\"; docs/architecture.md, \"Delivery\"), signed with Standard Webhooks headers: `webhook-id` (the event id: the same on every attempt and replay, so deduplicate on it), `webhook-timestamp` (seconds) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, one per configured secret). At least once, possibly out of order: act on `state`, which is last-write-wins by event date. Versioned with the event's `schema` key (event.schema.json); keys may be added, so a consumer ignores keys it does not know.",
              "type": "object",
              "additionalProperties": true,
              "required": ["type", "authoritative", "event", "state"],
              "properties": {
                "type": { "const": "subscription.event" },
                "authoritative": {
                  "description": "Whether the event comes from the bundle's authoritative generation. A downstream with `shadow: true` also receives the other generation's events, marked false: log or compare them, never act on them.",
                  "type": "boolean"
                },
                "event": { "$ref": "event.schema.json" },
                "state": {
                  "description": "The subscription's current state on the authoritative path; null for an event about no subscription (a test, a summary, a consent or external purchase token).",
                  "oneOf": [{ "$ref": "state.schema.json" }, { "type": "null" }]
                },
                "raw": {
                  "description": "Only for a downstream with `include_raw`: Apple's notification body as received — V2 `{\"signedPayload\": …}` (verify Apple's JWS yourself if you read it), V1 with its `password` member removed.",
                  "type": "object"
                }
              }
            }
            """##
        ),
        (
            "error.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Error answer",
              "description": "Every error the gateway answers over HTTP — the notification endpoint, the admin API and the HTTP server itself (a body too large, the body budget full) — is this object, with a stable `code` (docs/architecture.md, \"Error codes\"). `message` is for people: match on `code`. A code may be added (listed in CHANGELOG.md): treat a code you do not know by its HTTP status.",
              "type": "object",
              "additionalProperties": true,
              "required": ["error"],
              "properties": {
                "error": {
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["code", "message"],
                  "properties": {
                    "code": { "$ref": "#/$defs/code" },
                    "cause": {
                      "description": "`nested_jws_invalid`: the inner token's failure, itself a code of this list; a refused switch of `POST /admin/migrate`: App Store Connect's own code, or null.",
                      "type": ["string", "null"]
                    },
                    "message": { "type": "string" }
                  }
                }
              },
              "$defs": {
                "code": {
                  "enum": [
                    "malformed_body", "body_too_large", "unknown_version",
                    "bad_shared_secret", "unknown_bundle", "environment_mismatch", "receipt_invalid", "receipt_config_error", "apple_unavailable",
                    "malformed", "unsupported_algorithm", "invalid_chain_length", "untrusted_root", "invalid_certificate", "certificate_expired",
                    "missing_apple_marker", "bad_signature", "app_apple_id_mismatch", "unsupported_environment", "nested_jws_invalid",
                    "stale_notification",
                    "store_unavailable", "server_busy", "address_busy",
                    "not_found", "method_not_allowed", "unauthorized", "bad_request",
                    "internal_error", "unsupported_transfer_encoding",
                    "unknown_environment", "bad_target", "no_v2_path", "not_ready", "unchanged",
                    "no_notification_url", "no_credentials", "url_not_ours", "no_path", "in_progress", "apple_refused", "apple_unanswered",
                    "probe_failed"
                  ]
                }
              }
            }
            """##
        ),
        (
            "event.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Canonical event",
              "description": "One normalized App Store event, the same shape whichever Apple generation produced it (docs/architecture.md, \"The canonical event\"). Schema version 1 (the `schema` key). Every key under `required` is always present, null when the source does not carry the value; the keys of one kind only and the group-subscription keys are written only on an event that carries them. Times are milliseconds since the epoch (UTC), ids are strings. Compatibility: within one `schema` version the gateway only adds — a key, or a value of an enumeration such as `kind` or `reason` (listed in CHANGELOG.md) — so a consumer ignores keys it does not know (`additionalProperties` is true) and treats a `kind` it does not know like `other`. A change that breaks a consumer (a key removed, renamed or retyped, a meaning changed, an always-present key made optional) bumps `schema` and is listed in CHANGELOG.md.",
              "type": "object",
              "additionalProperties": true,
              "required": [
                "schema", "id", "source", "recovered_by", "kind", "reason", "raw_type", "raw_subtype",
                "bundle_id", "app_apple_id", "environment",
                "product_id", "product_type", "original_transaction_id", "transaction_id", "web_order_line_item_id", "subscription_group_id",
                "purchase_date", "original_purchase_date", "expires_date", "revocation_date", "grace_period_expires_date",
                "event_date", "event_date_source",
                "revocation_reason", "expiration_intent", "auto_renew", "auto_renew_product_id", "in_billing_retry",
                "offer_type", "offer_id", "is_trial", "is_intro", "price_milli", "currency", "quantity", "app_account_token", "ownership",
                "verified", "entitlement"
              ],
              "properties": {
                "schema": { "description": "The version of this shape.", "const": 1 },
                "id": {
                  "description": "V2: Apple's notificationUUID (`:n` appended when one notification yields several events); V1: `v1:` + hex SHA-256 of the body without `password`, keys sorted; `v2-api:…` for an event the App Store Server API stands in with. Deliveries are at least once: deduplicate on it.",
                  "type": "string", "minLength": 1
                },
                "source": { "description": "Where the fields came from.", "enum": ["v1", "v2", "v2-api", "v1-receipt"] },
                "recovered_by": {
                  "description": "null for an event received live; `history` for a notification found in Apple's notification history; `reconciliation` for an event made because Apple's signed state differed from the stored one.",
                  "enum": [null, "history", "reconciliation"]
                },
                "kind": { "$ref": "#/$defs/kind" },
                "reason": { "$ref": "#/$defs/reason" },
                "raw_type": { "description": "Apple's notification type, verbatim (V1 `notification_type`, V2 `notificationType`).", "type": "string" },
                "raw_subtype": { "description": "Apple's V2 subtype, verbatim.", "type": ["string", "null"] },
                "bundle_id": { "type": ["string", "null"] },
                "app_apple_id": { "type": ["integer", "null"] },
                "environment": { "enum": [null, "production", "sandbox", "xcode", "local_testing"] },
                "product_id": { "type": ["string", "null"] },
                "product_type": {
                  "description": "`auto_renewable`, `non_renewing`, `consumable`, `non_consumable`; a type Apple adds later is kept as Apple's string. V1 does not carry it.",
                  "type": ["string", "null"],
                  "examples": ["auto_renewable", "non_renewing", "consumable", "non_consumable"]
                },
                "original_transaction_id": { "type": ["string", "null"] },
                "transaction_id": { "type": ["string", "null"] },
                "web_order_line_item_id": { "type": ["string", "null"] },
                "subscription_group_id": { "type": ["string", "null"] },
                "purchase_date": { "$ref": "#/$defs/optional_millis" },
                "original_purchase_date": { "$ref": "#/$defs/optional_millis" },
                "expires_date": { "$ref": "#/$defs/optional_millis" },
                "revocation_date": { "$ref": "#/$defs/optional_millis" },
                "grace_period_expires_date": { "$ref": "#/$defs/optional_millis" },
                "event_date": { "description": "When the change happened (V2: `signedDate`); what a subscription's state is ordered by.", "$ref": "#/$defs/millis" },
                "event_date_source": {
                  "description": "How `event_date` was obtained: V2 `signedDate`, the nested transaction's `signedDate`, a date the V1 change carries, or the arrival time.",
                  "enum": ["signed_date", "transaction_signed_date", "notification", "arrival"]
                },
                "revocation_reason": {
                  "description": "`app_issue` or `other` (Apple's 1 / 0); another code Apple adds later is kept as its digits.",
                  "type": ["string", "null"], "examples": ["app_issue", "other"]
                },
                "expiration_intent": {
                  "description": "`customer_cancelled`, `billing_error`, `price_increase_declined`, `product_unavailable`, `other`; another code is kept as its digits.",
                  "type": ["string", "null"],
                  "examples": ["customer_cancelled", "billing_error", "price_increase_declined", "product_unavailable", "other"]
                },
                "auto_renew": { "type": ["boolean", "null"] },
                "auto_renew_product_id": { "type": ["string", "null"] },
                "in_billing_retry": { "type": ["boolean", "null"] },
                "offer_type": {
                  "description": "`introductory`, `promotional`, `offer_code`, `win_back`; another code is kept as its digits.",
                  "type": ["string", "null"], "examples": ["introductory", "promotional", "offer_code", "win_back"]
                },
                "offer_id": { "type": ["string", "null"] },
                "is_trial": { "type": ["boolean", "null"] },
                "is_intro": { "type": ["boolean", "null"] },
                "price_milli": {
                  "description": "Price in milli-units of `currency` (V1 carries no price). A group purchase's is Apple's average per seat: what it cost is `amount_milli`.",
                  "type": ["integer", "null"]
                },
                "currency": { "description": "ISO 4217 code.", "type": ["string", "null"] },
                "quantity": { "description": "Consumables: how many were bought; a group subscription: the seats this transaction covers.", "type": ["integer", "null"] },
                "app_account_token": { "description": "The token the app set on the purchase (a UUID), verbatim.", "type": ["string", "null"] },
                "ownership": {
                  "description": "`purchased`, `family_shared`, `assigned` (a group member's own transaction); another value Apple adds later is kept as Apple's string.",
                  "type": ["string", "null"], "examples": ["purchased", "family_shared", "assigned"]
                },
                "verified": { "description": "True when the fields come from Apple-signed data or verifyReceipt's answer.", "type": "boolean" },
                "entitlement": {
                  "description": "The subscription's state after the event, computed from the dates and flags (never from the notification type); null when the event concerns no transaction.",
                  "oneOf": [{ "$ref": "#/$defs/entitlement" }, { "type": "null" }]
                },
                "app_transaction_id": { "description": "`consent_rescinded` only: the signed app transaction's `appTransactionId`.", "type": "string" },
                "consumption_request_reason": {
                  "description": "`consumption_request` only: Apple's `consumptionRequestReason`, lower-cased; a value Apple adds later keeps its own words.",
                  "type": "string",
                  "examples": ["unintended_purchase", "fulfillment_issue", "unsatisfied_with_purchase", "legal", "other"]
                },
                "external_purchase_id": { "description": "`external_purchase_token` only: the token's `externalPurchaseId`.", "type": "string" },
                "external_purchase_token_type": {
                  "description": "`external_purchase_token` only (custom link tokens): Apple's `tokenType`, verbatim.",
                  "type": "string", "examples": ["ACQUISITION", "SERVICES"]
                },
                "external_purchase_token_creation_date": { "description": "`external_purchase_token` only.", "$ref": "#/$defs/millis" },
                "external_purchase_token_expiration_date": { "description": "`external_purchase_token` only (custom link tokens).", "$ref": "#/$defs/millis" },
                "revoked_seats": {
                  "description": "A group subscription: the seats a seat refund revoked from this transaction (Apple's `revokedSeatQuantity`).",
                  "type": "integer", "minimum": 0
                },
                "invitation_management": {
                  "description": "A group subscription: `apple` (members get `assigned` transactions of their own) or `developer` (members get none: the team's seat claims are the record); another value is kept as Apple's.",
                  "type": "string", "examples": ["apple", "developer"]
                },
                "seat_price_tiers": { "description": "A group subscription: the transaction's price per seat and the seats at it (one tier for per-seat pricing, up to five for volume pricing; Apple's order).", "$ref": "#/$defs/seat_price_tiers" },
                "renewal_seat_price_tiers": { "description": "A group subscription: the next renewal's tiers.", "$ref": "#/$defs/seat_price_tiers" },
                "amount_milli": {
                  "description": "A group subscription: what the transaction cost, the sum over its tiers of `price_milli` × `quantity`, in milli-units of `currency`.",
                  "type": "integer"
                },
                "additional_transaction_reason": {
                  "description": "`seat_addition`: one of several transactions that represent the period; another value is kept as Apple's.",
                  "type": "string", "examples": ["seat_addition"]
                },
                "renewal_quantity": { "description": "A group subscription: the seats at the next renewal.", "type": "integer", "minimum": 0 },
                "group_seats": {
                  "description": "A group purchaser's event: the group's seats in the transaction's period after it, over every transaction of the period the gateway holds.",
                  "type": "integer", "minimum": 0
                },
                "unclaimed_seat_ids": {
                  "description": "`seats_unclaimed` only: the seat claims (`seatClaimId`) Apple released.",
                  "type": "array", "items": { "type": "string" }
                }
              },
              "$defs": {
                "millis": { "description": "Milliseconds since the epoch (UTC).", "type": "integer" },
                "optional_millis": { "description": "Milliseconds since the epoch (UTC), or null when the source does not carry it.", "type": ["integer", "null"] },
                "kind": {
                  "description": "What happened (docs/architecture.md, \"The canonical event\"). A type Apple adds later is `other`, with Apple's type and subtype in `raw_type` and `raw_subtype`.",
                  "enum": [
                    "purchase", "renewal", "renewal_failure", "grace_period_expired", "expiration", "auto_renew_changed", "plan_change",
                    "price_increase", "refund", "refund_declined", "refund_reversed", "revocation", "renewal_extended",
                    "renewal_extension_summary", "consumption_request", "one_time_charge", "test", "consent_rescinded",
                    "external_purchase_token", "metadata_update", "migration", "price_change", "seats_changed", "seats_refunded",
                    "seats_unclaimed", "other"
                  ]
                },
                "reason": {
                  "description": "Refines `kind`, or null: purchase [initial, resubscribe, offer_redeemed], renewal [auto, billing_recovery, interactive], renewal_failure [grace_period, billing_retry], expiration [voluntary, billing_retry, price_increase, product_not_for_sale], auto_renew_changed [enabled, disabled], plan_change [upgrade, downgrade, reverted], price_increase [pending, accepted], renewal_extension_summary [failure], external_purchase_token [unreported, created, active_token_reminder], seats_changed [increase, decrease].",
                  "enum": [
                    null, "initial", "resubscribe", "offer_redeemed", "auto", "billing_recovery", "interactive", "grace_period",
                    "billing_retry", "voluntary", "price_increase", "product_not_for_sale", "enabled", "disabled", "upgrade",
                    "downgrade", "reverted", "pending", "accepted", "failure", "unreported", "created", "active_token_reminder",
                    "increase", "decrease"
                  ]
                },
                "entitlement": {
                  "description": "Access after the event: `active` (until the period's end, null without end), `grace_period` (until the grace end), `billing_retry`, `expired`, `revoked` (no access; `until` null).",
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["state", "until"],
                  "properties": {
                    "state": { "enum": ["active", "grace_period", "billing_retry", "expired", "revoked"] },
                    "until": { "$ref": "#/$defs/optional_millis" }
                  }
                },
                "seat_price_tiers": {
                  "type": "array",
                  "minItems": 1,
                  "items": {
                    "type": "object",
                    "additionalProperties": true,
                    "required": ["price_milli", "quantity"],
                    "properties": {
                      "price_milli": { "description": "The price of one seat, in milli-units of the event's `currency`.", "type": "integer" },
                      "quantity": { "description": "The seats at that price.", "type": "integer" }
                    }
                  }
                }
              }
            }
            """##
        ),
        (
            "migrate-store.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "migrate-store: the summary",
              "description": "The one JSON line of `iap-gateway migrate-store` (docs/operations.md, \"Moving from SQLite to PostgreSQL\"): the rows of each table in the SQLite store and in PostgreSQL after the copy, and whether they match. Exit status 0 only when `verified` is true. Keys may be added: a script reads the ones it needs.",
              "type": "object",
              "additionalProperties": true,
              "required": ["from", "to", "tables", "quarantine_usage", "sequences", "milliseconds", "verified"],
              "properties": {
                "from": { "description": "`sqlite:PATH`.", "type": "string", "pattern": "^sqlite:" },
                "to": { "description": "`postgres (VAR)`: the variable's name, never the connection string.", "type": "string" },
                "tables": {
                  "description": "Per table of the store.",
                  "type": "object",
                  "additionalProperties": {
                    "type": "object",
                    "additionalProperties": true,
                    "required": ["rows", "copied", "verified"],
                    "properties": {
                      "rows": { "description": "Rows in the SQLite store.", "type": "integer", "minimum": 0 },
                      "copied": { "description": "Rows in PostgreSQL after the copy.", "type": "integer", "minimum": 0 },
                      "verified": { "type": "boolean" }
                    }
                  }
                },
                "quarantine_usage": {
                  "description": "Whether each quarantine lane's usage (rows, bytes) in PostgreSQL equals the SQLite store's.",
                  "type": "object",
                  "required": ["verified"],
                  "additionalProperties": { "type": "boolean" }
                },
                "sequences": {
                  "description": "The sequences set past the largest id copied (`table.column`: the next value).",
                  "type": "object",
                  "additionalProperties": { "type": "integer" }
                },
                "milliseconds": { "type": "integer", "minimum": 0 },
                "verified": { "type": "boolean" }
              }
            }
            """##
        ),
        (
            "migrate.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "migrate: one step",
              "description": "One JSON line of `iap-gateway migrate` per step of the switch, failures included — and one element of `steps` in `POST /admin/migrate`'s answer (docs/operations.md, \"Migrating a bundle\"). Keys that do not apply to a step are absent. Keys may be added: a script reads the ones it needs.",
              "type": "object",
              "additionalProperties": true,
              "required": ["at", "bundle_id", "environment", "step", "outcome"],
              "properties": {
                "at": { "description": "When (ms since the epoch).", "type": "integer" },
                "bundle_id": { "type": "string" },
                "environment": { "enum": ["production", "sandbox"] },
                "migration_id": { "description": "The switch's id: every step of one run carries it.", "type": "string" },
                "step": { "enum": ["resume", "preflight", "patch", "probe", "revert", "authority"] },
                "outcome": {
                  "description": "`ok`, `skipped` (nothing to do), `failed`, `refused` (nothing changed), `planned` (a dry run), `requested` (the probe asked Apple for a test notification).",
                  "enum": ["ok", "skipped", "failed", "refused", "planned", "requested"]
                },
                "apple_version": { "description": "The notification version App Store Connect holds, as read or set.", "type": "string" },
                "apple_url": { "description": "The notification URL App Store Connect holds.", "type": "string" },
                "target": { "enum": ["v1", "v2"] },
                "previous": { "enum": ["v1", "v2"] },
                "verdict": { "description": "The comparison report's verdict at the time.", "enum": ["ready", "not_ready"] },
                "test_notification": { "description": "The token of the test notification Apple was asked for.", "type": "string" },
                "notification_id": { "description": "The proof: the test notification journaled here.", "type": "string" },
                "authority_from": { "enum": ["v1", "v2"] },
                "authority_to": { "enum": ["v1", "v2"] },
                "elapsed_ms": { "type": "integer", "minimum": 0 },
                "code": { "description": "Why a step failed or was refused: `url_not_ours`, `not_ready`, `probe_failed`, … (error.schema.json lists them).", "type": "string" },
                "message": { "type": "string" }
              }
            }
            """##
        ),
        (
            "openapi.json",
            ##"""
            {
              "openapi": "3.1.0",
              "info": {
                "title": "iap-gateway",
                "version": "0.9.0-dev",
                "description": "The App Store notification gateway's two listeners (docs/contracts.md). The public listener (`listen`) is Apple's: `POST /notifications`, verifyReceipt and `GET /healthz`. The admin listener (`admin.listen`, default 127.0.0.1:8081) serves `/metrics` and the admin API, every request with `Authorization: Bearer` and the token from `admin.token_env`. Every error is `{\"error\": {\"code\", \"message\"}}` (error.schema.json) with a stable code; match on the code, not the message. Every admin answer carries `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, `Cache-Control: no-store` and a `Content-Security-Policy` that loads nothing.",
                "license": {
                  "name": "Apache-2.0",
                  "identifier": "Apache-2.0"
                }
              },
              "servers": [
                {
                  "url": "https://gateway.example.com",
                  "description": "The public listener (`listen`), behind its TLS or a reverse proxy."
                }
              ],
              "tags": [
                {
                  "name": "public",
                  "description": "Apple's listener: notifications, verifyReceipt, health."
                },
                {
                  "name": "admin",
                  "description": "The admin listener: metrics and the admin API, behind the bearer token."
                }
              ],
              "paths": {
                "/notifications": {
                  "post": {
                    "operationId": "postNotification",
                    "summary": "Receive one App Store Server Notification (V1 or V2)",
                    "description": "Apple's endpoint: authenticated (V2 signature and chain, V1 shared secret), journaled durably, then answered (docs/architecture.md, \"The endpoint\"). Apple retries anything but 2xx, and stops after some 4xx: nothing a configuration fix would cure is answered 4xx.",
                    "requestBody": {
                      "required": true,
                      "content": {
                        "application/json": {
                          "schema": {
                            "oneOf": [
                              {
                                "$ref": "#/components/schemas/V2NotificationBody"
                              },
                              {
                                "$ref": "#/components/schemas/V1NotificationBody"
                              }
                            ]
                          }
                        }
                      }
                    },
                    "responses": {
                      "200": {
                        "description": "Accepted, or a duplicate of a notification already accepted.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/NotificationAccepted"
                            }
                          }
                        }
                      },
                      "400": {
                        "description": "Not JSON, neither version, or a malformed token. Codes: `malformed_body`, `unknown_version`, `malformed`, `nested_jws_invalid`, `receipt_invalid`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        }
                      },
                      "401": {
                        "description": "A V1 password that matches no configured shared secret. Codes: `bad_shared_secret`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        }
                      },
                      "403": {
                        "description": "A V2 signature, chain, algorithm or environment Apple would not sign, or a notification signed outside the freshness window. Codes: `unsupported_algorithm`, `invalid_chain_length`, `untrusted_root`, `invalid_certificate`, `certificate_expired`, `missing_apple_marker`, `bad_signature`, `unsupported_environment`, `nested_jws_invalid`, `stale_notification`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        }
                      },
                      "405": {
                        "$ref": "#/components/responses/MethodNotAllowed"
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "503": {
                        "description": "Genuine but not servable now — a bundle, environment or app_apple_id not configured (a configuration fix cures it, so Apple retries) — or the store cannot commit, or the body budget is full: retry. Codes: `unknown_bundle`, `environment_mismatch`, `app_apple_id_mismatch`, `nested_jws_invalid`, `store_unavailable`, `server_busy`, `address_busy`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        },
                        "headers": {
                          "Retry-After": {
                            "description": "Seconds to wait before retrying.",
                            "schema": {
                              "type": "integer",
                              "minimum": 0
                            }
                          }
                        }
                      }
                    },
                    "tags": [
                      "public"
                    ],
                    "security": []
                  }
                },
                "/verifyReceipt": {
                  "post": {
                    "operationId": "verifyReceipt",
                    "summary": "verifyReceipt (production URL)",
                    "description": "Apple's verifyReceipt, answered per bundle as `receipts` says (`apple`: Apple's answer; `shadow`: Apple's, the gateway's compared beside it; `api`: the gateway's own, from the App Store Server API). Always HTTP 200 with Apple's `status`, as Apple answers — a refused or busy request too (`21005`, `is-retryable`).",
                    "requestBody": {
                      "required": true,
                      "content": {
                        "application/json": {
                          "schema": {
                            "$ref": "#/components/schemas/VerifyReceiptRequest"
                          }
                        }
                      }
                    },
                    "responses": {
                      "200": {
                        "description": "Apple's answer format, whatever the status.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/VerifyReceiptAnswer"
                            }
                          }
                        }
                      },
                      "405": {
                        "$ref": "#/components/responses/MethodNotAllowed"
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "503": {
                        "description": "The body budget is full: retry. Codes: `server_busy`, `address_busy`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        },
                        "headers": {
                          "Retry-After": {
                            "description": "Seconds to wait before retrying.",
                            "schema": {
                              "type": "integer",
                              "minimum": 0
                            }
                          }
                        }
                      }
                    },
                    "tags": [
                      "public"
                    ],
                    "security": []
                  }
                },
                "/sandbox/verifyReceipt": {
                  "post": {
                    "operationId": "verifyReceiptSandbox",
                    "summary": "verifyReceipt (sandbox URL)",
                    "description": "Apple's verifyReceipt, answered per bundle as `receipts` says (`apple`: Apple's answer; `shadow`: Apple's, the gateway's compared beside it; `api`: the gateway's own, from the App Store Server API). Always HTTP 200 with Apple's `status`, as Apple answers — a refused or busy request too (`21005`, `is-retryable`).",
                    "requestBody": {
                      "required": true,
                      "content": {
                        "application/json": {
                          "schema": {
                            "$ref": "#/components/schemas/VerifyReceiptRequest"
                          }
                        }
                      }
                    },
                    "responses": {
                      "200": {
                        "description": "Apple's answer format, whatever the status.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/VerifyReceiptAnswer"
                            }
                          }
                        }
                      },
                      "405": {
                        "$ref": "#/components/responses/MethodNotAllowed"
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "503": {
                        "description": "The body budget is full: retry. Codes: `server_busy`, `address_busy`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        },
                        "headers": {
                          "Retry-After": {
                            "description": "Seconds to wait before retrying.",
                            "schema": {
                              "type": "integer",
                              "minimum": 0
                            }
                          }
                        }
                      }
                    },
                    "tags": [
                      "public"
                    ],
                    "security": []
                  }
                },
                "/healthz": {
                  "get": {
                    "operationId": "health",
                    "summary": "Liveness, for load balancers (no authentication)",
                    "responses": {
                      "200": {
                        "description": "The listener answers.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "type": "object",
                              "additionalProperties": true,
                              "required": [
                                "ok"
                              ],
                              "properties": {
                                "ok": {
                                  "const": true
                                }
                              }
                            }
                          }
                        }
                      },
                      "405": {
                        "$ref": "#/components/responses/MethodNotAllowed"
                      }
                    },
                    "tags": [
                      "public"
                    ],
                    "security": []
                  }
                },
                "/metrics": {
                  "get": {
                    "operationId": "metrics",
                    "summary": "Prometheus metrics",
                    "description": "Prometheus text exposition (docs/operations.md, \"Metrics\").",
                    "responses": {
                      "200": {
                        "description": "The metrics.",
                        "content": {
                          "text/plain": {
                            "schema": {
                              "type": "string"
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/metrics": {
                  "get": {
                    "operationId": "adminMetrics",
                    "summary": "Prometheus metrics (the same as /metrics)",
                    "description": "Prometheus text exposition (docs/operations.md, \"Metrics\").",
                    "responses": {
                      "200": {
                        "description": "The metrics.",
                        "content": {
                          "text/plain": {
                            "schema": {
                              "type": "string"
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/openapi.json": {
                  "get": {
                    "operationId": "openAPI",
                    "summary": "This document",
                    "description": "The OpenAPI document of both listeners (the same as `iap-gateway schema openapi`).",
                    "responses": {
                      "200": {
                        "description": "OpenAPI 3.1.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "type": "object",
                              "required": [
                                "openapi",
                                "paths"
                              ]
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/status": {
                  "get": {
                    "operationId": "status",
                    "summary": "Counts, authorities, receipt modes, Apple's versions, downstreams",
                    "responses": {
                      "200": {
                        "description": "The status.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/Status"
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/dead-letters": {
                  "get": {
                    "operationId": "deadLetters",
                    "summary": "Dead deliveries, oldest first",
                    "parameters": [
                      {
                        "name": "limit",
                        "in": "query",
                        "required": false,
                        "description": "At most this many.",
                        "schema": {
                          "type": "integer",
                          "minimum": 1,
                          "maximum": 10000,
                          "default": 100
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The dead letters.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "type": "array",
                              "items": {
                                "$ref": "#/components/schemas/DeadLetter"
                              }
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/replay": {
                  "post": {
                    "operationId": "replay",
                    "summary": "Queue deliveries again",
                    "description": "One selection: `id` (one event's deliveries; with `downstream`, its delivery to that downstream alone, same `webhook-id`, logged as a replay), else `dead_letters`, else `since` (with an optional `until`). Attempts restart (docs/operations.md, \"Dead letters\").",
                    "parameters": [
                      {
                        "name": "id",
                        "in": "query",
                        "required": false,
                        "description": "An event id.",
                        "schema": {
                          "type": "string",
                          "minLength": 1
                        }
                      },
                      {
                        "name": "downstream",
                        "in": "query",
                        "required": false,
                        "description": "With `id`: the one downstream to send it to again (a configured name).",
                        "schema": {
                          "type": "string",
                          "minLength": 1
                        }
                      },
                      {
                        "name": "dead_letters",
                        "in": "query",
                        "required": false,
                        "description": "Present (any value): every dead letter.",
                        "schema": {
                          "type": "string"
                        }
                      },
                      {
                        "name": "since",
                        "in": "query",
                        "required": false,
                        "description": "Deliveries queued at or after this time.",
                        "schema": {
                          "type": "string",
                          "minLength": 1,
                          "description": "ISO-8601 (`2025-06-01`, `2025-06-01T00:00:00Z`), an age (`7d`, `12h`, `30m`), or epoch milliseconds (12 digits or more)."
                        }
                      },
                      {
                        "name": "until",
                        "in": "query",
                        "required": false,
                        "description": "With `since`: and before this time.",
                        "schema": {
                          "type": "string",
                          "minLength": 1,
                          "description": "ISO-8601 (`2025-06-01`, `2025-06-01T00:00:00Z`), an age (`7d`, `12h`, `30m`), or epoch milliseconds (12 digits or more)."
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "How many were queued again.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/Requeued"
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/deliveries": {
                  "get": {
                    "operationId": "deliveries",
                    "summary": "The delivery log",
                    "description": "With `event`: that event's deliveries, each with its attempts (404 for an event not stored). Otherwise `downstream` and `status` are required: a page of that downstream's deliveries in that state created at `since` or later, continued with `cursor` (docs/operations.md, \"The delivery log\").",
                    "parameters": [
                      {
                        "name": "event",
                        "in": "query",
                        "required": false,
                        "description": "An event id.",
                        "schema": {
                          "type": "string",
                          "minLength": 1
                        }
                      },
                      {
                        "name": "downstream",
                        "in": "query",
                        "required": false,
                        "description": "A downstream's name (one the configuration no longer has still lists its deliveries).",
                        "schema": {
                          "type": "string"
                        }
                      },
                      {
                        "name": "status",
                        "in": "query",
                        "required": false,
                        "description": "The deliveries' state.",
                        "schema": {
                          "enum": [
                            "pending",
                            "delivered",
                            "dead"
                          ]
                        }
                      },
                      {
                        "name": "since",
                        "in": "query",
                        "required": false,
                        "description": "Created at or after this time.",
                        "schema": {
                          "type": "string",
                          "minLength": 1,
                          "description": "ISO-8601 (`2025-06-01`, `2025-06-01T00:00:00Z`), an age (`7d`, `12h`, `30m`), or epoch milliseconds (12 digits or more)."
                        }
                      },
                      {
                        "name": "cursor",
                        "in": "query",
                        "required": false,
                        "description": "A page's `next_cursor`.",
                        "schema": {
                          "type": "string",
                          "pattern": "^-?[0-9]+\\.-?[0-9]+$"
                        }
                      },
                      {
                        "name": "limit",
                        "in": "query",
                        "required": false,
                        "description": "Deliveries in the page.",
                        "schema": {
                          "type": "integer",
                          "minimum": 1,
                          "maximum": 1000,
                          "default": 100
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The event's log, or a page.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "oneOf": [
                                {
                                  "$ref": "#/components/schemas/DeliveryLog"
                                },
                                {
                                  "$ref": "#/components/schemas/DeliveryPage"
                                }
                              ]
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "404": {
                        "description": "No such event is stored. Codes: `not_found`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        }
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/refund-requests": {
                  "get": {
                    "operationId": "refundRequests",
                    "summary": "Apple's refund requests, newest first",
                    "parameters": [
                      {
                        "name": "state",
                        "in": "query",
                        "required": false,
                        "description": "Only the requests in this state.",
                        "schema": {
                          "$ref": "#/components/schemas/RefundRequestState"
                        }
                      },
                      {
                        "name": "limit",
                        "in": "query",
                        "required": false,
                        "description": "At most this many.",
                        "schema": {
                          "type": "integer",
                          "minimum": 1,
                          "maximum": 1000,
                          "default": 100
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The requests.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "type": "array",
                              "items": {
                                "$ref": "#/components/schemas/RefundRequest"
                              }
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/quarantine": {
                  "get": {
                    "operationId": "quarantine",
                    "summary": "Quarantined bodies (without the bodies)",
                    "parameters": [
                      {
                        "name": "lane",
                        "in": "query",
                        "required": false,
                        "description": "Only this lane.",
                        "schema": {
                          "enum": [
                            "untrusted",
                            "genuine"
                          ]
                        }
                      },
                      {
                        "name": "limit",
                        "in": "query",
                        "required": false,
                        "description": "At most this many.",
                        "schema": {
                          "type": "integer",
                          "minimum": 1,
                          "maximum": 10000,
                          "default": 100
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The rows, with their refusal.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "type": "array",
                              "items": {
                                "$ref": "#/components/schemas/QuarantinedRow"
                              }
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/quarantine/replay": {
                  "post": {
                    "operationId": "quarantineReplay",
                    "summary": "Run quarantined bodies again",
                    "description": "Each row judged as of its arrival: a row accepted now leaves the quarantine (docs/operations.md, \"Replaying the quarantine\").",
                    "parameters": [
                      {
                        "name": "lane",
                        "in": "query",
                        "required": false,
                        "description": "Only this lane.",
                        "schema": {
                          "enum": [
                            "untrusted",
                            "genuine"
                          ]
                        }
                      },
                      {
                        "name": "id",
                        "in": "query",
                        "required": false,
                        "description": "Only this row (`id` of `GET /admin/quarantine`).",
                        "schema": {
                          "type": "integer",
                          "minimum": -9223372036854775808,
                          "maximum": 9223372036854775807
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "Each row's outcome.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "type": "array",
                              "items": {
                                "$ref": "#/components/schemas/QuarantineReplayResult"
                              }
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/subscriptions/{original_transaction_id}": {
                  "get": {
                    "operationId": "subscription",
                    "summary": "One subscription's states and history",
                    "parameters": [
                      {
                        "name": "original_transaction_id",
                        "in": "path",
                        "required": true,
                        "schema": {
                          "type": "string",
                          "minLength": 1,
                          "pattern": "^[^/]+$"
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The subscription.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/Subscription"
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/report": {
                  "get": {
                    "operationId": "report",
                    "summary": "The comparison report",
                    "parameters": [
                      {
                        "name": "bundle",
                        "in": "query",
                        "required": false,
                        "description": "Only this app (a bundle id no event has: no bundle).",
                        "schema": {
                          "type": "string"
                        }
                      },
                      {
                        "name": "since",
                        "in": "query",
                        "required": false,
                        "description": "The window's start (default: the comparison window before now).",
                        "schema": {
                          "type": "string",
                          "minLength": 1,
                          "description": "ISO-8601 (`2025-06-01`, `2025-06-01T00:00:00Z`), an age (`7d`, `12h`, `30m`), or epoch milliseconds (12 digits or more)."
                        }
                      },
                      {
                        "name": "format",
                        "in": "query",
                        "required": false,
                        "description": "The report's form: `json`, `html` or `table`; another value gets JSON, the API's default.",
                        "schema": {
                          "type": "string",
                          "examples": [
                            "json",
                            "html",
                            "table"
                          ],
                          "default": "json"
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The report: JSON, one self-contained HTML page, or the table.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/Report"
                            }
                          },
                          "text/html": {
                            "schema": {
                              "type": "string"
                            }
                          },
                          "text/plain": {
                            "schema": {
                              "type": "string"
                            }
                          }
                        }
                      },
                      "400": {
                        "$ref": "#/components/responses/BadRequest"
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/cutover": {
                  "post": {
                    "operationId": "cutover",
                    "summary": "Move the authority, or how verifyReceipt is answered",
                    "description": "`to` moves the authority (which generation downstreams act on); `receipts` instead moves how `POST /verifyReceipt` answers the bundle. Stored, logged, effective at once (docs/operations.md, \"Migrating a bundle\").",
                    "parameters": [
                      {
                        "name": "bundle",
                        "in": "query",
                        "required": true,
                        "description": "The app's bundle id, as configured.",
                        "schema": {
                          "type": "string",
                          "minLength": 1
                        }
                      },
                      {
                        "name": "environment",
                        "in": "query",
                        "required": true,
                        "description": "The App Store environment.",
                        "schema": {
                          "enum": [
                            "production",
                            "sandbox"
                          ]
                        }
                      },
                      {
                        "name": "to",
                        "in": "query",
                        "required": false,
                        "description": "The authority to move to (or give `receipts`).",
                        "schema": {
                          "enum": [
                            "v1",
                            "v2"
                          ]
                        }
                      },
                      {
                        "name": "receipts",
                        "in": "query",
                        "required": false,
                        "description": "How verifyReceipt is answered (instead of `to`).",
                        "schema": {
                          "enum": [
                            "api",
                            "shadow",
                            "apple"
                          ]
                        }
                      },
                      {
                        "name": "reason",
                        "in": "query",
                        "required": false,
                        "description": "Kept in the record.",
                        "schema": {
                          "type": "string"
                        }
                      },
                      {
                        "name": "force",
                        "in": "query",
                        "required": false,
                        "description": "`true`: move to V2 (or `api`) without a ready verdict. Any other value, or none: false.",
                        "schema": {
                          "type": "string",
                          "examples": [
                            "true"
                          ]
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The record of the change.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/CutoverRecord"
                            }
                          }
                        }
                      },
                      "400": {
                        "description": "A parameter is missing or wrong, or the bundle, environment or target is not one the configuration has. Codes: `bad_request`, `unknown_bundle`, `unknown_environment`, `bad_target`, `no_v2_path`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "409": {
                        "description": "The verdict is not ready (give `force=true` to move anyway), or nothing would change. Codes: `not_ready`, `unchanged`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "error.schema.json"
                            }
                          }
                        }
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                },
                "/admin/migrate": {
                  "post": {
                    "operationId": "migrate",
                    "summary": "Switch the version Apple sends, and the authority with it",
                    "description": "Preflight, App Store Connect set to the version, a test notification journaled as proof, then the authority; answered when the switch is over. Holds one of the admin listener's threads for up to the probe's timeout (docs/operations.md, \"Migrating a bundle\").",
                    "parameters": [
                      {
                        "name": "bundle",
                        "in": "query",
                        "required": true,
                        "description": "The app's bundle id, as configured.",
                        "schema": {
                          "type": "string",
                          "minLength": 1
                        }
                      },
                      {
                        "name": "environment",
                        "in": "query",
                        "required": true,
                        "description": "The App Store environment.",
                        "schema": {
                          "enum": [
                            "production",
                            "sandbox"
                          ]
                        }
                      },
                      {
                        "name": "to",
                        "in": "query",
                        "required": true,
                        "description": "The version to switch to.",
                        "schema": {
                          "enum": [
                            "v1",
                            "v2"
                          ]
                        }
                      },
                      {
                        "name": "dry_run",
                        "in": "query",
                        "required": false,
                        "description": "`true`: plan only. Any other value, or none: false.",
                        "schema": {
                          "type": "string",
                          "examples": [
                            "true"
                          ]
                        }
                      },
                      {
                        "name": "force",
                        "in": "query",
                        "required": false,
                        "description": "`true`: to V2 without a ready verdict. Any other value, or none: false.",
                        "schema": {
                          "type": "string",
                          "examples": [
                            "true"
                          ]
                        }
                      },
                      {
                        "name": "reason",
                        "in": "query",
                        "required": false,
                        "description": "Kept in the record.",
                        "schema": {
                          "type": "string"
                        }
                      },
                      {
                        "name": "probe_timeout",
                        "in": "query",
                        "required": false,
                        "description": "How long the probe waits: a duration from 1 s to 1 h (default `2m`); outside that, `bad_request`.",
                        "schema": {
                          "type": "string",
                          "pattern": "^[0-9]+(ms|s|m|h)$"
                        }
                      }
                    ],
                    "responses": {
                      "200": {
                        "description": "The switch is over (or planned).",
                        "content": {
                          "application/json": {
                            "schema": {
                              "$ref": "#/components/schemas/MigrationOutcome"
                            }
                          }
                        }
                      },
                      "400": {
                        "description": "A parameter is missing or wrong, or the configuration cannot switch this app. A refusal of the switch carries the steps so far; a parameter refused before it has none. Codes: `bad_request`, `unknown_bundle`, `unknown_environment`, `no_notification_url`, `no_credentials`, `no_path`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "anyOf": [
                                {
                                  "$ref": "#/components/schemas/MigrationRefusal"
                                },
                                {
                                  "$ref": "error.schema.json"
                                }
                              ]
                            }
                          }
                        }
                      },
                      "401": {
                        "$ref": "#/components/responses/Unauthorized"
                      },
                      "409": {
                        "description": "The state refuses it: Apple's URL is not this gateway's, the verdict is not ready, or another switch runs. A refusal of the switch carries the steps so far; a parameter refused before it has none. Codes: `url_not_ours`, `not_ready`, `in_progress`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "anyOf": [
                                {
                                  "$ref": "#/components/schemas/MigrationRefusal"
                                },
                                {
                                  "$ref": "error.schema.json"
                                }
                              ]
                            }
                          }
                        }
                      },
                      "413": {
                        "$ref": "#/components/responses/TooLarge"
                      },
                      "502": {
                        "description": "App Store Connect refused or did not answer, or Apple did not prove it sends the version: set back, authority unchanged. A refusal of the switch carries the steps so far; a parameter refused before it has none. Codes: `apple_refused`, `apple_unanswered`, `probe_failed`.",
                        "content": {
                          "application/json": {
                            "schema": {
                              "anyOf": [
                                {
                                  "$ref": "#/components/schemas/MigrationRefusal"
                                },
                                {
                                  "$ref": "error.schema.json"
                                }
                              ]
                            }
                          }
                        }
                      },
                      "503": {
                        "$ref": "#/components/responses/AdminUnavailable"
                      }
                    },
                    "tags": [
                      "admin"
                    ],
                    "security": [
                      {
                        "adminToken": []
                      }
                    ],
                    "servers": [
                      {
                        "url": "http://127.0.0.1:8081",
                        "description": "The admin listener (`admin.listen`)."
                      }
                    ]
                  }
                }
              },
              "components": {
                "schemas": {
                  "NotificationAccepted": {
                    "description": "The notification is journaled (durably stored) and will be delivered.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "ok",
                      "id",
                      "duplicate"
                    ],
                    "properties": {
                      "ok": {
                        "const": true
                      },
                      "id": {
                        "type": "string",
                        "description": "The notification's key: V2 `notificationUUID`, V1 `v1:` + hex SHA-256 of the body without `password`."
                      },
                      "duplicate": {
                        "type": "boolean",
                        "description": "True when Apple resent a notification already accepted: stored once, answered 200 again."
                      }
                    }
                  },
                  "V2NotificationBody": {
                    "description": "App Store Server Notifications V2: `responseBodyV2`.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "signedPayload"
                    ],
                    "properties": {
                      "signedPayload": {
                        "type": "string",
                        "description": "Apple's JWS (ES256, x5c chain to Apple Root CA - G3)."
                      }
                    }
                  },
                  "V1NotificationBody": {
                    "description": "App Store Server Notifications V1: `responseBodyV1`, Apple's own keys.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "notification_type"
                    ],
                    "properties": {
                      "notification_type": {
                        "type": "string"
                      },
                      "password": {
                        "type": "string",
                        "description": "The app's shared secret: checked in constant time, never stored."
                      },
                      "environment": {
                        "type": "string"
                      },
                      "bid": {
                        "type": "string"
                      },
                      "unified_receipt": {
                        "type": "object"
                      }
                    }
                  },
                  "VerifyReceiptRequest": {
                    "description": "Apple's verifyReceipt request body.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "receipt-data"
                    ],
                    "properties": {
                      "receipt-data": {
                        "type": "string",
                        "description": "The base64 app receipt (or iOS 6 transaction receipt)."
                      },
                      "password": {
                        "type": "string",
                        "description": "The app's shared secret (auto-renewable subscriptions)."
                      },
                      "exclude-old-transactions": {
                        "type": "boolean"
                      }
                    }
                  },
                  "VerifyReceiptAnswer": {
                    "description": "Apple's verifyReceipt answer, always with HTTP 200 as Apple answers: Apple's own keys and formats (docs/operations.md, \"Moving the receipt path\").",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "status"
                    ],
                    "properties": {
                      "status": {
                        "type": "integer",
                        "description": "0 for a valid receipt; Apple's 21000–21010 otherwise (21002: malformed receipt data, 21005: unavailable, retry)."
                      },
                      "environment": {
                        "type": "string",
                        "enum": [
                          "Production",
                          "Sandbox"
                        ]
                      },
                      "is-retryable": {
                        "type": "boolean"
                      },
                      "receipt": {
                        "type": "object"
                      },
                      "latest_receipt": {
                        "type": "string"
                      },
                      "latest_receipt_info": {
                        "type": "array",
                        "items": {
                          "type": "object"
                        }
                      },
                      "pending_renewal_info": {
                        "type": "array",
                        "items": {
                          "type": "object"
                        }
                      }
                    }
                  },
                  "Requeued": {
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "requeued"
                    ],
                    "properties": {
                      "requeued": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Outbox rows queued again."
                      }
                    }
                  },
                  "DeadLetter": {
                    "description": "A delivery that gave up (`event_id` null for a pass-through body's).",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "id",
                      "downstream",
                      "event_id",
                      "journal_id",
                      "attempts",
                      "last_status",
                      "last_error",
                      "created_at"
                    ],
                    "properties": {
                      "id": {
                        "type": "integer"
                      },
                      "downstream": {
                        "type": "string"
                      },
                      "event_id": {
                        "type": [
                          "string",
                          "null"
                        ]
                      },
                      "journal_id": {
                        "type": [
                          "integer",
                          "null"
                        ]
                      },
                      "attempts": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "last_status": {
                        "type": [
                          "integer",
                          "null"
                        ]
                      },
                      "last_error": {
                        "type": [
                          "string",
                          "null"
                        ]
                      },
                      "created_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      }
                    }
                  },
                  "DeliveryAttempt": {
                    "description": "One logged attempt.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "attempt",
                      "started_at",
                      "latency_ms",
                      "status",
                      "error",
                      "response_head",
                      "replay"
                    ],
                    "properties": {
                      "attempt": {
                        "type": "integer",
                        "minimum": 1
                      },
                      "started_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "latency_ms": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "status": {
                        "type": [
                          "integer",
                          "null"
                        ],
                        "description": "The HTTP status answered, null when none was."
                      },
                      "error": {
                        "type": [
                          "string",
                          "null"
                        ]
                      },
                      "response_head": {
                        "type": "string",
                        "description": "The answer's first 1 KiB, as text, secrets redacted."
                      },
                      "replay": {
                        "type": "boolean",
                        "description": "Whether a replay made this attempt."
                      }
                    }
                  },
                  "DeliveryLog": {
                    "description": "One event's deliveries (and its notification's pass-through ones), each with its attempts, newest first.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "event_id",
                      "deliveries"
                    ],
                    "properties": {
                      "event_id": {
                        "type": "string"
                      },
                      "deliveries": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "id",
                            "downstream",
                            "event_id",
                            "journal_id",
                            "state",
                            "attempts",
                            "created_at",
                            "next_attempt_at",
                            "delivered_at",
                            "last_status",
                            "last_error",
                            "attempt_log"
                          ],
                          "properties": {
                            "id": {
                              "type": "integer"
                            },
                            "downstream": {
                              "type": "string"
                            },
                            "event_id": {
                              "type": [
                                "string",
                                "null"
                              ]
                            },
                            "journal_id": {
                              "type": [
                                "integer",
                                "null"
                              ]
                            },
                            "state": {
                              "enum": [
                                "pending",
                                "delivered",
                                "dead"
                              ]
                            },
                            "attempts": {
                              "type": "integer",
                              "minimum": 0
                            },
                            "created_at": {
                              "type": "integer",
                              "description": "Milliseconds since the epoch."
                            },
                            "next_attempt_at": {
                              "type": [
                                "integer",
                                "null"
                              ],
                              "description": "Milliseconds since the epoch, or null."
                            },
                            "delivered_at": {
                              "type": [
                                "integer",
                                "null"
                              ],
                              "description": "Milliseconds since the epoch, or null."
                            },
                            "last_status": {
                              "type": [
                                "integer",
                                "null"
                              ]
                            },
                            "last_error": {
                              "type": [
                                "string",
                                "null"
                              ]
                            },
                            "attempt_log": {
                              "type": "array",
                              "items": {
                                "$ref": "#/components/schemas/DeliveryAttempt"
                              },
                              "description": "Its newest 20 attempts, newest first."
                            }
                          }
                        }
                      }
                    }
                  },
                  "DeliveryPage": {
                    "description": "A page of one downstream's deliveries in one state, oldest first, each with its newest attempt.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "deliveries",
                      "next_cursor"
                    ],
                    "properties": {
                      "deliveries": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "id",
                            "downstream",
                            "event_id",
                            "journal_id",
                            "state",
                            "attempts",
                            "created_at",
                            "next_attempt_at",
                            "delivered_at",
                            "last_status",
                            "last_error",
                            "last_attempt"
                          ],
                          "properties": {
                            "id": {
                              "type": "integer"
                            },
                            "downstream": {
                              "type": "string"
                            },
                            "event_id": {
                              "type": [
                                "string",
                                "null"
                              ]
                            },
                            "journal_id": {
                              "type": [
                                "integer",
                                "null"
                              ]
                            },
                            "state": {
                              "enum": [
                                "pending",
                                "delivered",
                                "dead"
                              ]
                            },
                            "attempts": {
                              "type": "integer",
                              "minimum": 0
                            },
                            "created_at": {
                              "type": "integer",
                              "description": "Milliseconds since the epoch."
                            },
                            "next_attempt_at": {
                              "type": [
                                "integer",
                                "null"
                              ],
                              "description": "Milliseconds since the epoch, or null."
                            },
                            "delivered_at": {
                              "type": [
                                "integer",
                                "null"
                              ],
                              "description": "Milliseconds since the epoch, or null."
                            },
                            "last_status": {
                              "type": [
                                "integer",
                                "null"
                              ]
                            },
                            "last_error": {
                              "type": [
                                "string",
                                "null"
                              ]
                            },
                            "last_attempt": {
                              "oneOf": [
                                {
                                  "$ref": "#/components/schemas/DeliveryAttempt"
                                },
                                {
                                  "type": "null"
                                }
                              ]
                            }
                          }
                        }
                      },
                      "next_cursor": {
                        "type": [
                          "string",
                          "null"
                        ],
                        "description": "Give it as `cursor` for the next page; null on the last page."
                      }
                    }
                  },
                  "RefundRequestState": {
                    "enum": [
                      "pending",
                      "sent",
                      "declined",
                      "no_consent",
                      "unanswered",
                      "rejected",
                      "gateway_refused",
                      "assigned",
                      "dead",
                      "expired"
                    ]
                  },
                  "RefundRequest": {
                    "description": "One refund request (docs/operations.md, \"Refund requests\"); keys without a value are absent.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "id",
                      "event_id",
                      "bundle_id",
                      "environment",
                      "transaction_id",
                      "requested_at",
                      "deadline_at",
                      "state",
                      "asks",
                      "sends",
                      "next_attempt_at"
                    ],
                    "properties": {
                      "id": {
                        "type": "integer"
                      },
                      "event_id": {
                        "type": "string"
                      },
                      "bundle_id": {
                        "type": "string"
                      },
                      "environment": {
                        "enum": [
                          "production",
                          "sandbox"
                        ]
                      },
                      "transaction_id": {
                        "type": "string"
                      },
                      "reason": {
                        "type": "string"
                      },
                      "requested_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "deadline_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "state": {
                        "$ref": "#/components/schemas/RefundRequestState"
                      },
                      "asks": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "sends": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "next_attempt_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "answer_source": {
                        "enum": [
                          "team",
                          "default"
                        ]
                      },
                      "refund_preference": {
                        "enum": [
                          "DECLINE",
                          "GRANT_FULL",
                          "GRANT_PRORATED"
                        ]
                      },
                      "answer": {
                        "type": "object",
                        "description": "The answer sent (or to send): Send Consumption Information's JSON object (the members of refund-answer.schema.json)."
                      },
                      "sent_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "apple_status": {
                        "type": "integer"
                      },
                      "apple_error_code": {
                        "type": "integer"
                      },
                      "last_error": {
                        "type": "string"
                      },
                      "decision": {
                        "enum": [
                          "refund",
                          "refund_declined"
                        ]
                      },
                      "decided_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      }
                    }
                  },
                  "QuarantinedRow": {
                    "description": "A refused body, without the body.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "id",
                      "lane",
                      "received_at",
                      "version",
                      "code",
                      "message",
                      "bundle_id",
                      "environment",
                      "size",
                      "replay_attempts",
                      "last_replay_at",
                      "last_replay_code"
                    ],
                    "properties": {
                      "id": {
                        "type": "integer"
                      },
                      "lane": {
                        "enum": [
                          "untrusted",
                          "genuine"
                        ]
                      },
                      "received_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "version": {
                        "enum": [
                          "v1",
                          "v2",
                          null
                        ]
                      },
                      "code": {
                        "type": "string",
                        "description": "The refusal's code (error.schema.json), `code:cause` for a nested token's."
                      },
                      "message": {
                        "type": "string"
                      },
                      "bundle_id": {
                        "type": [
                          "string",
                          "null"
                        ]
                      },
                      "environment": {
                        "type": [
                          "string",
                          "null"
                        ]
                      },
                      "size": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "replay_attempts": {
                        "type": "integer",
                        "minimum": 0
                      },
                      "last_replay_at": {
                        "type": [
                          "integer",
                          "null"
                        ],
                        "description": "Milliseconds since the epoch, or null."
                      },
                      "last_replay_code": {
                        "type": [
                          "string",
                          "null"
                        ]
                      }
                    }
                  },
                  "QuarantineReplayResult": {
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "id",
                      "status",
                      "code"
                    ],
                    "properties": {
                      "id": {
                        "type": "integer"
                      },
                      "status": {
                        "type": [
                          "integer",
                          "null"
                        ],
                        "description": "The status the body is answered now."
                      },
                      "code": {
                        "type": [
                          "string",
                          "null"
                        ],
                        "description": "Why it is still refused (`replay_interrupted`, `no_matching_secret`, a refusal code), null once accepted."
                      }
                    }
                  },
                  "Damage": {
                    "enum": [
                      "value_too_large",
                      "value_corrupt",
                      "value_unreadable"
                    ],
                    "description": "Why a stored value is not shown."
                  },
                  "Subscription": {
                    "description": "One subscription: its state on each path and its event history (docs/commands.md, \"subscription\"). Unknown ids answer empty `states` and `events`.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "original_transaction_id",
                      "states",
                      "events",
                      "complete",
                      "damaged"
                    ],
                    "properties": {
                      "original_transaction_id": {
                        "type": "string"
                      },
                      "states": {
                        "type": "array",
                        "items": {
                          "description": "One path's state; a damaged stored value is shown with its `damaged` code and `event_id` in place of `state`.",
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "path",
                            "environment",
                            "authoritative"
                          ],
                          "properties": {
                            "path": {
                              "enum": [
                                "v1",
                                "v2"
                              ]
                            },
                            "environment": {
                              "type": "string"
                            },
                            "authoritative": {
                              "type": "boolean"
                            },
                            "state": {
                              "$ref": "state.schema.json"
                            },
                            "entitlement_now": {
                              "description": "The state's entitlement projected to now.",
                              "$ref": "event.schema.json#/$defs/entitlement"
                            },
                            "event_id": {
                              "type": "string"
                            },
                            "damaged": {
                              "$ref": "#/components/schemas/Damage"
                            }
                          }
                        }
                      },
                      "events": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "path",
                            "authoritative"
                          ],
                          "properties": {
                            "path": {
                              "enum": [
                                "v1",
                                "v2"
                              ]
                            },
                            "authoritative": {
                              "type": "boolean"
                            },
                            "event": {
                              "$ref": "event.schema.json"
                            },
                            "event_id": {
                              "type": "string"
                            },
                            "damaged": {
                              "$ref": "#/components/schemas/Damage"
                            }
                          }
                        },
                        "description": "Oldest first."
                      },
                      "complete": {
                        "type": "boolean",
                        "description": "Whether the history is whole (at most 100,000 events and 8 MiB of stored JSON)."
                      },
                      "stopped_by": {
                        "enum": [
                          "max_events",
                          "max_bytes"
                        ]
                      },
                      "damaged": {
                        "type": "integer",
                        "minimum": 0
                      }
                    }
                  },
                  "Status": {
                    "description": "Counts, the authority per bundle and environment, what App Store Connect holds, and the downstreams (docs/operations.md).",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "version",
                      "journal",
                      "events",
                      "counts",
                      "outbox",
                      "receipt_jobs",
                      "quarantine",
                      "authority",
                      "receipts",
                      "apple",
                      "downstreams"
                    ],
                    "properties": {
                      "version": {
                        "type": "string"
                      },
                      "journal": {
                        "type": "integer"
                      },
                      "events": {
                        "type": "integer"
                      },
                      "counts": {
                        "enum": [
                          "exact",
                          "upper_bound"
                        ]
                      },
                      "outbox": {
                        "type": "object",
                        "additionalProperties": {
                          "type": "integer",
                          "minimum": 0
                        }
                      },
                      "receipt_jobs": {
                        "type": "object",
                        "additionalProperties": {
                          "type": "integer",
                          "minimum": 0
                        }
                      },
                      "quarantine": {
                        "type": "object",
                        "additionalProperties": {
                          "type": "integer",
                          "minimum": 0
                        }
                      },
                      "authority": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "bundle_id",
                            "environment",
                            "authority",
                            "origin"
                          ],
                          "properties": {
                            "bundle_id": {
                              "type": "string"
                            },
                            "environment": {
                              "type": "string"
                            },
                            "authority": {
                              "enum": [
                                "v1",
                                "v2"
                              ]
                            },
                            "origin": {
                              "type": "string"
                            }
                          }
                        }
                      },
                      "receipts": {
                        "description": "How /verifyReceipt is answered per bundle and environment: the mode in force, and whether the config or a cutover set it.",
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "bundle_id",
                            "environment",
                            "mode",
                            "origin"
                          ],
                          "properties": {
                            "bundle_id": {
                              "type": "string"
                            },
                            "environment": {
                              "type": "string"
                            },
                            "mode": {
                              "enum": [
                                "apple",
                                "shadow",
                                "api"
                              ]
                            },
                            "origin": {
                              "type": "string"
                            }
                          }
                        }
                      },
                      "apple": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "bundle_id",
                            "environment",
                            "version",
                            "url",
                            "read_at",
                            "switch"
                          ],
                          "properties": {
                            "bundle_id": {
                              "type": "string"
                            },
                            "environment": {
                              "type": "string"
                            },
                            "version": {
                              "type": [
                                "string",
                                "null"
                              ]
                            },
                            "url": {
                              "type": [
                                "string",
                                "null"
                              ]
                            },
                            "read_at": {
                              "type": [
                                "integer",
                                "null"
                              ],
                              "description": "Milliseconds since the epoch, or null."
                            },
                            "switch": {
                              "oneOf": [
                                {
                                  "type": "null"
                                },
                                {
                                  "type": "object",
                                  "additionalProperties": true,
                                  "required": [],
                                  "properties": {
                                    "migration_id": {
                                      "type": [
                                        "string",
                                        "null"
                                      ]
                                    },
                                    "target": {
                                      "type": [
                                        "string",
                                        "null"
                                      ]
                                    },
                                    "previous": {
                                      "type": [
                                        "string",
                                        "null"
                                      ]
                                    },
                                    "step": {
                                      "type": [
                                        "string",
                                        "null"
                                      ]
                                    },
                                    "updated_at": {
                                      "type": [
                                        "integer",
                                        "null"
                                      ],
                                      "description": "Milliseconds since the epoch, or null."
                                    },
                                    "error": {
                                      "type": [
                                        "string",
                                        "null"
                                      ]
                                    }
                                  }
                                }
                              ]
                            }
                          }
                        }
                      },
                      "downstreams": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "name",
                            "kind",
                            "environments",
                            "shadow",
                            "concurrency",
                            "max_per_second",
                            "filter"
                          ],
                          "properties": {
                            "name": {
                              "type": "string"
                            },
                            "kind": {
                              "type": "string",
                              "examples": [
                                "webhook",
                                "v1-passthrough",
                                "v2-passthrough",
                                "database"
                              ]
                            },
                            "environments": {
                              "type": "array",
                              "items": {
                                "type": "string"
                              }
                            },
                            "shadow": {
                              "type": "boolean"
                            },
                            "concurrency": {
                              "type": "integer"
                            },
                            "max_per_second": {
                              "type": [
                                "number",
                                "null"
                              ]
                            },
                            "filter": {
                              "oneOf": [
                                {
                                  "type": "null"
                                },
                                {
                                  "type": "object",
                                  "additionalProperties": true,
                                  "required": [
                                    "kinds",
                                    "types",
                                    "bundles",
                                    "authoritative"
                                  ],
                                  "properties": {
                                    "kinds": {
                                      "type": "array",
                                      "items": {
                                        "type": "string"
                                      }
                                    },
                                    "types": {
                                      "type": "array",
                                      "items": {
                                        "type": "string"
                                      }
                                    },
                                    "bundles": {
                                      "type": "array",
                                      "items": {
                                        "type": "string"
                                      }
                                    },
                                    "authoritative": {
                                      "type": [
                                        "boolean",
                                        "null"
                                      ]
                                    }
                                  }
                                }
                              ]
                            }
                          }
                        }
                      }
                    }
                  },
                  "Report": {
                    "description": "The comparison of the two generations per bundle and environment, and the readiness verdict (docs/commands.md, \"report\").",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "generated_at",
                      "since",
                      "until",
                      "rule",
                      "bundles"
                    ],
                    "properties": {
                      "generated_at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "since": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "until": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "rule": {
                        "type": "object",
                        "additionalProperties": true,
                        "required": [
                          "minimum_agreement_rate",
                          "minimum_pairs",
                          "window_ms",
                          "allow_one_sided"
                        ],
                        "properties": {
                          "minimum_agreement_rate": {
                            "type": "number"
                          },
                          "minimum_pairs": {
                            "type": "integer"
                          },
                          "window_ms": {
                            "type": "integer"
                          },
                          "allow_one_sided": {
                            "type": "boolean"
                          }
                        }
                      },
                      "bundles": {
                        "type": "array",
                        "items": {
                          "type": "object",
                          "additionalProperties": true,
                          "required": [
                            "bundle_id",
                            "environment",
                            "authority",
                            "events_by_source",
                            "pairs",
                            "agreements",
                            "agreement_rate",
                            "disagreements_by_field",
                            "one_sided",
                            "daily",
                            "verdict",
                            "rule",
                            "reasons",
                            "cutovers",
                            "recovered",
                            "apple_switches"
                          ],
                          "properties": {
                            "bundle_id": {
                              "type": "string"
                            },
                            "environment": {
                              "type": "string"
                            },
                            "authority": {
                              "type": "string"
                            },
                            "events_by_source": {
                              "type": "object",
                              "additionalProperties": {
                                "type": "integer",
                                "minimum": 0
                              }
                            },
                            "pairs": {
                              "type": "integer"
                            },
                            "agreements": {
                              "type": "integer"
                            },
                            "agreement_rate": {
                              "type": [
                                "number",
                                "null"
                              ]
                            },
                            "disagreements_by_field": {
                              "type": "object",
                              "additionalProperties": {
                                "type": "object",
                                "additionalProperties": true,
                                "required": [
                                  "count",
                                  "examples"
                                ],
                                "properties": {
                                  "count": {
                                    "type": "integer"
                                  },
                                  "examples": {
                                    "type": "array",
                                    "items": {
                                      "type": "string"
                                    }
                                  }
                                }
                              }
                            },
                            "one_sided": {
                              "type": "object",
                              "additionalProperties": true,
                              "required": [
                                "v1_only",
                                "v2_only",
                                "examples"
                              ],
                              "properties": {
                                "v1_only": {
                                  "type": "integer"
                                },
                                "v2_only": {
                                  "type": "integer"
                                },
                                "examples": {
                                  "type": "array",
                                  "items": {
                                    "type": "string"
                                  }
                                }
                              }
                            },
                            "daily": {
                              "type": "array",
                              "items": {
                                "type": "object",
                                "additionalProperties": true,
                                "required": [
                                  "day",
                                  "pairs",
                                  "agreements"
                                ],
                                "properties": {
                                  "day": {
                                    "type": "string"
                                  },
                                  "pairs": {
                                    "type": "integer"
                                  },
                                  "agreements": {
                                    "type": "integer"
                                  }
                                }
                              }
                            },
                            "verdict": {
                              "enum": [
                                "ready",
                                "not_ready"
                              ]
                            },
                            "rule": {
                              "type": "string"
                            },
                            "reasons": {
                              "type": "array",
                              "items": {
                                "type": "string"
                              }
                            },
                            "cutovers": {
                              "type": "array",
                              "items": {
                                "$ref": "#/components/schemas/CutoverRecord"
                              }
                            },
                            "recovered": {
                              "type": "array",
                              "items": {
                                "type": "object",
                                "additionalProperties": true,
                                "required": [
                                  "day",
                                  "mechanism",
                                  "count"
                                ],
                                "properties": {
                                  "day": {
                                    "type": "string"
                                  },
                                  "mechanism": {
                                    "type": "string"
                                  },
                                  "count": {
                                    "type": "integer"
                                  }
                                }
                              }
                            },
                            "apple_switches": {
                              "type": "array",
                              "items": {
                                "type": "object",
                                "additionalProperties": true,
                                "required": [
                                  "at",
                                  "outcome"
                                ],
                                "properties": {
                                  "at": {
                                    "type": "integer",
                                    "description": "Milliseconds since the epoch."
                                  },
                                  "outcome": {
                                    "enum": [
                                      "done",
                                      "reverted"
                                    ]
                                  },
                                  "detail": {
                                    "type": [
                                      "string",
                                      "null"
                                    ]
                                  }
                                }
                              }
                            },
                            "receipts": {
                              "type": [
                                "object",
                                "null"
                              ],
                              "description": "How verifyReceipt's answers compare (docs/operations.md, \"Moving the receipt path\"); null for a bundle that does not answer receipts."
                            },
                            "refund_requests": {
                              "type": [
                                "object",
                                "null"
                              ],
                              "description": "The refund requests of the window (docs/operations.md, \"Refund requests\"); null for an app that does not answer them."
                            },
                            "groups": {
                              "type": [
                                "object",
                                "null"
                              ],
                              "description": "Group subscriptions whose period runs, their seats, the window's seat events; null without any."
                            }
                          }
                        }
                      }
                    }
                  },
                  "CutoverRecord": {
                    "description": "One change of the authority (or of how verifyReceipt is answered), as logged.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "at",
                      "bundle_id",
                      "environment",
                      "from",
                      "to",
                      "who",
                      "verdict",
                      "forced",
                      "origin"
                    ],
                    "properties": {
                      "at": {
                        "type": "integer",
                        "description": "Milliseconds since the epoch."
                      },
                      "bundle_id": {
                        "type": "string"
                      },
                      "environment": {
                        "type": "string"
                      },
                      "from": {
                        "type": "string"
                      },
                      "to": {
                        "type": "string"
                      },
                      "who": {
                        "type": "string",
                        "description": "The OS user, or `admin-api (VAR)`."
                      },
                      "reason": {
                        "type": "string"
                      },
                      "verdict": {
                        "type": "string",
                        "description": "The verdict when it happened."
                      },
                      "forced": {
                        "type": "boolean"
                      },
                      "origin": {
                        "type": "string",
                        "examples": [
                          "cutover",
                          "migrate",
                          "receipts"
                        ]
                      }
                    }
                  },
                  "MigrationOutcome": {
                    "description": "The switch, answered when it is over.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "outcome",
                      "steps"
                    ],
                    "properties": {
                      "outcome": {
                        "type": "string",
                        "description": "`done`, `planned` (a dry run), or the step a switch stopped at."
                      },
                      "steps": {
                        "type": "array",
                        "items": {
                          "$ref": "migrate.schema.json"
                        }
                      }
                    }
                  },
                  "MigrationRefusal": {
                    "description": "A refused or failed switch: its code and the steps so far.",
                    "type": "object",
                    "additionalProperties": true,
                    "required": [
                      "error",
                      "steps"
                    ],
                    "properties": {
                      "error": {
                        "$ref": "error.schema.json#/properties/error"
                      },
                      "steps": {
                        "type": "array",
                        "items": {
                          "$ref": "migrate.schema.json"
                        }
                      }
                    }
                  }
                },
                "responses": {
                  "Unauthorized": {
                    "description": "No `Authorization: Bearer` header with the admin token (`WWW-Authenticate: Bearer`). Codes: `unauthorized`.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "error.schema.json"
                        }
                      }
                    },
                    "headers": {
                      "WWW-Authenticate": {
                        "schema": {
                          "const": "Bearer"
                        }
                      }
                    }
                  },
                  "AdminUnavailable": {
                    "description": "The server's request-body budget is full (`server_busy`), or this client address's share of it (`address_busy`): retry after `Retry-After`; or the store cannot answer (`store_unavailable`). Codes: `server_busy`, `address_busy`, `store_unavailable`.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "error.schema.json"
                        }
                      }
                    },
                    "headers": {
                      "Retry-After": {
                        "description": "Seconds to wait before retrying.",
                        "schema": {
                          "type": "integer",
                          "minimum": 0
                        }
                      }
                    }
                  },
                  "TooLarge": {
                    "description": "The body is over the listener's limit (1 MiB by default): never read further, never stored. Codes: `body_too_large`.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "error.schema.json"
                        }
                      }
                    }
                  },
                  "BadRequest": {
                    "description": "A parameter is missing or not of its form: the message names it. Codes: `bad_request`.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "error.schema.json"
                        }
                      }
                    }
                  },
                  "MethodNotAllowed": {
                    "description": "The path takes another method (`Allow` names it). Codes: `method_not_allowed`.",
                    "content": {
                      "application/json": {
                        "schema": {
                          "$ref": "error.schema.json"
                        }
                      }
                    },
                    "headers": {
                      "Allow": {
                        "schema": {
                          "type": "string"
                        },
                        "description": "The methods the path takes."
                      }
                    }
                  }
                },
                "securitySchemes": {
                  "adminToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The token in the environment variable `admin.token_env` names (compared in constant time)."
                  }
                }
              }
            }
            """##
        ),
        (
            "receipts-prefetch.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "receipts prefetch: a progress line",
              "description": "A JSON line of `iap-gateway receipts prefetch`, every 10 s and one at the end (docs/commands.md, \"receipts prefetch\"). Exit status 0 when the last line's `state` is `complete` or `limit` and `failed` is 0, else 1. Keys may be added: a script reads the ones it needs.",
              "type": "object",
              "additionalProperties": true,
              "required": ["bundle_id", "environment", "state", "total", "done", "fetched", "skipped", "failed", "failures", "calls", "history_calls", "elapsed_seconds", "budget_per_second", "calls_per_second", "projected_hours"],
              "properties": {
                "bundle_id": { "type": "string" },
                "environment": { "enum": ["production", "sandbox"] },
                "state": {
                  "description": "`running`; at the end `complete` (every customer gone through), `limit` (`--limit` reached), `stopped` (SIGINT or SIGTERM), `failing` (100 customers failed in a row), `store_unavailable`.",
                  "enum": ["running", "complete", "limit", "stopped", "failing", "store_unavailable"]
                },
                "total": { "description": "Customers known at the start, from the resume point on (at most `--limit`).", "type": "integer", "minimum": 0 },
                "done": { "description": "Customers gone through: fetched, skipped or failed.", "type": "integer", "minimum": 0 },
                "fetched": { "type": "integer", "minimum": 0 },
                "skipped": { "description": "Their stored history was fresh (younger than `receipts.history_max_age`).", "type": "integer", "minimum": 0 },
                "failed": { "type": "integer", "minimum": 0 },
                "failures": {
                  "description": "Failed customers by code (`budget_exhausted`, `capped`, Apple's codes, …).",
                  "type": "object",
                  "additionalProperties": { "type": "integer", "minimum": 1 }
                },
                "calls": { "description": "Calls made to the App Store Server API.", "type": "integer", "minimum": 0 },
                "history_calls": { "description": "Of them, to Get Transaction History (the busier endpoint).", "type": "integer", "minimum": 0 },
                "elapsed_seconds": { "type": "number", "minimum": 0 },
                "after": {
                  "description": "The resume point (`--after`): every customer up to this original transaction id is done. Absent before the first.",
                  "type": "string"
                },
                "budget_per_second": { "description": "Get Transaction History calls a second the run may make: the configured budget × `--share`.", "type": "number", "minimum": 0 },
                "calls_per_second": { "description": "Get Transaction History calls a second made so far.", "type": "number", "minimum": 0 },
                "projected_hours": { "description": "Hours the customers left take at the budget, at the calls a fetched customer has cost so far.", "type": "number", "minimum": 0 }
              }
            }
            """##
        ),
        (
            "refund-answer.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Refund request answer",
              "description": "What the team's service answers a consumption.request (refund-request.schema.json) with, status 200 (`204`: do not answer this one): Apple's Send Consumption Information body in Apple's own member names (docs/operations.md, \"Refund requests\"; the same object as `apps[].consumption.default`). Read strictly: a member not named here, or a value of the wrong type or outside Apple's lists, counts as no answer, so the request is asked again. An object whose `customerConsented` is false is final whatever else it holds: nothing is sent. Apple's rules that depend on the product are checked too: an auto-renewable subscription takes no `consumptionPercentage`; a purchase not delivered has a percentage of 0; another product's `GRANT_PRORATED` needs a percentage above 0.",
              "anyOf": [
                {
                  "$ref": "#/$defs/answer"
                },
                {
                  "$ref": "#/$defs/refusal"
                }
              ],
              "$defs": {
                "answer": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "customerConsented",
                    "deliveryStatus",
                    "sampleContentProvided"
                  ],
                  "properties": {
                    "customerConsented": {
                      "description": "Whether the customer consented to share consumption data: Apple takes nothing without it.",
                      "type": "boolean"
                    },
                    "deliveryStatus": {
                      "enum": [
                        "DELIVERED",
                        "UNDELIVERED_QUALITY_ISSUE",
                        "UNDELIVERED_WRONG_ITEM",
                        "UNDELIVERED_SERVER_OUTAGE",
                        "UNDELIVERED_OTHER"
                      ]
                    },
                    "sampleContentProvided": {
                      "type": "boolean"
                    },
                    "consumptionPercentage": {
                      "description": "The share consumed, in milliunits of a percent (100000: all of it); null or absent: not said.",
                      "type": [
                        "integer",
                        "null"
                      ],
                      "minimum": 0,
                      "maximum": 100000
                    },
                    "refundPreference": {
                      "enum": [
                        null,
                        "DECLINE",
                        "GRANT_FULL",
                        "GRANT_PRORATED"
                      ]
                    }
                  },
                  "description": "A usable answer: every member known, of Apple's types and lists."
                },
                "refusal": {
                  "description": "`customerConsented` false: final whatever else the object holds (its other members need not read).",
                  "type": "object",
                  "required": [
                    "customerConsented"
                  ],
                  "properties": {
                    "customerConsented": {
                      "const": false
                    }
                  }
                }
              }
            }
            """##
        ),
        (
            "refund-request.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Refund request ask: consumption.request",
              "description": "What the team's service (`apps[].consumption.ask_url`) receives when Apple asks for consumption information about a purchase whose customer asked for a refund (docs/operations.md, \"Refund requests\"), signed like a webhook delivery (Standard Webhooks headers; `webhook-id` is `consumption-` + the event id, the same on every ask of one request). Answer `200` with a JSON object as refund-answer.schema.json describes, or `204` for \"do not answer this one\". Keys may be added (ignore those you do not know).",
              "type": "object",
              "additionalProperties": true,
              "required": ["type", "request", "event"],
              "properties": {
                "type": { "const": "consumption.request" },
                "request": {
                  "type": "object",
                  "additionalProperties": true,
                  "required": ["event_id", "bundle_id", "environment", "transaction_id", "original_transaction_id", "product_type", "reason", "requested_at", "deadline_at"],
                  "properties": {
                    "event_id": { "description": "The CONSUMPTION_REQUEST event's id.", "type": "string" },
                    "bundle_id": { "type": "string" },
                    "environment": { "enum": ["production", "sandbox"] },
                    "transaction_id": { "type": "string" },
                    "original_transaction_id": { "type": ["string", "null"] },
                    "product_type": {
                      "description": "The purchase's product type as the canonical event says it (`auto_renewable`, `consumable`, …): Apple's rules for the answer depend on it.",
                      "type": ["string", "null"], "examples": ["auto_renewable", "non_renewing", "consumable", "non_consumable"]
                    },
                    "reason": {
                      "description": "Apple's `consumptionRequestReason`, lower-cased.",
                      "type": ["string", "null"],
                      "examples": ["unintended_purchase", "fulfillment_issue", "unsatisfied_with_purchase", "legal", "other"]
                    },
                    "requested_at": { "description": "Apple's signed date of the request (ms).", "type": "integer" },
                    "deadline_at": { "description": "When the gateway stops trying to send an answer (ms).", "type": "integer" }
                  }
                },
                "event": {
                  "description": "The request's canonical event; null when the store could not read it at the moment of the ask.",
                  "oneOf": [{ "$ref": "event.schema.json" }, { "type": "null" }]
                }
              }
            }
            """##
        ),
        (
            "state.schema.json",
            ##"""
            {
              "$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": "Subscription state",
              "description": "A subscription's current state on one path: its newest event's view of it, last write wins by `event_date` (then event id, byte by byte), so events delivered out of order converge. The envelope's `state`, the admin API's subscription `states[].state`. Versioned with the canonical event's `schema` (see event.schema.json): keys may be added, so a consumer ignores keys it does not know.",
              "type": "object",
              "additionalProperties": true,
              "required": ["path", "original_transaction_id", "event_id", "event_date", "kind", "product_id", "expires_date", "auto_renew", "entitlement"],
              "properties": {
                "path": { "description": "The generation whose events made this state: the bundle's authoritative path in a delivery.", "enum": ["v1", "v2"] },
                "original_transaction_id": { "type": "string" },
                "event_id": { "description": "The newest event's id.", "type": "string" },
                "event_date": { "description": "The newest event's `event_date` (ms).", "type": "integer" },
                "kind": { "description": "The newest event's kind.", "$ref": "event.schema.json#/$defs/kind" },
                "product_id": { "type": ["string", "null"] },
                "expires_date": { "type": ["integer", "null"] },
                "auto_renew": { "type": ["boolean", "null"] },
                "entitlement": {
                  "description": "As the newest event computed it, at its own date: an `active` state whose `until` has passed has expired since (the admin API's `entitlement_now` projects it).",
                  "oneOf": [{ "$ref": "event.schema.json#/$defs/entitlement" }, { "type": "null" }]
                },
                "seats": { "description": "A group subscription only: its seats in the current period.", "type": "integer", "minimum": 0 },
                "renewal_seats": { "description": "A group subscription only: its seats at the next renewal.", "type": "integer", "minimum": 0 }
              }
            }
            """##
        ),
    ]
}
