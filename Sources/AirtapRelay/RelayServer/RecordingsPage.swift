import AirtapKit
import AirtapRecording
import FoundationEssentials

/// `/recordings`: the served library, newest first, a search box, a player per recording.
///
/// Built on the server, no script: everything from the index (titles, artists, stations, file
/// names) is escaped into it. The players load nothing until played (`preload="none"`), so a
/// page of hundreds of recordings opens no connection until a person presses play.
enum RecordingsPage {
    static let securityHeaders = [
        "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; media-src 'self'; form-action 'self'",
        "X-Content-Type-Options: nosniff",
        "Referrer-Policy: no-referrer",
    ]

    static func html(entries: [LibraryEntry], query: String?, limit: Int) -> String {
        let escape = RelayPage.escape
        let rows = entries.map { entry in
            let station = entry.stationName ?? entry.stationID ?? ""
            let file = String(entry.path.split(separator: "/").last ?? "")
            return """
                <li class="recording" data-id="\(entry.id)">
                  <p><span class="title">\(escape(entry.displayTitle))</span>\(entry.isComplete ? "" : " <span class=\"partial\">(partial)</span>")</p>
                  <p class="info"><span class="station">\(escape(station))</span> &middot; \
                <time>\(escape(String(LibraryEntry.utcStamp(entry.startedAt).dropLast()).replacingEvery("T", with: " "))) UTC</time> &middot; \
                <span class="length">\(escape(LibraryCatalog.length(entry.seconds)))</span> &middot; \
                <a class="file" href="/recordings/file/\(entry.id)">\(escape(file))</a></p>
                  <audio controls preload="none" src="/recordings/file/\(entry.id)"></audio>
                </li>
                """
        }.joined(separator: "\n")
        let searching = query.map { !$0.isEmpty } ?? false
        let summary: String
        if entries.isEmpty {
            summary = searching ? "Nothing matches." : "No recordings yet."
        } else if entries.count >= limit {
            summary = searching ? "The newest \(limit) matches." : "The newest \(limit) recordings; search for older ones."
        } else {
            summary = "\(entries.count) recording\(entries.count == 1 ? "" : "s")\(searching ? " match" : "")."
        }
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>airtap recordings</title>
            <style>
            body { font: 16px/1.4 system-ui, sans-serif; margin: 2rem auto; max-width: 44rem; padding: 0 1rem; color: #222; }
            ol { list-style: none; padding: 0; }
            .recording { border-bottom: 1px solid #ddd; padding: 0.5rem 0 0.75rem; }
            .recording p { margin: 0.2rem 0; }
            .title { font-weight: 600; overflow-wrap: anywhere; }
            .info, .partial, .summary { color: #555; }
            .file { overflow-wrap: anywhere; }
            audio { width: 100%; }
            input[type=search] { width: 70%; font: inherit; }
            </style>
            </head>
            <body>
            <h1>Recordings</h1>
            <form method="get" action="/recordings" role="search">
            <input type="search" name="q" value="\(escape(query ?? ""))" placeholder="title, artist or station" aria-label="search">
            <button type="submit">Search</button>\(searching ? " <a href=\"/recordings\">all</a>" : "")
            </form>
            <p class="summary">\(escape(summary))</p>
            <ol>
            \(rows)
            </ol>
            </body>
            </html>

            """
    }
}
