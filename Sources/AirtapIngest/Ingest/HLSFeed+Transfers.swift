import AESDecryption
import CurlSource
import HLSWire
import ICYWire
import Logging

/// The feed's transfers on the curl loop: the answers, bytes and ends of its playlist reloads,
/// keys, init segments and segments.
extension HLSFeed {
    func transfer(_ id: TransferID, didReceiveHead raw: TransferHead) -> Bool {
        loop.assertOnLoopThread()
        guard stage == .running else { return false }
        let head = try? ResponseHead.parse(statusLine: raw.statusLine, headerLines: raw.headerLines)
        let failure: String? = if let head {
            (200..<300).contains(head.statusCode) ? nil : "answered \(head.statusCode) \(head.reason)"
        } else {
            "malformed response: \(raw.statusLine)"
        }
        if var load = reload, load.transfer == id {
            load.failure = failure
            if !raw.effectiveURL.isEmpty { load.effectiveURL = raw.effectiveURL }
            reload = load
            return failure == nil
        }
        guard let download, download.transfer == id else { return false }
        // A web page where media, a key or an init segment belongs is a server's passing error
        // (a login wall, a CDN's error page): lost like a 404, retried like one.
        let reason = failure ?? head?.contentType.flatMap { type in
            type.lowercased().hasPrefix("text/html") ? "answered with a web page (\(type.lowercased())), not media" : nil
        }
        switch download {
        case .key, .initSegment:
            self.download = download.failingSmallBody(reason)
        case .segment(var fetch):
            if reason == nil, let range = fetch.segment.byteRange, range.length > 0 {
                // A server may ignore Range and send the whole resource: the segment is then the
                // range's bytes of it, never all of it.
                fetch.skip = head?.statusCode == 206 ? 0 : range.offset
                fetch.remaining = range.length
            }
            fetch.failure = reason
            self.download = .segment(fetch)
            if reason == nil, !hasAnswered, let head {
                fetch.firstAnswer = (raw.effectiveURL.isEmpty ? fetch.segment.uri : raw.effectiveURL, head)
                self.download = .segment(fetch)
            }
        }
        return reason == nil
    }

    func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision {
        loop.assertOnLoopThread()
        guard stage == .running else { return .abort }
        if var load = reload, load.transfer == id {
            guard load.body.count + bytes.count <= Self.maxPlaylistBytes else {
                load.failure = "the playlist is larger than \(Self.maxPlaylistBytes >> 20) MiB"
                reload = load
                return .abort
            }
            reload = nil  // hand the buffer over uniquely, so the append does not copy it
            load.body.append(contentsOf: bytes)
            reload = load
            return .accepted
        }
        guard let current = download, current.transfer == id else { return .abort }
        download = nil  // hand the body over uniquely, so the append does not copy it
        switch consume current {
        case .key(let id, let uri, var body):
            defer { download = .key(id, uri: uri, body) }
            return body.append(bytes)
        case .initSegment(let id, let map, var body):
            defer { download = .initSegment(id, map: map, body) }
            return body.append(bytes)
        case .segment(let fetch):
            return receive(bytes, into: fetch, id: id)
        }
    }

    /// A segment's bytes: bounded, the range's part of them decrypted and read.
    private func receive(_ bytes: UnsafeRawBufferPointer, into fetch: HLSSegmentFetch, id: TransferID) -> ReceiveDecision {
        var fetch = fetch
        guard fetch.failure == nil else {
            // A refused answer's body (an error page) is never media.
            download = .segment(fetch)
            return .abort
        }
        guard fetch.byteCount + bytes.count <= Self.maxSegmentBytes else {
            fetch.failure = "the segment is larger than \(Self.maxSegmentBytes >> 20) MiB"
            download = .segment(fetch)
            return .abort
        }
        // A segment arrives faster than the disk writes it: wait for the writer.
        let waits = congestion.isCongested && congestion.wait(on: loop) { [weak self] in
            guard let self, case .segment(var fetch) = self.download, fetch.transfer == id, fetch.isPaused else { return }
            fetch.isPaused = false
            self.download = .segment(fetch)
            self.loop.resume(id)
        }
        if waits {
            fetch.isPaused = true
            download = .segment(fetch)
            return .pause
        }
        fetch.byteCount += bytes.count
        var wanted = UnsafeRawBufferPointer(rebasing: bytes[...])
        if fetch.skip > 0 {
            let skipped = min(fetch.skip, wanted.count)
            fetch.skip -= skipped
            wanted = UnsafeRawBufferPointer(rebasing: wanted[skipped...])
        }
        if let remaining = fetch.remaining {
            wanted = UnsafeRawBufferPointer(rebasing: wanted.prefix(remaining))
            fetch.remaining = remaining - wanted.count
        }
        if !wanted.isEmpty {
            if let decryptor = fetch.decryptor {
                feed(decryptor.update(wanted)[...], into: &fetch)
            } else {
                feed(Array(wanted)[...], into: &fetch)
            }
        }
        download = .segment(fetch)
        // The range is whole: the rest of a 200 answer is not this segment's.
        return fetch.remaining == 0 ? .abort : .accepted
    }

    func transfer(_ id: TransferID, didCompleteWith end: TransferEnd) {
        loop.assertOnLoopThread()
        guard stage == .running else { return }
        let isReload = reload?.transfer == id
        guard isReload || download?.transfer == id else { return }
        if case .failed(let error) = end, error.kind == .descriptorsExhausted {
            // The transfer that ended is done; `conclude` cancels the other, if any.
            if isReload { reload = nil } else { download = nil }
            conclude(.descriptorsExhausted)
            return
        }
        if isReload, let load = reload {
            reload = nil
            completePlaylist(load, end: end)
            return
        }
        guard let current = download else { return }
        download = nil
        let transferFailure: String? = if case .failed(let error) = end { error.message } else { nil }
        switch current {
        case .key(_, let uri, let body):
            let key = body.bytes
            if let reason = body.failure ?? transferFailure ?? (key.count == AES128CBCDecryptor.keyLength ? nil : "the key is \(key.count) bytes, not 16") {
                // The segment that needed it is lost; the next one asks for the key again, so a
                // passing failure costs one segment and a lasting one ends as five in a row.
                if let segment = takeNext() { segmentFailed(segment, reason: "its key cannot be fetched: \(reason)") }
            } else {
                if keys.count >= 8 { keys.removeAll() }
                keys[uri] = key
            }
        case .initSegment(_, let map, let body):
            guard completeInitSegment(map, body: body.bytes, failure: body.failure ?? transferFailure) else { return }
        case .segment(let fetch):
            completeSegment(fetch, transferFailure: transferFailure)
        }
        pump()
    }

    /// An init segment fetched: kept for the segments that name it. False when the feed ends
    /// here, on a format airtap cannot read.
    private func completeInitSegment(_ map: HLSMap, body: [UInt8], failure: String?) -> Bool {
        let parsed = Result { () throws(FMP4Error) in try FMP4InitSegment.parse(body) }
        switch (failure, parsed) {
        case (nil, .success(let initSegment)):
            if initSegments.count >= 4 { initSegments.removeAll() }
            initSegments[map] = initSegment
        case (let reason?, _):
            if let segment = takeNext() { segmentFailed(segment, reason: "its init segment cannot be fetched: \(reason)") }
        case (nil, .failure(.notAnInitSegment)):
            // Not an init segment at all (an error page sent as 200): a bad answer, not a
            // format; the next segment asks for it again.
            if let segment = takeNext() { segmentFailed(segment, reason: "its init segment was answered with something else") }
        case (nil, .failure(let error)):
            conclude(.lost(.unsupportedFormat(url: URLCredentials.redacted(mediaURL), format: "an fMP4 init segment airtap cannot read (\(error))")))
            return false
        }
        return true
    }

    /// A segment fetched whole, or lost: its reader's last events, and the failures counted.
    private func completeSegment(_ fetch: HLSSegmentFetch, transferFailure: String?) {
        var fetch = fetch
        if let reason = fetch.failure ?? transferFailure {
            segmentFailed(fetch.segment, reason: reason)
        } else {
            if let decryptor = fetch.decryptor {
                do throws(AESDecryptionError) {
                    feed(try decryptor.finish()[...], into: &fetch)
                } catch {
                    logger.warning("an HLS segment's last block cannot be decrypted: \(error)", metadata: ["sequence": "\(fetch.segment.sequence)"])
                }
            }
            var audioBytes = 0
            let unfinished = fetch.reader.finish(keepingUnfinished: true) { handle($0, audioBytes: &audioBytes) }
            unfinishedPES = (fetch.segment.sequence, unfinished)
            if fetch.audioBytes + audioBytes == 0 {
                segmentFailed(fetch.segment, reason: "it holds no audio")
            } else {
                consecutiveFailures = 0
                variantSwitches = 0
            }
        }
    }

    private func completePlaylist(_ load: PlaylistLoad, end: TransferEnd) {
        let failure: String? = if let failure = load.failure { failure } else if case .failed(let error) = end { error.message } else { nil }
        let first = firstLoad
        if let failure {
            reloadFailed(failure, isFirst: first?.pending == true)
            return
        }
        // Cleared before reading: a master read here starts the first load of its variant.
        firstLoad = nil
        read(load.body, from: load.effectiveURL, loadStartedAt: load.startedAt, isFirst: first?.pending == true,
             fromMaster: first?.fromMaster == true)
    }
}
