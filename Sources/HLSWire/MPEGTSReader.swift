import ICYWire

/// What an MPEG-TS elementary stream carries, from its PMT `stream_type`.
enum TSStreamKind: Sendable, Hashable {
    /// 0x0F: AAC in ADTS frames.
    case aacADTS
    /// 0x03, 0x04: MPEG-1/2 audio (MP3).
    case mpegAudio
    /// 0x15 (metadata in PES) carrying ID3 tags: HLS timed metadata.
    case timedID3
}

/// One reassembled PES packet of an elementary stream airtap reads.
struct TSPayload: Sendable, Hashable {
    var kind: TSStreamKind
    package var pid: Int
    /// Presentation time stamp, 90 kHz, 33 bits.
    package var pts: UInt64?
    /// The PES payload (ADTS or MPEG audio frames, or an ID3 tag), header removed.
    package var bytes: ArraySlice<UInt8>
}

enum TSEvent: Sendable, Hashable {
    case payload(TSPayload)
    /// A PES packet dropped whole: a continuity-counter jump (a lost packet), a PES over the size
    /// bound, a malformed PES header, or one cut off at the end. Its bytes never reach a decoder.
    case droppedPayload(pid: Int, reason: TSDropReason)
    /// Bytes skipped to regain sync (no 0x47 every 188 bytes).
    case skipped(count: Int)
}

enum TSDropReason: Error, Sendable, Hashable {
    case continuityError
    case tooLarge
    case malformedHeader
    case truncated
}

/// A PES packet a segment ended inside, its declared length not reached: VLC's livehttp ends
/// segments so, and the rest comes at the start of the next segment. Handed to the next
/// segment's reader, it is finished there when that segment continues it (the same stream, the
/// continuity counter going on), else dropped as truncated.
package struct TSUnfinishedPES: Sendable, Hashable {
    package var pid: Int
    var kind: TSStreamKind
    package var continuity: UInt8
    /// Header and payload so far, under the reader's `maxPESLength`.
    package var bytes: [UInt8]
}

/// Reads an MPEG transport stream (ISO/IEC 13818-1) as HLS segments carry it: 188-byte packets,
/// the PAT and the first program's PMT, and PES reassembly with PTS for the audio and timed-ID3
/// streams. Video and other streams are ignored.
///
/// Incremental: bytes may arrive split anywhere; the events are the same however they are split
/// (adjacent `.skipped` aside). Every size is bounded: sections by their 12-bit length, a PES by
/// `maxPESLength`.
struct MPEGTSReader: Sendable {
    package static let packetLength = 188
    static let syncByte: UInt8 = 0x47

    /// A PES of audio is a few frames (hls.js sees at most ~100 KB with many frames per PES).
    package let maxPESLength: Int

    private var input = ByteAccumulator()
    /// Locked: a 0x47 where the next packet should start is taken as one. Searching (after a
    /// byte that was not 0x47): a candidate counts only once the byte 188 later is 0x47 too,
    /// wherever the bytes were split.
    private var isLocked = true
    private var pmtPID: Int?
    /// The PMT's audio and timed-metadata streams (a handful: looked up by a linear scan).
    private var streams: [ElementaryStream] = []
    private var sections: [Int: [UInt8]] = [:]

    /// A PES being reassembled, per PID.
    private struct ElementaryStream: Sendable {
        let pid: Int
        let kind: TSStreamKind
        var buffer: [UInt8] = []
        var assembling = false
        var continuity: UInt8?
    }

    /// PES packets the previous segment ended inside, waiting for this segment's PMT to list
    /// their stream again.
    private var continuing: [TSUnfinishedPES]

    package init(maxPESLength: Int = 512 * 1024, continuing: [TSUnfinishedPES] = []) {
        self.maxPESLength = maxPESLength
        self.continuing = continuing.filter { $0.bytes.count <= maxPESLength }
    }

    /// The streams found in the PMT so far (PID and kind).
    package var elementaryStreams: [(pid: Int, kind: TSStreamKind)] {
        streams.map { ($0.pid, $0.kind) }
    }

    package mutating func push(_ bytes: some Collection<UInt8>, _ emit: (TSEvent) -> Void) {
        input.append(bytes)
        readPackets(final: false, emit)
    }

    /// The segment ended: emits every PES still open (the last one of each stream has no
    /// following start to end it) and drops a cut-off packet. A PES shorter than its declared
    /// length is returned, not dropped, when `keepingUnfinished`: the next segment may hold its rest.
    @discardableResult
    package mutating func finish(keepingUnfinished: Bool = false, _ emit: (TSEvent) -> Void) -> [TSUnfinishedPES] {
        readPackets(final: true, emit)
        if input.readableCount > 0 {
            emit(.skipped(count: input.readableCount))
            input.consume(input.readableCount)
        }
        for carried in continuing { emit(.droppedPayload(pid: carried.pid, reason: .truncated)) }
        continuing.removeAll()
        var unfinished: [TSUnfinishedPES] = []
        for index in streams.indices {
            let stream = streams[index]
            if keepingUnfinished, stream.assembling, let continuity = stream.continuity,
               let declared = PESHeader.declaredTotalLength(stream.buffer), declared > stream.buffer.count {
                unfinished.append(TSUnfinishedPES(pid: stream.pid, kind: stream.kind, continuity: continuity, bytes: stream.buffer))
                streams[index].assembling = false
                streams[index].buffer.removeAll()
            } else {
                flush(index: index, emit)
            }
        }
        return unfinished
    }

    private mutating func readPackets(final: Bool, _ emit: (TSEvent) -> Void) {
        while input.readableCount >= Self.packetLength {
            let start = input.readIndex
            if !isLocked || input.storage[start] != Self.syncByte {
                isLocked = false
                guard let found = findSync(final: final) else {
                    // Keep the last 188 bytes: a sync byte among them may be confirmed by the next push.
                    let drop = final ? input.readableCount : input.readableCount - Self.packetLength
                    if drop > 0 {
                        emit(.skipped(count: drop))
                        input.consume(drop)
                    }
                    if !final { input.needReadable(Self.packetLength + 1) }
                    return
                }
                if found > start {
                    emit(.skipped(count: found - start))
                    input.consume(upTo: found)
                }
                isLocked = true
                continue
            }
            readPacket(at: start, emit)
            input.consume(Self.packetLength)
        }
    }

    /// The storage index of a 0x47 followed by another 188 bytes later (or, at the very end of the
    /// segment, by nothing); nil when none can be confirmed yet.
    private func findSync(final: Bool) -> Int? {
        let storage = input.storage
        var index = input.readIndex
        while index < storage.count {
            if storage[index] == Self.syncByte {
                let next = index + Self.packetLength
                if next < storage.count {
                    if storage[next] == Self.syncByte { return index }
                } else if final && next == storage.count {
                    return index
                } else {
                    return nil
                }
            }
            index += 1
        }
        return nil
    }

    private mutating func readPacket(at start: Int, _ emit: (TSEvent) -> Void) {
        let packet = input.storage[start..<start + Self.packetLength]
        let b1 = packet[start + 1], b2 = packet[start + 2], b3 = packet[start + 3]
        guard b1 & 0x80 == 0 else { return }  // transport error indicator: the packet is damaged
        let unitStart = b1 & 0x40 != 0
        let pid = Int(b1 & 0x1F) << 8 | Int(b2)
        let adaptation = (b3 >> 4) & 0x03
        let continuity = b3 & 0x0F
        var payloadStart = start + 4
        if adaptation & 0x02 != 0 {
            let length = Int(packet[start + 4])
            payloadStart += 1 + length
            guard payloadStart <= start + Self.packetLength else { return }
        }
        guard adaptation & 0x01 != 0 else { return }  // no payload
        let payload = packet[payloadStart..<start + Self.packetLength]

        if pid == 0 || pid == pmtPID {
            readSectionPacket(pid: pid, unitStart: unitStart, payload: payload)
        } else if let index = streams.firstIndex(where: { $0.pid == pid }) {
            readPESPacket(index: index, unitStart: unitStart, continuity: continuity, payload: payload, emit)
        }
    }

    // MARK: PSI sections (PAT, PMT)

    private mutating func readSectionPacket(pid: Int, unitStart: Bool, payload: ArraySlice<UInt8>) {
        var payload = payload
        if unitStart {
            guard let pointer = payload.first, Int(pointer) < payload.count else { return }
            // The end of a previous section may come before the pointer's target.
            if var pending = sections[pid] {
                pending.append(contentsOf: payload.dropFirst().prefix(Int(pointer)))
                sections[pid] = pending
                completeSection(pid: pid)
            }
            payload = payload.dropFirst(1 + Int(pointer))
            sections[pid] = Array(payload)
        } else {
            guard var pending = sections[pid] else { return }
            pending.append(contentsOf: payload)
            sections[pid] = pending
        }
        completeSection(pid: pid)
    }

    /// Reads the section collected for `pid` once its length has arrived.
    private mutating func completeSection(pid: Int) {
        guard let section = sections[pid], section.count >= 3 else { return }
        if section[0] == 0xFF {  // stuffing: no section
            sections[pid] = nil
            return
        }
        let length = Int(section[1] & 0x0F) << 8 | Int(section[2])
        guard length <= 1021 else {
            sections[pid] = nil
            return
        }
        guard section.count >= 3 + length else { return }
        sections[pid] = nil
        let body = section[3..<3 + length]
        if pid == 0, section[0] == 0x00 {
            readPAT(body)
        } else if pid == pmtPID, section[0] == 0x02 {
            readPMT(body)
        }
    }

    /// PAT body: 5 bytes of header, then (program_number, PID) pairs, then a CRC.
    private mutating func readPAT(_ body: ArraySlice<UInt8>) {
        guard body.count >= 5 + 4 else { return }
        var index = body.startIndex + 5
        while index + 4 <= body.endIndex - 4 {
            let program = Int(body[index]) << 8 | Int(body[index + 1])
            let pid = Int(body[index + 2] & 0x1F) << 8 | Int(body[index + 3])
            if program != 0 {
                if pmtPID != pid { pmtPID = pid }
                return
            }
            index += 4
        }
    }

    /// PMT body: 5 bytes of header, PCR PID, program info, then (type, PID, ES info) entries.
    private mutating func readPMT(_ body: ArraySlice<UInt8>) {
        guard body.count >= 9 + 4 else { return }
        let start = body.startIndex
        let programInfoLength = Int(body[start + 7] & 0x0F) << 8 | Int(body[start + 8])
        var index = start + 9 + programInfoLength
        let end = body.endIndex - 4
        var found: [Int: TSStreamKind] = [:]
        while index + 5 <= end {
            let streamType = body[index]
            let pid = Int(body[index + 1] & 0x1F) << 8 | Int(body[index + 2])
            let infoLength = Int(body[index + 3] & 0x0F) << 8 | Int(body[index + 4])
            switch streamType {
            case 0x0F: found[pid] = .aacADTS
            case 0x03, 0x04: found[pid] = .mpegAudio
            case 0x15: found[pid] = .timedID3
            default: break
            }
            index += 5 + infoLength
        }
        // A repeated PMT keeps the streams (and their PES in progress) it still lists.
        streams.removeAll { found[$0.pid] != $0.kind }
        for (pid, kind) in found.sorted(by: { $0.key < $1.key }) where !streams.contains(where: { $0.pid == pid }) {
            guard streams.count < 16 else { break }
            var stream = ElementaryStream(pid: pid, kind: kind)
            if let carried = continuing.firstIndex(where: { $0.pid == pid && $0.kind == kind }) {
                // Its next packet must continue the counter and start no new PES, or it is dropped.
                let unfinished = continuing.remove(at: carried)
                (stream.buffer, stream.assembling, stream.continuity) = (unfinished.bytes, true, unfinished.continuity)
            }
            streams.append(stream)
        }
    }

    // MARK: PES

    private mutating func readPESPacket(index: Int, unitStart: Bool, continuity: UInt8, payload: ArraySlice<UInt8>,
                                        _ emit: (TSEvent) -> Void) {
        let pid = streams[index].pid
        if let previous = streams[index].continuity, !unitStart || streams[index].assembling {
            if continuity == previous {
                return  // a duplicate packet (allowed once by the standard)
            }
            if continuity != (previous + 1) & 0x0F, streams[index].assembling {
                streams[index].assembling = false
                streams[index].buffer.removeAll(keepingCapacity: true)
                streams[index].continuity = continuity
                emit(.droppedPayload(pid: pid, reason: .continuityError))
                // The PES cut off is lost; one that starts here is whole.
                guard unitStart else { return }
            }
        }
        streams[index].continuity = continuity
        if unitStart {
            flush(index: index, emit)
            streams[index].assembling = true
        }
        guard streams[index].assembling else { return }
        guard streams[index].buffer.count + payload.count <= maxPESLength else {
            streams[index].assembling = false
            streams[index].buffer.removeAll(keepingCapacity: true)
            emit(.droppedPayload(pid: pid, reason: .tooLarge))
            return
        }
        streams[index].buffer.append(contentsOf: payload)
        // A PES whose length field says it is complete goes out now rather than at the next start.
        if let declared = PESHeader.declaredTotalLength(streams[index].buffer), streams[index].buffer.count >= declared {
            flush(index: index, emit)
        }
    }

    /// Emits the PES being assembled for the stream at `index`, if any.
    private mutating func flush(index: Int, _ emit: (TSEvent) -> Void) {
        guard streams[index].assembling else { return }
        let stream = streams[index]
        streams[index].assembling = false
        defer { streams[index].buffer.removeAll(keepingCapacity: true) }
        let buffer = stream.buffer
        switch PESHeader.read(buffer) {
        case .success(let header):
            if let declared = header.declaredTotalLength, declared > buffer.count {
                emit(.droppedPayload(pid: stream.pid, reason: .truncated))
                return
            }
            let end = header.declaredTotalLength ?? buffer.count
            emit(.payload(TSPayload(kind: stream.kind, pid: stream.pid, pts: header.pts, bytes: buffer[header.headerLength..<end])))
        case .failure(let reason):
            emit(.droppedPayload(pid: stream.pid, reason: reason))
        }
    }
}

/// The start of a PES packet: `00 00 01`, stream id, 16-bit length, and (for audio and private
/// streams) the optional header with PTS/DTS.
struct PESHeader {
    var headerLength: Int
    var pts: UInt64?
    /// Header and payload, when the length field is not 0.
    var declaredTotalLength: Int?

    static func declaredTotalLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 6 else { return nil }
        let length = Int(bytes[4]) << 8 | Int(bytes[5])
        return length == 0 ? nil : 6 + length
    }

    static func read(_ bytes: [UInt8]) -> Result<PESHeader, TSDropReason> {
        guard bytes.count >= 9, bytes[0] == 0, bytes[1] == 0, bytes[2] == 1 else { return .failure(.malformedHeader) }
        let headerDataLength = Int(bytes[8])
        let headerLength = 9 + headerDataLength
        guard bytes[6] & 0xC0 == 0x80, headerLength <= bytes.count else { return .failure(.malformedHeader) }
        if let declared = declaredTotalLength(bytes), declared < headerLength { return .failure(.malformedHeader) }
        var pts: UInt64?
        if bytes[7] & 0x80 != 0 {
            guard headerDataLength >= 5 else { return .failure(.malformedHeader) }
            pts = UInt64(bytes[9] & 0x0E) << 29 | UInt64(bytes[10]) << 22 | UInt64(bytes[11] & 0xFE) << 14
                | UInt64(bytes[12]) << 7 | UInt64(bytes[13]) >> 1
        }
        return .success(PESHeader(headerLength: headerLength, pts: pts, declaredTotalLength: declaredTotalLength(bytes)))
    }
}
