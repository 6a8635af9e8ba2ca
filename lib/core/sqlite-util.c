/* sqlite-util.c: SQLite result codes as negative errno */
#include "core/sqlite-util.h"

#include <errno.h>

static int errno_from_constraint(int rc) {
        switch (rc) {
        case SQLITE_CONSTRAINT_FOREIGNKEY:
                return -ENOENT; /* a row names one that does not exist */
        case SQLITE_CONSTRAINT_CHECK:
        case SQLITE_CONSTRAINT_NOTNULL:
                return -EINVAL;
        default: /* primary key, unique; a trigger's RAISE */
                return -EEXIST;
        }
}

int sqlite_errno(sqlite3 *db, int rc) {
        int sys = db ? sqlite3_system_errno(db) : 0;

        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_NOTADB:
                return -EMEDIUMTYPE;
        case SQLITE_CORRUPT:
                return -EBADMSG;
        case SQLITE_MISUSE:
        case SQLITE_RANGE:
        case SQLITE_MISMATCH:
                return -EINVAL;
        case SQLITE_CONSTRAINT:
                return errno_from_constraint(rc);
        case SQLITE_IOERR:
        case SQLITE_CANTOPEN:
                return sys > 0 ? -sys : -EIO;
        default:
                return -EIO;
        }
}
