// sd-bus (libsystemd): D-Bus on a descriptor the caller polls. Swift imports its functions as
// they are; this only adds an error reply, whose sd_bus_error is built by a macro.
// The Swift API lives in the DesktopBus target.
#ifndef CSYSTEMDBUS_SHIM_H
#define CSYSTEMDBUS_SHIM_H
#include <systemd/sd-bus.h>
#include <poll.h>
#include <time.h>

static inline int csdbus_reply_error(sd_bus_message *call, const char *name, const char *message) {
    sd_bus_error error = SD_BUS_ERROR_MAKE_CONST(name, message);
    return sd_bus_reply_method_error(call, &error);
}
#endif
