internal import CSQLite

/// A scalar SQL function of one argument, written in Swift and registered on every connection of a
/// ``SQLiteDatabase`` (``SQLiteDatabase/Options/functions``): what a migration calls to rewrite a column's values
/// (`UPDATE t SET c = f(c)`).
///
/// The function sees the argument's bytes (a blob's, or a text's UTF-8); NULL gives NULL without calling it. It
/// returns the result as a blob, or nil for NULL; an error it throws fails the statement with the error's
/// description, which must therefore never hold a value. Registered deterministic and direct-only: a view or a
/// trigger stored in the file cannot call it.
public struct SQLiteFunction: Sendable {
    public var name: String
    public var body: @Sendable ([UInt8]) throws -> [UInt8]?

    public init(name: String, body: @escaping @Sendable ([UInt8]) throws -> [UInt8]?) {
        (self.name, self.body) = (name, body)
    }
}

/// What SQLite keeps as the function's user data: released by SQLite when the connection closes.
private final class FunctionBox {
    let function: SQLiteFunction
    init(_ function: SQLiteFunction) { self.function = function }
}

extension SQLiteHandle {
    /// Registers `function` on the open handle.
    func register(_ function: SQLiteFunction) throws(SQLiteError) {
        let db = try open()
        let box = Unmanaged.passRetained(FunctionBox(function)).toOpaque()
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY
        // On failure SQLite calls the destructor itself, which releases the box.
        let rc = sqlite3_create_function_v2(
            db,
            function.name,
            1,
            flags,
            box,
            { context, count, arguments in callFunction(context, count, arguments) },
            nil,
            nil,
            { box in if let box { Unmanaged<FunctionBox>.fromOpaque(box).release() } }
        )
        guard rc == SQLITE_OK else {
            throw SQLiteError(
                code: rc & 0xFF,
                extendedCode: rc,
                message: "\(label): register function \(function.name): \(String(cString: sqlite3_errstr(rc)))"
            )
        }
    }
}

/// The C entry point of every ``SQLiteFunction``: its box is the user data.
private func callFunction(
    _ context: OpaquePointer?,
    _ count: Int32,
    _ arguments: UnsafeMutablePointer<OpaquePointer?>?
) {
    guard let context, let data = sqlite3_user_data(context) else { return }
    let function = Unmanaged<FunctionBox>.fromOpaque(data).takeUnretainedValue().function
    guard count == 1, let argument = arguments?[0] else {
        sqlite3_result_error(context, "\(function.name): takes one argument", -1)
        return
    }
    if sqlite3_value_type(argument) == SQLITE_NULL {
        sqlite3_result_null(context)
        return
    }
    // The blob first, then its length (<https://sqlite.org/c3ref/value_blob.html>).
    let pointer = sqlite3_value_blob(argument)
    let length = Int(sqlite3_value_bytes(argument))
    let bytes: [UInt8] =
        if let pointer, length > 0 { Array(UnsafeRawBufferPointer(start: pointer, count: length)) } else { [] }
    let result: [UInt8]?
    do {
        result = try function.body(bytes)
    } catch {
        sqlite3_result_error(context, "\(function.name): \(error)", -1)
        return
    }
    guard let result else {
        sqlite3_result_null(context)
        return
    }
    if result.isEmpty {
        sqlite3_result_zeroblob(context, 0)
        return
    }
    result.withUnsafeBytes { buffer in
        sqlite3_result_blob64(context, buffer.baseAddress, sqlite3_uint64(buffer.count), gateway_sqlite_transient())
    }
}
