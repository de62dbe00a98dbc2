import AirtapStations
import AirtapSupport
import ICYWire
import Logging
import RecordingRules

/// One lock per station and output folder, and the recovery of what a killed run left, in one
/// place: the commands lock their stations here before recording, and a bare URL's recorder
/// claims its folder here once the stream has named it.
package enum StationLocks {
    /// Locks every station: a second recording of the same station exits 4 (or, with `wait`,
    /// waits). A station of stations.json is locked in its own folder, and with
    /// `finishingLeftovers` what a killed run left there is finished first. A bare URL's folder
    /// is named only when its stream answers (icy-name): its lock lives in the output folder
    /// itself, named after its id, and its recorder finishes its leftovers later
    /// (`claimNamedFolder`).
    package static func lock(_ stations: [Station], in outputDirectory: String, wait: Bool, finishingLeftovers: Bool,
                             logger: Logger) throws(AirtapError) -> [RecordingLock] {
        // One open of the lock file for all of them: a fleet holds one descriptor for its locks.
        let table = try RecordingLockTable.open(root: outputDirectory)
        var locks: [RecordingLock] = []
        for station in stations {
            let name = SafeFileName.component(station.name) ?? "station"
            let lock = try table.acquire(folder: station.isNamedByStream ? "" : name, stationID: station.id, wait: wait)
            locks.append(lock)
            if finishingLeftovers, !station.isNamedByStream {
                LeftoverParts.finish(stationFolder: name, below: outputDirectory, holding: lock, logger: logger)
            }
        }
        return locks
    }

    /// A bare URL's folder, once its stream has named it: locked under the station's id too, so
    /// that another station recording into the same folder (one of the same name) sees it and
    /// leaves its `.part` alone, then cleared of what a killed run left. Nil, with a line in the
    /// log, when the folder cannot be locked (another recorder of this station in this process
    /// holds it): the recording goes on, the leftovers wait for a later run.
    static func claimNamedFolder(_ folderName: String, below outputDirectory: String, stationID: String,
                                 logger: Logger) -> RecordingLock? {
        let lock: RecordingLock
        do {
            lock = try RecordingLock.acquire(folder: folderName, below: outputDirectory, stationID: stationID, wait: false)
        } catch {
            logger.info("leftovers in \(outputDirectory)/\(folderName) not looked at: \(error)")
            return nil
        }
        LeftoverParts.finish(stationFolder: folderName, below: outputDirectory, holding: lock, logger: logger)
        return lock
    }
}
