import FoundationEssentials

/// `/`: a small page for people. Each mount with its station name, its path and a link to it,
/// the title playing (kept up to date by polling `/status-json.xsl` every two seconds),
/// listeners, uptime, and a player.
///
/// No framework and no external assets (the machine may be offline). Everything a station sent
/// is escaped into the HTML, and the script writes updates with `textContent` only, so a title
/// full of markup stays text.
enum RelayPage {
    static let securityHeaders = [
        "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            + "connect-src 'self'; media-src 'self'; img-src 'self'",
        "X-Content-Type-Options: nosniff",
        "Referrer-Policy: no-referrer",
    ]

    static func html(sources: [IcecastStatus.Source]) -> String {
        let cards = sources.map(card).joined(separator: "\n")
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>airtap</title>
            <style>
            body { font: 16px/1.4 system-ui, sans-serif; margin: 2rem auto; max-width: 44rem; padding: 0 1rem; color: #222; }
            .mount { border: 1px solid #ccc; border-radius: 8px; padding: 0.5rem 1rem 1rem; margin: 1rem 0; }
            .title { font-size: 1.2rem; font-weight: 600; min-height: 1.4em; overflow-wrap: anywhere; }
            .info, .where { color: #555; }
            audio { width: 100%; }
            </style>
            </head>
            <body>
            <h1>airtap</h1>
            \(cards)
            \(script)
            </body>
            </html>

            """
    }

    /// One mount's card; everything the station sent is escaped.
    private static func card(_ source: IcecastStatus.Source) -> String {
        """
        <section class="mount" data-mount="\(escape(source.mount))">
          <h2 class="name">\(escape(source.name))</h2>
          <p class="where"><code class="path">\(escape(source.mount))</code> &middot; \
        <a class="listen" href="\(escape(source.mount))">listen</a></p>
          <p class="title">\(escape(source.nowPlaying.map(\.text) ?? ""))</p>
          \(transcodeNote(source))<p class="info"><span class="listeners">\(source.listeners)</span> listening &middot; \
        <span class="state">\(escape(source.upstream))</span> &middot; up <span class="uptime" \
        data-start="\(source.streamStart.map { String(Int($0.timeIntervalSince1970)) } ?? "")"></span></p>
          <audio controls preload="none" src="\(escape(source.mount))"></audio>
        </section>
        """
    }

    /// Keeps the titles, names, listeners and uptimes up to date, writing with `textContent` only.
    private static let script = """
            <script>
            "use strict";
            function since(start) {
              if (!start) return "";
              var s = Math.max(0, Math.floor(Date.now() / 1000) - start), h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
              return (h ? h + " h " : "") + m + " min";
            }
            function refresh() {
              fetch("/status-json.xsl", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (doc) {
                var sources = doc.icestats.source;
                if (!Array.isArray(sources)) sources = sources ? [sources] : [];
                sources.forEach(function (source) {
                  var mount = new URL(source.listenurl).pathname;
                  document.querySelectorAll("section.mount").forEach(function (card) {
                    if (card.dataset.mount !== mount) return;
                    card.querySelector(".title").textContent = source.artist ? source.artist + " - " + (source.title || "") : source.title || "";
                    card.querySelector(".name").textContent = source.server_name || "";
                    card.querySelector(".listeners").textContent = String(source.listeners);
                    card.querySelector(".state").textContent = source.airtap_upstream || "";
                    if (source.stream_start_iso8601) card.querySelector(".uptime").dataset.start =
                      String(Math.floor(Date.parse(source.stream_start_iso8601.replace(/([+-]\\d\\d)(\\d\\d)$/, "$1:$2")) / 1000));
                  });
                });
              }).catch(function () {}).then(function () {
                document.querySelectorAll(".uptime").forEach(function (el) { el.textContent = since(Number(el.dataset.start)); });
                setTimeout(refresh, 2000);
              });
            }
            refresh();
            </script>
            """

    /// A mount served as MP3 says so, and from what (it can play where the station itself cannot).
    private static func transcodeNote(_ source: IcecastStatus.Source) -> String {
        guard let from = source.transcodedFrom else { return "" }
        let rate = source.bitrate.map { " \($0) kbit/s" } ?? ""
        return "<p class=\"transcoded\">MP3\(rate), transcoded from \(escape(from.rawValue))</p>\n  "
    }

    /// Text into HTML, element content or a quoted attribute alike.
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default:
                // Controls have no business in a page (and could confuse a terminal reading it).
                if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                    result += "&#xFFFD;"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }
}
