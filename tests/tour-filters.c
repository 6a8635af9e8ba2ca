/* tour-filters.c: the two seccomp filters of the README's tour, written as raw classic-BPF
 * programs (what `bwrap --add-seccomp-fd` reads) with libseccomp:
 *
 *   base.bpf   EPERM for ptrace, perf_event_open, mount, umount2, pivot_root, kexec_load,
 *              init_module and finit_module; ENOSYS for clone3 (so that callers fall back to
 *              clone, whose flags a filter can see); everything else allowed
 *   net.bpf    EAFNOSUPPORT for socket(AF_INET, ...) and socket(AF_INET6, ...)
 *
 * Both on the native architecture and, for x86-64, on i386 and x32 too.
 *
 *   tour-filters DIR     writes DIR/base.bpf and DIR/net.bpf */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int add_arches(scmp_filter_ctx ctx) {
        if (seccomp_arch_native() != SCMP_ARCH_X86_64)
                return 0;
        int r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
        if (r >= 0)
                r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
        return r;
}

static int build_base(scmp_filter_ctx ctx) {
        static const char *const denied[] = { "ptrace", "perf_event_open", "mount", "umount2", "pivot_root",
                                              "kexec_load", "init_module", "finit_module" };
        int r = 0;
        for (size_t i = 0; r >= 0 && i < sizeof(denied) / sizeof(denied[0]); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), seccomp_syscall_resolve_name(denied[i]), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), seccomp_syscall_resolve_name("clone3"), 0);
        return r;
}

static int build_net(scmp_filter_ctx ctx) {
        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_INET));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_EQ, AF_INET6));
        return r;
}

static int write_filter(const char *dir, const char *name, int (*build)(scmp_filter_ctx ctx)) {
        char path[4096];
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        int r = add_arches(ctx);
        if (r >= 0)
                r = build(ctx);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = r < 0 ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (r >= 0 && fd < 0)
                r = -errno;
        if (r >= 0)
                r = seccomp_export_bpf(ctx, fd);
        if (fd >= 0 && close(fd) < 0 && r >= 0)
                r = -errno;
        seccomp_release(ctx);
        if (r < 0)
                fprintf(stderr, "tour-filters: %s: %s\n", path, strerror(-r));
        return r;
}

int main(int argc, char *argv[]) {
        if (argc != 2) {
                fprintf(stderr, "Usage: %s DIR (writes DIR/base.bpf and DIR/net.bpf)\n", argv[0]);
                return 2;
        }
        if (write_filter(argv[1], "base.bpf", build_base) < 0 || write_filter(argv[1], "net.bpf", build_net) < 0)
                return 1;
        return 0;
}
