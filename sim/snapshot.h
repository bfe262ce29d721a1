/*
 * snapshot.h - a PyTorch memory snapshot of a simulated run (issue 34):
 * the file torch.cuda.memory._dump_snapshot writes, so that a simulated
 * run opens in PyTorch's memory_viz (pytorch.org/memory_viz) beside a
 * real one, and torch.cuda._memory_viz (torch 1.13: stats, segments,
 * memory) reads its segments.
 *
 * The format, from PyTorch's source: _dump_snapshot pickles _snapshot(),
 * "a dictionary" with "segments" (torch/cuda/memory.py: "Each segment is
 * a contiguous chunk of memory requested with cudaMalloc"; its keys
 * 'device', 'address', 'total_size', 'allocated_size', 'active_size',
 * 'requested_size', 'stream', 'segment_type' ('small' or 'large'),
 * 'segment_pool_id', 'is_expandable', 'frames' and 'blocks', each block
 * 'address', 'size', 'requested_size', 'state' ('active_allocated',
 * 'active_pending_free' or 'inactive') and 'frames') and "device_traces"
 * (one list per device of TraceEntry dicts: 'action' ('alloc',
 * 'free_requested', 'free_completed', 'segment_alloc', 'segment_free',
 * 'oom', ...), 'addr', 'size', 'stream', 'time_us', 'frames'). torch
 * 1.13's _memory_viz reads a list of such segments (stats sums each
 * block's 'size' by its 'state' and asserts that the blocks add up to
 * 'total_size').
 *
 * What is written: the allocator's segments and blocks when the run
 * ends (cached blocks 'inactive', live ones 'active_allocated'; the
 * caching allocator's small pool 'small'), so a run's reserved peak is
 * the segments' total (a caching allocator frees no segment unless an
 * allocation fails); and the trace of every device block allocated and
 * freed in the run (the allocator's rounded sizes), from which
 * memory_viz draws its active-memory timeline: its peak is the run's
 * peak of allocated bytes. Each trace entry's one frame names the tensor
 * (or "workspace"). Segment allocations are not in the trace (the
 * models do not report them one by one). The arena allocator places
 * nothing, so it has no segments: snap_write refuses it.
 */
#ifndef GMS_SNAPSHOT_H
#define GMS_SNAPSHOT_H

#include "ex.h"

struct snap_event;
struct snap_seg;
struct snap_blk;

struct snap_rec {
	const struct wl_workload *wl; /* tensor names for the frames */
	struct snap_event *ev;	      /* the trace, in order */
	size_t n_ev, cap_ev;
	struct snap_seg *seg;	      /* at the end: segments by address */
	size_t n_seg, cap_seg;
	struct snap_blk *blk;	      /* their blocks, in order */
	size_t n_blk, cap_blk;
	bool walked;		      /* the end hook walked the allocator */
	bool oom;		      /* host memory ran out while recording */
	char allocator[64];	      /* the model that ran */
	uint64_t budget;
	struct ex_observer obs;	      /* what snap_observer() returns */
};

void snap_init(struct snap_rec *r, const struct wl_workload *wl);
void snap_fini(struct snap_rec *r);
const struct ex_observer *snap_observer(struct snap_rec *r);

/* Write the pickle (all or nothing, gms_out). Returns 0 or -1 with err
 * (an allocator without placement, host memory, the file). */
int snap_write(const struct snap_rec *r, const char *path, gms_err *err);

#endif
