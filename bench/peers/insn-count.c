/*
 * insn-count: a QEMU TCG plugin that counts the guest instructions each guest thread executes
 * (scripts/peers.py, `make bench BENCH=peers`).
 *
 * How it counts: when QEMU translates a block of guest code, the plugin asks for an inline
 * "add 1" before each of the block's instructions, into a per-vCPU counter (a scoreboard entry;
 * in user mode each guest thread is a vCPU). The add is generated code, run with the block
 * itself: no call out of the translated code, no log, nothing written while the program runs.
 * An instruction that faults or makes a system call counts once; what the host kernel does for
 * a system call is not counted. A vCPU that exits (its thread ended) has its count kept under
 * its index and its counter cleared, so an index that QEMU reuses for a later thread adds up
 * the way QEMU's own `-d exec` log would name it.
 *
 * At the program's exit (exit_group, or a fatal signal: QEMU's preexit_cleanup), it appends one
 * line per vCPU that ran anything to the file named by `out=`:
 *
 *     insn-count pid=<QEMU's pid> vcpu=<index> insns=<count>
 *
 * The pid tells the process that was started apart from one it forked (a fork runs on in the
 * same QEMU, with this plugin, until it execs).
 *
 * Build: cc -shared -fPIC -O2 $(pkg-config --cflags glib-2.0) -I<qemu>/include/qemu
 *        -o libinsn-count.so insn-count.c
 * Use:   qemu-aarch64 -plugin ./libinsn-count.so,out=/tmp/counts <program> <args>
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static struct qemu_plugin_scoreboard *board;
static qemu_plugin_u64 insns;
static GMutex lock;
static GArray *exited; /* uint64_t per vCPU index: what vCPUs that have exited counted */
static char *out_path;

static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(qemu_plugin_tb_get_insn(tb, i),
                                                            QEMU_PLUGIN_INLINE_ADD_U64, insns, 1);
    }
}

static void vcpu_exit(qemu_plugin_id_t id, unsigned int vcpu)
{
    g_mutex_lock(&lock);
    if (exited->len <= vcpu) {
        g_array_set_size(exited, vcpu + 1);
    }
    g_array_index(exited, uint64_t, vcpu) += qemu_plugin_u64_get(insns, vcpu);
    qemu_plugin_u64_set(insns, vcpu, 0);
    g_mutex_unlock(&lock);
}

static void plugin_exit(qemu_plugin_id_t id, void *udata)
{
    GString *report = g_string_new("");
    int n = qemu_plugin_num_vcpus();
    g_mutex_lock(&lock);
    if ((int)exited->len > n) {
        n = exited->len;
    }
    for (int vcpu = 0; vcpu < n; vcpu++) {
        uint64_t count = vcpu < (int)exited->len ? g_array_index(exited, uint64_t, vcpu) : 0;
        if (vcpu < qemu_plugin_num_vcpus()) {
            count += qemu_plugin_u64_get(insns, vcpu);
        }
        if (count) {
            g_string_append_printf(report, "insn-count pid=%d vcpu=%d insns=%" PRIu64 "\n",
                                   (int)getpid(), vcpu, count);
        }
    }
    g_mutex_unlock(&lock);
    /* One write of the whole report, appended: a forked copy's report cannot interleave. */
    int fd = open(out_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, report->str, report->len) != (ssize_t)report->len) {
        fprintf(stderr, "insn-count: cannot write %s\n", out_path);
    }
    if (fd >= 0) {
        close(fd);
    }
    g_string_free(report, TRUE);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out_path = g_strdup(argv[i] + 4);
        } else {
            fprintf(stderr, "insn-count: unknown option %s (only out=<file>)\n", argv[i]);
            return -1;
        }
    }
    if (!out_path) {
        fprintf(stderr, "insn-count: needs out=<file>\n");
        return -1;
    }
    board = qemu_plugin_scoreboard_new(sizeof(uint64_t));
    insns = qemu_plugin_scoreboard_u64(board);
    exited = g_array_new(FALSE, TRUE, sizeof(uint64_t));
    qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
    qemu_plugin_register_vcpu_exit_cb(id, vcpu_exit);
    qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
    return 0;
}
