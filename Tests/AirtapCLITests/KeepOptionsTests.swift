import ArgumentParser
@testable import airtap
import Testing

@Suite("Command line: keep and skip lists")
struct KeepOptionsTests {
    @Test("--keep-only and --skip parse for record, and are refused beside --single (one file has no track to leave out)")
    func single() {
        #expect(ValidationTests.refusal(["record", "a", "--keep-only", "keep.txt", "--skip", "skip.txt"]) == nil)
        #expect(ValidationTests.refusal(["record", "a", "--no-replaygain"]) == nil)
        #expect(ValidationTests.refusal(["record", "a", "--single", "x.mp3", "--skip", "s.txt"])?
            .contains("--skip does not apply to --single") == true)
        #expect(ValidationTests.refusal(["record", "a", "--single", "x.mp3", "--keep-only", "k.txt"])?
            .contains("--keep-only does not apply to --single") == true)
    }
}
