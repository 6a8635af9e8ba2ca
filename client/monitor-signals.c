/* monitor-signals.c: the Manager's signals as data: decoding one message into text and JSON */
#include "monitor-signals.h"

#include "core/escape.h"
#include "core/util.h"
#include "json-out.h"

typedef struct SignalField {
        const char *name;
        char type;          /* 't', 'u' or 's' */
        bool zero_is_null;  /* a filter id where 0 means none, a name where "" does: null in JSON,
                             * "none" (ids) or "(none)" (names) in text */
} SignalField;

typedef struct SignalSpec {
        const char *member;
        const char *signature;
        SignalField fields[5];
} SignalSpec;

/* As in dbus/org.sectree1.Manager.xml. */
static const SignalSpec signal_specs[] = {
        { "FilterAttached", "ttuus",
          { { "id", 't' }, { "parent", 't', true }, { "tid", 'u' }, { "pid", 'u' }, { "comm", 's' } } },
        { "TaskAdded", "uus", { { "tid", 'u' }, { "tgid", 'u' }, { "comm", 's' } } },
        { "TaskExited", "u", { { "tid", 'u' } } },
        { "ProcessRenamed", "us", { { "pid", 'u' }, { "comm", 's' } } },
        { "Resynced", "s", { { "reason", 's' } } },
        { "SnapshotCreated", "tsu", { { "id", 't' }, { "name", 's', true }, { "owner_uid", 'u' } } },
        { "SnapshotDeleted", "t", { { "id", 't' } } },
        { "RestoreFinished", "tus", { { "id", 't' }, { "owner_uid", 'u' }, { "reason", 's' } } },
};

static const SignalSpec *signal_spec_find(const char *member) {
        for (size_t i = 0; member && i < ELEMENTSOF(signal_specs); i++)
                if (streq(signal_specs[i].member, member))
                        return &signal_specs[i];
        return NULL;
}

/* Read one basic value of type 's', 'u' or 't' (or, in a variant, 'b', 'i', 'x') into text and JSON. */
static int read_value(sd_bus_message *m, char type, bool zero_is_null, FILE *text, json_t **ret) {
        union {
                const char *s;
                uint32_t u;
                uint64_t t;
                int32_t i;
                int64_t x;
                int b;
        } v = {};
        int r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;
        if (type == 's' && zero_is_null && !v.s[0]) {
                fputs("(none)", text);
                *ret = json_null();
        } else if (type == 's') {
                fputs_escaped(v.s, text);
                *ret = json_string(v.s);
        } else if (type == 'u' || type == 't') {
                uint64_t n = type == 'u' ? v.u : v.t;
                if (zero_is_null && n == 0)
                        fputs("none", text);
                else
                        fprintf(text, "%" PRIu64, n);
                *ret = zero_is_null ? json_id_or_null(n) : json_integer((json_int_t) n);
        } else if (type == 'i' || type == 'x') {
                int64_t n = type == 'i' ? v.i : v.x;
                fprintf(text, "%" PRIi64, n);
                *ret = json_integer(n);
        } else {
                fputs(v.b ? "yes" : "no", text);
                *ret = json_boolean(v.b);
        }
        return *ret ? 0 : -ENOMEM;
}

static int decode_manager_signal(sd_bus_message *m, const SignalSpec *spec, FILE *text, json_t *o) {
        if (!sd_bus_message_has_signature(m, spec->signature))
                return -EBADMSG;
        fputs(spec->member, text);
        for (size_t i = 0; i < strlen(spec->signature); i++) {
                const SignalField *f = &spec->fields[i];
                json_t *v;
                fprintf(text, " %s=", f->name);
                int r = read_value(m, f->type, f->zero_is_null, text, &v);
                if (r < 0 || (r = json_set(o, f->name, v)) < 0)
                        return r;
        }
        return 0;
}

/* One changed property: "Name=value", {"Name": value}. Only basic types are shown. */
static int decode_changed_property(sd_bus_message *m, FILE *text, json_t *changed) {
        const char *name, *contents;
        char type;
        json_t *v;
        int r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        if (!contents || strlen(contents) != 1 || !strchr("sutixb", contents[0]))
                return sd_bus_message_skip(m, "v");
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;
        fputc(' ', text);
        fputs_escaped(name, text);
        fputc('=', text);
        r = read_value(m, contents[0], false, text, &v);
        if (r < 0 || (r = json_set(changed, name, v)) < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int decode_properties_changed(sd_bus_message *m, FILE *text, json_t *o) {
        json_t *changed = json_object();
        _cleanup_strv_free_ char **invalidated = NULL;
        if (json_set(o, "changed", changed) < 0)
                return -ENOMEM;
        fputs("PropertiesChanged", text);
        int r = sd_bus_message_skip(m, "s");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = decode_changed_property(m, text, changed);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_read_strv(m, &invalidated);
        if (r < 0)
                return r;
        for (char **i = invalidated; i && *i; i++) {
                fputc(' ', text);
                fputs_escaped(*i, text);
                fputs("=(invalidated)", text);
        }
        return json_set(o, "invalidated", json_strv(invalidated));
}

/* NameOwnerChanged(org.sectree1, old, new): the daemon appeared or went away. */
static int decode_owner_changed(sd_bus_message *m, FILE *text, json_t *o) {
        const char *name, *old_owner, *new_owner;
        int r = sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner);
        if (r < 0)
                return r;
        bool appeared = new_owner[0] != 0;
        if (json_set(o, "signal", json_string(appeared ? "DaemonAppeared" : "DaemonVanished")) < 0 ||
            json_set(o, "owner", json_string(appeared ? new_owner : old_owner)) < 0)
                return -ENOMEM;
        fprintf(text, "%s owner=", appeared ? "DaemonAppeared" : "DaemonVanished");
        fputs_escaped(appeared ? new_owner : old_owner, text);
        return 0;
}

static int decode_into(sd_bus_message *m, FILE *text, json_t *o) {
        const char *member = sd_bus_message_get_member(m);
        if (json_set(o, "signal", json_string(member ? member : "")) < 0)
                return -ENOMEM;
        if (sd_bus_message_is_signal(m, "org.freedesktop.DBus", "NameOwnerChanged"))
                return decode_owner_changed(m, text, o);
        if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged"))
                return decode_properties_changed(m, text, o);
        const SignalSpec *spec = signal_spec_find(member);
        if (spec)
                return decode_manager_signal(m, spec, text, o);
        /* A signal newer than this client: name it, with its signature. */
        fputs_escaped(member ? member : "?", text);
        fputs(" (signature '", text);
        fputs_escaped(sd_bus_message_get_signature(m, true), text);
        fputs("')", text);
        return 0;
}

int monitor_decode(sd_bus_message *m, char **ret_text, json_t **ret_json) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        json_auto_t *o = json_object();
        FILE *text = open_memstream(&buf, &size);
        if (!o || !text) {
                if (text)
                        fclose(text);
                return -ENOMEM;
        }
        int r = decode_into(m, text, o);
        if (fclose(text) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret_text = TAKE_PTR(buf);
        *ret_json = TAKE_PTR(o);
        return 0;
}
