internal import Canonical

extension SQLTransaction {
    func value<V>(_ setting: AppSetting<V>, bundleID: String, environment: AppStoreEnvironment) throws -> V {
        try c.queryOne(setting.select, [.text(bundleID), .text(environment.rawValue)])?.required("value", as: V.self)
            ?? setting.fallback
    }

    func seed<V>(_ setting: AppSetting<V>, _ wanted: [AppSettingEntry<V>], now: Int64) throws -> [AppSettingEntry<V>] {
        for entry in wanted {
            try c.run(
                setting.seed,
                [.text(entry.bundleID), .text(entry.environment.rawValue), .text(entry.value.rawValue), .int64(now)]
            )
        }
        return try entries(setting)
    }

    func entries<V>(_ setting: AppSetting<V>) throws -> [AppSettingEntry<V>] {
        try c.query(setting.list, []).map { row in
            AppSettingEntry(
                bundleID: try row.requiredString("bundle_id"),
                environment: try row.environment("environment"),
                value: try row.required("value", as: V.self),
                origin: try row.required("origin", as: SettingOrigin.self)
            )
        }
    }

    func move<V>(_ setting: AppSetting<V>, _ record: CutoverRecord, to value: V) throws {
        try c.run(
            setting.move,
            [.text(record.bundleID), .text(record.environment), .text(value.rawValue), .int64(record.at)]
        )
        var logged = record
        if let origin = setting.logOrigin { logged.origin = origin }
        try logCutover(logged)
    }
}
