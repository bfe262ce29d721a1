#!/bin/sh
# validate/recheck-ahead.sh - the GPU checks issue 30 still owes (a short
# run, about 2 minutes on an H100): the eight run-ahead replays again with
# every copy behind the kernel that completed before it (sim/ex.c,
# copy_after) and cudaFree's device sync in the replayer, the host cost of
# eager PyTorch per operator, per save_on_cpu pack and per backward node
# (validate/torch_host.py), and save_on_cpu(pin_memory=True)'s pinned
# peak beside the model's (validate/torch_mechanisms.py).
#
#   validate/recheck-ahead.sh [BIN [OUT]]   BIN: gpumemsim and validate-gpu
#                                           (default build); OUT: where the
#                                           results go (default
#                                           results/validation/recheck)
#
# Schedules are simulated here as measure-gpu.sh does (H100 profile,
# pytorch personality, batch 32, 60% of framework's peak for ondemand
# and vdnnpp, --host runahead) and replayed with --mode real --alloc arena
# --host runahead; `compare` writes NET-POLICY-real-ahead/summary.txt.
# Without a GPU validate-gpu says so and nothing is measured.
set -u
BIN=${1:-build}
OUT=${2:-results/validation/recheck}
HW=${HW:-configs/hw/H100-80GB-HBM3-measured.yaml}
PYTHON=${PYTHON:-python3}
GMS=$BIN/gpumemsim
mkdir -p "$OUT" || exit 1
peak_of() { sed -n 's/^  peak allocated *\([0-9]*\).*/\1/p'; }
for net in resnet50 bert_base; do
	opt=momentum
	[ "$net" = bert_base ] && opt=adam
	common="$net --hw $HW --framework pytorch --optimizer $opt --batch 32"
	peak=$("$GMS" simulate $common --policy framework | peak_of)
	if [ -z "$peak" ]; then
		echo "recheck-ahead: $net: the framework run failed; skipped" >&2
		continue
	fi
	budget=$((peak * 6 / 10))
	for p in framework ondemand60 vdnnpp60 checkpoint; do
		case $p in
		*60) pol=${p%60} b="--budget $budget" ;;
		*) pol=$p b= ;;
		esac
		s=$OUT/$net-$p-ahead.sched
		"$GMS" simulate $common --host runahead --policy $pol $b \
			--schedule "$s" >/dev/null || continue
		rm -f "$OUT/$net-$p-real-ahead.csv"
		"$BIN/validate-gpu" "$s" -o "$OUT/$net-$p-real-ahead.csv" \
			--mode real --alloc arena --host runahead || continue
		[ -f "$OUT/$net-$p-real-ahead.csv" ] || continue # no GPU
		"$GMS" compare "$s" "$OUT/$net-$p-real-ahead.csv" \
			--out "$OUT/$net-$p-real-ahead" --no-plot >/dev/null
		grep -h 'iteration time' "$OUT/$net-$p-real-ahead/summary.txt" |
			sed "s/^/$net $p:/"
	done
done
if $PYTHON -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
	>/dev/null 2>&1; then
	$PYTHON validate/torch_host.py -o "$OUT/torch-host.csv"
	$PYTHON validate/torch_mechanisms.py --nets resnet50,bert_base \
		--mechanisms save_on_cpu_pinned --steps 6 \
		-o "$OUT/mechanisms-pinned.csv" \
		--steps-out "$OUT/mechanisms-pinned-steps.csv"
else
	echo "recheck-ahead: $PYTHON has no torch with CUDA: no PyTorch timings"
fi
