/* sectreed-service.c: the service, loaded by sectreed as sectreed-service.so (sectreed-service.h):
 * the Daemon that owns the manager, the services above it and the bus, and the order of start-up */
#include "bus/manager-dbus.h"
#include "bus/restores-dbus.h"
#include "bus/units-dbus.h"
#include "config.h"
#include "sectreed-service.h"
#include "service/manager.h"
#include "service/policy-jobs.h"
#include "service/restores.h"
#include "service/snapshot-transfers.h"
#include "service/proc-walks.h"
#include "store/state-lock.h"

/* The daemon: the manager (the event path) and the services above it, and the bus object that
 * serves them. It owns them all and frees them in order: the restores (their stubs end), the bus
 * (flushed: what was answered leaves), the transfers, analyses and walks (cancelled when the loop exited),
 * the manager last. */
typedef struct Daemon {
        int lock_fd; /* the state directory's lock: one daemon per database */
        Manager *manager;
        SnapshotTransfers *transfers;
        WorkerLanes *policy_jobs;
        WorkerLanes *proc_walks;
        Restores *restores;
        ManagerBus *bus;
} Daemon;

static void daemon_done(Daemon *d) {
        d->restores = restores_free(d->restores);
        d->bus = manager_bus_free(d->bus);
        d->transfers = snapshot_transfers_free(d->transfers);
        d->policy_jobs = worker_lanes_free(d->policy_jobs);
        d->proc_walks = worker_lanes_free(d->proc_walks);
        d->manager = manager_free(d->manager);
        closep(&d->lock_fd);
        d->lock_fd = -EBADF;
}

/* The bus connection is gone (dbus-daemon closed it, or stopped): a daemon off the bus serves
 * nobody, so it stops with an error and systemd (Restart=on-failure) starts it again. */
static int on_bus_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        log_error("Lost the connection to the system bus, exiting.");
        return sd_event_exit(m->event, -ENOTCONN);
}

static int watch_bus(Daemon *d) {
        int r = sd_bus_match_signal(d->bus->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                    "Disconnected", on_bus_disconnected, d->manager);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the bus connection: %m");
        return 0;
}

/* The state directory's lock, before the database opens; the services, made before the manager
 * starts; the bus, once it has. */
static int daemon_start(Daemon *d, const ServiceArgs *a, RestoreExecutor executor) {
        /* SIGTERM and SIGINT end the service through its event loop (exit 0), also when they come
         * while it starts */
        int r = manager_block_signals();
        if (r < 0)
                return log_error_errno(r, "Failed to block SIGTERM and SIGINT: %m");
        d->lock_fd = state_lock_take(a->state_dir ?: MANAGER_DEFAULT_STATE_DIR);
        if (d->lock_fd < 0)
                return d->lock_fd;
        ManagerOptions opts = { .backend = a->backend, .state_dir = a->state_dir, .budget_insns = a->budget_insns };
        r = manager_new(&opts, &d->manager);
        if (r < 0)
                return r;
        r = restores_new(d->manager, executor, &d->restores);
        if (r < 0)
                return r;
        r = snapshot_transfers_new(d->manager, &d->transfers);
        if (r < 0)
                return log_error_errno(r, "Failed to set up snapshot transfers: %m");
        r = policy_jobs_new(d->manager->event, &d->policy_jobs);
        if (r < 0)
                return log_error_errno(r, "Failed to set up policy analyses: %m");
        r = proc_walks_new(d->manager->event, &d->proc_walks);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the walks of /proc for calls: %m");
        r = manager_startup(d->manager);
        if (r < 0)
                return r;
        r = manager_bus_new(&(ManagerBus) { .manager = d->manager, .transfers = d->transfers,
                                            .policy_jobs = d->policy_jobs, .proc_walks = d->proc_walks },
                             &d->bus);
        if (r < 0)
                return r;
        r = restores_bus_connect(d->restores, d->bus->bus);
        if (r < 0)
                return r;
        r = units_bus_connect(d->bus);
        if (r < 0)
                return r;
        return watch_bus(d);
}

static int run_service(const ServiceArgs *a, RestoreExecutor executor) {
        Daemon d = { .lock_fd = -EBADF };
        int r = daemon_start(&d, a, executor);
        if (r >= 0) {
                manager_ready(d.manager);
                r = manager_run(d.manager);
        }
        daemon_done(&d);
        return r;
}

/* The module's entry (sectreed-service.h); the only symbol it exports (sectreed-service.sym). */
int sectreed_service_run(const ServiceArgs *a) {
        RestoreExecutor executor = RESTORE_EXECUTOR_AUTO;

        /* this module's own copy of the log settings: as sectreed's */
        log_parse_environment();
        if (!a || a->abi != SECTREED_SERVICE_ABI || !a->version || !streq(a->version, PACKAGE_VERSION)) {
                log_error("The service module (sectreed %s) does not match sectreed %s.", PACKAGE_VERSION,
                          a && a->version ? a->version : "?");
                return EXIT_FAILURE;
        }
        log_set_max_level(a->log_level);
        if (a->restore_executor) {
                executor = restore_executor_from_string(a->restore_executor);
                if (executor < 0) {
                        log_error("Unknown --restore-executor=%s: expected auto, unit or fork.", a->restore_executor);
                        return SECTREED_EXIT_USAGE;
                }
        }
        return run_service(a, executor) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
