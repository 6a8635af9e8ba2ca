/* scan-exe.bpf.h: the executables of the processes a scan reports, for scan.bpf.c: each path
 * put together in BPF as d_path() does, and sent once a pass (a process running one already sent
 * refers to it). Left out of the build that reads no executables (SCAN_NO_EXE: the tree output of
 * `sectreed scan`), whose load then relocates and verifies none of it. */
#pragma once

/* Steps of the walk from an executable up to the root: a path component or a mount crossed each.
 * More than a path of PATH_MAX bytes can have. */
#define EXE_MAX_STEPS 4096
#define EXE_SEEN_MAX 4096 /* distinct executables remembered in a pass; more are walked again */
#define NAME_MAX 255

/* Where the path of an executable is put together, backwards from the end of build[] (as the
 * kernel's d_path() does), then copied behind its record's header. The walk's state is kept here
 * too, so that bpf_loop()'s step reads it back as plain numbers. */
enum {
        EXE_WALKING,
        EXE_DONE,    /* reached the reader's root, or the root of the mount tree */
        EXE_ESCAPED, /* a dentry that is its own parent but not a mount's root: d_path() says "/" */
        EXE_UNKNOWN,
};

struct exe_scratch {
        __u64 dentry, mount;           /* the walk: addresses, never sent */
        __u64 root_dentry, root_mount; /* the reader's root (current->fs->root) */
        __u32 pos;                     /* the path so far is build[pos, SCAN_PATH_MAX) */
        __u32 status;
        __u8 out[sizeof(struct scan_rec_exe) + SCAN_PATH_MAX]; /* the record */
        char build[SCAN_PATH_MAX + NAME_MAX + 1];
};

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct exe_scratch);
} exe_scratch SEC(".maps");

/* The executables this pass has sent, by file (the dentry and mount: addresses, so only BPF may
 * read it): a process running one of them is sent a reference to the first one's record, not the
 * path again. Most processes of a machine run a few executables. */
struct exe_key {
        __u64 dentry, mnt;
};

struct exe_seen {
        __u64 pass;
        __u32 tgid; /* whose record carries the path */
        __u32 _pad;
};

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, EXE_SEEN_MAX);
        __uint(map_flags, BPF_F_WRONLY);
        __type(key, struct exe_key);
        __type(value, struct exe_seen);
} exe_seen SEC(".maps");


static __always_inline __u64 real_mount(struct vfsmount *mnt) {
        return (__u64) mnt - bpf_core_field_offset(struct mount, mnt);
}

/* One step up from the dentry and mount in x, as the kernel's __prepend_path() takes it: cross
 * to the mount point when at the root of a mount, else put the name in front of the path. */
static long exe_step(__u32 i, void *unused) {
        struct exe_scratch *x;
        struct dentry *d, *parent;
        struct mount *m, *up;
        __u32 zero = 0, len, pos;

        x = bpf_map_lookup_elem(&exe_scratch, &zero);
        if (!x)
                return 1;
        if (x->dentry == x->root_dentry && x->mount == x->root_mount) {
                x->status = EXE_DONE;
                return 1;
        }
        d = bpf_rdonly_cast((void *) x->dentry, bpf_core_type_id_kernel(struct dentry));
        m = bpf_rdonly_cast((void *) x->mount, bpf_core_type_id_kernel(struct mount));
        if (x->dentry == (__u64) m->mnt.mnt_root) {
                up = m->mnt_parent;
                if ((__u64) up == x->mount) {
                        x->status = EXE_DONE; /* the root of its mount tree */
                        return 1;
                }
                x->dentry = (__u64) m->mnt_mountpoint;
                x->mount = (__u64) up;
                return 0;
        }
        parent = d->d_parent;
        if ((__u64) parent == x->dentry) {
                x->status = EXE_ESCAPED;
                return 1;
        }
        len = d->d_name.len;
        pos = x->pos;
        if (len > NAME_MAX || pos > SCAN_PATH_MAX || pos < len + 1) {
                x->status = EXE_UNKNOWN; /* longer than any path readlink(2) returns */
                return 1;
        }
        pos = (pos - len - 1) & (SCAN_PATH_MAX - 1);
        x->build[pos] = '/';
        if (bpf_probe_read_kernel(&x->build[pos + 1], len & NAME_MAX, d->d_name.name) < 0) {
                x->status = EXE_UNKNOWN;
                return 1;
        }
        x->pos = pos;
        x->dentry = (__u64) parent;
        return 0;
}

/* The path of file below the reader's root, into rec; 0 or SCAN_EXE_* flags. */
static __always_inline __u32 exe_path(struct exe_scratch *x, struct scan_rec_exe *rec, struct file *file) {
        struct dentry *d = file->f_path.dentry;
        struct vfsmount *mnt = file->f_path.mnt;
        struct path *root = &task_plain(bpf_get_current_task_btf())->fs->root;
        __u32 flags = 0, n, budget;

        /* A pseudo file system that names its files itself (memfd, anonymous inodes) */
        if (d->d_op && d->d_op->d_dname && (d != d->d_parent || d != mnt->mnt_root))
                return SCAN_EXE_UNKNOWN;
        if (!d->d_hash.pprev && d != d->d_parent)
                flags |= SCAN_EXE_DELETED;

        x->dentry = (__u64) d;
        x->mount = real_mount(mnt);
        x->root_dentry = (__u64) root->dentry;
        x->root_mount = real_mount(root->mnt);
        x->pos = SCAN_PATH_MAX;
        x->status = EXE_WALKING;
        bpf_loop(EXE_MAX_STEPS, exe_step, NULL, 0);
        if (x->status == EXE_ESCAPED)
                x->pos = SCAN_PATH_MAX;
        else if (x->status != EXE_DONE)
                return SCAN_EXE_UNKNOWN;
        if (x->pos == SCAN_PATH_MAX)
                x->build[--x->pos & (SCAN_PATH_MAX - 1)] = '/';

        /* d_path() has PATH_MAX bytes for the path and " (deleted)" or the NUL. */
        n = SCAN_PATH_MAX - x->pos;
        budget = SCAN_PATH_MAX - (flags & SCAN_EXE_DELETED ? sizeof(" (deleted)") : 1);
        if (x->pos > SCAN_PATH_MAX || n > budget)
                return SCAN_EXE_UNKNOWN;
        if (bpf_probe_read_kernel(rec->path, n & (SCAN_PATH_MAX - 1), &x->build[x->pos & (SCAN_PATH_MAX - 1)]) < 0)
                return SCAN_EXE_UNKNOWN;
        rec->len = n;
        return flags;
}

/* The executable of t's process (t is its leader, at task_addr: pidns_tgid()). 0, or -ENOSPC (ring
 * buffer full: retry). */
static __always_inline int exe_send(struct task_struct *t, __u64 task_addr) {
        struct scan_rec_exe *rec;
        struct exe_scratch *x;
        struct mm_struct *mm;
        struct file *file;
        __u32 zero = 0;

        x = bpf_map_lookup_elem(&exe_scratch, &zero);
        if (!x)
                return 0; /* user space reads /proc */
        rec = (struct scan_rec_exe *) x->out;
        rec->type = SCAN_REC_EXE;
        rec->tgid = pidns_tgid(t, task_addr);
        rec->len = 0;
        rec->same_tgid = 0;
        mm = t->mm;
        file = mm ? mm->exe_file : NULL;
        if (!file)
                rec->flags = SCAN_EXE_NONE;
        else {
                struct exe_key key = { .dentry = (__u64) file->f_path.dentry, .mnt = (__u64) file->f_path.mnt };
                struct exe_seen *seen = bpf_map_lookup_elem(&exe_seen, &key);

                if (seen && seen->pass == pass) {
                        rec->flags = SCAN_EXE_SAME;
                        rec->same_tgid = seen->tgid;
                } else {
                        rec->flags = exe_path(x, rec, file);
                        if (!(rec->flags & SCAN_EXE_UNKNOWN)) {
                                struct exe_seen now = { .pass = pass, .tgid = rec->tgid };
                                bpf_map_update_elem(&exe_seen, &key, &now, BPF_ANY); /* full: walked again */
                        }
                }
        }
        if (rec->flags & (SCAN_EXE_NONE | SCAN_EXE_UNKNOWN | SCAN_EXE_SAME))
                rec->len = 0;
        if (bpf_ringbuf_output(&records, rec, sizeof(*rec) + (rec->len & (SCAN_PATH_MAX - 1)), BPF_RB_NO_WAKEUP) < 0)
                return -ENOSPC;
        return 0;
}
