extension PostgresConnection {
    /// Checks that `conninfo` parses as a libpq connection string or URI, without connecting: for start-up checks of
    /// a string read from the environment. Throws `08001` naming `label`; libpq's reason is withheld (it quotes the
    /// string, which may hold a password).
    public static func validate(_ conninfo: String, label: String = "postgres") throws(PostgresError) {
        try PostgresHandle.validate(conninfo, label: label)
    }
}
