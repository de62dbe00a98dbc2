/// Cuts one MPEG transport stream into HLS segments the way VLC's livehttp does: at 188-byte
/// packet boundaries that fall inside an audio PES packet, so a segment ends with a PES whose
/// rest starts the next segment. Each later segment begins with the stream's PAT and PMT again
/// (a reader needs them to know the streams); the audio packets keep their continuity counters.
enum MidPESSegmenter {
    package static let packetLength = 188

    /// `parts` segments of about equal size, each cut moved on to the next packet that continues
    /// a PES already started; nil when the stream has no PAT and PMT in its first packets or no
    /// such packets to cut at.
    package static func segments(_ stream: [UInt8], parts: Int) -> [[UInt8]]? {
        guard stream.count % packetLength == 0, parts >= 1 else { return nil }
        let packets = stride(from: 0, to: stream.count, by: packetLength).map { Array(stream[$0..<$0 + packetLength]) }
        let pid = { (packet: [UInt8]) in Int(packet[1] & 0x1F) << 8 | Int(packet[2]) }
        let startsUnit = { (packet: [UInt8]) in packet[1] & 0x40 != 0 }
        guard let pat = packets.first(where: { pid($0) == 0 }), let pmtPID = programMapPID(pat),
              let pmt = packets.first(where: { pid($0) == pmtPID }) else { return nil }
        let tables: Set<Int> = [0, 0x11, pmtPID]
        // A cut before packet i lands inside a PES when i and the packet of its stream before it
        // both continue a PES (no unit start).
        var cuts: [Int] = []
        for part in 1..<parts {
            var index = packets.count * part / parts
            while index < packets.count {
                let packet = packets[index]
                if !tables.contains(pid(packet)), !startsUnit(packet),
                   let previous = packets[..<index].last(where: { pid($0) == pid(packet) }), !startsUnit(previous) { break }
                index += 1
            }
            let previousCut = cuts.last ?? 0
            guard index < packets.count, previousCut < index else { return nil }
            cuts.append(index)
        }
        let bounds = [0] + cuts + [packets.count]
        return zip(bounds, bounds.dropFirst()).enumerated().map { number, range in
            (number == 0 ? [] : pat + pmt) + packets[range.0..<range.1].flatMap { $0 }
        }
    }

    /// The first program's PMT PID from a PAT packet (pointer field, then the section).
    private static func programMapPID(_ packet: [UInt8]) -> Int? {
        guard packet[1] & 0x40 != 0, packet[3] & 0x10 != 0, packet[3] & 0x20 == 0 else { return nil }
        let section = 5 + Int(packet[4])
        guard section + 12 <= packetLength else { return nil }
        let program = section + 8
        return Int(packet[program + 2] & 0x1F) << 8 | Int(packet[program + 3])
    }
}
