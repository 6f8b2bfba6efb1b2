import Testing

@Suite struct HTTPClientPlaceholderTests {
    @Test func placeholder() { #expect(Bool(true)) }
}
