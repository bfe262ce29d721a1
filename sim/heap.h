/*
 * heap.h - the simulator's own memory: how the process asks glibc's
 * malloc for it (issue 18). No output depends on any of this; it only
 * moves where the simulator's arrays live and how the kernel backs them.
 */
#ifndef GMS_HEAP_H
#define GMS_HEAP_H

#include <stdbool.h>

/* The top pad: each time a malloc heap grows it grows by this much more
 * than asked (glibc's M_TOP_PAD), so that a heap grows in steps that
 * transparent huge pages (2 MiB on x86-64 and arm64 with 4 KiB pages)
 * can back. 64 MiB: glibc's largest heap of a thread's arena on 64-bit
 * (HEAP_MAX_SIZE = 2 x DEFAULT_MMAP_THRESHOLD_MAX, malloc/arena.c), so a
 * thread's arena asks once; measured on max-batch.yaml (README, "Speed"):
 * 2 and 8 MiB left most faults, 32 MiB and above removed them. */
#define HEAP_TOP_PAD ((int)64 << 20)

/* Process-wide malloc settings, the same every call (glibc's mallopt;
 * nothing elsewhere): keep up to 256 MiB of freed memory per arena
 * instead of giving it back (M_TRIM_THRESHOLD), serve blocks below
 * 32 MiB from the heaps (M_MMAP_THRESHOLD; glibc's largest mmap
 * threshold on 64-bit, DEFAULT_MMAP_THRESHOLD_MAX in malloc/malloc.c),
 * and grow heaps by HEAP_TOP_PAD (M_TOP_PAD). */
void heap_tune(void);

/* The top pad heap_tune sets: HEAP_TOP_PAD, or under a memory limit
 * (RLIMIT_AS, RLIMIT_DATA: ulimit -v, -d) a 16th of the smaller, so that
 * a heap's growth does not need more than the process may have. */
int heap_top_pad(void);

/* Re-execute this program (/proc/self/exe, the same argv) with glibc's
 * tunable glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, so that malloc
 * asks for transparent huge pages (madvise MADV_HUGEPAGE) on the memory
 * its heaps take from the kernel. Tunables are read only when a process
 * starts (glibc manual, "Tunables"), hence the exec. Returns (and the
 * program goes on as it is) when that is already set or cannot help or
 * cannot be done: not glibc, a sanitizer's allocator, under valgrind
 * (its exec would leave the tool), started by the dynamic loader
 * (`ld.so PROGRAM`), in secure mode (setuid: glibc drops the tunable),
 * GLIBC_TUNABLES already naming glibc.malloc.hugetlb (the user's choice
 * is kept), the kernel's transparent huge pages `never`, or the exec
 * failing. Call it first in main, before threads or open files. */
void heap_exec_huge(char **argv);

/* Is heap_exec_huge worth its cost for a command on one workload
 * (simulate, optimal, dtr)? The exec and the huge pages' zeroing cost
 * about 26 ms of CPU (a `simulate` of a small workload: 48 ms with it,
 * 22 ms without, median of 6; issue 37), and a 4 KiB fault costs about
 * 11 us against 0.24 us for a 2 MiB page (heap.c): 2.8 ms saved per MiB
 * the run touches, so it pays from about 10 MiB. What a run touches is
 * not known before the workload is read; the workload file's size is
 * (its parsed form and run take a few times the YAML's bytes): true when
 * an argument names a file of at least HEAP_HUGE_MIN_FILE bytes. */
#define HEAP_HUGE_MIN_FILE ((long long)4 << 20)
bool heap_worth_huge(int argc, char **argv);

#endif
