import TestSupport
import Testing
import Zstd

/// The Zstandard wrapper (`Zstd`): frames of Debian's `zstd` command read back, tampered copies refused with stable
/// codes, decompression bounded, a compressor with a dictionary writing what a fresh one writes.
@Suite struct ZstdTests {
    static let hello = Array("hello".utf8)
    /// `zstd -1 --check` of a file holding "hello", an empty file and 1,000 × "a" (zstd 1.5.4): frames that say their
    /// content's size and end with its checksum.
    static let helloFrame: [UInt8] = [
        0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x05, 0x29, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0xa3, 0x6d, 0x9f, 0x88,
    ]
    static let emptyFrame: [UInt8] = [0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00, 0x01, 0x00, 0x00, 0x99, 0xe9, 0xd8, 0x51]
    static let aaaFrame: [UInt8] = [
        0x28, 0xb5, 0x2f, 0xfd, 0x64, 0xe8, 0x02, 0x4d, 0x00, 0x00, 0x10, 0x61, 0x61, 0x01, 0x00, 0xe3, 0x2b, 0x80,
        0x05, 0x23, 0x42, 0xda, 0x2e,
    ]
    /// `printf hello | zstd -1 --check`: from a pipe, the frame does not say its size.
    static let unsizedHelloFrame: [UInt8] = [
        0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x48, 0x29, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0xa3, 0x6d, 0x9f, 0x88,
    ]
    /// `zstd -1 --check -D dict` of "hello hello hello, dictionary" with the raw dictionary "hello hello hello".
    static let dictionary = Array("hello hello hello".utf8)
    static let dictionaryValue = Array("hello hello hello, dictionary".utf8)
    static let dictionaryFrame: [UInt8] = [
        0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x1d, 0xa5, 0x00, 0x00, 0x60, 0x2c, 0x20, 0x64, 0x69, 0x63, 0x74, 0x69, 0x6f,
        0x6e, 0x61, 0x72, 0x79, 0x02, 0x00, 0x3a, 0x07, 0xd8, 0x28, 0x40, 0x2e, 0xb7, 0x48, 0x3f,
    ]

    /// The code of the error `body` throws; nil when it returns.
    static func code(_ body: () throws -> [UInt8]) -> ZstdError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as ZstdError {
            return error.code
        } catch {
            Issue.record("not a ZstdError: \(error)")
            return nil
        }
    }

    @Test func framesOfTheZstdCommandReadBack() throws {
        #expect(try Zstd.decompress(Self.helloFrame, limit: 5) == Self.hello)
        #expect(try Zstd.decompress(Self.emptyFrame, limit: 0) == [])
        #expect(try Zstd.decompress(Self.aaaFrame, limit: 1_000) == [UInt8](repeating: 0x61, count: 1_000))
        #expect(
            try Zstd.decompress(Self.dictionaryFrame, dictionary: Self.dictionary, limit: 100) == Self.dictionaryValue
        )
        #expect(Zstd.looksCompressed(Self.helloFrame) && !Zstd.looksCompressed(Array("{}".utf8)))
    }

    @Test func whatItWritesReadsBackAndSaysItsSize() throws {
        let text = Array(String(repeating: #"{"a":[1,2,3],"b":"xyz"}"#, count: 50).utf8)
        for value in [[], Self.hello, text] {
            let frame = try Zstd.compress(value)
            #expect(frame.starts(with: Zstd.magic))
            #expect(try Zstd.decompress(frame, limit: value.count) == value)
            if !value.isEmpty { #expect(Self.code { try Zstd.decompress(frame, limit: value.count - 1) } == .tooLarge) }
        }
        #expect(try Zstd.compress(text).count < text.count / 10)
    }

    @Test func tamperedFramesAreRefusedWithStableCodes() throws {
        #expect(Self.code { try Zstd.decompress([], limit: 100) } == .truncated)
        #expect(Self.code { try Zstd.decompress(Array(Self.helloFrame.dropLast()), limit: 100) } == .truncated)
        #expect(Self.code { try Zstd.decompress(Array(Self.helloFrame.prefix(7)), limit: 100) } == .truncated)
        #expect(Self.code { try Zstd.decompress(Array(Self.helloFrame.prefix(2)), limit: 100) } == .corrupt)
        #expect(Self.code { try Zstd.decompress(Array("{\"json\":1}".utf8), limit: 100) } == .corrupt)
        var badChecksum = Self.helloFrame
        badChecksum[badChecksum.count - 1] ^= 1
        #expect(Self.code { try Zstd.decompress(badChecksum, limit: 100) } == .corrupt)
        var badContent = Self.helloFrame
        badContent[10] ^= 1  // "hallo": the checksum no longer matches
        #expect(Self.code { try Zstd.decompress(badContent, limit: 100) } == .corrupt)
        #expect(Self.code { try Zstd.decompress(Self.helloFrame + [0], limit: 100) } == .corrupt)
        #expect(Self.code { try Zstd.decompress(Self.helloFrame + Self.helloFrame, limit: 100) } == .corrupt)
        #expect(Self.code { try Zstd.decompress(Self.unsizedHelloFrame, limit: 100) } == .corrupt)
        #expect(Self.code { try Zstd.decompress(Self.helloFrame, limit: 4) } == .tooLarge)
        #expect(Self.code { try Zstd.decompress(Self.aaaFrame, limit: 999) } == .tooLarge)
        #expect(Self.code { try Zstd.decompress(Self.helloFrame, limit: -1) } == .invalidArgument)
        #expect(Self.code { try Zstd.compress(Self.hello, level: 99) } == .invalidArgument)
        // A skippable frame (magic 0x184D2A50) holds no content: not a frame this reads.
        #expect(Self.code { try Zstd.decompress([0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0], limit: 100) } == .corrupt)
    }

    /// A frame that claims a huge content is refused before anything is allocated for it, and so is its content.
    @Test func decompressionIsBoundedByTheLimit() throws {
        let bomb = try Zstd.compress([UInt8](repeating: 0, count: 64 * 1_048_576))
        #expect(bomb.count < 10_000)
        #expect(Self.code { try Zstd.decompress(bomb, limit: 1_048_576) } == .tooLarge)
        // Every prefix fails, and a flipped byte anywhere never traps.
        let frame = try Zstd.compress(Array(String(repeating: "{\"a\":[1,2,3],\"b\":\"xyz\"}", count: 20).utf8))
        for n in 0..<frame.count {
            #expect(Self.code { try Zstd.decompress(Array(frame.prefix(n)), limit: 1_000) } != nil)
        }
        for i in 0..<frame.count {
            var flipped = frame
            flipped[i] ^= 0x5A
            _ = try? Zstd.decompress(flipped, limit: 1_000)
        }
    }

    /// A frame that does not say its size (a streaming compressor's: the gateway writes none) is refused before
    /// anything is decompressed, however much it would expand to; one that says a size smaller than what it holds
    /// never writes past that size. The frames are written by hand (``ZstdFrames``), so any size costs nothing.
    @Test func framesThatDoNotSayTheirSizeOrUnderstateItAreRefused() throws {
        let parts: [ZstdFrames.Part] = [.bytes(Self.hello), .repeated(0x61, count: 1_000)]
        let content = Self.hello + [UInt8](repeating: 0x61, count: 1_000)
        #expect(try Zstd.decompress(ZstdFrames.frame(parts), limit: 1_005) == content)
        #expect(Self.code { try Zstd.decompress(ZstdFrames.frame(parts), limit: 1_004) } == .tooLarge)
        #expect(
            Self.code { try Zstd.decompress(ZstdFrames.frame(parts, declaresSize: false), limit: 1 << 20) } == .corrupt
        )
        let streamed = ZstdFrames.frame([.repeated(0x41, count: 60 * 1_048_576)], declaresSize: false)
        #expect(streamed.count < 3_000)
        #expect(Self.code { try Zstd.decompress(streamed, limit: 64 * 1_048_576) } == .corrupt)
        // A header that says 5 bytes in front of 60 MiB of content: decoding stops at the 5 bytes.
        var understated = ZstdFrames.frame([.bytes(Self.hello), .repeated(0x41, count: 60 * 1_048_576)])
        understated.replaceSubrange(6..<14, with: [5, 0, 0, 0, 0, 0, 0, 0])
        #expect(Self.code { try Zstd.decompress(understated, limit: 64 * 1_048_576) } == .corrupt)
    }

    /// A frame written with a dictionary reads back with it only: without one, or with another, it is corrupt.
    @Test func aDictionaryFrameNeedsItsDictionary() throws {
        let compressor = try Zstd.Compressor(dictionary: Self.dictionary)
        #expect(compressor.dictionaryBytes == Self.dictionary.count)
        let frame = try compressor.compress(Self.dictionaryValue)
        #expect(frame.count < (try Zstd.compress(Self.dictionaryValue)).count)
        #expect(try Zstd.decompress(frame, dictionary: Self.dictionary, limit: 100) == Self.dictionaryValue)
        #expect(Self.code { try Zstd.decompress(frame, limit: 100) } == .corrupt)
        #expect(
            Self.code { try Zstd.decompress(frame, dictionary: Array("other other other".utf8), limit: 100) }
                == .corrupt
        )
        #expect(Self.code { try Zstd.decompress(Self.dictionaryFrame, limit: 100) } == .corrupt)
        #expect(Self.code { try Zstd.Compressor(dictionary: []).compress(Self.hello) } == .invalidArgument)
        // zstd's own dictionary format is not what the store's dictionaries are: refused rather than misread.
        #expect(
            Self.code { try Zstd.Compressor(dictionary: [0x37, 0xA4, 0x30, 0xEC, 1, 2, 3]).compress(Self.hello) }
                == .invalidArgument
        )
    }

    /// A compressor reused for many values, from several threads at once, writes what a fresh one writes.
    @Test func aReusedCompressorWritesWhatAFreshOneWrites() async throws {
        let dictionary = Array(
            String(repeating: #"{"bundle_id":"com.example.app","product_id":"monthly"}"#, count: 8).utf8
        )
        let values: [[UInt8]] = [
            [], Self.hello, Array(#"{"bundle_id":"com.example.app","product_id":"yearly","n":1}"#.utf8),
            (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) },
        ]
        let compressor = try Zstd.Compressor(dictionary: dictionary)
        for _ in 0..<2 {
            for value in values {
                let frame = try compressor.compress(value)
                #expect(frame == (try Zstd.Compressor(dictionary: dictionary).compress(value)))
                #expect(try Zstd.decompress(frame, dictionary: dictionary, limit: value.count) == value)
            }
        }
        let expected = try Zstd.Compressor(dictionary: dictionary).compress(values[2])
        let same = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<50).allSatisfy { _ in (try? compressor.compress(values[2])) == expected } }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(same)
    }

    /// Reads reuse their decompression contexts: a context a failed read (truncated, corrupt, another dictionary,
    /// over the limit) or a dictionary read leaves behind reads the next frame as a fresh one would, from several
    /// threads at once.
    @Test func readsAfterFailuresAndOtherDictionariesReadBack() async throws {
        let compressor = try Zstd.Compressor(dictionary: Self.dictionary)
        let withDictionary = try compressor.compress(Self.dictionaryValue)
        let plain = try Zstd.compress(Self.dictionaryValue)
        let rounds = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<4 {
                group.addTask {
                    (0..<200).allSatisfy { round in
                        // A failure of one kind or another, then one good read of each kind.
                        switch (round + task) % 4 {
                        case 0: _ = try? Zstd.decompress(Array(withDictionary.dropLast(3)), limit: 100)
                        case 1: _ = try? Zstd.decompress(withDictionary, limit: 100)
                        case 2: _ = try? Zstd.decompress(plain, dictionary: Self.dictionary, limit: 5)
                        default: _ = try? Zstd.decompress(Array(plain.prefix(plain.count - 1)) + [0], limit: 100)
                        }
                        return (try? Zstd.decompress(withDictionary, dictionary: Self.dictionary, limit: 100))
                            == Self.dictionaryValue
                            && (try? Zstd.decompress(plain, limit: 100)) == Self.dictionaryValue
                            && (try? Zstd.decompress(Self.helloFrame, limit: 5)) == Self.hello
                    }
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(rounds)
    }
}
