/*
 * heap.c - the simulator's own memory (heap.h).
 *
 * Why (issue 18): an experiment builds a network per max-batch probe and
 * runs it, and almost all of that memory is touched for the first time:
 * max-batch.yaml took about 10,000 minor page faults, and on the
 * virtual machines these figures come from a fault costs about 11 us (a
 * 4 KiB page touched in an mmap'd region, against 2.8 us with
 * MAP_POPULATE and 0.24 us in a transparent huge page; a loop over 64 MiB,
 * median of 2), which was about half of the experiment's wall time. With
 * heaps that grow in 64 MiB steps and glibc asking for huge pages on them
 * the same experiment takes 400 to 700 faults (README, "Speed").
 *
 * Before that, glibc gave the freed top of each heap back to the kernel
 * (trim) and served the larger arrays with mmap, so each run faulted the
 * same pages in again: keeping freed memory (M_TRIM_THRESHOLD,
 * M_MMAP_THRESHOLD) took capuchin-maxbatch.yaml from 37,000 minor faults
 * to 30,000 with -j 2; the rest was first touch of its peak (about 120 MB
 * resident), which is what huge pages and the top pad address.
 */
#define _GNU_SOURCE
#include "heap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

int heap_top_pad(void)
{
	/* under a memory limit (ulimit -v, -d) each heap's growth needs
	 * the pad too: 64 MiB made every malloc fail under 50 MB (issue
	 * 38); at most a 16th of the limit then */
	uint64_t pad = HEAP_TOP_PAD;
	int res[] = {RLIMIT_AS, RLIMIT_DATA};
	for (int i = 0; i < 2; i++) {
		struct rlimit rl;
		if (getrlimit(res[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
		    (uint64_t)rl.rlim_cur / 16 < pad)
			pad = (uint64_t)rl.rlim_cur / 16;
	}
	return (int)pad;
}

void heap_tune(void)
{
#ifdef __GLIBC__
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TOP_PAD, heap_top_pad());
#endif
}

/* Built with a sanitizer, whose allocator replaces glibc's? */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define HEAP_SANITIZED 1
#endif
#endif
#ifndef HEAP_SANITIZED
#define HEAP_SANITIZED 0
#endif

/* May the kernel back a region with transparent huge pages when asked
 * (madvise)? Its setting is `always`, `madvise` or `never`, the chosen
 * one in brackets (Documentation/admin-guide/mm/transhuge.rst). */
static int thp_possible(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return 0;
	char line[128] = "";
	int ok = fgets(line, sizeof line, f) != NULL &&
		 strstr(line, "[never]") == NULL;
	fclose(f);
	return ok;
}

void heap_exec_huge(char **argv)
{
#ifdef __GLIBC__
	if (HEAP_SANITIZED || !argv || !argv[0])
		return;
	const char *pre = getenv("LD_PRELOAD");
	if (pre && strstr(pre, "vgpreload")) /* valgrind's preload */
		return;
	/* started by the dynamic loader itself (`ld.so ./gpumemsim`, as
	 * relocatable installs do): /proc/self/exe is ld.so, which would
	 * take argv[1] for the program. Secure mode (setuid, file
	 * capabilities): glibc drops the tunable, so it would exec again
	 * and again */
	if (getauxval(AT_BASE) == 0 || getauxval(AT_SECURE) != 0)
		return;
	const char *tun = getenv("GLIBC_TUNABLES");
	if (tun && strstr(tun, "glibc.malloc.hugetlb"))
		return;
	if (!thp_possible())
		return;
	char val[4096];
	int n = snprintf(val, sizeof val, "%s%sglibc.malloc.hugetlb=1",
			 tun ? tun : "", tun && *tun ? ":" : "");
	if (n < 0 || (size_t)n >= sizeof val ||
	    setenv("GLIBC_TUNABLES", val, 1) != 0)
		return;
	execv("/proc/self/exe", argv);
	/* the exec failed: go on as we are, without the setting (it would
	 * only be inherited by the children, gnuplot) */
	if (tun)
		setenv("GLIBC_TUNABLES", tun, 1);
	else
		unsetenv("GLIBC_TUNABLES");
#else
	(void)argv;
#endif
}

bool heap_worth_huge(int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		struct stat st;
		if (argv[i] && argv[i][0] != '-' && stat(argv[i], &st) == 0 &&
		    S_ISREG(st.st_mode) && (long long)st.st_size >= HEAP_HUGE_MIN_FILE)
			return true;
	}
	return false;
}
