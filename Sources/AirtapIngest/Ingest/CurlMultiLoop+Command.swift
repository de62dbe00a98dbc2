import AirtapSupport
import CurlSource

extension CurlMultiLoop {
    /// The network loop for a command: running out of descriptors is a local error (exit 3).
    /// `batching`: how long the loop may let network data gather between turns (see
    /// `CurlMultiLoop.open(batching:)`): what a recorder saves in wake-ups, a player pays in latency.
    package static func forCommand(batching: Duration = .zero) throws(AirtapError) -> CurlMultiLoop {
        do {
            return try CurlMultiLoop.open(batching: batching)
        } catch {
            if error.kind == .descriptorsExhausted {
                throw .localIO("cannot start the network loop: \(DescriptorLimit.advice)")
            }
            throw .localIO(error.message)
        }
    }
}
