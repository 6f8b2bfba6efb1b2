import Canonical
import Testing

/// Apple's V1 date renderings: `Etc/GMT` and Cupertino's wall clock (`America/Los_Angeles`, daylight saving time
/// included), checked against the tz database (against the dates of Apple's own bodies: V1AdapterTests' AppleDateFixtureTests).
@Suite struct PacificTimeTests {
    /// America/Los_Angeles in the tz database (Python's `zoneinfo`, 2024 data): the day daylight time starts and ends,
    /// (year, start month, start day, end month, end day); every start is at 10:00 UTC, every end at 09:00 UTC.
    static let tzdb: [(Int64, Int64, Int64, Int64, Int64)] = [
        (1967, 4, 30, 10, 29), (1968, 4, 28, 10, 27), (1969, 4, 27, 10, 26), (1970, 4, 26, 10, 25),
        (1971, 4, 25, 10, 31),
        (1972, 4, 30, 10, 29), (1973, 4, 29, 10, 28), (1974, 1, 6, 10, 27), (1975, 2, 23, 10, 26),
        (1976, 4, 25, 10, 31),
        (1977, 4, 24, 10, 30), (1978, 4, 30, 10, 29), (1979, 4, 29, 10, 28), (1980, 4, 27, 10, 26),
        (1981, 4, 26, 10, 25),
        (1982, 4, 25, 10, 31), (1983, 4, 24, 10, 30), (1984, 4, 29, 10, 28), (1985, 4, 28, 10, 27),
        (1986, 4, 27, 10, 26),
        (1987, 4, 5, 10, 25), (1988, 4, 3, 10, 30), (1989, 4, 2, 10, 29), (1990, 4, 1, 10, 28), (1991, 4, 7, 10, 27),
        (1992, 4, 5, 10, 25), (1993, 4, 4, 10, 31), (1994, 4, 3, 10, 30), (1995, 4, 2, 10, 29), (1996, 4, 7, 10, 27),
        (1997, 4, 6, 10, 26), (1998, 4, 5, 10, 25), (1999, 4, 4, 10, 31), (2000, 4, 2, 10, 29), (2001, 4, 1, 10, 28),
        (2002, 4, 7, 10, 27), (2003, 4, 6, 10, 26), (2004, 4, 4, 10, 31), (2005, 4, 3, 10, 30), (2006, 4, 2, 10, 29),
        (2007, 3, 11, 11, 4), (2008, 3, 9, 11, 2), (2009, 3, 8, 11, 1), (2010, 3, 14, 11, 7), (2011, 3, 13, 11, 6),
        (2012, 3, 11, 11, 4), (2013, 3, 10, 11, 3), (2014, 3, 9, 11, 2), (2015, 3, 8, 11, 1), (2016, 3, 13, 11, 6),
        (2017, 3, 12, 11, 5), (2018, 3, 11, 11, 4), (2019, 3, 10, 11, 3), (2020, 3, 8, 11, 1), (2021, 3, 14, 11, 7),
        (2022, 3, 13, 11, 6), (2023, 3, 12, 11, 5), (2024, 3, 10, 11, 3), (2025, 3, 9, 11, 2), (2026, 3, 8, 11, 1),
        (2027, 3, 14, 11, 7), (2028, 3, 12, 11, 5), (2029, 3, 11, 11, 4), (2030, 3, 10, 11, 3), (2031, 3, 9, 11, 2),
        (2032, 3, 14, 11, 7), (2033, 3, 13, 11, 6), (2034, 3, 12, 11, 5), (2035, 3, 11, 11, 4), (2036, 3, 9, 11, 2),
        (2037, 3, 8, 11, 1), (2038, 3, 14, 11, 7), (2039, 3, 13, 11, 6), (2040, 3, 11, 11, 4),
    ]

    @Test func daylightTimeStartsAndEndsWhenTheTzDatabaseSays() throws {
        for (year, startMonth, startDay, endMonth, endDay) in Self.tzdb {
            let period = try #require(PacificTime.daylightPeriod(year: year), "\(year)")
            #expect(
                period.start
                    == UTCTime.milliseconds(
                        year: year,
                        month: startMonth,
                        day: startDay,
                        hour: 10,
                        minute: 0,
                        second: 0
                    ),
                "\(year)"
            )
            #expect(
                period.end
                    == UTCTime.milliseconds(year: year, month: endMonth, day: endDay, hour: 9, minute: 0, second: 0),
                "\(year)"
            )
            #expect(
                !PacificTime.isDaylightTime(at: period.start - 1) && PacificTime.isDaylightTime(at: period.start),
                "\(year)"
            )
            #expect(
                PacificTime.isDaylightTime(at: period.end - 1) && !PacificTime.isDaylightTime(at: period.end),
                "\(year)"
            )
        }
    }

    /// (ms, `Etc/GMT` text, `America/Los_Angeles` text), from Python's `datetime` and `zoneinfo`: the last second
    /// before and the first one after each change, in each era of the rules, and a few ordinary instants.
    static let instants: [(Int64, String, String)] = [
        (1_741_514_399_000, "2025-03-09 09:59:59", "2025-03-09 01:59:59"),
        (1_741_514_400_000, "2025-03-09 10:00:00", "2025-03-09 03:00:00"),
        (1_762_073_999_000, "2025-11-02 08:59:59", "2025-11-02 01:59:59"),
        (1_762_074_000_000, "2025-11-02 09:00:00", "2025-11-02 01:00:00"),
        (1_173_607_199_000, "2007-03-11 09:59:59", "2007-03-11 01:59:59"),
        (1_173_607_200_000, "2007-03-11 10:00:00", "2007-03-11 03:00:00"),
        (1_194_166_799_000, "2007-11-04 08:59:59", "2007-11-04 01:59:59"),
        (1_194_166_800_000, "2007-11-04 09:00:00", "2007-11-04 01:00:00"),
        (1_143_971_999_000, "2006-04-02 09:59:59", "2006-04-02 01:59:59"),
        (1_143_972_000_000, "2006-04-02 10:00:00", "2006-04-02 03:00:00"),
        (1_162_112_399_000, "2006-10-29 08:59:59", "2006-10-29 01:59:59"),
        (1_162_112_400_000, "2006-10-29 09:00:00", "2006-10-29 01:00:00"),
        (325_677_599_000, "1980-04-27 09:59:59", "1980-04-27 01:59:59"),
        (325_677_600_000, "1980-04-27 10:00:00", "1980-04-27 03:00:00"),
        (341_398_799_000, "1980-10-26 08:59:59", "1980-10-26 01:59:59"),
        (341_398_800_000, "1980-10-26 09:00:00", "1980-10-26 01:00:00"),
        (126_698_399_000, "1974-01-06 09:59:59", "1974-01-06 01:59:59"),
        (126_698_400_000, "1974-01-06 10:00:00", "1974-01-06 03:00:00"),
        (162_381_599_000, "1975-02-23 09:59:59", "1975-02-23 01:59:59"),
        (162_381_600_000, "1975-02-23 10:00:00", "1975-02-23 03:00:00"),
        (0, "1970-01-01 00:00:00", "1969-12-31 16:00:00"),
        (1999, "1970-01-01 00:00:01", "1969-12-31 16:00:01"),
        (1_709_210_096_000, "2024-02-29 12:34:56", "2024-02-29 04:34:56"),
        (1_735_718_399_000, "2025-01-01 07:59:59", "2024-12-31 23:59:59"),
        (1_748_736_000_000, "2025-06-01 00:00:00", "2025-05-31 17:00:00"),
        (2_147_483_647_000, "2038-01-19 03:14:07", "2038-01-18 19:14:07"),
        (4_086_806_400_000, "2099-07-04 00:00:00", "2099-07-03 17:00:00"),
    ]

    @Test func rendersFixedInstantsAroundEachChange() {
        for (ms, gmt, pacific) in Self.instants {
            #expect(AppleDateText.gmt(ms) == gmt + " Etc/GMT", "\(ms)")
            #expect(AppleDateText.pst(ms) == pacific + " America/Los_Angeles", "\(ms)")
            #expect(
                AppleDateText.millis(AppleDateText.gmt(ms)) == ms / 1000 * 1000,
                "the reader reads what the writer wrote"
            )
        }
    }

    @Test func beforeNineteenSixtySevenEveryInstantIsStandardTime() {
        #expect(PacificTime.daylightPeriod(year: 1966) == nil)
        let summer1966: Int64 = -110_000_000_000  // 1966-07-07 20:26:40 UTC
        #expect(PacificTime.offset(at: summer1966) == PacificTime.standardOffset)
        #expect(AppleDateText.pst(-1) == "1969-12-31 15:59:59 America/Los_Angeles")
    }

    @Test func extremeInstantsRenderWithoutTrapping() {
        for ms in [Int64.min, Int64.min + 1, Int64.max, Int64.max - 1, -62_167_219_200_000, 253_402_300_799_999] {
            #expect(AppleDateText.gmt(ms).hasSuffix(" Etc/GMT"))
            #expect(AppleDateText.pst(ms).hasSuffix(" America/Los_Angeles"))
        }
        #expect(AppleDateText.gmt(253_402_300_799_999) == "9999-12-31 23:59:59 Etc/GMT")
        #expect(AppleDateText.pst(253_402_300_799_999) == "9999-12-31 15:59:59 America/Los_Angeles")
    }
}
