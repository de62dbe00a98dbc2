// swift-tools-version: 6.0
// airtap: an internet-radio recorder, player and relay.
//
// Layers (arrows point down only; docs/architecture.md has the map):
//   airtap, airtap-teststation          executables: commands, exit codes
//   AirtapKit, AirtapRelay              the jobs: record, play, probe, schedule; relay, serve, push
//   AirtapPlayback, AirtapRecording,    the domains, each over the ones after it: the player, the
//   AirtapCuts, AirtapIngest,           recorder and library, where a track ends, connections and
//   AirtapStations, AirtapSupport       events, stations.json and the directory, what all share
//   TestStation                         the synthetic ICY station (tests, demo, benchmarks)
//   CurlSource, MPG123Decoding, AACDecoding, OggDecoding, ALSAPlayback, LameEncoding, ID3Tagging, ShoutSource,
//   LoudnessMeasuring, DesktopBus, SQLiteStore, AudioFingerprinting, AESDecryption
//                                       thin Swift adapters, one per C library
//   AudioDecoding                       the decoder interface every codec adapter implements
//   ICYWire, HLSWire, RecordingRules    pure Swift wire formats and naming rules: no C, no I/O
//   Locking                             Locked<Value>, PosixThread: pthreads ThreadSanitizer can check
//   Descriptors                         DescriptorHeadroom: the descriptors left to the runtime
//   CCurl, CMPG123, CFAAD2, CVorbis, COpus, CALSA, CLame, CID3Tag, CShout, CEBUR128, CSystemdBus, CSQLite, CChromaprint, CCrypto   system libraries (modulemap + tiny shim)
import PackageDescription

/// What the application's test targets may use: the shared test support and everything below it.
let applicationTestDependencies: [Target.Dependency] = [
    "AirtapTestSupport",
    "AirtapKit", "AirtapRelay", "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "AirtapPlayback",
    "HLSWire", "RecordingRules", "CurlSource", "ICYWire",
    "TestStation", "LameEncoding", "Locking", "ShoutSource", "AudioFingerprinting", "SplitFixtures",
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    // EmbeddedChannel: the relay's handlers on virtual time, without sockets.
    .product(name: "NIOEmbedded", package: "swift-nio"),
]

let package = Package(
    name: "airtap",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "airtap", targets: ["airtap"]),
        .executable(name: "airtap-teststation", targets: ["airtap-teststation"]),
        .executable(name: "airtap-bench", targets: ["airtap-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // FileDescriptor.writeAll and Errno (swift-nio depends on it already).
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // Deque for the queues and rings (swift-nio depends on it already).
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    ],
    targets: [
        // C libraries from Debian's -dev packages (tools/install-deps).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMPG123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CLame", pkgConfig: "lame", providers: [.apt(["libmp3lame-dev"])]),
        .systemLibrary(name: "CID3Tag", pkgConfig: "id3tag", providers: [.apt(["libid3tag0-dev"])]),
        // Not linked: opened on first use (ShoutSource's ShoutLibrary).
        .systemLibrary(name: "CShout", providers: [.apt(["libshout3-dev"])]),
        .systemLibrary(name: "CFAAD2", pkgConfig: "faad2", providers: [.apt(["libfaad-dev"])]),
        .systemLibrary(name: "CVorbis", pkgConfig: "vorbis", providers: [.apt(["libvorbis-dev", "libogg-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CEBUR128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
        .systemLibrary(name: "CSystemdBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Not linked: opened on first use (AudioFingerprinting's ChromaprintLibrary).
        .systemLibrary(name: "CChromaprint", providers: [.apt(["libchromaprint-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Wire formats: pure Swift.
        .target(name: "ICYWire"),
        // HLS: playlists, MPEG-TS and fMP4 segments, timed ID3. Pure Swift, over ICYWire's frames.
        .target(name: "HLSWire", dependencies: ["ICYWire"]),
        // What a recording is named and tagged by: safe file names and templates, title patterns,
        // cue sheets, ReplayGain texts. Pure Swift.
        .target(name: "RecordingRules", dependencies: ["ICYWire"]),

        // A lock ThreadSanitizer can see (Synchronization.Mutex on Linux it cannot), and a thread
        // without Foundation's Thread.
        .target(name: "Locking"),

        // The descriptors airtap leaves to the runtime: every layer that opens one (curl's sockets,
        // the recorder's files) admits it here, so this sits below them all.
        .target(name: "Descriptors"),

        // The decoder interface (packets in, PCM out): the player and the split search see only
        // this; each codec's adapter implements it.
        .target(name: "AudioDecoding"),

        // Adapters over the C libraries.
        .target(name: "CurlSource", dependencies: ["CCurl", "ICYWire", "Locking", "Descriptors"]),
        .target(name: "MPG123Decoding", dependencies: ["CMPG123", "AudioDecoding"]),
        // FAAD2: AAC LC, HE-AAC (SBR) and HE-AAC v2 (PS) in ADTS.
        .target(name: "AACDecoding", dependencies: ["CFAAD2", "AudioDecoding"]),
        // Ogg Vorbis (libvorbis) and Ogg Opus (libopus) decoders: whole Ogg pages in.
        .target(name: "OggDecoding", dependencies: ["CVorbis", "COpus", "AudioDecoding", "ICYWire"]),
        .target(name: "ALSAPlayback", dependencies: ["CALSA"]),
        .target(name: "LameEncoding", dependencies: ["CLame"]),
        .target(name: "ID3Tagging", dependencies: ["CID3Tag", "ICYWire"]),
        // libebur128: EBU R128 loudness of decoded audio (ReplayGain tags of recorded tracks).
        .target(name: "LoudnessMeasuring", dependencies: ["CEBUR128"]),
        // libcrypto: AES-128-CBC for HLS segments encrypted with METHOD=AES-128.
        .target(name: "AESDecryption", dependencies: ["CCrypto"]),
        // libshout: airtap as an Icecast/SHOUTcast source client (relay --to icecast://).
        .target(name: "ShoutSource", dependencies: ["CShout"]),
        // sd-bus: a D-Bus session connection whose descriptor the curl loop waits on (MPRIS, notifications).
        .target(name: "DesktopBus", dependencies: ["CSystemdBus"]),
        // libsqlite3: the library index. Direct, not GRDB: a dozen statements need no query
        // builder, and GRDB would add its own clean build to every CI run.
        .target(name: "SQLiteStore", dependencies: ["CSQLite"]),
        // libchromaprint (opened with dlopen on first use): audio fingerprints for the library's dedupe.
        .target(name: "AudioFingerprinting", dependencies: ["CChromaprint"]),

        // The synthetic station.
        .target(name: "TestStation", dependencies: [
            "LameEncoding", "ICYWire", "Locking", "CCrypto",
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),

        // The application layer, one module per domain, each over the ones before it.
        // What every layer shares: errors, the state folder, the terminal, logs, --json lines.
        .target(name: "AirtapSupport", dependencies: [
            "ICYWire", "Locking", "Descriptors",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // stations.json, its settings, and the public station directory.
        .target(name: "AirtapStations", dependencies: [
            "AirtapSupport", "ICYWire", "CurlSource", "Locking", "LameEncoding",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // One station's connection (ICY or HLS) to events in stream order, fanned out to sinks;
        // the decoder each codec needs.
        .target(name: "AirtapIngest", dependencies: [
            "AirtapSupport", "AirtapStations", "ICYWire", "HLSWire", "CurlSource", "Locking", "Descriptors",
            "AESDecryption", "AudioDecoding", "MPG123Decoding", "AACDecoding", "OggDecoding", "ID3Tagging",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // Where a track ends: the split search, the song-edge finder, each station's title delay.
        .target(name: "AirtapCuts", dependencies: [
            "AirtapSupport", "AirtapStations", "AirtapIngest", "ICYWire", "Locking", "AudioDecoding",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // One tagged file per track, the library index, MP3 transcoding.
        .target(name: "AirtapRecording", dependencies: [
            "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "ICYWire", "RecordingRules", "Locking", "Descriptors",
            "AudioDecoding", "ID3Tagging", "LoudnessMeasuring", "SQLiteStore", "AudioFingerprinting", "LameEncoding",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // The live player (decoder, then ALSA), its terminal, and the desktop (MPRIS).
        .target(name: "AirtapPlayback", dependencies: [
            "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "ICYWire", "Locking",
            "AudioDecoding", "ALSAPlayback", "DesktopBus",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "DequeModule", package: "swift-collections"),
        ]),
        // The jobs (record, play, probe, schedule) and their plans: what commands and tests run.
        .target(name: "AirtapKit", dependencies: [
            "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "AirtapPlayback",
            "ICYWire", "HLSWire", "RecordingRules", "Locking", "Descriptors", "CurlSource", "AudioDecoding", "DesktopBus",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "DequeModule", package: "swift-collections"),
        ]),

        // The relay job: `relay --to` (file or stdout) and `serve` (the SwiftNIO ICY server).
        .target(name: "AirtapRelay", dependencies: [
            "AirtapKit", "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "AirtapPlayback", "CurlSource", "ICYWire", "HLSWire", "Locking", "ShoutSource",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),

        .executableTarget(
            name: "airtap",
            dependencies: [
                "AirtapKit", "AirtapRelay", "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "AirtapPlayback",
                "RecordingRules",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Release builds link the Swift runtime and Foundation statically (what
            // `--static-swift-stdlib` does, for this executable only): binding a dozen Swift shared
            // libraries was most of airtap's start-up (CPU before the connect: 38 -> 24 ms; RSS
            // 5 MB less). Debug and sanitizer builds link as before. `-z now` (what Debian's
            // hardening calls bindnow): every symbol is bound at start, so the GOT is read-only
            // with the rest of RELRO before any input arrives. The rest is resident memory: the
            // toolchain's lld packs the position-independent binary's relocations (DT_RELR,
            // glibc 2.36: 1.4 MB of them become 12 kB), and nothing loads into airtap that would
            // look up its symbols, so it exports none (the static runtime's `-export-dynamic`
            // put 450 kB of symbols and 1 MB of their names in every process).
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))],
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "now",
                                           "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                           "-Xlinker", "--no-export-dynamic"], .when(configuration: .release))]
        ),
        .executableTarget(name: "airtap-teststation", dependencies: [
            "TestStation",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // `make bench`'s in-memory throughput benchmark (parse, record to a RAM folder); small on purpose.
        .executableTarget(name: "airtap-bench", dependencies: [
            "AirtapKit", "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "AirtapPlayback", "ICYWire", "TestStation",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Seeded random splits of a byte stream, shared by the parsers' drip-feed tests.
        .target(name: "SplitFixtures", path: "Tests/SplitFixtures"),
        // TestStation: its ChildProcesses starts every child of the one test process (ffmpeg among them).
        .testTarget(name: "ICYWireTests", dependencies: ["ICYWire", "SplitFixtures", "TestStation"]),
        .testTarget(name: "HLSWireTests", dependencies: ["HLSWire", "ICYWire", "SplitFixtures", "TestStation"]),
        .testTarget(name: "RecordingRulesTests", dependencies: ["RecordingRules", "ICYWire", "SplitFixtures"]),
        .testTarget(name: "AdapterTests", dependencies: [
            "AESDecryption", "LameEncoding", "AudioDecoding", "MPG123Decoding", "AACDecoding", "OggDecoding", "ALSAPlayback", "ID3Tagging",
            "ICYWire", "LoudnessMeasuring", "TestStation",
        ]),
        .testTarget(name: "TestStationTests", dependencies: ["TestStation", "ICYWire", "AESDecryption"]),
        // The command line's validate() rules, through Airtap.parseAsRoot (no process).
        .testTarget(name: "AirtapCLITests", dependencies: [
            "airtap", "AirtapKit", "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording", "AirtapPlayback", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // What the integration tests share: the airtap binary run as a user runs it, test servers
        // (Icecast, relay listeners, the directory), real music, collecting sinks.
        .target(name: "AirtapTestSupport", dependencies: [
            "AirtapKit", "AirtapRelay", "AirtapSupport", "AirtapStations", "AirtapIngest", "AirtapCuts", "AirtapRecording",
            "AirtapPlayback", "CurlSource", "ICYWire", "TestStation", "Locking", "AudioFingerprinting", "SplitFixtures",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ], path: "Tests/AirtapTestSupport"),
    ] + [
        // One test target per module; the integration tests of the jobs and the command line (the
        // binary run as a user runs it, against real servers) are the kit's.
        "AirtapKitTests", "AirtapSupportTests", "AirtapStationsTests", "AirtapIngestTests", "AirtapCutsTests",
        "AirtapRecordingTests", "AirtapPlaybackTests", "AirtapRelayTests", "CurlSourceTests",
    ].map { .testTarget(name: $0, dependencies: applicationTestDependencies) },
    swiftLanguageModes: [.v6]
)
