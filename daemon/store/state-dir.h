/* state-dir.h: the state directory and its database files belong to root alone (0700 / 0600) */
#pragma once

/* Make dir (created 0700 if missing) and the database files db, db-wal and db-shm in it private to
 * sectreed, whatever the umask: the directory 0700, the files 0600 (db is created empty, 0600, if
 * missing, so that SQLite, which gives -wal and -shm the mode of the database, never makes them
 * readable by others). Looser modes left by an older install are tightened, with a warning in the
 * log. Refused, with a logged error and nothing changed: a path that is not a directory, or a file
 * that is not a regular file; a directory or file owned by another user (-EPERM); a directory open
 * to others that holds files other than sectreed's (-ENOTEMPTY: it is not the daemon's own, e.g.
 * --state-dir=/var/lib, and tightening it would break whatever else uses it). */
int state_dir_secure(const char *dir, const char *db);
