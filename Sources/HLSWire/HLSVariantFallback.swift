import ICYWire

/// Which of a master playlist's media playlists to follow: the best one that has not failed
/// lately. A variant whose playlist or segments fail is set aside for `setAsideSeconds`, and the
/// next best is used, as ffmpeg and mpv play another variant; when every one is set aside, the
/// one whose time is nearest its end is tried again rather than none.
///
/// Pure: the caller passes the time (seconds on any monotonic clock) and the candidates, best
/// first (`HLSMasterPlaylist.rankedVariants`), named by their media playlist's URL.
package struct HLSVariantFallback: Sendable, Hashable {
    package var setAsideSeconds: Double
    /// Bounds what is remembered: a master playlist may list thousands of variants.
    package static let maxRemembered = 64
    private var setAsideUntil: [String: Double] = [:]

    package init(setAsideSeconds: Double = 120) {
        self.setAsideSeconds = setAsideSeconds
    }

    /// The first candidate not set aside at `now`; else the one set aside the longest ago.
    package func choose(_ candidates: [String], now: Double) -> String? {
        if let usable = candidates.first(where: { !isSetAside($0, now: now) }) { return usable }
        return candidates.min { (setAsideUntil[$0] ?? now) < (setAsideUntil[$1] ?? now) }
    }

    /// The next candidate to move to after `failing` failed at `now`, which is set aside; nil when
    /// every other candidate is set aside too (then staying is as good as moving).
    package mutating func next(after failing: String, among candidates: [String], now: Double) -> String? {
        setAside(failing, now: now)
        return candidates.first { $0 != failing && !isSetAside($0, now: now) }
    }

    package func isSetAside(_ candidate: String, now: Double) -> Bool {
        (setAsideUntil[candidate] ?? -.infinity) > now
    }

    private mutating func setAside(_ candidate: String, now: Double) {
        setAsideUntil = setAsideUntil.filter { $0.value > now }
        if setAsideUntil.count >= Self.maxRemembered { setAsideUntil.removeAll() }
        setAsideUntil[candidate] = now + setAsideSeconds
    }
}

/// One media playlist a master playlist offers: the variant, and the playlist that carries its
/// audio (the variant's own, or its `AUDIO` group's rendition).
package struct HLSMediaPlaylistChoice: Sendable, Hashable {
    package var variant: HLSVariant
    package var uri: String
}

extension HLSMasterPlaylist {
    /// The media playlists to follow, best first (`rankedVariants`), each URI once: variants
    /// that share an audio rendition share its playlist, and failing it fails them all.
    package func mediaPlaylistChoices(maxBitrate: Int? = nil) -> [HLSMediaPlaylistChoice] {
        var seen = Set<String>()
        return rankedVariants(maxBitrate: maxBitrate).compactMap { variant in
            let uri = audioPlaylistURI(of: variant)
            return seen.insert(uri).inserted ? HLSMediaPlaylistChoice(variant: variant, uri: uri) : nil
        }
    }

    /// A variant whose audio is a rendition of its own (`AUDIO="group"`): that rendition's playlist.
    package func audioPlaylistURI(of variant: HLSVariant) -> String {
        guard let group = variant.audioGroup else { return variant.uri }
        let renditions = audioRenditions.filter { $0.groupID == group && !$0.uri.isEmpty }
        return (renditions.first(where: \.isDefault) ?? renditions.first)?.uri ?? variant.uri
    }
}
