import CChromaprint
import Glibc

/// libchromaprint's functions, opened the first time a fingerprint is made. Linked, it would be
/// loaded into every airtap process at start, and with it libavcodec and some seventy libraries
/// more (its FFT comes from FFmpeg): about 16 MB of resident memory and 20-40 ms before `play`
/// hears anything, for a feature only recording into the library and `library scan` use.
struct ChromaprintLibrary: @unchecked Sendable {
    // Why @unchecked Sendable is sound: the fields are C function pointers, set once when the
    // library is opened and never changed; the library is never closed, so they stay valid, and
    // the functions are called on contexts that each belong to one thread.
    let new: @convention(c) (Int32) -> OpaquePointer?
    let free: @convention(c) (OpaquePointer?) -> Void
    let start: @convention(c) (OpaquePointer?, Int32, Int32) -> Int32
    let feed: @convention(c) (OpaquePointer?, UnsafePointer<Int16>?, Int32) -> Int32
    let finish: @convention(c) (OpaquePointer?) -> Int32
    let rawFingerprint: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<UInt32>?>?,
                                        UnsafeMutablePointer<Int32>?) -> Int32
    let dealloc: @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// The runtime package's soname (libchromaprint1); the unversioned name is only in -dev.
    static let soname = "libchromaprint.so.1"

    /// Opened once per process, on first use.
    static let shared: Result<ChromaprintLibrary, FingerprintError> = open()

    private static func open() -> Result<ChromaprintLibrary, FingerprintError> {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(FingerprintError(description: "Chromaprint cannot be loaded (\(reason)); install libchromaprint1"))
        }
        func symbol<Function>(_ name: String, as type: Function.Type) throws(FingerprintError) -> Function {
            guard let address = dlsym(handle, name) else {
                throw FingerprintError(description: "\(soname) has no \(name)")
            }
            return unsafeBitCast(address, to: type)
        }
        do throws(FingerprintError) {
            return .success(ChromaprintLibrary(
                new: try symbol("chromaprint_new", as: (@convention(c) (Int32) -> OpaquePointer?).self),
                free: try symbol("chromaprint_free", as: (@convention(c) (OpaquePointer?) -> Void).self),
                start: try symbol("chromaprint_start", as: (@convention(c) (OpaquePointer?, Int32, Int32) -> Int32).self),
                feed: try symbol("chromaprint_feed", as: (@convention(c) (OpaquePointer?, UnsafePointer<Int16>?, Int32) -> Int32).self),
                finish: try symbol("chromaprint_finish", as: (@convention(c) (OpaquePointer?) -> Int32).self),
                rawFingerprint: try symbol("chromaprint_get_raw_fingerprint",
                                           as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<UInt32>?>?,
                                                                UnsafeMutablePointer<Int32>?) -> Int32).self),
                dealloc: try symbol("chromaprint_dealloc", as: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)))
        } catch {
            return .failure(error)
        }
    }

    /// Chromaprint's default algorithm (the header's constant: the same in every 1.x).
    static let defaultAlgorithm = Int32(CHROMAPRINT_ALGORITHM_DEFAULT.rawValue)
}
