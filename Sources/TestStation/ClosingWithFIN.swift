import NIOCore

extension ChannelHandlerContext {
    /// Closes the connection so the client sees its end at once: the FIN goes out with
    /// `shutdown` (a half-close of the output, once what was written is out) before the
    /// descriptor is closed; a client that reads nothing more is cut off after a few seconds.
    ///
    /// NIO accepts sockets without close-on-exec, so a child another test starts at that moment
    /// can inherit one. A `close` alone then sends nothing while the child keeps its copy: the
    /// client waits for an end that never comes (curl's stall check, 30-60 s later; `ss` showed
    /// the station's socket in CLOSE-WAIT, owned by an airtap another test had started).
    /// `shutdown` acts on the socket, whoever else holds it.
    func closeSendingFIN() {
        let context = NIOLoopBound(self, eventLoop: eventLoop)
        let cutOff = eventLoop.scheduleTask(in: .seconds(5)) { context.value.close(promise: nil) }
        close(mode: .output).whenComplete { _ in
            cutOff.cancel()
            context.value.close(promise: nil)
        }
    }
}
