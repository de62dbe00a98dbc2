@testable import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
import Testing

@Suite("Moving finished files into place")
struct FileMoveTests {
    @Test("A taken name gets ' (2)', ' (3)'… and the numbered name still fits 200 bytes before the extension")
    func numberedNamesKeepTheCap() throws {
        let folder = try AirtapBinary.temporaryFolder()
        let base = String(repeating: "é", count: 100)  // 200 bytes of UTF-8: the cap exactly
        let target = folder.appendingPathComponent(base + ".mp3").path
        var names: [String] = []
        for number in 1...3 {
            let part = folder.appendingPathComponent("part\(number)").path
            try "file \(number)".write(toFile: part, atomically: false, encoding: .utf8)
            names.append(URL(fileURLWithPath: try moveWithoutOverwriting(part, to: target)).lastPathComponent)
        }
        #expect(names[0] == base + ".mp3")
        #expect(names[1].hasSuffix(" (2).mp3") && names[2].hasSuffix(" (3).mp3"))
        for name in names { #expect(name.utf8.count - ".mp3".utf8.count <= 200, "\(name.utf8.count) bytes") }
        // Nothing was overwritten: each file holds what was moved there.
        let contents = try names.map { try String(contentsOfFile: folder.appendingPathComponent($0).path, encoding: .utf8) }
        #expect(contents == ["file 1", "file 2", "file 3"])
    }
}
