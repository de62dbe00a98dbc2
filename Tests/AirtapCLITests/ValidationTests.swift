import ArgumentParser
@testable import airtap
import Testing

/// Every `validate()` rule of the command line, through `Airtap.parseAsRoot` as the binary parses
/// its arguments: no process, no station, no file.
@Suite("Command-line validation")
struct ValidationTests {
    /// The message a usage error prints, or nil when the arguments parse.
    static func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try Airtap.parseAsRoot(arguments)
            return nil
        } catch {
            return Airtap.message(for: error)
        }
    }

    @Test("Valid command lines parse", arguments: [
        ["record", "groovesalad", "--for", "2h"],
        ["record", "--all", "--shard", "1/4", "--until", "23:00"],
        ["record", "a", "--single", "show.mp3", "--split-window", "2:4", "--silence-level", "-45"],
        ["play", "a", "--volume", "0", "--buffer", "2m"],
        ["play", "a", "--no-mpris", "--notify"],
        ["relay", "a", "--to", "-"],
        ["serve", "a", "b", "--max-listeners", "1", "--burst", "60s"],
        ["probe", "a", "--retries", "0", "--header", "X-Test: 1"],
        ["record", "a", "--dedupe", "--library", "lib.sqlite"],
        ["library", "search", "björk", "--json"],
        ["library", "scan", "music", "--library", "lib.sqlite"],
        ["search"],
        ["search", "jazz", "--tag", "smooth", "--country", "FI", "--codec", "AAC", "--limit", "500", "--json", "--timeout", "5s"],
        ["add", "x", "--from-directory", "96062a7b-0601-11e8-ae97-52543be04c81", "--directory", "http://127.0.0.1:9"],
    ])
    func accepted(arguments: [String]) {
        #expect(Self.refusal(arguments) == nil, "\(arguments)")
    }

    @Test("Each rule refuses with its own message", arguments: [
        (["record", "a", "--for", "1h", "--until", "10:00"], "--for and --until cannot be used together"),
        (["record", "a", "b", "--single", "x.mp3"], "--single takes one station"),
        (["record", "--all", "--single", "x.mp3"], "--single takes one station"),
        (["record", "a", "--all"], "name stations or give --all, not both"),
        (["search", "x", "--limit", "0"], "--limit must be 1-500"),
        (["search", "x", "--limit", "-1"], "--limit must be 1-500"),
        (["search", "x", "--timeout", "11m"], "--timeout must be more than 0 and at most 10m"),
        (["add", "x", "http://127.0.0.1:9/", "--from-directory", "96062a7b-0601-11e8-ae97-52543be04c81"],
         "give a URL or --from-directory UUID, not both"),
        (["add", "x"], "Missing expected argument '<url-or-playlist>' (or --from-directory UUID)"),
        (["add", "x", "--from-directory", "96062a7b-0601-11e8-ae97-52543be04c81", "--name", "y"],
         "--name comes from the directory with --from-directory"),
        (["record"], "name at least one station, or give --all"),
        (["record", "a", "--single", "x.mp3", "--split-padding", "100:0"], "--split-padding does not apply to --single"),
        (["record", "a", "--template", "/abs/{title}"], "--template"),
        (["record", "a", "--split-window", "40:3"], "--split-window"),
        (["record", "a", "--silence-level", "-200"], "--silence-level"),
        (["record", "a", "--split-offset", "99999"], "--split-offset"),
        (["record", "a", "--split-padding", "20000:0"], "--split-padding"),
        (["record", "a", "--retries=-1"], "--retries must be 0 or more"),
        (["probe", "a", "--header", "no colon"], "is not of the form 'Name: value'"),
        (["play", "a", "--volume", "101"], "--volume must be 0-100"),
        (["play", "a", "--buffer", "3m"], "--buffer must be at most 2m"),
        (["relay", "a", "--to", ""], "--to needs a file name, or - for stdout"),
        (["serve", "a", "--max-listeners", "0"], "--max-listeners must be at least 1"),
        (["serve", "a", "--burst", "61s"], "--burst must be at most 60s"),
        (["record", "a", "--no-library", "--dedupe"], "--no-library contradicts --dedupe"),
        (["record", "a", "--no-library", "--library", "x.sqlite"], "--no-library contradicts --library"),
        (["record", "a", "--single", "x.mp3", "--dedupe"], "--dedupe compares tracks: it does not apply to --single"),
        (["record", "a", "--single", "x.mp3", "--library", "x.sqlite"], "--library indexes tracks: it does not apply to --single"),
        (["record", "a", "--no-tags", "--replaygain"], "--replaygain writes tags: it does not apply to --no-tags"),
    ])
    func refused(arguments: [String], expected: String) {
        let message = Self.refusal(arguments)
        #expect(message?.contains(expected) == true, "\(arguments): \(message ?? "accepted")")
    }
}
