/* pager.h: long output through a pager on a terminal, as systemctl: $SYSTEMD_PAGER, $PAGER or less */
#pragma once

#include <stdbool.h>

/* When stdout is a terminal and no_pager is not set, start the pager ($SYSTEMD_PAGER, else $PAGER,
 * else less; "" or "cat" for none; $LESS defaults to FRSXMK) and make stdout its input; at exit,
 * stdout is closed and the pager waited for. $COLUMNS keeps the terminal's width for the tables.
 * Call right before printing, after anything that may fail: errors go to stderr, not the pager. A
 * pager that cannot start leaves stdout as it was. */
void pager_open(bool no_pager);
