/* monitor-signals.h: the Manager's signals as data: decoding one message into text and JSON */
#pragma once

#include <jansson.h>
#include <systemd/sd-bus.h>

/* Decode a signal of org.sectree1.Manager, org.freedesktop.DBus.Properties.PropertiesChanged or
 * NameOwnerChanged for org.sectree1. *ret_text (malloc'ed, one line without timestamp or
 * newline, e.g. "FilterAttached id=12 parent=11 tid=4711") and *ret_json ({"signal": ...}).
 * Returns 0, or negative errno for a message that does not parse. */
int monitor_decode(sd_bus_message *m, char **ret_text, json_t **ret_json);
