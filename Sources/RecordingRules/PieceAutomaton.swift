import ICYWire

/// An Aho-Corasick automaton over the literal pieces of every pattern in a list: one pass over a
/// title says which pieces occur in it, whatever the number of patterns. A pattern whose piece
/// does not occur cannot match, so a list of thousands of lines costs the title's length plus
/// the few patterns worth checking, not the title's length once per line.
///
/// Symbols are the list's character numbers (`TitleMatcher.Alphabet`); a title character the
/// list never names has a negative number, which no edge carries.
struct PieceAutomaton: Sendable {
    /// Node 0 is the root (the empty piece).
    private var edges: [UInt64: Int32] = [:]
    private var parent: [Int32] = [0]
    private var symbol: [Int32] = [0]
    private var depth: [Int32] = [0]
    private var isTerminal: [Bool] = [false]
    /// The longest proper suffix of a node's string that is also a node.
    private var fail: [Int32] = [0]
    /// The nearest terminal node on the fail chain (the node itself excluded), or -1.
    private var outputLink: [Int32] = [-1]

    private static func key(_ node: Int32, _ symbol: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: node)) << 32 | UInt64(UInt32(bitPattern: symbol))
    }

    /// Adds a piece and returns its node, the one `occurring(in:)` reports when it occurs.
    mutating func insert(_ piece: some Collection<Int32>) -> Int32 {
        var node: Int32 = 0
        for character in piece {
            if let next = edges[Self.key(node, character)] {
                node = next
                continue
            }
            let next = Int32(parent.count)
            edges[Self.key(node, character)] = next
            parent.append(node)
            symbol.append(character)
            depth.append(depth[Int(node)] + 1)
            isTerminal.append(false)
            node = next
        }
        isTerminal[Int(node)] = true
        return node
    }

    /// Computes the fail and output links, shallowest nodes first; call once after the inserts.
    mutating func finish() {
        let count = parent.count
        fail = Array(repeating: 0, count: count)
        outputLink = Array(repeating: -1, count: count)
        // A node's fail link is shallower than the node: a counting sort by depth orders them.
        var buildSteps = 0
        var byDepth = Array(repeating: [Int32](), count: Int(depth.max() ?? 0) + 1)
        for node in 1..<count { byDepth[Int(depth[node])].append(Int32(node)) }
        for node in byDepth.joined() {
            let from = parent[Int(node)]
            let link = from == 0 ? 0 : transition(from: fail[Int(from)], on: symbol[Int(node)], steps: &buildSteps)
            fail[Int(node)] = link
            outputLink[Int(node)] = isTerminal[Int(link)] ? link : outputLink[Int(link)]
        }
    }

    /// The state after reading `character` in state `state`, following fail links as needed.
    private func transition(from state: Int32, on character: Int32, steps: inout Int) -> Int32 {
        var state = state
        while true {
            steps += 1
            if let next = edges[Self.key(state, character)] { return next }
            if state == 0 { return 0 }
            state = fail[Int(state)]
        }
    }

    /// The terminal nodes of every piece that occurs in `title`. Each character costs one step
    /// plus the fail links it follows (no more than the characters read before it, in total),
    /// and each terminal node is reported once.
    func occurring(in title: [Int32], steps: inout Int) -> Set<Int32> {
        var found = Set<Int32>()
        var state: Int32 = 0
        for character in title {
            state = transition(from: state, on: character, steps: &steps)
            var node = isTerminal[Int(state)] ? state : outputLink[Int(state)]
            // A node already reported had its whole output chain reported with it.
            while node >= 0, found.insert(node).inserted {
                steps += 1
                node = outputLink[Int(node)]
            }
        }
        return found
    }
}
