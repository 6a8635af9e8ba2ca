/* verbs-monitor.c: `monitor`: print the daemon's signals as they come, until SIGINT or SIGTERM */
#include "verbs-monitor.h"

#include <signal.h>
#include <systemd/sd-event.h>

#include <fnmatch.h>

#include "bus.h"
#include "core/escape.h"
#include "ctl-log.h"
#include "json-out.h"
#include "manager-calls.h"
#include "monitor-signals.h"
#include "output.h"
#include "subtree-processes.h"
#include "task-names.h"

typedef struct Monitor {
        Context *c;
        sd_bus *bus;
        TaskNames names; /* tid -> process and name, to say whose events these are and to filter */
        Hashmap subtree; /* --subtree: pid -> 1 (in it) or 2 (not), as seen at its first event */
} Monitor;

static void monitor_done(Monitor *m) {
        task_names_done(&m->names);
        hashmap_deinit(&m->subtree);
}

/* --subtree: is process pid in it? Asked of the daemon (ListSubtreeProcesses) at the process's
 * first event and remembered, so that its exit (no process left) is told as its earlier events were. */
static bool monitor_in_subtree(Monitor *m, uint32_t pid) {
        uintptr_t known = (uintptr_t) hashmap_get(&m->subtree, pid);
        if (known)
                return known == 1;
        int r = subtree_has_process(m->bus, (pid_t) m->c->subtree, (pid_t) pid);
        if (r < 0)
                return false; /* the daemon could not be asked: not remembered, it may be asked again */
        (void) hashmap_put(&m->subtree, pid, (void *) (uintptr_t) (r ? 1 : 2));
        return r;
}

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

/* Whether the signal names its task's process and name itself (TaskAdded, and FilterAttached
 * with its installer, which may have exited at once); TaskExited gives only the tid. */
static bool signal_names_task(const char *signal) {
        return streq(signal, "TaskAdded") || streq(signal, "FilterAttached");
}

/* The task an event is about: as the signal names it, or as the names say for a TaskExited.
 * ListTasks is asked again for a tid not known yet; NULL if the daemon does not list it either. */
static const TaskName *event_task(Monitor *m, const char *signal, json_t *o) {
        uint32_t tid = (uint32_t) json_integer_value(json_object_get(o, "tid"));
        if (signal_names_task(signal)) {
                const char *comm = json_string_value(json_object_get(o, "comm"));
                json_t *pid = json_object_get(o, streq(signal, "TaskAdded") ? "tgid" : "pid");
                uint32_t tgid = (uint32_t) json_integer_value(pid);
                if (task_names_add(&m->names, tid, tgid, comm ?: "") < 0)
                        return NULL;
        }
        const TaskName *t = task_names_get(&m->names, tid);
        if (!t && task_names_load(&m->names, m->bus) >= 0) {
                t = task_names_get(&m->names, tid);
                if (!t) /* not listed (gone, or not ours to see): do not ask again for it */
                        (void) task_names_add(&m->names, tid, 0, NULL);
        }
        return t && t->comm ? t : NULL;
}

/* TaskExited: add the task's process and name, " pid=4711 comm=worker" and
 * "pid", "comm" (null when the daemon no longer lists it). */
static int add_task_fields(const TaskName *t, char **text, json_t *o) {
        if (json_set(o, "pid", t ? json_integer(t->pid) : json_null()) < 0 ||
            json_set(o, "comm", t ? json_string(t->comm) : json_null()) < 0)
                return -ENOMEM;
        if (!t)
                return 0;
        _cleanup_free_ char *comm = str_escape(t->comm);
        char *longer = NULL;
        if (!comm || asprintf(&longer, "%s pid=%" PRIu32 " comm=%s", *text, t->pid, comm) < 0)
                return -ENOMEM;
        free(*text);
        *text = longer;
        return 0;
}

/* --pid, --comm and --subtree: is this event about a task in that process, of that name (as the
 * signal says, or as it is now after an exec or a rename: ProcessRenamed keeps the names), in that
 * subtree? Events about no task pass when they concern every view (Resynced, the daemon's
 * appearance), not otherwise (PropertiesChanged counts, snapshots). */
static bool event_wanted(Monitor *m, const char *signal, const char *signal_comm, const TaskName *t,
                         bool about_task) {
        const Context *c = m->c;
        if (!c->pid && !c->comm && !c->subtree)
                return true;
        if (!about_task)
                return streq(signal, "Resynced") || streq(signal, "DaemonAppeared") || streq(signal, "DaemonVanished");
        if (!t)
                return false;
        if (c->pid && t->pid != c->pid && t->tid != c->pid)
                return false;
        if (c->subtree && !monitor_in_subtree(m, t->pid))
                return false;
        return !c->comm || fnmatch(c->comm, t->comm, 0) == 0 ||
               (signal_comm && fnmatch(c->comm, signal_comm, 0) == 0);
}

/* ProcessRenamed: the process's threads take the new name. --comm passes it for the name it had
 * as well as for the new one. */
static int process_renamed_step(Monitor *m, json_t *o, bool *ret_wanted) {
        uint32_t pid = (uint32_t) json_integer_value(json_object_get(o, "pid"));
        const char *comm = json_string_value(json_object_get(o, "comm")) ?: "";
        const TaskName *t = task_names_get(&m->names, pid);
        bool known = t && t->comm;
        _cleanup_free_ char *was = known ? strdup(t->comm) : NULL;
        if (known && !was)
                return log_oom();
        int r = known ? task_names_rename(&m->names, pid, comm) : task_names_add(&m->names, pid, pid, comm);
        if (r < 0)
                return log_oom();
        *ret_wanted = event_wanted(m, "ProcessRenamed", was, task_names_get(&m->names, pid), true);
        return 0;
}

/* Annotate the event with its task, say whether it passes the filters, and keep the names
 * current. */
static int event_task_step(Monitor *m, char **text, json_t *o, bool *ret_wanted) {
        const char *signal = json_string_value(json_object_get(o, "signal")) ?: "";
        if (streq(signal, "ProcessRenamed"))
                return process_renamed_step(m, o, ret_wanted);
        bool about_task = streq(signal, "TaskAdded") || streq(signal, "FilterAttached") || streq(signal, "TaskExited");
        const TaskName *t = about_task ? event_task(m, signal, o) : NULL;
        if (!signal_names_task(signal) && about_task && add_task_fields(t, text, o) < 0)
                return log_oom();
        *ret_wanted = event_wanted(m, signal, json_string_value(json_object_get(o, "comm")), t, about_task);
        if (streq(signal, "TaskExited"))
                task_names_remove(&m->names, (uint32_t) json_integer_value(json_object_get(o, "tid")));
        return 0;
}

static int on_signal(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Monitor *m = userdata;
        _cleanup_free_ char *text = NULL;
        json_auto_t *o = NULL;
        uint64_t usec = now_usec(CLOCK_REALTIME);
        bool wanted = true;
        int r = monitor_decode(msg, &text, &o);
        if (r < 0) {
                log_warning_errno(r, "sectreectl: Ignoring a %s signal that does not parse: %m",
                                  sd_bus_message_get_member(msg) ?: "?");
                return 0;
        }
        r = event_task_step(m, &text, o, &wanted);
        if (r >= 0 && wanted)
                r = print_event(m->c, usec, text, o);
        if (r < 0) /* e.g. the reader of our pipe went away: stop */
                return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(msg)), r);
        return 0;
}

static int subscribe(Monitor *m, sd_bus *bus) {
        int r = sd_bus_match_signal(bus, NULL, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, SECTREE_MANAGER_INTERFACE, NULL,
                                    on_signal, m);
        if (r < 0)
                return ctl_error_errno(r, "Failed to subscribe to the daemon's signals: %m");
        r = sd_bus_match_signal(bus, NULL, SECTREE_BUS_NAME, SECTREE_OBJECT_PATH, "org.freedesktop.DBus.Properties",
                                "PropertiesChanged", on_signal, m);
        if (r < 0)
                return ctl_error_errno(r, "Failed to subscribe to the daemon's signals: %m");
        r = sd_bus_add_match(bus, NULL, OWNER_MATCH, on_signal, m);
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
        if (r < 0)
                return ctl_error_errno(r, "Failed to set up the event loop: %m");
        r = add_exit_signals(e);
        if (r < 0)
                return ctl_error_errno(r, "Failed to set up the event loop: %m");
        r = sd_bus_attach_event(bus, e, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return ctl_error_errno(r, "Failed to set up the event loop: %m");
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
        _cleanup_(monitor_done) Monitor m = { .c = c };
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        int r = context_bus(c, &m.bus);
        if (r < 0)
                return r;
        r = event_setup(m.bus, &e);
        if (r < 0)
                return r;
        r = subscribe(&m, m.bus);
        if (r < 0)
                return r;
        bool running = daemon_is_running(m.bus);
        /* The tasks there are now: events about them name their process. Subscribed first, so
         * that a task appearing meanwhile is in one or the other. */
        if (running)
                (void) task_names_load(&m.names, m.bus);
        /* Subscribed: signals from now on are seen. Tests wait for this line. */
        fprintf(stderr, "Monitoring %s%s; press Ctrl+C to stop.\n", SECTREE_BUS_NAME, running ? "" : " (not running yet)");

        r = sd_event_loop(e);
        sd_bus_detach_event(m.bus);
        if (r < 0)
                return r == -EIO ? r : ctl_error_errno(r, "Event loop failed: %m");
        if (r != 0) /* sd-bus ends the loop with EXIT_FAILURE when the bus goes away */
                return ctl_error_errno(-ECONNRESET, "Disconnected from the bus.");
        return 0;
}
