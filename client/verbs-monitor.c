/* verbs-monitor.c: `monitor`: print the daemon's signals as they come, until SIGINT or SIGTERM */
#include <signal.h>
#include <systemd/sd-event.h>

#include "bus.h"
#include "ctl.h"
#include "json-out.h"
#include "manager.h"
#include "monitor-signals.h"
#include "output.h"

/* The daemon's appearance and disappearance: NameOwnerChanged for our name only. */
#define OWNER_MATCH                                                                                 \
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"                 \
        "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" SECTREE_BUS_NAME "'"

static int print_event(Context *c, uint64_t usec, const char *text, json_t *o) {
        if (c->json) {
                char ts[TIMESTAMP_MAX];
                if (json_set(o, "time", json_string(format_timestamp_rfc3339(usec, ts, sizeof(ts)))) < 0 ||
                    json_set(o, "time_usec", json_integer((json_int_t) usec)) < 0)
                        return log_oom();
                return json_print_line(o);
        }
        char ts[TIMESTAMP_MAX];
        printf("%s %s\n", format_timestamp_us(usec, ts, sizeof(ts)), text);
        return output_flush();
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Context *c = userdata;
        _cleanup_free_ char *text = NULL;
        json_auto_t *o = NULL;
        uint64_t usec = now_usec(CLOCK_REALTIME);
        int r = monitor_decode(m, &text, &o);
        if (r < 0) {
                log_warning_errno(r, "sectreectl: Ignoring a %s signal that does not parse: %m",
                                  sd_bus_message_get_member(m) ?: "?");
                return 0;
        }
        r = print_event(c, usec, text, o);
        if (r < 0) /* e.g. the reader of our pipe went away: stop */
                return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), r);
        return 0;
}

static int subscribe(Context *c, sd_bus *bus) {
        int r = sd_bus_match_signal(bus, NULL, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE, NULL,
                                    on_signal, c);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH,
                                        "org.freedesktop.DBus.Properties", "PropertiesChanged", on_signal, c);
        if (r >= 0)
                r = sd_bus_add_match(bus, NULL, OWNER_MATCH, on_signal, c);
        if (r < 0)
                return ctl_error_errno(r, "Failed to subscribe to the daemon's signals: %m");
        return 0;
}

/* SIGINT and SIGTERM end the loop with exit code 0 (a NULL handler means sd_event_exit). */
static int add_exit_signals(sd_event *e) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        int r = sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        return r < 0 ? r : sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
}

static int event_setup(sd_bus *bus, sd_event **ret) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        int r = sd_event_new(&e);
        if (r >= 0)
                r = add_exit_signals(e);
        if (r >= 0)
                r = sd_bus_attach_event(bus, e, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(bus, true);
        if (r < 0)
                return ctl_error_errno(r, "Failed to set up the event loop: %m");
        *ret = TAKE_PTR(e);
        return 0;
}

/* Whether org.sectree1 has an owner now; false when that cannot be told. */
static bool daemon_is_running(sd_bus *bus) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int running = 0;
        if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", NULL, &reply, "s", SECTREE_BUS_NAME) < 0 ||
            sd_bus_message_read(reply, "b", &running) < 0)
                return false;
        return running;
}

int verb_monitor(Context *c, char **args, size_t n_args) {
        sd_bus *bus;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        int r = ctl_bus(c, &bus);
        if (r >= 0)
                r = event_setup(bus, &e);
        if (r >= 0)
                r = subscribe(c, bus);
        if (r < 0)
                return r;
        /* Subscribed: signals from now on are seen. Tests wait for this line. */
        fprintf(stderr, "Monitoring %s%s; press Ctrl+C to stop.\n", SECTREE_BUS_NAME,
                daemon_is_running(bus) ? "" : " (not running yet)");

        r = sd_event_loop(e);
        sd_bus_detach_event(bus);
        if (r < 0)
                return r == -EIO ? r : ctl_error_errno(r, "Event loop failed: %m");
        if (r != 0) /* sd-bus ends the loop with EXIT_FAILURE when the bus goes away */
                return ctl_error_errno(-ECONNRESET, "Disconnected from the bus.");
        return 0;
}
