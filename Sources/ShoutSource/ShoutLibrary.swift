import CShout
import Glibc

/// libshout's functions, opened the first time airtap connects to an Icecast server as a source.
/// Linked, libshout would be loaded into every airtap process at start, and with it Debian's
/// libtheora and what that links (cairo, pixman, fontconfig, freetype, X11 and xcb): twenty
/// libraries and about 2 MB of resident memory in every recorder and player, for a feature only
/// `relay --to icecast://` uses.
struct ShoutLibrary: @unchecked Sendable {
    // Why @unchecked Sendable is sound: the fields are C function pointers, set once when the
    // library is opened and never changed; the library is never closed, so they stay valid, and
    // each `shout_t` they are called on belongs to one thread (`ShoutConnection` is not Sendable).
    typealias Setter = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    typealias Pair = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Int32
    typealias Call = @convention(c) (OpaquePointer?) -> Int32

    let new: @convention(c) () -> OpaquePointer?
    let free: @convention(c) (OpaquePointer?) -> Void
    let error: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    let setHost: Setter
    let setPort: @convention(c) (OpaquePointer?, UInt16) -> Int32
    let setPassword: Setter
    let setAgent: Setter
    let setTLS: @convention(c) (OpaquePointer?, Int32) -> Int32
    let setUser: Setter
    let setMount: Setter
    let setMeta: Pair
    let setAudioInfo: Pair
    let setProtocol: @convention(c) (OpaquePointer?, UInt32) -> Int32
    let setContentFormat: @convention(c) (OpaquePointer?, UInt32, UInt32, UnsafePointer<CChar>?) -> Int32
    let open: Call
    let close: Call
    let send: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int) -> Int32
    let metadataNew: @convention(c) () -> OpaquePointer?
    let metadataFree: @convention(c) (OpaquePointer?) -> Void
    let metadataAdd: Pair
    let setMetadataUTF8: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32

    /// The runtime package's soname (libshout3); the unversioned name is only in -dev.
    static let soname = "libshout.so.3"

    /// Opened, and `shout_init()` run (libshout wants it once per process before anything else),
    /// once per process on first use. There is no matching shutdown: the process ends with the
    /// library loaded.
    static let shared: Result<ShoutLibrary, ShoutConnection.ShoutError> = load()

    private static func load() -> Result<ShoutLibrary, ShoutConnection.ShoutError> {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(.init(kind: .configuration, detail: "libshout cannot be loaded (\(reason)); install libshout3"))
        }
        func symbol<Function>(_ name: String, as type: Function.Type = Function.self) throws(ShoutConnection.ShoutError) -> Function {
            guard let address = dlsym(handle, name) else {
                throw .init(kind: .configuration, detail: "\(soname) has no \(name)")
            }
            return unsafeBitCast(address, to: type)
        }
        do throws(ShoutConnection.ShoutError) {
            let initialize: @convention(c) () -> Void = try symbol("shout_init")
            let library = ShoutLibrary(
                new: try symbol("shout_new"), free: try symbol("shout_free"), error: try symbol("shout_get_error"),
                setHost: try symbol("shout_set_host"), setPort: try symbol("shout_set_port"),
                setPassword: try symbol("shout_set_password"), setAgent: try symbol("shout_set_agent"),
                setTLS: try symbol("shout_set_tls"), setUser: try symbol("shout_set_user"),
                setMount: try symbol("shout_set_mount"), setMeta: try symbol("shout_set_meta"),
                setAudioInfo: try symbol("shout_set_audio_info"), setProtocol: try symbol("shout_set_protocol"),
                setContentFormat: try symbol("shout_set_content_format"), open: try symbol("shout_open"),
                close: try symbol("shout_close"), send: try symbol("shout_send"),
                metadataNew: try symbol("shout_metadata_new"), metadataFree: try symbol("shout_metadata_free"),
                metadataAdd: try symbol("shout_metadata_add"), setMetadataUTF8: try symbol("shout_set_metadata_utf8"))
            initialize()
            return .success(library)
        } catch {
            return .failure(error)
        }
    }
}
