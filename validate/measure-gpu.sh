#!/bin/sh
# validate/measure-gpu.sh - measure this GPU in one run (`make measure-gpu`;
# README, "Measuring a GPU"): calibrate, fit a profile, then validate it by
# replaying simulated schedules (issue 21's protocol) and by timing real
# PyTorch training steps when python3 has torch with CUDA.
#
#   validate/measure-gpu.sh [BIN]      BIN: where gpumemsim, calibrate-gpu
#                                      and validate-gpu are (default build)
#
# Writes, with SLUG the device name from the calibration (e.g.
# H100-80GB-HBM3):
#   results/calibration/SLUG/measurements.csv   calibrate-gpu's raw CSV
#   results/calibration/SLUG/fit.txt            what `gpumemsim fit` said
#   configs/hw/SLUG-measured.yaml               the fitted profile (host
#                                               section from BASE_HW)
#   results/validation/SLUG/NET-POLICY.sched    the simulated schedules
#   results/validation/SLUG/NET-POLICY-M.csv    the replays' measurements
#                                               (M: spin, real, real-async)
#   results/validation/SLUG/NET-POLICY-M/       `gpumemsim compare` output
#   results/validation/SLUG/kernels-NET.txt     torch.profiler's kernel table
#                                               of one real step (-tf32: TF32)
#   results/validation/SLUG/pytorch.csv         real training steps vs the
#                                               simulator's prediction
#   results/validation/SLUG/log.txt             everything this script ran
# Without a GPU the calibration says "no CUDA GPU found" and this script
# stops there with exit 0, writing nothing.
#
# The validation matrix (issue 21): ResNet-50 and BERT-base, batch 32
# (the calibration's convolution batch, so every ResNet-50 convolution
# runs with measured algorithms; BERT-base at sequence 128), pytorch
# personality, under framework on the whole device, ondemand and vdnnpp
# at 60% of framework's peak allocated bytes, and checkpoint (memory
# mode) on the whole device; each schedule replayed in --mode spin and
# --mode real with --alloc arena, and --mode real with --alloc async (the
# real allocator's footprint for the same requests). A case that fails is logged and the rest
# still run; the exit status is 1 if any failed.
#
# Host modes (issue 30): the spin, real and real-async replays wait for
# each kernel (validate-gpu --host wait), so their schedules are simulated
# with --host wait; a fourth replay, real-ahead, launches without waiting
# (--host runahead) a schedule simulated with --host runahead, the
# pytorch personality's own host.
#
# Environment: BASE_HW (profile whose host: section the fit takes;
# default configs/hw/H100-80GB-PCIe.yaml), BATCH (32), PYTHON (python3;
# a command, split on spaces, e.g. "env -u LD_LIBRARY_PATH python3"),
# QUICK=1 (calibrate-gpu --quick: fewer repeats, copies to 64 MiB),
# MEASUREMENTS=FILE (fit and validate FILE instead of calibrating again),
# MEASURE_ONLY=BENCH[,BENCH] with MEASUREMENTS (measure those benches again,
# calibrate-gpu --only, at BATCH and each of EXTRA_BATCHES, e.g. "8", and
# replace their rows in a copy of FILE: e.g. the GEMM shapes added to an
# earlier calibration of the same GPU), TF32=1 (calibrate-gpu --tf32, fit
# --precision tf32 into configs/hw/SLUG-tf32-measured.yaml, real steps
# with --tf32 into pytorch-tf32.csv; no replays, which model FP32),
# MECHANISMS=1 (also time PyTorch's torch.utils.checkpoint and save_on_cpu
# beside the checkpoint and offload policies: validate/torch_mechanisms.py,
# mechanisms.csv and mechanisms-steps.csv).
set -u
BIN=${1:-build}
BASE_HW=${BASE_HW:-configs/hw/H100-80GB-PCIe.yaml}
BATCH=${BATCH:-32}
PYTHON=${PYTHON:-python3}
GMS=$BIN/gpumemsim
failed=0

for b in gpumemsim calibrate-gpu validate-gpu; do
	if [ ! -x "$BIN/$b" ]; then
		echo "measure-gpu: $BIN/$b missing (make all calibrate validate)" >&2
		exit 2
	fi
done

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# 1. Calibrate (or take MEASUREMENTS, a calibrate-gpu CSV of this GPU).
# No GPU: calibrate-gpu says so, exits 0 and writes nothing.
quick=
[ "${QUICK:-0}" = 1 ] && quick=--quick
tf32=
[ "${TF32:-0}" = 1 ] && tf32=--tf32
if [ -n "${MEASUREMENTS:-}" ]; then
	if [ -n "${MEASURE_ONLY:-}" ]; then
		for b in $BATCH ${EXTRA_BATCHES:-}; do
			"$BIN/calibrate-gpu" --only "$MEASURE_ONLY" --batch "$b" \
				$tf32 $quick -o "$tmp/only-$b.csv" || exit 1
			[ -f "$tmp/only-$b.csv" ] || {
				echo "measure-gpu: nothing measured (no GPU); nothing written"
				exit 0
			}
		done
		# FILE's lines less the re-measured benches' rows, then
		# the new rows (a row measured at two batches once)
		awk -F, -v only="$MEASURE_ONLY" 'BEGIN {
			n = split(only, o, ","); for (i = 1; i <= n; i++) re[o[i]] = 1 }
			FNR == NR { if (!($1 in re)) print; next }
			/^#/ || /^bench,/ { next }
			!seen[$1 FS $2 FS $3]++' \
			"$MEASUREMENTS" "$tmp"/only-*.csv >"$tmp/m.csv" || exit 1
	else
		cp "$MEASUREMENTS" "$tmp/m.csv" || exit 1
	fi
else
	"$BIN/calibrate-gpu" -o "$tmp/m.csv" --batch "$BATCH" $tf32 $quick ||
		exit 1
fi
if [ ! -f "$tmp/m.csv" ]; then
	echo "measure-gpu: nothing measured (no GPU); nothing written"
	exit 0
fi
dev=$(sed -n 's/^# device: //p' "$tmp/m.csv" | head -n 1)
slug=$(printf '%s' "$dev" | sed 's/^NVIDIA //; s/[^A-Za-z0-9.]\{1,\}/-/g; s/-$//')
[ -n "$slug" ] || slug=gpu
CAL=results/calibration/$slug
VAL=results/validation/$slug
HW=configs/hw/$slug-measured.yaml
sfx=	# the TF32 run's files: measurements-tf32.csv, fit-tf32.txt, ...
prec=
if [ -n "$tf32" ]; then
	sfx=-tf32
	prec="--precision tf32"
	HW=configs/hw/$slug-tf32-measured.yaml
fi
mkdir -p "$CAL" "$VAL" || exit 1
mv "$tmp/m.csv" "$CAL/measurements$sfx.csv" || exit 1
LOG=$VAL/log$sfx.txt
: >"$LOG"

run_to() {	# run_to FILE CMD...: logged, its output also kept in FILE;
		# failures counted
	out=$1
	shift
	echo "\$ $*" >>"$LOG"
	"$@" >"$out" 2>&1
	rc=$?
	cat "$out" >>"$LOG"
	[ $rc -eq 0 ] || { echo "measure-gpu: failed ($rc): $*" | tee -a "$LOG" >&2; failed=1; }
	return $rc
}
run() {	# run CMD...: run_to, the output only logged
	run_to "$tmp/out.txt" "$@"
}

# 2. Fit. A fit below R^2 0.9 is refused; then it is written with --force
# and fit.txt says so (the README's comparison must discuss it).
name=$(basename "$HW" .yaml)
if ! "$GMS" fit "$CAL/measurements$sfx.csv" -o "$HW" --name "$name" $prec \
	--base "$BASE_HW" >"$CAL/fit$sfx.txt" 2>&1; then
	echo "measure-gpu: fit refused; writing with --force" |
		tee -a "$CAL/fit$sfx.txt"
	run "$GMS" fit "$CAL/measurements$sfx.csv" -o "$HW" --name "$name" \
		$prec --base "$BASE_HW" --force
fi
cat "$CAL/fit$sfx.txt" >>"$LOG"
[ -f "$HW" ] || { echo "measure-gpu: no profile fitted" >&2; exit 1; }

# 3. The validation matrix.
peak_of() {	# peak allocated bytes from a simulate report
	sed -n 's/^  peak allocated *\([0-9]*\).*/\1/p' "$1"
}
[ -n "$tf32" ] && REPLAYS=0
for net in resnet50 bert_base; do
	[ "${REPLAYS:-1}" = 1 ] || break
	opt=momentum
	[ "$net" = bert_base ] && opt=adam
	common="$net --hw $HW --framework pytorch --optimizer $opt --batch $BATCH"
	# the framework run's report: the budgets here, the prediction in 4.
	base="$tmp/$net-$opt-$BATCH.txt"
	run_to "$base" "$GMS" simulate $common --policy framework
	peak=$(peak_of "$base")
	budget=$((peak * 6 / 10))
	echo "$net: framework peak $peak B; 60% budget $budget B" >>"$LOG"
	for host in wait runahead; do
		h=
		[ $host = runahead ] && h=-ahead
		run "$GMS" simulate $common --host $host --policy framework \
			--schedule "$VAL/$net-framework$h.sched"
		run "$GMS" simulate $common --host $host --policy ondemand \
			--budget "$budget" --schedule "$VAL/$net-ondemand60$h.sched"
		run "$GMS" simulate $common --host $host --policy vdnnpp \
			--budget "$budget" --schedule "$VAL/$net-vdnnpp60$h.sched"
		run "$GMS" simulate $common --host $host --policy checkpoint \
			--schedule "$VAL/$net-checkpoint$h.sched"
	done
done
for s in "$VAL"/*.sched; do
	[ -f "$s" ] && [ "${REPLAYS:-1}" = 1 ] || continue
	case=${s%.sched}
	mas="spin:arena:wait real:arena:wait real:async:wait"
	case $case in
	*-ahead) case=${case%-ahead} mas=real:arena:runahead ;;
	esac
	for ma in $mas; do
		mode=${ma%%:*} alloc=${ma#*:} host=${ma##*:}
		alloc=${alloc%:*}
		suffix=$mode
		[ "$alloc" = arena ] || suffix=$mode-$alloc
		[ "$host" = wait ] || suffix=$mode-ahead
		run "$BIN/validate-gpu" "$s" -o "$case-$suffix.csv" --mode "$mode" \
			--alloc "$alloc" --host "$host" || continue
		[ -f "$case-$suffix.csv" ] || continue	# no GPU: said so
		run "$GMS" compare "$s" "$case-$suffix.csv" --out "$case-$suffix" \
			--no-plot
	done
done

# 4. Real training steps (PyTorch), against the simulator's prediction
# for the same network, batch, optimizer and personality.
if $PYTHON -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
	>/dev/null 2>&1; then
	run $PYTHON validate/torch_step.py --batch "$BATCH" $tf32 \
		--profile "$VAL/kernels$sfx" -o "$tmp/torch.csv"
	if [ -f "$tmp/torch.csv" ]; then
		{
			echo "net,optimizer,batch,measured_ms,measured_peak_bytes,predicted_ms,predicted_peak_bytes,time_error,peak_error"
			tail -n +2 "$tmp/torch.csv" | while IFS=, read -r net opt b ms pk; do
				rep="$tmp/$net-$opt-$b.txt"	# step 3's, if it ran
				[ -f "$rep" ] || "$GMS" simulate "$net" --hw "$HW" \
					--framework pytorch --optimizer "$opt" --batch "$b" \
					>"$rep" 2>&1
				pms=$(sed -n 's/^  iteration time *\([0-9.]*\) ms.*/\1/p' "$rep")
				ppk=$(peak_of "$rep")
				awk -v n="$net" -v o="$opt" -v b="$b" -v m="$ms" -v k="$pk" \
					-v pm="$pms" -v pk="$ppk" 'BEGIN {
					printf "%s,%s,%s,%s,%s,%s,%s,%.4f,%.4f\n", n, o, b, m, k,
					pm, pk, (pm - m) / m, (pk - k) / k }'
			done
		} >"$VAL/pytorch$sfx.csv"
	fi
	# 5. PyTorch's own mechanisms beside the policies that model them
	if [ "${MECHANISMS:-0}" = 1 ] && [ -z "$tf32" ]; then
		run $PYTHON validate/torch_mechanisms.py --batch "$BATCH" \
			-o "$VAL/mechanisms.csv" --steps-out "$VAL/mechanisms-steps.csv"
	fi
else
	echo "measure-gpu: $PYTHON has no torch with CUDA: no real training steps" |
		tee -a "$LOG"
fi
echo "measure-gpu: $slug: $CAL, $HW, $VAL (failures: $failed)"
exit $failed
