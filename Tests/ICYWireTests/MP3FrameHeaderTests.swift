import Testing
@testable import ICYWire

@Suite struct MP3FrameHeaderTests {
    @Test func mpeg1Layer3At128kbps() throws {
        let header = try #require(MP3FrameHeader(0xFF, 0xFB, 0x90, 0x44))
        #expect(header.version == .mpeg1)
        #expect(header.layer == .layer3)
        #expect(header.bitrate == 128_000)
        #expect(header.sampleRate == 44100)
        #expect(!header.hasPadding)
        #expect(!header.hasCRC)
        #expect(header.channelMode == .jointStereo)
        #expect(header.channels == 2)
        #expect(header.samplesPerFrame == 1152)
        #expect(header.frameLength == 417)
        #expect(MP3FrameHeader(0xFF, 0xFB, 0x92, 0x44)?.frameLength == 418)
    }

    @Test func frameLengthsAcrossVersionsAndLayers() throws {
        // (bytes, sample rate, samples per frame, frame length)
        let cases: [([UInt8], Int, Int, Int)] = [
            ([0xFF, 0xF3, 0x80, 0xC0], 22050, 576, 208),  // MPEG-2 L3 64k mono: 72*64000/22050
            ([0xFF, 0xF3, 0x82, 0xC0], 22050, 576, 209),  // same, padded
            ([0xFF, 0xE3, 0x10, 0xC0], 11025, 576, 52),  // MPEG-2.5 L3 8k: 72*8000/11025
            ([0xFF, 0xE3, 0x18, 0xC0], 8000, 576, 72),  // MPEG-2.5 L3 8k
            ([0xFF, 0xFD, 0xA4, 0x00], 48000, 1152, 576),  // MPEG-1 L2 192k: 144*192000/48000
            ([0xFF, 0xF5, 0x80, 0x00], 22050, 1152, 417),  // MPEG-2 L2 64k: 144*64000/22050
            ([0xFF, 0xFF, 0xC0, 0x00], 44100, 384, 416),  // MPEG-1 L1 384k: (12*384000/44100)*4
            ([0xFF, 0xFF, 0xC2, 0x00], 44100, 384, 420),  // same, padded by one 4-byte slot
            ([0xFF, 0xF7, 0xE4, 0x00], 24000, 384, 512),  // MPEG-2 L1 256k: (12*256000/24000)*4
        ]
        for (bytes, sampleRate, samples, length) in cases {
            let header = try #require(MP3FrameHeader(bytes), "\(bytes)")
            #expect(header.sampleRate == sampleRate, "\(bytes)")
            #expect(header.samplesPerFrame == samples, "\(bytes)")
            #expect(header.frameLength == length, "\(bytes)")
        }
        #expect(MP3FrameHeader([0xFF, 0xFA, 0x90, 0x44])?.hasCRC == true)
    }

    @Test func rejectsInvalidHeaders() {
        #expect(MP3FrameHeader(0xFE, 0xFB, 0x90, 0x44) == nil)  // no sync
        #expect(MP3FrameHeader(0xFF, 0xCB, 0x90, 0x44) == nil)  // sync cut short
        #expect(MP3FrameHeader(0xFF, 0xEB, 0x90, 0x44) == nil)  // reserved version 01
        #expect(MP3FrameHeader(0xFF, 0xF9, 0x90, 0x44) == nil)  // reserved layer 00
        #expect(MP3FrameHeader(0xFF, 0xFB, 0x00, 0x44) == nil)  // free format
        #expect(MP3FrameHeader(0xFF, 0xFB, 0xF0, 0x44) == nil)  // bitrate index 15
        #expect(MP3FrameHeader(0xFF, 0xFB, 0x9C, 0x44) == nil)  // reserved sample rate
        #expect(MP3FrameHeader(0xFF, 0xFB, 0x90, 0x46) == nil)  // reserved emphasis
        #expect(MP3FrameHeader([0xFF, 0xFB, 0x90]) == nil)  // too few bytes
        #expect(MP3FrameHeader([0xFF, 0xFB, 0x90, 0x44, 0x00]) != nil)  // only the first four count
    }

    @Test func everyByteCombinationIsSafe() {
        // The whole b1/b2 space with two b3 values: no traps, and every accepted header
        // has a frame longer than its header.
        for b1 in 0...255 {
            for b2 in 0...255 {
                for b3: UInt8 in [0x00, 0xC3] {
                    if let header = MP3FrameHeader(0xFF, UInt8(b1), UInt8(b2), b3) {
                        #expect(header.frameLength > 4)
                    }
                }
            }
        }
    }
}

@Suite struct ADTSAndID3HeaderTests {
    @Test func adtsHeader() throws {
        let frame = Fixtures.adtsFrame(length: 371)
        let header = try #require(ADTSHeader(frame))
        #expect(header.profile == 2)
        #expect(header.sampleRate == 44100)
        #expect(header.channelConfiguration == 2)
        #expect(header.channels == 2)
        #expect(header.frameLength == 371)
        #expect(header.rawDataBlocks == 1)
        #expect(header.samplesPerFrame == 1024)
        #expect(!header.hasCRC)
        #expect(header.headerLength == 7)
        let audio = AudioFrameHeader.adts(header)
        #expect(audio.codec == .aac)
        #expect(audio.bitrate == 371 * 8 * 44100 / 1024)
    }

    @Test func adtsRejects() {
        var frame = Fixtures.adtsFrame(length: 371)
        #expect(ADTSHeader(frame.prefix(6)) == nil)
        frame[1] = 0xF3  // layer 01
        #expect(ADTSHeader(frame) == nil)
        frame = Fixtures.adtsFrame(length: 371)
        frame[2] = (frame[2] & ~0x3C) | 13 << 2  // sampling index 13
        #expect(ADTSHeader(frame) == nil)
        #expect(ADTSHeader(Fixtures.adtsFrame(length: 6)) == nil)  // shorter than its header
        var protected = Fixtures.adtsFrame(length: 8)
        protected[1] = 0xF0  // CRC present: the header is 9 bytes
        #expect(ADTSHeader(protected) == nil)
    }

    @Test func probeSeparatesMissingBytesFromInvalid() {
        let frame = Fixtures.mpegFrame()
        frame.withUnsafeBytes { raw in
            #expect(AudioFrameHeader.probe(UnsafeRawBufferPointer(rebasing: raw[0..<3]), at: 0) == .needMoreBytes)
            #expect(AudioFrameHeader.probe(raw, at: 1) == .invalid)
            #expect(AudioFrameHeader(at: raw, offset: 0)?.codec == .mp3)
            #expect(AudioFrameHeader(at: raw, offset: frame.count) == nil)
        }
        let adts = Fixtures.adtsFrame(length: 100)
        adts.withUnsafeBytes { raw in
            #expect(AudioFrameHeader.probe(UnsafeRawBufferPointer(rebasing: raw[0..<6]), at: 0) == .needMoreBytes)
            #expect(AudioFrameHeader(at: raw, offset: 0)?.frameLength == 100)
        }
    }

    @Test func compatibility() throws {
        let a = try #require(AudioFrameHeader(Fixtures.mpegFrame(.mp3_128k_44100)))
        var vbr = Fixtures.MPEGParameters.mp3_128k_44100
        vbr.bitrateIndex = 14
        vbr.channelModeBits = 0b00
        let b = try #require(AudioFrameHeader(Fixtures.mpegFrame(vbr)))
        let c = try #require(AudioFrameHeader(Fixtures.mpegFrame(.mpeg2_64k_22050)))
        let d = try #require(AudioFrameHeader(Fixtures.adtsFrame(length: 200)))
        #expect(a.isCompatible(with: b))
        #expect(!a.isCompatible(with: c))
        #expect(!a.isCompatible(with: d))
        #expect(d.isCompatible(with: try #require(AudioFrameHeader(Fixtures.adtsFrame(length: 400)))))
        #expect(abs(a.duration - 1152.0 / 44100.0) < 1e-12)
        #expect(AudioCodec.mp2.fileExtension == "mp2")
        #expect(AudioCodec.aac.mimeType == "audio/aac")
        #expect(c.codec == .mp3)
    }

    @Test func id3v2Header() throws {
        let tag = Fixtures.id3Tag(bodyLength: 300)
        let header = try #require(ID3v2Header(tag))
        #expect(header.majorVersion == 4)
        #expect(header.tagSize == 300)
        #expect(header.totalLength == 310)
        #expect(!header.hasFooter)
        var footer = tag
        footer[5] = 0x10
        #expect(ID3v2Header(footer)?.totalLength == 320)
        var big = tag
        big[6...9] = [0x7F, 0x7F, 0x7F, 0x7F]
        #expect(ID3v2Header(big)?.tagSize == (1 << 28) - 1)
        var bad = tag
        bad[8] = 0x80
        #expect(ID3v2Header(bad) == nil)  // not syncsafe
        bad = tag
        bad[3] = 5
        #expect(ID3v2Header(bad) == nil)
        bad = tag
        bad[4] = 0xFF
        #expect(ID3v2Header(bad) == nil)
        #expect(ID3v2Header(tag.prefix(9)) == nil)
    }
}

extension AudioFrameHeader {
    init?(_ bytes: [UInt8]) {
        guard let header = bytes.withUnsafeBytes({ AudioFrameHeader(at: $0, offset: 0) }) else { return nil }
        self = header
    }
}

@Suite("A held packet's size")
struct PacketLayoutTests {
    @Test("A packet is at most 64 bytes besides its audio: frame headers are stored narrow, an Ogg page's header is boxed (a station's split search holds hundreds of packets)")
    func packetIsSmall() {
        print("layout: MP3FrameHeader \(MemoryLayout<MP3FrameHeader>.size), ADTSHeader \(MemoryLayout<ADTSHeader>.size), AudioFrameHeader \(MemoryLayout<AudioFrameHeader>.size), Packet \(MemoryLayout<Packet>.size)/\(MemoryLayout<Packet>.stride)")
        #expect(MemoryLayout<AudioFrameHeader>.size <= 16)
        #expect(MemoryLayout<Packet>.stride <= 64)
    }
}
