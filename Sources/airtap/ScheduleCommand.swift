import AirtapKit
import ArgumentParser

struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Print crontab lines for the stations that have a schedule; --install puts them into your crontab.",
        discussion: """
            Each station of stations.json with a "schedule" ({"cron": "0 22 * * *", "duration": "2h"}) \
            gets a line that runs 'airtap record ID --for DURATION' with absolute paths to this airtap, \
            the stations file and the output folder, logging to airtap-ID.log there. --install replaces \
            the block between '# BEGIN airtap' and '# END airtap' in your crontab and leaves every other \
            line alone; with no scheduled station it removes the block. AIRTAP_CRONTAB names a program \
            to use instead of crontab.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Output folder the scheduled recordings write to.", valueName: "dir"))
    var out = "recordings"

    @Flag(name: .long, help: "Merge the lines into your crontab instead of printing them.")
    var install = false

    func run() async throws {
        try ScheduleJob(catalog: try global.loadCatalog(), outputDirectory: out, install: install).run()
    }
}
