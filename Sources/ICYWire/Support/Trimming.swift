/// Drops leading and trailing whitespace, CR and LF included.
package func trimmed(_ text: Substring) -> String {
    let start = text.firstIndex { !$0.isWhitespace } ?? text.endIndex
    guard start < text.endIndex, let last = text.lastIndex(where: { !$0.isWhitespace }) else { return "" }
    return String(text[start...last])
}
