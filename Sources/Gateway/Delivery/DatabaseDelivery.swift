internal import Canonical
internal import Store
public import TeamDatabase
internal import Threads
internal import WireJSON

/// The writers of a config's `database` downstreams (docs/database-downstream.md).
public enum DatabaseDownstreams {
    /// One writer per database downstream of `config`, by name; nothing is opened yet (each connects on its first
    /// write). `connectionStrings`: each PostgreSQL downstream's, by name, as read from its `url_env` at start; one
    /// missing leaves that downstream out, and its deliveries fail (and are retried) until a restart supplies it.
    /// `timeoutMillis`: the longest one write may take (the delivery timeout).
    public static func make(
        config: GatewayConfig,
        connectionStrings: [String: String],
        timeoutMillis: Int
    ) -> [String: any DownstreamDatabase] {
        var out: [String: any DownstreamDatabase] = [:]
        for d in config.downstreams where d.kind == .database {
            let label = "downstream \(d.name)"
            switch d.database {
            case .postgres(_, let schema)?:
                guard let url = connectionStrings[d.name] else { continue }
                var options = PostgresDownstream.Options()
                options.connections = d.concurrency
                options.timeoutMillis = Int64(timeoutMillis)
                out[d.name] = PostgresDownstream(connectionString: url, schema: schema, label: label, options: options)
            case .sqlite(let path, let prefix)?:
                out[d.name] = SQLiteDownstream(path: path, prefix: prefix, label: label)
            case nil:
                continue
            }
        }
        return out
    }
}

extension DeliveryWorker {
    /// One attempt at a database downstream: the stored event decoded and written into its tables. Connecting, the
    /// tables and the write are all part of the attempt: any failure is retried with the downstream's backoff.
    func deliverToDatabase(_ job: Job, downstream: GatewayConfig.Downstream) async {
        guard let database = databases[downstream.name] else {
            await finish(
                job,
                status: nil,
                error: .databaseUnconfigured,
                detail: "database downstream without its connection string (restart with url_env set)",
                dead: false
            )
            return
        }
        let record: DownstreamEvent
        do { record = try await databaseRecord(job) } catch {
            await finish(job, status: nil, error: .requestUnbuildable, detail: "\(error)", dead: false)
            return
        }
        metrics.increment(.deliveryAttemptsTotal, ["downstream": job.downstream])
        let started = now()
        do {
            _ = try await Blocking.run { try database.write(record) }
            let attempt = DeliveryAttempt(startedAt: started, latencyMillis: now() - started)
            await finish(job, status: nil, error: nil, dead: false, attempt: attempt)
        } catch {
            // The message names the downstream and the database's reason, never the connection string: the log and
            // the delivery log's entry keep it (redacted, capped), the row the code.
            let text = "\(error)"
            let attempt = DeliveryAttempt(
                startedAt: started,
                latencyMillis: now() - started,
                responseHead: Array(text.utf8),
                redactor: redactor
            )
            await finish(
                job,
                status: nil,
                error: .databaseError,
                detail: text.count > 500 ? String(text.prefix(500)) + "…" : text,
                dead: false,
                attempt: attempt
            )
        }
    }

    /// The outbox row's event as stored, decoded (the row keeps the stored JSON as it is, byte for byte).
    func databaseRecord(_ job: Job) async throws -> DownstreamEvent {
        guard let eventID = job.eventID else { throw BuildFailure(description: "outbox row without event") }
        let payload = try await payload(of: job, eventID: eventID, withBody: false)
        let event: CanonicalEvent
        do { event = try JSONValueDecoder().decode(CanonicalEvent.self, from: payload.eventJSON) } catch {
            throw BuildFailure(description: "the stored event does not decode: \(error)")
        }
        return DownstreamEvent(
            event: event,
            json: payload.eventJSON,
            authoritative: payload.authoritative,
            deliveredAt: now()
        )
    }
}
